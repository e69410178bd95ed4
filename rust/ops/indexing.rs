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

pub use super::picks::{check_index_dtype, infer_pick, plan, Pick};
use super::{internal, no_double_backward, nth, Args, Meta, Spec, TableOp, TableOps};
use crate::dtype::{dispatch, numeric_dispatch, DType, Number};
use crate::error::{Error, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::indexing::advanced::{out_of_bounds, Plan};
use crate::kernels::gather::{self as kernel, Rows};
use crate::kernels::ordering::Along;
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::{broadcast_shapes, fmt_shape, normalize_dim};
use crate::storage::Element;
use crate::tensor::Tensor;

/// The elements of `x` that `pick` names, as a new tensor.
pub fn pick(op: &str, which: &Pick, x: &Tensor, indices: &[&Tensor]) -> Result<Tensor> {
    if let (Pick::Elementwise { dim }, [index]) = (which, indices) {
        if let Some(picked) = pick_along_last_dim(op, x, index, *dim)? {
            return Ok(picked);
        }
    }
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

/// `gather` along the last dim of a contiguous input, by an int64 index of the input's shape
/// but the last size: line by line (`Along::take`) rather than through a plan of one offset
/// per element, which took 2.6–3.7× numpy's `take_along_axis`. None when the case is another.
fn pick_along_last_dim(op: &str, x: &Tensor, index: &Tensor, dim: isize) -> Result<Option<Tensor>> {
    let rank = x.rank();
    if rank == 0 || index.rank() != rank || index.dtype() != DType::I64 || !x.is_contiguous() {
        return Ok(None);
    }
    let axis = normalize_dim(op, dim, rank)?;
    if axis + 1 != rank || x.shape()[..axis] != index.shape()[..axis] {
        return Ok(None);
    }
    let Some(along) = Along::new(x.shape(), index.shape(), axis) else { return Ok(None) };
    crate::storage::ensure_allocatable(index.shape(), x.dtype())?;
    let size = x.shape()[axis];
    let picked =
        super::ordering::take_along(x, index, &along, index.shape().to_vec(), |i| out_of_bounds(op, i, axis, size))?;
    Ok(Some(picked))
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
    // Leading dims of size 1 beyond the picked shape's rank are dropped, as numpy and torch do.
    let extra = values.rank().saturating_sub(plan.shape.len());
    let trimmed;
    let values = if extra > 0 && values.shape()[..extra].iter().all(|&d| d == 1) {
        let dims: Vec<isize> = values.shape()[extra..].iter().map(|&d| d as isize).collect();
        trimmed = forward::reshape(values, &dims)?;
        &trimmed
    } else {
        values
    };
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

/// Keeps the index inputs, all those from `first` on: the rules read their values,
/// and only the shapes of the others. (Every bit from `first` is set: the tape may
/// show a rule's `saves` only the first few inputs' needs, and a key may hold more.)
pub fn keep_indices_from(first: usize, _needs: &[bool]) -> Saves {
    Saves { inputs: u32::MAX.checked_shl(first as u32).unwrap_or(0), output: false }
}

/// Refuses, where the sizes are known, values that cannot broadcast to the picked shape.
fn check_values_fit(values: &PartialShape, picked: &PartialShape) -> Result<()> {
    let (Some(v), Some(p)) = (values, picked) else { return Ok(()) };
    let extra = v.len().saturating_sub(p.len());
    let v = if v[..extra].iter().all(|d| *d == Some(1)) { &v[extra..] } else { &v[..] };
    let clash = |(a, b): (&Option<usize>, &Option<usize>)| matches!((a, b), (Some(x), Some(y)) if *x != 1 && x != y);
    if v.len() > p.len() || v.iter().rev().zip(p.iter().rev()).any(clash) {
        return Err(Error::Shape(format!(
            "index_put_: shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            crate::graph::fmt_partial(values),
            crate::graph::fmt_partial(picked)
        )));
    }
    Ok(())
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

    /// The values are cast to the base's dtype (item assignment in a static graph converts
    /// them to it first, as TF1 would; derivative rules put zeros of the index's dtype).
    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (base, dtype) = *nth(inputs, 0, "index_put")?;
        let (values, _) = *nth(inputs, 1, "index_put")?;
        let picked = infer_pick("index_put", &self.pick, base, &inputs[2..])?;
        check_values_fit(values, &picked)?;
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
