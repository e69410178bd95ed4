//! TF's `range` and `fill` in static graphs, for arguments that are graph tensors
//! (`tf.range(tf.shape(x)[0])`, `tf.fill(tf.shape(x), v)`). With Python numbers,
//! `rustgrad.static` makes a constant of `range_values` instead, whose shape is known
//! when the graph is built. Both are internal: torch makes tensors from numbers
//! (`arange`, `full`), never from tensors, so no eager function is named after them.

use super::{internal, nth, Args, Input, Meta, Spec, TableOp};
use crate::dtype::{dispatch, DType, Kind, Scalar};
use crate::error::{dtype_err, shape_err, Error, Result};
use crate::graph::{known, PartialShape};
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::fmt_shape;
use crate::storage::{ensure_allocatable, Element};
use crate::tensor::Tensor;

fn invalid<T>(msg: String) -> Result<T> {
    Err(Error::InvalidArgument(msg))
}

/// How many values `start, start + delta, ...` lie before `limit`, with TF's checks.
fn range_length(start: Scalar, limit: Scalar, delta: Scalar, integers: bool) -> Result<usize> {
    let (s, l, d) = (start.as_f64(), limit.as_f64(), delta.as_f64());
    if d == 0.0 {
        return invalid(format!("range: Requires delta != 0: {d}"));
    }
    if d > 0.0 && s > l {
        return invalid(format!("range: Requires start <= limit when delta > 0: {s}/{l}"));
    }
    if d < 0.0 && s < l {
        return invalid(format!("range: Requires start >= limit when delta < 0: {s}/{l}"));
    }
    let length = if integers {
        let whole = |v: Scalar| match v {
            Scalar::Int(i) => i128::from(i),
            other => other.as_f64() as i128,
        };
        let (s, l, d) = (whole(start), whole(limit), whole(delta));
        ((l - s).abs() + d.abs() - 1) / d.abs()
    } else {
        let steps = ((l - s) / d).abs().ceil();
        if !steps.is_finite() {
            return invalid(format!("range: the number of values from {s} to {l} by {d} is not finite"));
        }
        steps as i128
    };
    usize::try_from(length).map_err(|_| Error::OutOfMemory(format!("range: {length} values do not fit in memory")))
}

/// TF's `range(start, limit, delta)` in `dtype`: `start + i·delta` for every i that stays before `limit`.
pub fn range_values(start: Scalar, limit: Scalar, delta: Scalar, dtype: DType) -> Result<Tensor> {
    if dtype == DType::Bool {
        return dtype_err(
            "range: Value for attr 'Tidx' of bool is not in the list of allowed values; use an int or float dtype",
        );
    }
    let integers = dtype.kind() == Kind::Integer;
    let n = range_length(start, limit, delta, integers)?;
    ensure_allocatable(&[n], dtype)?;
    dispatch!(dtype, |T| {
        let values: Vec<T> = if integers {
            let (s, d) = (start.to_element::<i64>(), delta.to_element::<i64>());
            (0..n as i64).map(|i| T::from_i64(s.wrapping_add(i.wrapping_mul(d)))).collect()
        } else {
            let (s, d) = (start.as_f64(), delta.as_f64());
            (0..n).map(|i| T::from_f64(s + i as f64 * d)).collect()
        };
        Tensor::from_vec(values, vec![n])
    })
}

fn scalar_input(inputs: &[&Tensor], i: usize, name: &str) -> Result<Scalar> {
    let t = *nth(inputs, i, "range")?;
    if t.rank() != 0 {
        return shape_err(format!("range: {name} must be a scalar, not shape {}", fmt_shape(t.shape())));
    }
    t.item()
}

/// `(start, limit, delta)`, three 0-d tensors of one dtype: TF's `Range` node.
#[derive(Clone, Debug, Default)]
pub struct Range;

impl TableOp for Range {
    const SPEC: Spec = internal(
        "range",
        &[
            Input { torch: "start", tf: "start", list: false },
            Input { torch: "limit", tf: "limit", list: false },
            Input { torch: "delta", tf: "delta", list: false },
        ],
    );

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("range is built by rustgrad.static only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let dtype = nth(inputs, 0, "range")?.dtype();
        let [start, limit, delta] =
            [(0, "start"), (1, "limit"), (2, "delta")].map(|(i, name)| scalar_input(inputs, i, name));
        range_values(start?, limit?, delta?, dtype)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (_, dtype) = *nth(inputs, 0, "range")?;
        for ((shape, other), name) in inputs.iter().zip(["start", "limit", "delta"]) {
            if *other != dtype {
                return dtype_err(format!(
                    "range: {name} has dtype {} but start has dtype {}; cast them to one dtype with tf.cast",
                    other.name(),
                    dtype.name()
                ));
            }
            if let Some(dims) = shape.as_ref().filter(|d| !d.is_empty()) {
                return shape_err(format!(
                    "range: {name} must be a scalar, not shape {}",
                    crate::graph::fmt_partial(&Some(dims.clone()))
                ));
            }
        }
        Ok((Some(vec![None]), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![None, None, None])
    }
}

/// The shape a 1-D int32 or int64 tensor holds (`tf.fill(tf.shape(x), v)`), checked as TF does.
pub fn dims_values(dims: &Tensor, op: &str) -> Result<Vec<usize>> {
    if dims.rank() != 1 || !matches!(dims.dtype(), DType::I32 | DType::I64) {
        return invalid(format!(
            "{op}: the shape must be a 1-D int32 or int64 tensor, got a {} tensor of shape {}",
            dims.dtype().name(),
            fmt_shape(dims.shape())
        ));
    }
    let sizes = crate::forward::cast(dims, DType::I64)?.to_vec::<i64>()?;
    sizes
        .into_iter()
        .map(|d| {
            usize::try_from(d).map_err(|_| Error::InvalidArgument(format!("{op}: dimensions must be >= 0, got {d}")))
        })
        .collect()
}

/// The static shape of an output whose shape is the value of the 1-D integer `dims`: its rank, when known.
pub fn infer_dims(dims: Meta<'_>, op: &str) -> Result<PartialShape> {
    let (shape, dtype) = dims;
    if !matches!(dtype, DType::I32 | DType::I64) {
        return dtype_err(format!("{op}: the shape must be int32 or int64, got {}", dtype.name()));
    }
    Ok(match shape.as_deref() {
        Some([Some(rank)]) => Some(vec![None; *rank]),
        Some([None]) | None => None,
        Some(other) => {
            return shape_err(format!(
                "{op}: the shape must be a vector, not shape {}",
                crate::graph::fmt_partial(&Some(other.to_vec()))
            ))
        }
    })
}

/// TF's `Fill`: a 0-d `value` repeated over a shape, which is either known when the
/// graph is built (`shape`; the only input is the value) or the values of a 1-D
/// integer tensor (inputs: dims, value).
#[derive(Clone, Debug)]
pub struct Fill {
    shape: Option<Vec<usize>>,
}

impl Fill {
    pub fn new(shape: Option<Vec<usize>>) -> Fill {
        Fill { shape }
    }
}

impl TableOp for Fill {
    const SPEC: Spec = internal(
        "fill",
        &[Input { torch: "dims", tf: "dims", list: false }, Input { torch: "value", tf: "value", list: false }],
    );

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("fill is built by rustgrad.static only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let value = *inputs.last().ok_or_else(|| Error::InvalidArgument("fill: expected a value".into()))?;
        if value.rank() != 0 {
            return shape_err(format!("fill: value must be a scalar, not shape {}", fmt_shape(value.shape())));
        }
        let shape = match &self.shape {
            Some(shape) => shape.clone(),
            None => dims_values(nth(inputs, 0, "fill")?, "fill")?,
        };
        Tensor::full(&shape, value.item()?, value.dtype())
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (value_shape, dtype) =
            *inputs.last().ok_or_else(|| Error::InvalidArgument("fill: expected a value".into()))?;
        if let Some(dims) = value_shape.as_ref().filter(|d| !d.is_empty()) {
            return shape_err(format!(
                "fill: value must be a scalar, not shape {}",
                crate::graph::fmt_partial(&Some(dims.clone()))
            ));
        }
        if let Some(shape) = &self.shape {
            return Ok((known(shape), dtype));
        }
        Ok((infer_dims(*nth(inputs, 0, "fill")?, "fill")?, dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    /// The value's gradient is the sum of the output's; the dims get none.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let value = a.inputs.len() - 1;
        let mut grads: Vec<Option<D::Value>> = (0..a.inputs.len()).map(|_| None).collect();
        if a.needs.get(value).copied().unwrap_or(false) {
            grads[value] = Some(d.apply(Op::Sum { dims: None, keepdim: false }, &[a.grad])?);
        }
        Ok(grads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_counts_as_tf_does() {
        let ints = range_values(Scalar::Int(1), Scalar::Int(10), Scalar::Int(3), DType::I32).unwrap();
        assert_eq!(ints.to_vec::<i32>().unwrap(), vec![1, 4, 7]);
        let down = range_values(Scalar::Int(5), Scalar::Int(0), Scalar::Int(-2), DType::I64).unwrap();
        assert_eq!(down.to_vec::<i64>().unwrap(), vec![5, 3, 1]);
        let floats = range_values(Scalar::Float(0.0), Scalar::Float(1.0), Scalar::Float(0.25), DType::F32).unwrap();
        assert_eq!(floats.to_vec::<f32>().unwrap(), vec![0.0, 0.25, 0.5, 0.75]);
        assert!(range_values(Scalar::Int(0), Scalar::Int(3), Scalar::Int(0), DType::I32).is_err());
        assert!(range_values(Scalar::Int(5), Scalar::Int(3), Scalar::Int(1), DType::I32).is_err());
    }
}
