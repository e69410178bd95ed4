//! Which elements each index op reads or writes: a [`Pick`] turned into a row plan
//! (`kernels::gather::Rows`) against a tensor's layout and the op's index tensors,
//! or into a static shape. Every index is bounds-checked here, before any kernel runs.

use super::{nth, Meta};
use crate::dtype::DType;
use crate::error::{dtype_err, Error, Result};
use crate::graph::{fmt_partial, PartialShape};
use crate::indexing::advanced::{self, checked_index, index_values, Negatives, Plan};
use crate::kernels::gather::Rows;
use crate::op::IndexItem;
use crate::shape::{fmt_shape, normalize_dim};
use crate::tensor::Tensor;

/// Which elements an index op reads or writes.
#[derive(Clone, Debug, PartialEq)]
pub enum Pick {
    /// `x[key]`, numpy's advanced indexing (negative indices count from the end).
    Key(Vec<IndexItem>),
    /// `index_select`, `index_add` and TF's `gather`: whole slices along `dim`, for an
    /// index of any shape. The first `batch_dims` dims (from the index's end when
    /// negative) are shared by `x` and the index; `dim` None is `batch_dims`, as TF's.
    /// `scalar_as_vector`: a 0-d index keeps the dim, with size 1 (torch's `index_select`).
    Along { dim: Option<isize>, batch_dims: isize, scalar_as_vector: bool },
    /// `take`: elements of `x` as if flattened (negative indices count from the end).
    Flat,
    /// torch's `gather` and `scatter`: one element along `dim` per index element, for
    /// an index of x's rank.
    Elementwise { dim: isize },
    /// TF's `gather_nd` and `scatter_nd`: the index's last dim holds coordinates into
    /// x's dims after the first `batch_dims`, which x and the index share.
    Nd { batch_dims: isize },
    /// TF's `boolean_mask`: a bool mask over x's dims from `axis` on.
    Mask { axis: isize },
}

/// The rows of `x` (of its layout) that `pick` names, and their shape.
pub fn plan(op: &str, pick: &Pick, x: &Tensor, indices: &[&Tensor]) -> Result<Plan> {
    let (shape, strides, offset) = (x.shape(), x.strides(), x.offset());
    let layout = Layout { shape, strides, offset };
    match pick {
        Pick::Key(items) => advanced::plan(shape, strides, offset, items, indices, Negatives::Wrap),
        Pick::Mask { axis } => {
            let items = mask_key(op, *axis, shape.len())?;
            advanced::plan(shape, strides, offset, &items, indices, Negatives::Wrap)
        }
        Pick::Along { dim, batch_dims, scalar_as_vector } => {
            along(op, layout, *dim, *batch_dims, *scalar_as_vector, index(indices, op)?)
        }
        Pick::Flat => flat(op, layout, index(indices, op)?),
        Pick::Elementwise { dim } => elementwise(op, layout, *dim, index(indices, op)?),
        Pick::Nd { batch_dims } => nd(op, layout, *batch_dims, index(indices, op)?),
    }
}

#[derive(Copy, Clone)]
struct Layout<'a> {
    shape: &'a [usize],
    strides: &'a [isize],
    offset: usize,
}

fn index<'a>(indices: &[&'a Tensor], op: &str) -> Result<&'a Tensor> {
    nth(indices, 0, op).copied()
}

/// The key `x[:, ..., :, mask]` of a mask from dim `axis` on.
fn mask_key(op: &str, axis: isize, rank: usize) -> Result<Vec<IndexItem>> {
    let axis = if axis < 0 { axis + rank as isize } else { axis };
    if axis < 0 || axis as usize > rank {
        return Err(Error::Index(format!("{op}: axis {axis} is out of range for a tensor of rank {rank}")));
    }
    let mut items = vec![IndexItem::Slice { start: None, stop: None, step: 1 }; axis as usize];
    items.push(IndexItem::Tensor);
    Ok(items)
}

/// The storage offsets of the elements of a block of `shape`, row-major, from `base`.
fn offsets(shape: &[usize], strides: &[isize], base: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(shape.iter().product());
    crate::kernels::layout::walk(shape, [strides], [base], |[i]| out.push(i));
    out
}

/// A possibly negative `batch_dims` counted against the index's rank.
fn batch_count(op: &str, batch_dims: isize, index_rank: usize) -> Result<usize> {
    let b = if batch_dims < 0 { batch_dims + index_rank as isize } else { batch_dims };
    usize::try_from(b).map_err(|_| {
        Error::InvalidArgument(format!(
            "{op}: batch_dims {batch_dims} is out of range for indices of rank {index_rank}"
        ))
    })
}

fn along(op: &str, x: Layout<'_>, dim: Option<isize>, batch_dims: isize, scalar: bool, index: &Tensor) -> Result<Plan> {
    let index_shape = if scalar && index.rank() == 0 { &[1usize][..] } else { index.shape() };
    let (axis, batch) = along_dims(op, &known(x.shape), dim, batch_dims, &known(index_shape))?;
    if x.shape[..batch] != index_shape[..batch] {
        return Err(Error::Shape(format!(
            "{op}: the first {batch} dims of params {} and indices {} must be equal (batch_dims)",
            fmt_shape(x.shape),
            fmt_shape(index_shape)
        )));
    }
    let values = index_values(index, op)?;
    let (size, stride) = (x.shape[axis], x.strides[axis]);
    let picks: Vec<isize> = values
        .iter()
        .map(|&i| checked_index(op, i, axis, size, Negatives::Refuse).map(|j| j as isize * stride))
        .collect::<Result<_>>()?;
    let out_shape = [&x.shape[..axis], &index_shape[batch..], &x.shape[axis + 1..]].concat();
    let block_shape = x.shape[axis + 1..].to_vec();
    let mut rows = Rows { starts: Vec::new(), block_shape, block_strides: x.strides[axis + 1..].to_vec() };
    if out_shape.iter().product::<usize>() > 0 {
        let per_batch = values.len() / x.shape[..batch].iter().product::<usize>().max(1);
        let batches = offsets(&x.shape[..batch], &x.strides[..batch], x.offset);
        for (b, &start) in batches.iter().enumerate() {
            let chosen = &picks[b * per_batch..(b + 1) * per_batch];
            for o in offsets(&x.shape[batch..axis], &x.strides[batch..axis], start) {
                rows.starts.extend(chosen.iter().map(|&p| o.wrapping_add_signed(p)));
            }
        }
    }
    Ok(Plan { shape: out_shape, rows })
}

fn known(shape: &[usize]) -> Vec<Option<usize>> {
    shape.iter().map(|&d| Some(d)).collect()
}

/// The axis and the number of batch dims of an `Along` pick, checked as TF checks them.
fn along_dims(
    op: &str,
    x: &[Option<usize>],
    dim: Option<isize>,
    batch_dims: isize,
    index: &[Option<usize>],
) -> Result<(usize, usize)> {
    if x.is_empty() {
        return Err(Error::Index(format!("{op}: the input must have at least one dimension, got a 0-d tensor")));
    }
    let batch = batch_count(op, batch_dims, index.len())?;
    let axis = normalize_dim(op, dim.unwrap_or(batch as isize), x.len())?;
    if batch > axis || batch > index.len() {
        return Err(Error::InvalidArgument(format!(
            "{op}: batch_dims ({batch}) must be at most the axis ({axis}) and the rank of the indices ({})",
            index.len()
        )));
    }
    Ok((axis, batch))
}

fn flat(op: &str, x: Layout<'_>, index: &Tensor) -> Result<Plan> {
    let numel: usize = x.shape.iter().product();
    let n = i64::try_from(numel).unwrap_or(i64::MAX);
    let all = offsets(x.shape, x.strides, x.offset);
    let starts = index_values(index, op)?
        .into_iter()
        .map(|i| {
            let j = if i < 0 { i.saturating_add(n) } else { i };
            if j < 0 || j >= n {
                return Err(Error::Index(format!("{op}: index {i} is out of bounds for a tensor of {numel} elements")));
            }
            Ok(all[j as usize])
        })
        .collect::<Result<Vec<usize>>>()?;
    Ok(Plan { shape: index.shape().to_vec(), rows: Rows { starts, block_shape: vec![], block_strides: vec![] } })
}

fn elementwise(op: &str, x: Layout<'_>, dim: isize, index: &Tensor) -> Result<Plan> {
    // A 0-d input (and index) is one element along a dim of size 1.
    let (shape, strides) = if x.shape.is_empty() { (&[1usize][..], &[0isize][..]) } else { (x.shape, x.strides) };
    let index_shape = if index.rank() == 0 { &[1usize][..] } else { index.shape() };
    let axis = normalize_dim(op, dim, shape.len())?;
    check_elementwise_shapes(op, &known(shape), &known(index_shape), axis)?;
    let values = index_values(index, op)?;
    let mut along_axis = strides.to_vec();
    along_axis[axis] = 0;
    let bases = offsets(index_shape, &along_axis, x.offset);
    let starts = values
        .iter()
        .zip(bases)
        .map(|(&i, base)| {
            let j = checked_index(op, i, axis, shape[axis], Negatives::Refuse)?;
            Ok(base.wrapping_add_signed(j as isize * strides[axis]))
        })
        .collect::<Result<Vec<usize>>>()?;
    Ok(Plan { shape: index.shape().to_vec(), rows: Rows { starts, block_shape: vec![], block_strides: vec![] } })
}

/// torch's rule for `gather` and `scatter`: the index has the input's rank and is no
/// larger than it in any dim but `axis` (checked where sizes are known).
pub fn check_elementwise_shapes(op: &str, x: &[Option<usize>], index: &[Option<usize>], axis: usize) -> Result<()> {
    let text = |s: &[Option<usize>]| fmt_partial(&Some(s.to_vec()));
    if index.len() != x.len() {
        return Err(Error::Shape(format!(
            "{op}: Index tensor must have the same number of dimensions as input tensor (index {}, input {})",
            text(index),
            text(x)
        )));
    }
    let larger = |d: usize| matches!((index[d], x[d]), (Some(i), Some(s)) if i > s);
    if let Some(d) = (0..x.len()).find(|&d| d != axis && larger(d)) {
        return Err(Error::Shape(format!(
            "{op}: Size does not match at dimension {d} expected index {} to be smaller than self {} apart from \
             dimension {axis}",
            text(index),
            text(x)
        )));
    }
    Ok(())
}

fn nd(op: &str, x: Layout<'_>, batch_dims: isize, index: &Tensor) -> Result<Plan> {
    let (k, batch) = nd_dims(op, &known(x.shape), batch_dims, &known(index.shape()))?;
    let k = k.unwrap_or(0); // invariant: a concrete index has a known last dim
    if x.shape[..batch] != index.shape()[..batch] {
        return Err(Error::Shape(format!(
            "{op}: the first {batch} dims of params {} and indices {} must be equal (batch_dims)",
            fmt_shape(x.shape),
            fmt_shape(index.shape())
        )));
    }
    let values = index_values(index, op)?;
    let outer = &index.shape()[..index.rank() - 1];
    let per_batch: usize = outer[batch..].iter().product();
    let batches = offsets(&x.shape[..batch], &x.strides[..batch], x.offset);
    let rows: usize = outer.iter().product();
    let mut starts = Vec::with_capacity(rows);
    for row in 0..rows {
        let mut start = batches[row / per_batch.max(1)] as isize;
        for (j, &i) in values[row * k..(row + 1) * k].iter().enumerate() {
            let d = batch + j;
            start += checked_index(op, i, d, x.shape[d], Negatives::Refuse)? as isize * x.strides[d];
        }
        starts.push(start as usize);
    }
    let block = batch + k;
    let out_shape = [outer, &x.shape[block..]].concat();
    let block_shape = x.shape[block..].to_vec();
    Ok(Plan { shape: out_shape, rows: Rows { starts, block_shape, block_strides: x.strides[block..].to_vec() } })
}

/// The coordinates per index row (None: unknown yet) and the batch dims of an `Nd` pick.
fn nd_dims(
    op: &str,
    x: &[Option<usize>],
    batch_dims: isize,
    index: &[Option<usize>],
) -> Result<(Option<usize>, usize)> {
    let Some(&k) = index.last() else {
        return Err(Error::Index(format!("{op}: indices must have at least one dimension, got a 0-d tensor")));
    };
    let batch = batch_count(op, batch_dims, index.len() - 1)?;
    if batch >= index.len() || batch > x.len() {
        return Err(Error::InvalidArgument(format!(
            "{op}: batch_dims ({batch}) must be less than the rank of indices ({}) and at most the rank of params \
             ({})",
            index.len(),
            x.len()
        )));
    }
    if let Some(k) = k {
        if batch + k > x.len() {
            return Err(Error::Index(format!(
                "{op}: index innermost dimension length must be <= params rank; saw: {k} vs. {}",
                x.len() - batch
            )));
        }
    }
    Ok((k, batch))
}

/// The static shape of what `pick` names in `x`, given the index tensors' metadata.
pub fn infer_pick(op: &str, pick: &Pick, x: &PartialShape, indices: &[Meta<'_>]) -> Result<PartialShape> {
    match pick {
        Pick::Key(items) => return advanced::partial_shape(x, items, indices),
        Pick::Mask { axis } => {
            let (_, dtype) = *nth(indices, 0, op)?;
            if dtype != DType::Bool {
                return dtype_err(format!("{op}: the mask must be a bool tensor, got {}", dtype.name()));
            }
            let Some(dims) = x else { return Ok(None) };
            return advanced::partial_shape(x, &mask_key(op, *axis, dims.len())?, indices);
        }
        _ => {}
    }
    let (index, dtype) = *nth(indices, 0, op)?;
    check_index_dtype(op, dtype)?;
    let (Some(x), Some(index)) = (x, index) else { return Ok(None) };
    Ok(Some(match pick {
        Pick::Along { dim, batch_dims, scalar_as_vector } => {
            let index = if *scalar_as_vector && index.is_empty() { vec![Some(1)] } else { index.clone() };
            let (axis, batch) = along_dims(op, x, *dim, *batch_dims, &index)?;
            [&x[..axis], &index[batch..], &x[axis + 1..]].concat()
        }
        Pick::Flat => index.clone(),
        Pick::Elementwise { dim } => {
            let (xs, is) = (pad_scalar(x), pad_scalar(index));
            check_elementwise_shapes(op, &xs, &is, normalize_dim(op, *dim, xs.len())?)?;
            index.clone()
        }
        Pick::Nd { batch_dims } => match nd_dims(op, x, *batch_dims, index)? {
            (Some(k), batch) => [&index[..index.len() - 1], &x[batch + k..]].concat(),
            (None, _) => return Ok(None),
        },
        Pick::Key(_) | Pick::Mask { .. } => return Ok(None),
    }))
}

fn pad_scalar(shape: &[Option<usize>]) -> Vec<Option<usize>> {
    if shape.is_empty() {
        vec![Some(1)]
    } else {
        shape.to_vec()
    }
}

/// Index tensors are int64 or int32.
pub fn check_index_dtype(op: &str, dtype: DType) -> Result<()> {
    match dtype {
        DType::I64 | DType::I32 => Ok(()),
        other => dtype_err(format!("{op}: expected an int64 or int32 index tensor, got {}", other.name())),
    }
}
