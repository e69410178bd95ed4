//! Shape and dtype inference for graph nodes. A mismatch that is already
//! certain when the node is built raises then, naming the op and both shapes.

use super::PartialShape;
use crate::dtype::DType;
use crate::error::{dtype_err, shape_err, Error, Result};
use crate::kernels::elementwise::BinaryOp;
use crate::op::{IndexItem, Op};

use crate::ops::Meta;

/// `(?, 3)` — TF's way of writing partial shapes, used in every static error.
pub fn fmt_partial(shape: &PartialShape) -> String {
    match shape {
        None => "<unknown>".into(),
        Some(dims) => {
            let parts: Vec<String> = dims.iter().map(|d| d.map_or("?".into(), |v| v.to_string())).collect();
            if parts.len() == 1 {
                format!("({},)", parts[0])
            } else {
                format!("({})", parts.join(", "))
            }
        }
    }
}

pub fn known(shape: &[usize]) -> PartialShape {
    Some(shape.iter().map(|&d| Some(d)).collect())
}

/// Whether a value of the partial shape `partial` may have exactly `shape` (a variable's).
pub fn may_be(partial: &PartialShape, shape: &[usize]) -> bool {
    partial
        .as_ref()
        .is_none_or(|dims| dims.len() == shape.len() && dims.iter().zip(shape).all(|(d, &s)| d.is_none_or(|d| d == s)))
}

fn input<'a>(op: &Op, inputs: &'a [Meta<'a>], i: usize) -> Result<Meta<'a>> {
    inputs.get(i).copied().ok_or_else(|| {
        Error::InvalidArgument(format!("{}: expected at least {} inputs, got {}", op.name(), i + 1, inputs.len()))
    })
}

fn float_input(op: &Op, m: Meta<'_>) -> Result<DType> {
    if !m.1.is_float() {
        return not_allowed(op, "x", m.1, "float32, float64");
    }
    Ok(m.1)
}

/// A numeric (not bool) input: sums, means and extremes of ints stay ints, as in TF.
fn numeric_input(op: &Op, m: Meta<'_>) -> Result<DType> {
    if m.1 == DType::Bool {
        return not_allowed(op, "input", m.1, "float32, float64, int32, int64, uint8");
    }
    Ok(m.1)
}

/// TF's error for a dtype an op does not take.
fn not_allowed<T>(op: &Op, parameter: &str, dtype: DType, allowed: &str) -> Result<T> {
    dtype_err(format!(
        "{}: Value passed to parameter '{parameter}' has DataType {} not in list of allowed values: {allowed}; \
         convert it with rustgrad.static.cast first",
        super::tf_op_name(op),
        dtype.name()
    ))
}

/// TF1 converts no dtype implicitly: both operands must have one dtype, with TF's message.
fn same_dtype(op: &Op, (first, a): (&str, DType), (second, b): (&str, DType)) -> Result<DType> {
    if a != b {
        return dtype_err(format!(
            "Input '{second}' of '{}' Op has type {} that does not match type {} of argument '{first}'; \
             convert one with rustgrad.static.cast",
            super::tf_op_name(op),
            b.name(),
            a.name()
        ));
    }
    Ok(a)
}

/// Numpy broadcasting over partial shapes; an unknown dim stays unknown unless the other side decides it.
pub fn broadcast(op: &str, a: &PartialShape, b: &PartialShape) -> Result<PartialShape> {
    let (Some(a_dims), Some(b_dims)) = (a, b) else { return Ok(None) };
    let rank = a_dims.len().max(b_dims.len());
    let pick = |dims: &Vec<Option<usize>>, i: usize| {
        if i + dims.len() >= rank {
            dims[i + dims.len() - rank]
        } else {
            Some(1)
        }
    };
    let mut out = Vec::with_capacity(rank);
    for i in 0..rank {
        let (x, y) = (pick(a_dims, i), pick(b_dims, i));
        out.push(match (x, y) {
            (Some(p), Some(q)) if p == q => Some(p),
            (Some(1), other) | (other, Some(1)) => other,
            (Some(p), Some(q)) => {
                return shape_err(format!(
                    "{op}: Dimensions must be equal, but are {p} and {q} for '{op}' with input shapes: {}, {}",
                    fmt_partial(a),
                    fmt_partial(b)
                ))
            }
            (Some(p), None) | (None, Some(p)) => Some(p),
            (None, None) => None,
        });
    }
    Ok(Some(out))
}

/// What two partial shapes that must be equal say together; an error when they
/// certainly differ (the `grad_ys[index]` of a `gradients` call and its y).
pub fn same_shape(index: usize, grad: &PartialShape, y: &PartialShape) -> Result<PartialShape> {
    let (Some(g), Some(w)) = (grad, y) else { return Ok(grad.clone().or_else(|| y.clone())) };
    let conflict = g.len() != w.len() || g.iter().zip(w).any(|(a, b)| matches!((a, b), (Some(p), Some(q)) if p != q));
    if conflict {
        return Err(crate::forward::grad_ys_shape_error(index, grad, y, None));
    }
    Ok(Some(g.iter().zip(w).map(|(a, b)| a.or(*b)).collect()))
}

fn rank(shape: &PartialShape) -> Option<usize> {
    shape.as_ref().map(Vec::len)
}

/// The shape of a reduction over `dims` (None: all) of `shape`.
pub fn reduce(op: &str, shape: &PartialShape, dims: Option<&[isize]>, keepdim: bool) -> Result<PartialShape> {
    let Some(in_dims) = shape else { return Ok(None) };
    let r = in_dims.len();
    let axes: Vec<usize> = match dims {
        None => (0..r).collect(),
        // TF reports an axis named twice as InvalidArgumentError (the only Shape error here).
        Some(d) => match crate::shape::normalize_dims(op, d, r) {
            Err(Error::Shape(m)) => return Err(Error::InvalidArgument(m)),
            // A 0-d input has no dims to reduce; -1 and 0 name it, as in numpy.
            axes => axes.map(|a| if r == 0 { vec![] } else { a })?,
        },
    };
    Ok(Some(
        in_dims
            .iter()
            .enumerate()
            .filter_map(|(i, &d)| match (axes.contains(&i), keepdim) {
                (true, true) => Some(Some(1)),
                (true, false) => None,
                (false, _) => Some(d),
            })
            .collect(),
    ))
}

/// TF's `matmul`: two matrices (MatMul), or batches of them whose leading dims
/// broadcast (BatchMatMulV2, which `tf.matmul` builds for rank > 2).
fn matmul(a: &PartialShape, b: &PartialShape, ta: bool, tb: bool) -> Result<PartialShape> {
    let shapes = || format!("input shapes: {}, {}", fmt_partial(a), fmt_partial(b));
    let batched = [a, b].iter().any(|s| rank(s).is_none_or(|r| r > 2));
    for s in [a, b] {
        match rank(s) {
            Some(r) if r < 2 && batched => {
                return shape_err(format!(
                    "MatMul: Shape must be at least rank 2 but is rank {r} for 'MatMul' with {}",
                    shapes()
                ))
            }
            Some(r) if r < 2 => {
                return shape_err(format!(
                    "MatMul: Shape must be rank 2 but is rank {r} for 'MatMul' with {}",
                    shapes()
                ))
            }
            _ => {}
        }
    }
    let (Some(a_dims), Some(b_dims)) = (a, b) else { return Ok(None) };
    let oriented = |d: &[Option<usize>], t: bool| {
        let (r, c) = (d[d.len() - 2], d[d.len() - 1]);
        if t {
            (c, r)
        } else {
            (r, c)
        }
    };
    let ((m, k1), (k2, n)) = (oriented(a_dims, ta), oriented(b_dims, tb));
    if let (Some(k1), Some(k2)) = (k1, k2) {
        if k1 != k2 {
            return shape_err(format!(
                "MatMul: Dimensions must be equal, but are {k1} and {k2} for 'MatMul' with {} \
                 (transpose_a={ta}, transpose_b={tb})",
                shapes()
            ));
        }
    }
    let mut out = batch_dims(&a_dims[..a_dims.len() - 2], &b_dims[..b_dims.len() - 2]).map_err(|(p, q)| {
        Error::Shape(format!(
            "MatMul: Dimensions must be equal, but are {p} and {q} for 'MatMul' with {}; the batch dimensions \
             (all but the last two) must be equal or 1",
            shapes()
        ))
    })?;
    out.extend([m, n]);
    Ok(Some(out))
}

/// The broadcast of two known-rank batch shapes, or the first pair of dims that cannot broadcast.
fn batch_dims(a: &[Option<usize>], b: &[Option<usize>]) -> std::result::Result<Vec<Option<usize>>, (usize, usize)> {
    let rank = a.len().max(b.len());
    let at =
        |dims: &[Option<usize>], i: usize| if i + dims.len() >= rank { dims[i + dims.len() - rank] } else { Some(1) };
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (Some(p), Some(q)) if p == q => Ok(Some(p)),
            (Some(1), other) | (other, Some(1)) => Ok(other),
            (Some(p), Some(q)) => Err((p, q)),
            // An unknown dim against a known one other than 1 can only be that one (or 1).
            (Some(p), None) | (None, Some(p)) => Ok(Some(p)),
            (None, None) => Ok(None),
        })
        .collect()
}

fn reshape(input: &PartialShape, target: &[isize]) -> Result<PartialShape> {
    let total = input.as_ref().and_then(|d| d.iter().try_fold(1usize, |acc, &x| x.map(|v| acc * v)));
    if let Some(total) = total {
        let dims = crate::shape::infer_reshape(&vec_known(total), target).map_err(|_| {
            Error::Shape(format!("Reshape: cannot reshape a tensor with {total} elements to shape {target:?}"))
        })?;
        return Ok(Some(dims.into_iter().map(Some).collect()));
    }
    Ok(Some(target.iter().map(|&d| if d < 0 { None } else { Some(d as usize) }).collect()))
}

fn vec_known(total: usize) -> Vec<usize> {
    vec![total]
}

fn index(shape: &PartialShape, items: &[IndexItem]) -> Result<PartialShape> {
    let Some(dims) = shape else { return Ok(None) };
    crate::indexing::partial_shape(dims, items).map(Some)
}

/// The output shape and dtype of `op` applied to inputs with these shapes and dtypes.
pub fn infer(op: &Op, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
    let x = |i| input(op, inputs, i);
    Ok(match op {
        Op::Unary(u) => {
            let dtype = x(0)?.1;
            let kept = dtype.is_float() || (dtype.is_integer() && u.ints() == crate::ops::Ints::Keep);
            if !kept {
                return not_allowed(op, "x", dtype, "float32, float64");
            }
            (x(0)?.0.clone(), dtype)
        }
        Op::Scalar(s, v) => (x(0)?.0.clone(), crate::forward::scalar_dtype(*s, numeric_input(op, x(0)?)?, *v)),
        Op::Clamp { min, max } => (x(0)?.0.clone(), crate::forward::clamp_dtype(numeric_input(op, x(0)?)?, *min, *max)),
        Op::Binary(b) => {
            let dtype = same_dtype(op, ("x", numeric_input(op, x(0)?)?), ("y", x(1)?.1))?;
            let dtype = if *b == BinaryOp::Div { dtype.true_division() } else { dtype };
            (broadcast(b.name(), x(0)?.0, x(1)?.0)?, dtype)
        }
        Op::Compare(c) => {
            same_dtype(op, ("x", x(0)?.1), ("y", x(1)?.1))?;
            (broadcast(c.name(), x(0)?.0, x(1)?.0)?, DType::Bool)
        }
        Op::Where => {
            if x(0)?.1 != DType::Bool {
                return dtype_err(format!("where: the condition must be bool, got {}", x(0)?.1.name()));
            }
            let dtype = same_dtype(op, ("t", x(1)?.1), ("e", x(2)?.1))?;
            (broadcast("where", &broadcast("where", x(0)?.0, x(1)?.0)?, x(2)?.0)?, dtype)
        }
        Op::MatMul { transpose_a, transpose_b } => {
            let dtype = same_dtype(op, ("a", float_input(op, x(0)?)?), ("b", x(1)?.1))?;
            (matmul(x(0)?.0, x(1)?.0, *transpose_a, *transpose_b)?, dtype)
        }
        Op::Sum { dims, keepdim } | Op::Mean { dims, keepdim } | Op::Extreme { dims, keepdim, .. } => {
            (reduce(&op.name(), x(0)?.0, dims.as_deref(), *keepdim)?, numeric_input(op, x(0)?)?)
        }
        Op::Reshape(target) => (reshape(x(0)?.0, target)?, x(0)?.1),
        Op::Transpose(d0, d1) => {
            let shape = match x(0)?.0 {
                None => None,
                Some(d) if d.is_empty() => Some(vec![]),
                Some(d) => {
                    let (a, b) = (
                        crate::shape::normalize_dim("transpose", *d0, d.len())?,
                        crate::shape::normalize_dim("transpose", *d1, d.len())?,
                    );
                    let mut d = d.clone();
                    d.swap(a, b);
                    Some(d)
                }
            };
            (shape, x(0)?.1)
        }
        Op::Index(items) => (index(x(0)?.0, items)?, x(0)?.1),
        Op::MaskedSelect => (Some(vec![None]), x(0)?.1),
        Op::Cast(dtype) => (x(0)?.0.clone(), *dtype),
        Op::Copy | Op::StopGradient => (x(0)?.0.clone(), x(0)?.1),
        Op::SumToLike => (x(1)?.0.clone(), x(1)?.1),
        Op::BroadcastLike | Op::ReshapeLike | Op::ExpandReduced { .. } => (x(1)?.0.clone(), x(0)?.1),
        Op::FullLike(_) => (x(0)?.0.clone(), x(0)?.1),
        Op::ReluBackward | Op::ClampBackward { .. } => (broadcast(&op.name(), x(0)?.0, x(1)?.0)?, x(0)?.1),
        Op::IndexBackward(_) => (x(1)?.0.clone(), x(1)?.1),
        Op::MaskedScatter => (x(2)?.0.clone(), x(2)?.1),
        Op::CheckGradShape(index) => (same_shape(*index, x(0)?.0, x(1)?.0)?, x(0)?.1),
        Op::Table(t) => t.infer(inputs)?,
        Op::Custom(c) => {
            return Err(Error::InvalidArgument(format!("custom op {} cannot be a graph node", c.name())));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_batch_dims_pass_through_matmul() {
        let x: PartialShape = Some(vec![None, Some(1000)]);
        let w: PartialShape = Some(vec![Some(1000), Some(100)]);
        let op = Op::MatMul { transpose_a: false, transpose_b: false };
        let (shape, dtype) = infer(&op, &[(&x, DType::F32), (&w, DType::F32)]).unwrap();
        assert_eq!(shape, Some(vec![None, Some(100)]));
        assert_eq!(dtype, DType::F32);
    }

    #[test]
    fn certain_mismatches_fail_at_build_time() {
        let a: PartialShape = Some(vec![None, Some(3)]);
        let b: PartialShape = Some(vec![Some(4), Some(5)]);
        let op = Op::MatMul { transpose_a: false, transpose_b: false };
        let err = infer(&op, &[(&a, DType::F32), (&b, DType::F32)]).unwrap_err().to_string();
        assert!(err.contains("(?, 3)") && err.contains("(4, 5)"), "{err}");
        let c: PartialShape = Some(vec![Some(2), Some(4)]);
        let err = infer(&Op::Binary(BinaryOp::Add), &[(&a, DType::F32), (&c, DType::F32)]).unwrap_err().to_string();
        assert!(err.contains("3 and 4"), "{err}");
    }

    #[test]
    fn batched_products_broadcast_their_batch_dims() {
        let op = Op::MatMul { transpose_a: true, transpose_b: false };
        let a: PartialShape = Some(vec![Some(2), Some(1), Some(4), Some(3)]);
        let b: PartialShape = Some(vec![None, Some(4), Some(6)]);
        let (shape, _) = infer(&op, &[(&a, DType::F64), (&b, DType::F64)]).unwrap();
        assert_eq!(shape, Some(vec![Some(2), None, Some(3), Some(6)]));
        let unknown_rank: PartialShape = None;
        let (shape, _) = infer(&op, &[(&unknown_rank, DType::F64), (&b, DType::F64)]).unwrap();
        assert_eq!(shape, None);
    }

    #[test]
    fn batched_mismatches_name_both_shapes() {
        let op = Op::MatMul { transpose_a: false, transpose_b: false };
        let a: PartialShape = Some(vec![Some(2), Some(3), Some(4)]);
        let b: PartialShape = Some(vec![Some(3), Some(4), Some(5)]);
        let err = infer(&op, &[(&a, DType::F32), (&b, DType::F32)]).unwrap_err().to_string();
        assert!(err.contains("2 and 3") && err.contains("(2, 3, 4), (3, 4, 5)"), "{err}");
        let vector: PartialShape = Some(vec![Some(4)]);
        let err = infer(&op, &[(&vector, DType::F32), (&b, DType::F32)]).unwrap_err().to_string();
        assert!(err.contains("at least rank 2 but is rank 1"), "{err}");
    }

    #[test]
    fn broadcasting_resolves_unknown_dims_from_the_other_side() {
        let a: PartialShape = Some(vec![None, Some(1)]);
        let b: PartialShape = Some(vec![Some(5)]);
        assert_eq!(broadcast("add", &a, &b).unwrap(), Some(vec![None, Some(5)]));
    }
}
