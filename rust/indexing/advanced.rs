//! Advanced indexing, with numpy's rules: a key holding index tensors
//! (`x[idx]`, `x[:, [0, 2]]`, `x[mask, 1]`). Eager reads and writes and static
//! shape inference share this resolution of a key.
//!
//! Integer tensors pick along one dim each; a bool mask of k dims picks along k
//! dims, as the k coordinate arrays of its true elements. When a key holds index
//! tensors, its ints and bool scalars count as advanced indices too (0-d arrays),
//! as in numpy. All advanced indices broadcast together to one shape B. When they
//! are adjacent in the key, B takes their place in the result; when something
//! separates them (a slice, `None`, an `...` of at least one dim), B comes first:
//! `x[:, [0, 1], :, 0]` of a (2, 3, 4, 5) tensor is (2, 2, 4), as numpy gives
//! (PyTorch applies the int first and gives (2, 2, 4) as well, but `x[0, :, [0, 1]]`
//! is (2, 4) here and in numpy, (4, 2) in PyTorch).
//!
//! The key is resolved into a basic view `V` of `x` (each advanced index replaced
//! by full slices) and a row plan (`kernels::gather::Rows`): one row per position
//! of the dims before B and of B, each a block over the dims after.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::PartialShape;
use crate::kernels::gather::Rows;
use crate::op::IndexItem;
use crate::shape::{contiguous_strides, fmt_shape};
use crate::tensor::Tensor;

/// What an index value below zero means.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Negatives {
    /// Counts from the end, as Python and numpy (`x[[-1]]`, `take`).
    Wrap,
    /// Is out of bounds, as torch's `gather`, `index_select` and TF's `gather` say.
    Refuse,
}

/// How an index tensor indexes, by its dtype.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TensorKind {
    /// int64 or int32: picks along one dim.
    Ints,
    /// bool (or uint8, which torch reads as a mask): picks along its rank of dims (None: not known yet).
    Mask(Option<usize>),
}

impl TensorKind {
    pub fn of(dtype: DType, rank: Option<usize>) -> Result<TensorKind> {
        match dtype {
            DType::I64 | DType::I32 => Ok(TensorKind::Ints),
            DType::Bool | DType::U8 => Ok(TensorKind::Mask(rank)),
            other => Err(Error::Index(format!(
                "tensors used as indices must be long, int, byte or bool tensors, got a {} tensor; convert it \
                 with .long()",
                other.name()
            ))),
        }
    }
}

/// Where an advanced index's values come from.
#[derive(Copy, Clone, Debug)]
enum Source {
    Int(isize),
    /// Index tensor `j`, an integer one.
    Ints(usize),
    /// Coordinate `dim` of the true elements of mask `j`.
    MaskDim {
        mask: usize,
        dim: usize,
    },
    /// A bool scalar: one position (true) or none (false), indexing no dim.
    Flag(bool),
    /// A 0-d mask `j`: a flag whose value is known when the mask is.
    ZeroDimMask(usize),
}

/// One advanced index: its values, the dim of `V` it picks along (None for flags)
/// and the dim of `x` that is (for error messages).
#[derive(Copy, Clone, Debug)]
struct Entry {
    source: Source,
    dim: Option<(usize, usize)>,
}

/// A key resolved against a rank: the basic key of `V` and the advanced indices.
#[derive(Debug)]
struct Resolved {
    basic: Vec<IndexItem>,
    entries: Vec<Entry>,
    /// Whether the advanced indices are adjacent in the key (then B goes at `insert_at`).
    adjacent: bool,
    /// The number of dims of `V` before the first advanced index.
    insert_at: usize,
}

fn full() -> IndexItem {
    IndexItem::Slice { start: None, stop: None, step: 1 }
}

/// Resolves `items` against a tensor of `rank` whose index tensors index as `kinds`
/// say; None when a mask's rank is not known yet.
fn resolve(items: &[IndexItem], rank: usize, kinds: &[TensorKind]) -> Result<Option<Resolved>> {
    super::check_key(items)?;
    let mut tensors = kinds.iter();
    let mut consumed = 0;
    for item in items {
        consumed += match item {
            IndexItem::Int(_) | IndexItem::Slice { .. } => 1,
            IndexItem::Tensor => match tensors.next() {
                Some(TensorKind::Ints) => 1,
                Some(TensorKind::Mask(Some(k))) => *k,
                Some(TensorKind::Mask(None)) => return Ok(None),
                None => return Err(Error::Internal("advanced index: fewer index tensors than the key names".into())),
            },
            _ => 0,
        };
    }
    if consumed > rank {
        return Err(Error::Index(format!("too many indices for tensor of dimension {rank} (got {consumed})")));
    }
    let mut r = Resolved { basic: Vec::new(), entries: Vec::new(), adjacent: true, insert_at: 0 };
    let (mut x_dim, mut v_dim, mut position, mut tensor) = (0, 0, 0, 0);
    let mut advanced_positions = Vec::new();
    let push = |r: &mut Resolved, source: Source, picks: bool, x_dim: &mut usize, v_dim: &mut usize| {
        if picks {
            r.basic.push(full());
            r.entries.push(Entry { source, dim: Some((*v_dim, *x_dim)) });
            *x_dim += 1;
            *v_dim += 1;
        } else {
            r.entries.push(Entry { source, dim: None });
        }
    };
    for item in items {
        let first_advanced = advanced_positions.is_empty();
        match *item {
            IndexItem::Slice { .. } => {
                r.basic.push(item.clone());
                (x_dim, v_dim, position) = (x_dim + 1, v_dim + 1, position + 1);
                continue;
            }
            IndexItem::NewAxis => {
                r.basic.push(IndexItem::NewAxis);
                (v_dim, position) = (v_dim + 1, position + 1);
                continue;
            }
            IndexItem::Ellipsis => {
                for _ in consumed..rank {
                    r.basic.push(full());
                    (x_dim, v_dim, position) = (x_dim + 1, v_dim + 1, position + 1);
                }
                continue;
            }
            _ if first_advanced => r.insert_at = v_dim,
            _ => {}
        }
        match *item {
            IndexItem::Int(i) => push(&mut r, Source::Int(i), true, &mut x_dim, &mut v_dim),
            IndexItem::Bool(b) => push(&mut r, Source::Flag(b), false, &mut x_dim, &mut v_dim),
            IndexItem::Tensor => {
                match kinds[tensor] {
                    TensorKind::Ints => push(&mut r, Source::Ints(tensor), true, &mut x_dim, &mut v_dim),
                    TensorKind::Mask(Some(0)) => {
                        push(&mut r, Source::ZeroDimMask(tensor), false, &mut x_dim, &mut v_dim)
                    }
                    TensorKind::Mask(k) => {
                        for dim in 0..k.unwrap_or(0) {
                            push(&mut r, Source::MaskDim { mask: tensor, dim }, true, &mut x_dim, &mut v_dim);
                        }
                    }
                }
                tensor += 1;
            }
            _ => {}
        }
        advanced_positions.push(position);
        position += 1;
    }
    r.adjacent = advanced_positions.windows(2).all(|w| w[1] == w[0] + 1);
    Ok(Some(r))
}

/// The error for an index outside its dim, as torch words it (`op` empty: indexing).
pub fn out_of_bounds(op: &str, index: i64, dim: usize, size: usize) -> Error {
    let prefix = if op.is_empty() { String::new() } else { format!("{op}: ") };
    Error::Index(format!("{prefix}index {index} is out of bounds for dimension {dim} with size {size}"))
}

/// `index` as a position in a dim of `size`, or the out-of-bounds error.
pub fn checked_index(op: &str, index: i64, dim: usize, size: usize, negatives: Negatives) -> Result<usize> {
    let n = i64::try_from(size).unwrap_or(i64::MAX);
    let j = if index < 0 && negatives == Negatives::Wrap { index.saturating_add(n) } else { index };
    if j < 0 || j >= n {
        return Err(out_of_bounds(op, index, dim, size));
    }
    Ok(j as usize)
}

/// The values of an int64 or int32 index tensor, row-major.
pub fn index_values(t: &Tensor, op: &str) -> Result<Vec<i64>> {
    match t.dtype() {
        DType::I64 => t.to_vec::<i64>(),
        DType::I32 => Ok(t.to_vec::<i32>()?.into_iter().map(i64::from).collect()),
        other => Err(Error::DType(format!(
            "{op}: expected an int64 or int32 index tensor, got {}; convert it with .long()",
            other.name()
        ))),
    }
}

/// The shapes of several advanced indices broadcast together; None when one is unknown.
fn broadcast_all(shapes: &[PartialShape]) -> Result<PartialShape> {
    let known: Option<Vec<&Vec<Option<usize>>>> = shapes.iter().map(Option::as_ref).collect();
    let Some(known) = known else { return Ok(None) };
    let rank = known.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![Some(1); rank];
    for shape in &known {
        for (slot, &size) in out[rank - shape.len()..].iter_mut().zip(shape.iter()) {
            *slot = match (*slot, size) {
                (Some(1), other) | (other, Some(1)) => other,
                (Some(a), Some(b)) if a != b => {
                    let text: Vec<String> = shapes.iter().map(torch_style).collect();
                    return Err(Error::Index(format!(
                        "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                        text.join(", ")
                    )));
                }
                (Some(a), _) | (_, Some(a)) => Some(a),
                (None, None) => None,
            };
        }
    }
    Ok(Some(out))
}

/// A shape as torch writes it in index errors (`[2, 3]`), with `?` for a size not known yet.
fn torch_style(shape: &PartialShape) -> String {
    match shape {
        None => "[?]".to_string(),
        Some(dims) => {
            let sizes: Vec<String> = dims.iter().map(|d| d.map_or("?".to_string(), |n| n.to_string())).collect();
            format!("[{}]", sizes.join(", "))
        }
    }
}

/// `x[key]` as a row plan over x's storage, and the result's shape.
pub struct Plan {
    pub shape: Vec<usize>,
    pub rows: Rows,
}

/// A mask's true coordinates, checked against the dims of `x` it covers.
fn mask_coordinates(mask: &Tensor, x_shape: &[usize], first_dim: usize) -> Result<(usize, Vec<i64>)> {
    let covered = &x_shape[first_dim..first_dim + mask.rank()];
    if mask.shape() != covered {
        return Err(Error::Index(format!(
            "The shape of the mask {} at index {first_dim} does not match the shape of the indexed tensor {} at \
             index {first_dim}",
            fmt_shape(mask.shape()),
            fmt_shape(covered)
        )));
    }
    Ok(match mask.dtype() {
        DType::U8 => mask.with_contiguous(|s: &[u8]| crate::kernels::gather::nonzero(s, mask.shape()))?,
        _ => mask.with_contiguous(|s: &[bool]| crate::kernels::gather::nonzero(s, mask.shape()))?,
    })
}

/// One advanced index made concrete: its shape, and its values (for those that pick).
struct Concrete {
    shape: Vec<usize>,
    values: Vec<i64>,
}

fn concrete(
    entry: &Entry,
    tensors: &[&Tensor],
    masks: &mut [Option<(usize, Vec<i64>)>],
    x_shape: &[usize],
) -> Result<Concrete> {
    Ok(match entry.source {
        Source::Int(i) => Concrete { shape: vec![], values: vec![i as i64] },
        Source::Ints(j) => Concrete { shape: tensors[j].shape().to_vec(), values: index_values(tensors[j], "index")? },
        Source::MaskDim { mask, dim } => {
            let (_, x_dim) = entry.dim.unwrap_or_default();
            if masks[mask].is_none() {
                masks[mask] = Some(mask_coordinates(tensors[mask], x_shape, x_dim - dim)?);
            }
            let (count, coords) = masks[mask].as_ref().map(|(c, v)| (*c, v.as_slice())).unwrap_or((0, &[]));
            let rank = tensors[mask].rank();
            Concrete { shape: vec![count], values: (0..count).map(|k| coords[k * rank + dim]).collect() }
        }
        Source::Flag(b) => Concrete { shape: vec![b as usize], values: vec![] },
        Source::ZeroDimMask(j) => {
            Concrete { shape: vec![(tensors[j].to_f64_vec()[0] != 0.0) as usize], values: vec![] }
        }
    })
}

/// The plan of `x[items]` for `x` of this layout, with `tensors` the key's index tensors in order.
pub fn plan(
    shape: &[usize],
    strides: &[isize],
    offset: usize,
    items: &[IndexItem],
    tensors: &[&Tensor],
    negatives: Negatives,
) -> Result<Plan> {
    let kinds: Vec<TensorKind> =
        tensors.iter().map(|t| TensorKind::of(t.dtype(), Some(t.rank()))).collect::<Result<_>>()?;
    let resolved = resolve(items, shape.len(), &kinds)?
        .ok_or_else(|| Error::Internal("advanced index: a concrete mask without a rank".into()))?;
    let (v_shape, v_strides, v_offset) = super::layout(shape, strides, offset, &resolved.basic)?;
    let mut masks = vec![None; tensors.len()];
    let parts: Vec<Concrete> =
        resolved.entries.iter().map(|e| concrete(e, tensors, &mut masks, shape)).collect::<Result<_>>()?;
    let b_shape: Vec<usize> = broadcast_all(&parts.iter().map(|p| crate::graph::known(&p.shape)).collect::<Vec<_>>())?
        .unwrap_or_default()
        .into_iter()
        .map(|d| d.unwrap_or(0))
        .collect();
    // Each position of B: the sum over the advanced indices of index · stride.
    let b_len: usize = b_shape.iter().product();
    let mut b_offsets = vec![0isize; b_len];
    for (entry, part) in resolved.entries.iter().zip(&parts) {
        let Some((v_dim, x_dim)) = entry.dim else { continue };
        let size = v_shape[v_dim];
        let positions: Vec<isize> = part
            .values
            .iter()
            .map(|&i| checked_index("", i, x_dim, size, negatives).map(|j| j as isize * v_strides[v_dim]))
            .collect::<Result<_>>()?;
        let spread = crate::shape::broadcast_strides(&part.shape, &contiguous_strides(&part.shape), &b_shape);
        let mut next = b_offsets.iter_mut();
        crate::kernels::layout::walk(&b_shape, [&spread], [0], |[k]| {
            if let Some(slot) = next.next() {
                *slot += positions[k];
            }
        });
    }
    let picked: Vec<usize> = resolved.entries.iter().filter_map(|e| e.dim.map(|(v, _)| v)).collect();
    let kept: Vec<usize> = (0..v_shape.len()).filter(|d| !picked.contains(d)).collect();
    let split = if resolved.adjacent { kept.iter().take_while(|&&d| d < resolved.insert_at).count() } else { 0 };
    let (outer, inner) = kept.split_at(split);
    let sizes = |dims: &[usize]| dims.iter().map(|&d| v_shape[d]).collect::<Vec<usize>>();
    let out_shape: Vec<usize> = [sizes(outer), b_shape.clone(), sizes(inner)].concat();
    let mut rows = Rows {
        starts: Vec::new(),
        block_shape: sizes(inner),
        block_strides: inner.iter().map(|&d| v_strides[d]).collect(),
    };
    if out_shape.iter().product::<usize>() > 0 {
        let outer_strides: Vec<isize> = outer.iter().map(|&d| v_strides[d]).collect();
        let base = isize::try_from(v_offset).map_err(|_| Error::Index("index: the offset overflows".into()))?;
        rows.starts.reserve(sizes(outer).iter().product::<usize>() * b_len);
        let mut starts = Ok(());
        crate::kernels::layout::walk(&sizes(outer), [&outer_strides], [base as usize], |[o]| {
            for &b in &b_offsets {
                match usize::try_from(o as isize + b) {
                    Ok(start) => rows.starts.push(start),
                    Err(_) => starts = Err(Error::Internal("advanced index: a row starts before its storage".into())),
                }
            }
        });
        starts?;
    }
    Ok(Plan { shape: out_shape, rows })
}

/// The shape of `x[items]` in a static graph, where some sizes (and the number of
/// true elements of masks) are known only at run time. `tensors` are the index
/// tensors' shapes and dtypes; what is known is checked here.
pub fn partial_shape(
    x: &PartialShape,
    items: &[IndexItem],
    tensors: &[(&PartialShape, DType)],
) -> Result<PartialShape> {
    let kinds: Vec<TensorKind> =
        tensors.iter().map(|(s, d)| TensorKind::of(*d, s.as_ref().map(Vec::len))).collect::<Result<_>>()?;
    super::check_key(items)?;
    let Some(dims) = x else { return Ok(None) };
    let Some(resolved) = resolve(items, dims.len(), &kinds)? else { return Ok(None) };
    let v = super::partial_shape(dims, &resolved.basic)?;
    let mut shapes = Vec::with_capacity(resolved.entries.len());
    for entry in &resolved.entries {
        shapes.push(match entry.source {
            Source::Int(i) => {
                if let Some((_, x_dim)) = entry.dim {
                    if let Some(size) = dims[x_dim] {
                        checked_index("", i as i64, x_dim, size, Negatives::Wrap)?;
                    }
                }
                Some(vec![])
            }
            Source::Ints(j) => tensors[j].0.clone(),
            Source::MaskDim { mask, dim } => {
                if dim == 0 {
                    check_mask_dims(tensors[mask].0, dims, entry.dim.map_or(0, |(_, x)| x))?;
                }
                Some(vec![None])
            }
            Source::Flag(b) => Some(vec![Some(b as usize)]),
            Source::ZeroDimMask(_) => Some(vec![None]),
        });
    }
    let Some(b) = broadcast_all(&shapes)? else { return Ok(None) };
    let picked: Vec<usize> = resolved.entries.iter().filter_map(|e| e.dim.map(|(v, _)| v)).collect();
    let kept: Vec<Option<usize>> =
        v.iter().enumerate().filter(|(d, _)| !picked.contains(d)).map(|(_, &size)| size).collect();
    let split = if resolved.adjacent {
        (0..v.len()).filter(|d| !picked.contains(d) && *d < resolved.insert_at).count()
    } else {
        0
    };
    Ok(Some([&kept[..split], &b[..], &kept[split..]].concat()))
}

/// A mask's known dims against the known dims of `x` it covers.
fn check_mask_dims(mask: &PartialShape, x: &[Option<usize>], first_dim: usize) -> Result<()> {
    let Some(m) = mask else { return Ok(()) };
    let covered = &x[first_dim..first_dim + m.len()];
    let clash = m.iter().zip(covered).any(|(a, b)| matches!((a, b), (Some(p), Some(q)) if p != q));
    if clash {
        return Err(Error::Index(format!(
            "The shape of the mask {} at index {first_dim} does not match the shape of the indexed tensor {} at \
             index {first_dim}",
            torch_style(mask),
            torch_style(&Some(covered.to_vec()))
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape_of(shape: &[usize], items: &[IndexItem], index_shapes: &[&[usize]]) -> Vec<usize> {
        let tensors: Vec<Tensor> = index_shapes.iter().map(|s| Tensor::zeros(s, DType::I64).unwrap()).collect();
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let strides = contiguous_strides(shape);
        plan(shape, &strides, 0, items, &refs, Negatives::Wrap).unwrap().shape
    }

    #[test]
    fn adjacent_indices_stay_in_place_and_separated_ones_go_first() {
        use IndexItem::{Int, NewAxis, Tensor as T};
        let s = full();
        assert_eq!(shape_of(&[2, 3, 4], &[s.clone(), T], &[&[5]]), vec![2, 5, 4]);
        assert_eq!(shape_of(&[2, 3, 4], &[s.clone(), T, T], &[&[5], &[1]]), vec![2, 5]);
        assert_eq!(shape_of(&[2, 3, 4], &[T, s.clone(), T], &[&[5], &[1]]), vec![5, 3]);
        assert_eq!(shape_of(&[2, 3, 4], &[Int(0), s.clone(), T], &[&[2]]), vec![2, 3]);
        assert_eq!(shape_of(&[2, 3], &[T, NewAxis, T], &[&[1], &[1]]), vec![1, 1]);
        assert_eq!(shape_of(&[2, 3], &[T, IndexItem::Ellipsis, T], &[&[1], &[1]]), vec![1]);
        assert_eq!(shape_of(&[2, 3, 4], &[T, IndexItem::Ellipsis, T], &[&[1], &[1]]), vec![1, 3]);
    }

    #[test]
    fn indices_out_of_bounds_name_the_dim_and_its_size() {
        let index = Tensor::from_vec(vec![5i64], &[1usize][..]).unwrap();
        let err = plan(&[3], &[1], 0, &[IndexItem::Tensor], &[&index], Negatives::Wrap).err().unwrap();
        assert_eq!(err.to_string(), "index 5 is out of bounds for dimension 0 with size 3");
    }

    #[test]
    fn unknown_mask_counts_are_unknown_dims() {
        let x: PartialShape = Some(vec![Some(2), Some(3), None]);
        let mask: PartialShape = Some(vec![Some(2), None]);
        let out = partial_shape(&x, &[IndexItem::Tensor], &[(&mask, DType::Bool)]).unwrap();
        assert_eq!(out, Some(vec![None, None]));
    }
}
