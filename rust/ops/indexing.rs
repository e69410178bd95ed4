//! Picking and putting elements by index tensors: the machinery under advanced
//! indexing (`x[idx]`, `x[idx] = v`) and the index ops of `gather.rs` and `nd.rs`.
//!
//! A [`Pick`] says which elements an op reads (or writes), given its input's layout
//! and its index tensors, as a row plan (`kernels::gather::Rows`). Two internal ops
//! serve every index op's derivative rule and item assignment:
//! - `pick_rows(x, indices...)`: the elements of `x` a `Pick` names;
//! - `put_rows(base, values, indices...)`: `base` (or zeros of its shape) with `values`
//!   written (or added) where the `Pick` says. Adding is deterministic: an element
//!   named several times takes its values in order, at every thread count.

use super::{internal, no_double_backward, nth, Args, Meta, Spec, TableOp, TableOps};
use crate::dtype::{dispatch, numeric_dispatch, DType, Number};
use crate::error::{dtype_err, Error, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::indexing::advanced::{self, checked_index, index_values, Negatives, Plan};
use crate::kernels::gather::{self as kernel, Rows};
use crate::op::{IndexItem, Op};
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::{broadcast_shapes, fmt_shape, normalize_dim};
use crate::storage::Element;
use crate::tensor::Tensor;

/// Which elements an index op reads or writes.
#[derive(Clone, Debug, PartialEq)]
pub enum Pick {
    /// `x[key]`, numpy's advanced indexing (negative indices count from the end).
    Key(Vec<IndexItem>),
    /// `index_select` and TF's `gather`: whole slices along `dim`, the index of any
    /// shape; the first `batch_dims` dims are shared by `x` and the index.
    Along { dim: isize, batch_dims: usize },
    /// `take`: elements of `x` as if flattened (negative indices count from the end).
    Flat,
    /// torch's `gather`: one element along `dim` per index element, the index of x's rank.
    Elementwise { dim: isize },
    /// TF's `gather_nd`: the index's last dim holds coordinates into x's leading dims.
    Nd,
}

/// The rows of `x` (of this layout) that `pick` names, and their shape.
pub fn plan(op: &str, pick: &Pick, x: &Tensor, indices: &[&Tensor]) -> Result<Plan> {
    let (shape, strides, offset) = (x.shape(), x.strides(), x.offset());
    match pick {
        Pick::Key(items) => advanced::plan(shape, strides, offset, items, indices, Negatives::Wrap),
        Pick::Along { dim, batch_dims } => along(op, shape, strides, offset, *dim, *batch_dims, index(indices, op)?),
        Pick::Flat => flat(op, shape, strides, offset, index(indices, op)?),
        Pick::Elementwise { dim } => elementwise(op, shape, strides, offset, *dim, index(indices, op)?),
        Pick::Nd => nd(op, shape, strides, offset, index(indices, op)?),
    }
}

fn index<'a>(indices: &[&'a Tensor], op: &str) -> Result<&'a Tensor> {
    nth(indices, 0, op).copied()
}

/// The row-major coordinates' offsets of a block of `shape` with `strides`, from `base`.
fn offsets(shape: &[usize], strides: &[isize], base: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(shape.iter().product());
    crate::kernels::layout::walk(shape, [strides], [base], |[i]| out.push(i));
    out
}

fn along(
    op: &str,
    shape: &[usize],
    strides: &[isize],
    offset: usize,
    dim: isize,
    batch_dims: usize,
    index: &Tensor,
) -> Result<Plan> {
    if shape.is_empty() {
        return Err(Error::Index(format!("{op}: the input must have at least one dimension, got a 0-d tensor")));
    }
    let axis = normalize_dim(op, dim, shape.len())?;
    check_batch_dims(op, shape, index.shape(), axis, batch_dims)?;
    let values = index_values(index, op)?;
    let (size, stride) = (shape[axis], strides[axis]);
    let picks: Vec<isize> = values
        .iter()
        .map(|&i| checked_index(op, i, axis, size, Negatives::Refuse).map(|j| j as isize * stride))
        .collect::<Result<_>>()?;
    let out_shape = [&shape[..axis], &index.shape()[batch_dims..], &shape[axis + 1..]].concat();
    let mut rows = Rows {
        starts: Vec::new(),
        block_shape: shape[axis + 1..].to_vec(),
        block_strides: strides[axis + 1..].to_vec(),
    };
    if out_shape.iter().product::<usize>() > 0 {
        let per_batch = values.len() / shape[..batch_dims].iter().product::<usize>().max(1);
        let batches = offsets(&shape[..batch_dims], &strides[..batch_dims], offset);
        for (b, &batch) in batches.iter().enumerate() {
            let chosen = &picks[b * per_batch..(b + 1) * per_batch];
            for o in offsets(&shape[batch_dims..axis], &strides[batch_dims..axis], batch) {
                rows.starts.extend(chosen.iter().map(|&p| o.wrapping_add_signed(p)));
            }
        }
    }
    Ok(Plan { shape: out_shape, rows })
}

/// TF's rules for `batch_dims`: at most the axis and the index's rank, with the same leading sizes.
fn check_batch_dims(op: &str, shape: &[usize], index: &[usize], axis: usize, batch_dims: usize) -> Result<()> {
    if batch_dims > axis || batch_dims > index.len() {
        return Err(Error::InvalidArgument(format!(
            "{op}: batch_dims ({batch_dims}) must be at most the axis ({axis}) and the rank of the indices ({})",
            index.len()
        )));
    }
    if shape[..batch_dims] != index[..batch_dims] {
        return Err(Error::Shape(format!(
            "{op}: the first {batch_dims} dims of params {} and indices {} must be equal (batch_dims)",
            fmt_shape(shape),
            fmt_shape(index)
        )));
    }
    Ok(())
}

fn flat(op: &str, shape: &[usize], strides: &[isize], offset: usize, index: &Tensor) -> Result<Plan> {
    let numel: usize = shape.iter().product();
    let n = i64::try_from(numel).unwrap_or(i64::MAX);
    let all = offsets(shape, strides, offset);
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

fn elementwise(
    op: &str,
    shape: &[usize],
    strides: &[isize],
    offset: usize,
    dim: isize,
    index: &Tensor,
) -> Result<Plan> {
    // A 0-d input is one element along a dim of size 1.
    let (shape, strides) = if shape.is_empty() { (&[1usize][..], &[0isize][..]) } else { (shape, strides) };
    let axis = normalize_dim(op, dim, shape.len())?;
    let index_shape = if index.rank() == 0 { &[1usize][..] } else { index.shape() };
    check_elementwise_shapes(op, shape, index_shape, axis)?;
    let values = index_values(index, op)?;
    let mut coordinates = offsets(index_shape, &replace(strides, axis, 0), offset).into_iter();
    let starts = values
        .iter()
        .map(|&i| {
            let j = checked_index(op, i, axis, shape[axis], Negatives::Refuse)?;
            let base = coordinates.next().unwrap_or(offset); // invariant: one coordinate per index element
            Ok(base.wrapping_add_signed(j as isize * strides[axis]))
        })
        .collect::<Result<Vec<usize>>>()?;
    Ok(Plan { shape: index.shape().to_vec(), rows: Rows { starts, block_shape: vec![], block_strides: vec![] } })
}

fn replace(strides: &[isize], at: usize, value: isize) -> Vec<isize> {
    let mut out = strides.to_vec();
    out[at] = value;
    out
}

/// torch's rule for `gather` and `scatter`: the index has the input's rank and is no
/// larger than it in any dim but `axis`.
pub fn check_elementwise_shapes(op: &str, shape: &[usize], index: &[usize], axis: usize) -> Result<()> {
    if index.len() != shape.len() {
        return Err(Error::Shape(format!(
            "{op}: Index tensor must have the same number of dimensions as input tensor (index {}, input {})",
            fmt_shape(index),
            fmt_shape(shape)
        )));
    }
    if let Some(d) = (0..shape.len()).find(|&d| d != axis && index[d] > shape[d]) {
        return Err(Error::Shape(format!(
            "{op}: Size does not match at dimension {d} expected index {} to be smaller than self {} apart from \
             dimension {axis}",
            fmt_shape(index),
            fmt_shape(shape)
        )));
    }
    Ok(())
}

fn nd(op: &str, shape: &[usize], strides: &[isize], offset: usize, index: &Tensor) -> Result<Plan> {
    let Some((&k, outer)) = index.shape().split_last() else {
        return Err(Error::Index(format!("{op}: indices must have at least one dimension, got a 0-d tensor")));
    };
    if k > shape.len() {
        return Err(Error::Index(format!(
            "{op}: the last dim of indices ({k}) must be at most the rank of params {}",
            fmt_shape(shape)
        )));
    }
    let values = index_values(index, op)?;
    let starts = values
        .chunks(k.max(1))
        .take(outer.iter().product())
        .map(|coordinates| {
            let mut start = offset as isize;
            for (d, &i) in coordinates.iter().enumerate().take(k) {
                let j = checked_index(op, i, d, shape[d], Negatives::Refuse)?;
                start += j as isize * strides[d];
            }
            Ok(start as usize)
        })
        .collect::<Result<Vec<usize>>>()?;
    let out_shape = [outer, &shape[k..]].concat();
    Ok(Plan {
        shape: out_shape,
        rows: Rows { starts, block_shape: shape[k..].to_vec(), block_strides: strides[k..].to_vec() },
    })
}

/// The elements of `x` that `pick` names, as a new tensor.
pub fn pick(op: &str, which: &Pick, x: &Tensor, indices: &[&Tensor]) -> Result<Tensor> {
    let plan = plan(op, which, x, indices)?;
    crate::storage::ensure_allocatable(&plan.shape, x.dtype())?;
    dispatch!(x.dtype(), |T| {
        let guard = x.storage().read();
        let src = T::slice(&guard).ok_or_else(|| Error::Internal(format!("{op}: internal dtype mismatch")))?;
        let out = kernel::gather(src, &plan.rows)?;
        drop(guard);
        Tensor::from_vec(out, plan.shape)
    })
}

/// How `put` combines a value with the element it lands on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Combine {
    /// Replaces it; of several values for one element, the last wins.
    Set,
    Add,
    Mul,
}

/// Writes `values` (broadcast to the picked shape, cast to dst's dtype) into `dst`'s
/// storage where `pick` says, combined by `combine`.
pub fn put(op: &str, which: &Pick, dst: &Tensor, indices: &[&Tensor], values: &Tensor, combine: Combine) -> Result<()> {
    put_planned(op, &plan(op, which, dst, indices)?, dst, values, combine)
}

/// `put` with the plan already made (against `dst`'s layout).
pub fn put_planned(op: &str, plan: &Plan, dst: &Tensor, values: &Tensor, combine: Combine) -> Result<()> {
    let fits = broadcast_shapes(op, values.shape(), &plan.shape).is_ok_and(|s| s[..] == plan.shape[..]);
    if !fits {
        return Err(Error::Shape(format!(
            "{op}: shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            fmt_shape(values.shape()),
            fmt_shape(&plan.shape)
        )));
    }
    if plan.rows.is_empty() {
        return Ok(());
    }
    // Read the values out before writing: they may share dst's storage.
    let values = forward::as_dtype(values, dst.dtype())?;
    let values = if values.shape() == &plan.shape[..] { values } else { forward::broadcast_to(&values, &plan.shape)? };
    fn write<T: Element>(dst: &Tensor, rows: &Rows, values: &Tensor, f: impl Fn(&mut T, T) + Sync) -> Result<()> {
        let values = values.to_vec::<T>()?;
        let mut guard = dst.storage().write();
        let slice = T::slice_mut(&mut guard).ok_or_else(|| Error::Internal("put: internal dtype mismatch".into()))?;
        kernel::scatter(slice, rows, &values, f)
    }
    match (combine, dst.dtype()) {
        (Combine::Set, dtype) => dispatch!(dtype, |T| write::<T>(dst, &plan.rows, &values, |d: &mut T, v| *d = v)),
        (Combine::Add, DType::Bool) => write::<bool>(dst, &plan.rows, &values, |d, v| *d |= v),
        (Combine::Mul, DType::Bool) => write::<bool>(dst, &plan.rows, &values, |d, v| *d &= v),
        (Combine::Add, dtype) => {
            numeric_dispatch!(dtype, op, |T| write::<T>(dst, &plan.rows, &values, |d: &mut T, v| *d = d.plus(v)))
        }
        (Combine::Mul, dtype) => {
            numeric_dispatch!(dtype, op, |T| write::<T>(dst, &plan.rows, &values, |d: &mut T, v| *d = d.times(v)))
        }
    }
}

/// Where `put_rows` writes: into a copy of its first input, or into zeros of its shape.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Onto {
    Copy,
    Zeros,
}

/// `(x, indices...)`: the elements of `x` a `Pick` names (`x[key]` for advanced keys).
#[derive(Clone, Debug)]
pub struct PickRows {
    pub pick: Pick,
}

/// `(base, values, indices...)`: `base` (a copy, or zeros of its shape) with `values` put where a `Pick` says.
#[derive(Clone, Debug)]
pub struct PutRows {
    pub pick: Pick,
    pub combine: Combine,
    pub onto: Onto,
}

/// Keeps the index inputs from `first` on: the rules read their values, and only the
/// shapes of the others.
pub fn keep_indices_from(first: usize, needs: &[bool]) -> Saves {
    let n = needs.len().clamp(first, 32) as u32;
    let all = if n >= 32 { u32::MAX } else { (1u32 << n) - 1 };
    Saves { inputs: all & !((1u32 << first) - 1), output: false }
}

/// The gradient of `pick_rows`: the output's gradient added back where it was picked.
pub fn pick_rule<D: Differentiator>(d: &mut D, pick: &Pick, a: &RuleArgs<'_, D::Value>) -> Result<D::Value> {
    let x = nth(a.inputs, 0, "pick_rows")?;
    let mut operands = vec![x, a.grad];
    operands.extend(a.inputs[1..].iter());
    let put = PutRows { pick: pick.clone(), combine: Combine::Add, onto: Onto::Zeros };
    d.apply(Op::Table(TableOps::PutRows(put)), &operands)
}

/// `g` picked as `pick` picks (the gradient of what a put wrote).
pub fn picked<D: Differentiator>(d: &mut D, pick: &Pick, g: &D::Value, indices: &[D::Value]) -> Result<D::Value> {
    let mut operands = vec![g];
    operands.extend(indices.iter());
    d.apply(Op::Table(TableOps::PickRows(PickRows { pick: pick.clone() })), &operands)
}

impl TableOp for PickRows {
    const SPEC: Spec = internal("index", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("pick_rows is built by indexing and derivative rules only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, "index")?;
        pick("index", &self.pick, x, &inputs[1..])
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (x, dtype) = *nth(inputs, 0, "index")?;
        Ok((infer_pick("index", &self.pick, x, &inputs[1..])?, dtype))
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        keep_indices_from(1, needs)
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let mut grads = vec![None; a.inputs.len()];
        grads[0] = Some(pick_rule(d, &self.pick, &a)?);
        Ok(grads)
    }
}

impl TableOp for PutRows {
    const SPEC: Spec = internal("index_put", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("put_rows is built by item assignment and derivative rules only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (base, values) = (*nth(inputs, 0, "index_put")?, *nth(inputs, 1, "index_put")?);
        let out = match self.onto {
            Onto::Copy => forward::copy(base)?,
            Onto::Zeros => Tensor::zeros(base.shape(), base.dtype())?,
        };
        put("index_put", &self.pick, &out, &inputs[2..], values, self.combine)?;
        Ok(out)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (base, dtype) = *nth(inputs, 0, "index_put")?;
        let (_, value_dtype) = *nth(inputs, 1, "index_put")?;
        if value_dtype != dtype {
            return dtype_err(format!(
                "index_put: the values have dtype {} but the tensor has dtype {}; cast one with tf.cast",
                value_dtype.name(),
                dtype.name()
            ));
        }
        infer_pick("index_put", &self.pick, base, &inputs[2..])?;
        Ok((base.clone(), dtype))
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        keep_indices_from(2, needs)
    }

    /// What was written replaces (or adds to) the base: the base's gradient is `g` with
    /// zeros where values were set, and the values' gradient is `g` where they landed.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let (base, values) = (nth(a.inputs, 0, "index_put")?, nth(a.inputs, 1, "index_put")?);
        let indices = &a.inputs[2..];
        if self.combine == Combine::Mul {
            return Err(no_double_backward("IndexPutBackward0 (multiplying)"));
        }
        let need = |i: usize| a.needs.get(i).copied().unwrap_or(false);
        let mut grads = vec![None; a.inputs.len()];
        if need(0) && self.onto == Onto::Copy {
            grads[0] = Some(match self.combine {
                Combine::Set => {
                    let zeros = d.zeros_like(values)?;
                    let mut operands = vec![a.grad, &zeros];
                    operands.extend(indices.iter());
                    let cleared = PutRows { pick: self.pick.clone(), combine: Combine::Set, onto: Onto::Copy };
                    d.apply(Op::Table(TableOps::PutRows(cleared)), &operands)?
                }
                _ => a.grad.clone(),
            });
        }
        if need(1) {
            let g = picked(d, &self.pick, a.grad, indices)?;
            grads[1] = Some(d.apply(Op::SumToLike, &[&g, values])?);
        }
        let _ = base;
        Ok(grads)
    }
}

/// The static shape of what `pick` names in `x`, given the index tensors' metadata.
pub fn infer_pick(op: &str, pick: &Pick, x: &PartialShape, indices: &[Meta<'_>]) -> Result<PartialShape> {
    if let Pick::Key(items) = pick {
        return advanced::partial_shape(x, items, indices);
    }
    let (index, dtype) = *nth(indices, 0, op)?;
    check_index_dtype(op, dtype)?;
    let (Some(x), Some(index)) = (x, index) else { return Ok(None) };
    Ok(Some(match pick {
        Pick::Key(_) => return Ok(None),
        Pick::Along { dim, batch_dims } => {
            if x.is_empty() {
                return Err(Error::Index(format!(
                    "{op}: the input must have at least one dimension, got a 0-d tensor"
                )));
            }
            let axis = normalize_dim(op, *dim, x.len())?;
            if *batch_dims > axis || *batch_dims > index.len() {
                return Err(Error::InvalidArgument(format!(
                    "{op}: batch_dims ({batch_dims}) must be at most the axis ({axis}) and the rank of the indices ({})",
                    index.len()
                )));
            }
            [&x[..axis], &index[*batch_dims..], &x[axis + 1..]].concat()
        }
        Pick::Flat => index.clone(),
        Pick::Elementwise { dim } => {
            normalize_dim(op, *dim, x.len())?;
            if index.len() != x.len() && !(x.is_empty() && index.is_empty()) {
                return Err(Error::Shape(format!(
                    "{op}: Index tensor must have the same number of dimensions as input tensor (index {}, input {})",
                    crate::graph::fmt_partial(&Some(index.clone())),
                    crate::graph::fmt_partial(&Some(x.clone()))
                )));
            }
            index.clone()
        }
        Pick::Nd => {
            let Some((&k, outer)) = index.split_last() else {
                return Err(Error::Index(format!("{op}: indices must have at least one dimension, got a 0-d tensor")));
            };
            match k {
                Some(k) if k > x.len() => {
                    return Err(Error::Index(format!(
                        "{op}: the last dim of indices ({k}) must be at most the rank of params ({})",
                        x.len()
                    )))
                }
                Some(k) => [outer, &x[k..]].concat(),
                None => return Ok(None),
            }
        }
    }))
}

/// Index tensors are int64 or int32.
pub fn check_index_dtype(op: &str, dtype: DType) -> Result<()> {
    match dtype {
        DType::I64 | DType::I32 => Ok(()),
        other => dtype_err(format!("{op}: expected an int64 or int32 index tensor, got {}", other.name())),
    }
}
