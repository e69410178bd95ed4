//! Reductions declared in the table: `logsumexp`, `prod` (and its gradient, which its
//! rule emits), `all` and `any`.

use super::scan::Cumprod;
use super::{internal, nth, Args, Input, Kind, Meta, Param, Spec, TableOp, TableOps, TF_SEMANTICS};
use crate::dtype::{dispatch, float_dispatch, numeric_dispatch};
use crate::dtype::{DType, Float, Number};
use crate::error::{dtype_err, Error, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::kernels::elementwise::{BinaryOp, UnaryOp};
use crate::kernels::fold::{fold_dims, Fold};
use crate::kernels::layout::walk;
use crate::kernels::product::{Product, Scaled};
use crate::kernels::scan::ScanOrder;
use crate::op::Op;
use crate::rules::{vjp_of_composite, Differentiator, RuleArgs, Saves};
use crate::shape::{contiguous_strides, reduced_shape};
use crate::storage::Element;
use crate::tensor::Tensor;

/// The dims to reduce and whether to keep them, as torch and TF1 name them
/// (`reduction_indices` and `keep_dims` are TF1's deprecated spellings).
pub(super) const fn reduce_params(torch_dims_default: Option<&'static str>) -> [Param; 2] {
    [
        Param {
            torch: "dim",
            tf: "axis",
            tf_aliases: &["reduction_indices"],
            kind: Kind::OptDims,
            torch_default: torch_dims_default,
            tf_default: Some("None"),
        },
        Param {
            torch: "keepdim",
            tf: "keepdims",
            tf_aliases: &["keep_dims"],
            kind: Kind::Bool,
            torch_default: Some("False"),
            tf_default: Some("False"),
        },
    ]
}

/// The dtype a sum or product of `dtype` gives (`widen`: torch gives integer and bool inputs an int64
/// result; TF1 keeps an integer dtype and refuses bool).
pub(super) fn accumulated_dtype(op: &str, dtype: DType, widen: bool) -> Result<DType> {
    match dtype {
        d if d.is_float() => Ok(d),
        _ if widen => Ok(DType::I64),
        DType::Bool => dtype_err(format!(
            "{op}: Value passed to parameter 'input' has DataType bool not in list of allowed values: float32, \
             float64, int32, int64, uint8; convert it with rustgrad.static.cast first"
        )),
        d => Ok(d),
    }
}

pub(super) fn float_only(op: &str, dtype: DType) -> Result<DType> {
    if !dtype.is_float() {
        return dtype_err(format!("{op}: expected a float tensor, got {}", dtype.name()));
    }
    Ok(dtype)
}

/// `log(sum(exp(x)))` over `dims`, computed stably.
#[derive(Clone, Debug)]
pub struct Logsumexp {
    dims: Option<Vec<isize>>,
    keepdim: bool,
}

const LOGSUMEXP_PARAMS: [Param; 2] = reduce_params(None);
const ALL_DIMS_PARAMS: [Param; 2] = reduce_params(Some("None"));
const PROD_PARAMS: [Param; 3] = {
    let [dims, keepdim] = reduce_params(Some("None"));
    [dims, keepdim, TF_SEMANTICS]
};
/// TF1's reductions name their tensor `input_tensor`.
pub(super) const INPUT_TENSOR: &[Input] = &[Input { torch: "input", tf: "input_tensor", list: false }];

impl TableOp for Logsumexp {
    const SPEC: Spec = Spec {
        name: "logsumexp",
        torch_aliases: &[],
        tf: &["reduce_logsumexp", "math.reduce_logsumexp"],
        doc: "log(sum(exp(x))) over `dim`, without overflow: the largest element is factored out first.",
        differentiable: true,
        inputs: INPUT_TENSOR,
        params: &LOGSUMEXP_PARAMS,
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Logsumexp { dims: args.dims(0)?, keepdim: args.flag(1)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, "logsumexp")?;
        let dims = self.dims.as_deref();
        if x.numel() == 0 {
            // An empty sum is 0, so its log is -inf (the reduced dims may be the empty ones).
            let empty = forward::sum(x, dims, self.keepdim, false)?;
            return Tensor::full(empty.shape(), f64::NEG_INFINITY, x.dtype());
        }
        // Shifting by the max keeps exp() in range; an infinite max (all -inf, or a +inf) shifts by 0.
        let peak = finite_or_zero(&forward::extreme(x, dims, true, true)?)?;
        let shifted = forward::binary(BinaryOp::Sub, x, &peak)?;
        let total = forward::sum(&forward::unary(UnaryOp::Exp, &shifted)?, dims, self.keepdim, false)?;
        let log_total = forward::unary(UnaryOp::Log, &total)?;
        let peak_out: Vec<isize> = log_total.shape().iter().map(|&d| d as isize).collect();
        forward::binary(BinaryOp::Add, &log_total, &forward::reshape(&peak, &peak_out)?)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 0, "logsumexp")?;
        let out = crate::graph::infer::reduce("logsumexp", shape, self.dims.as_deref(), self.keepdim)?;
        Ok((out, float_only("logsumexp", dtype)?))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 1, output: true }
    }

    /// d lse / dx = exp(x - lse): the softmax over the reduced dims.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = nth(a.inputs, 0, "logsumexp")?;
        let spread = Op::ExpandReduced { dims: self.dims.clone(), keepdim: self.keepdim, mean: false };
        let g = d.apply(spread.clone(), &[a.grad, x])?;
        let out = d.apply(spread, &[a.output, x])?;
        let centred = d.apply(Op::Binary(BinaryOp::Sub), &[x, &out])?;
        let softmax = d.unary(UnaryOp::Exp, &centred)?;
        Ok(vec![Some(d.mul(&g, &softmax)?)])
    }
}

/// `t` with its infinite and NaN elements replaced by 0 (`t` is a reduced tensor: small).
fn finite_or_zero(t: &Tensor) -> Result<Tensor> {
    float_dispatch!(t.dtype(), "logsumexp", |T| {
        let values: Vec<T> = t.to_vec()?;
        let cleaned: Vec<T> = values.into_iter().map(|v| if v.is_finite() { v } else { T::ZERO }).collect();
        Tensor::from_vec(cleaned, t.shape())
    })
}

/// The product over `dims` (None: every dim).
#[derive(Clone, Debug)]
pub struct Prod {
    dims: Option<Vec<isize>>,
    keepdim: bool,
    widen: bool,
}

/// The product of integers, wrapping around in i64 (then in the result's dtype), as torch and TF do.
struct IntegerProduct;

impl<T: Number> Fold<T> for IntegerProduct {
    type Acc = i64;
    fn identity(&self) -> i64 {
        1
    }
    #[inline]
    fn step(&self, acc: i64, v: T) -> i64 {
        acc.wrapping_mul(v.to_i64())
    }
    fn merge(&self, a: i64, b: i64) -> i64 {
        a.wrapping_mul(b)
    }
}

impl TableOp for Prod {
    const SPEC: Spec = Spec {
        name: "prod",
        torch_aliases: &[],
        tf: &["reduce_prod", "math.reduce_prod"],
        doc: "The product of the elements over `dim` (all of them by default).",
        differentiable: true,
        inputs: INPUT_TENSOR,
        params: &PROD_PARAMS,
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(Prod { dims: args.dims(0)?, keepdim: args.flag(1)?, widen: !args.flag(2)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, "prod")?;
        let dims = forward::reduce_dims("prod", x, self.dims.as_deref())?;
        let out_shape = reduced_shape(x.shape(), &dims, self.keepdim);
        let x = forward::as_dtype(x, accumulated_dtype("prod", x.dtype(), self.widen)?)?;
        if !x.dtype().is_float() {
            return numeric_dispatch!(x.dtype(), "prod", |T| {
                let acc = x.with_contiguous(|s: &[T]| fold_dims(&IntegerProduct, s, x.shape(), &dims))?;
                Tensor::from_vec(acc.into_iter().map(T::from_i64).collect::<Vec<T>>(), out_shape)
            });
        }
        float_dispatch!(x.dtype(), "prod", |T| {
            let acc = x.with_contiguous(|s: &[T]| fold_dims(&Product, s, x.shape(), &dims))?;
            let out = crate::storage::collect_vec(acc.len(), acc.iter().map(|a| T::from_f64(a.value())));
            Tensor::from_vec(out, out_shape)
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 0, "prod")?;
        let out = crate::graph::infer::reduce("prod", shape, self.dims.as_deref(), self.keepdim)?;
        Ok((out, accumulated_dtype("Prod", dtype, self.widen)?))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 1, output: false }
    }

    /// Each element's gradient is the product of the others in its slice, exact with zeros.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = nth(a.inputs, 0, "prod")?;
        let grad = ProdGrad { dims: self.dims.clone() };
        Ok(vec![Some(d.apply(Op::Table(TableOps::ProdGrad(grad)), &[a.grad, x])?)])
    }
}

/// Per slice: how many zeros, and the product of the other elements.
struct ZerosAndProduct;

impl<T: Float> Fold<T> for ZerosAndProduct {
    type Acc = (u64, Scaled);
    fn identity(&self) -> (u64, Scaled) {
        (0, Scaled::ONE)
    }
    #[inline]
    fn step(&self, (zeros, product): (u64, Scaled), v: T) -> (u64, Scaled) {
        let v = v.to_f64();
        if v == 0.0 {
            (zeros + 1, product)
        } else {
            (zeros, product.times(Scaled::new(v)))
        }
    }
    fn merge(&self, a: (u64, Scaled), b: (u64, Scaled)) -> (u64, Scaled) {
        (a.0 + b.0, a.1.times(b.1))
    }
}

/// `(g, x)`: the gradient of `prod(x)` over `dims` given its output's gradient `g`
/// (whose elements are the slices', in order, with or without the kept dims).
///
/// In a slice without zeros an element's gradient is `prod / x`; with one zero, only
/// the zero has a gradient (the product of the others); with two or more, none has.
#[derive(Clone, Debug)]
pub struct ProdGrad {
    dims: Option<Vec<isize>>,
}

impl TableOp for ProdGrad {
    const SPEC: Spec = internal("prod_backward", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("prod_backward is built by prod's rule only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (g, x) = (*nth(inputs, 0, "prod_backward")?, *nth(inputs, 1, "prod_backward")?);
        let dims = forward::reduce_dims("prod", x, self.dims.as_deref())?;
        let kept_shape = reduced_shape(x.shape(), &dims, true);
        if g.numel() != kept_shape.iter().product::<usize>() {
            return Err(Error::Shape(format!(
                "prod_backward: the gradient has {} elements but the product has {}",
                g.numel(),
                kept_shape.iter().product::<usize>()
            )));
        }
        let g = forward::as_dtype(g, x.dtype())?;
        float_dispatch!(x.dtype(), "prod_backward", |T| {
            let gv: Vec<T> = g.to_vec()?;
            let out = x.with_contiguous(|s: &[T]| {
                let slices = fold_dims(&ZerosAndProduct, s, x.shape(), &dims);
                let mut out_strides = contiguous_strides(&kept_shape);
                for &d in &dims {
                    out_strides[d] = 0;
                }
                // The walk below writes every element.
                let mut out = crate::storage::overwritable_vec::<T>(s.len());
                let in_strides = contiguous_strides(x.shape());
                walk(x.shape(), [&in_strides, &out_strides], [0, 0], |[i, o]| {
                    let ((zeros, product), v) = (slices[o], s[i].to_f64());
                    let others = match (zeros, v == 0.0) {
                        (0, _) => product.divided_by(Scaled::new(v)).value(),
                        (1, true) => product.value(),
                        _ => 0.0,
                    };
                    out[i] = gv[o] * T::from_f64(others);
                });
                out
            })?;
            Tensor::from_vec(out, x.shape())
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, dtype) = *nth(inputs, 1, "prod_backward")?;
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        // Only recorded when a backward is (create_graph): its rule reads both.
        Saves { inputs: 0b11, output: false }
    }

    /// Through a composite exact with zeros, as torch's: `g` times the products of the others.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let dims = self.dims.clone();
        vjp_of_composite(d, a, |t, ins| {
            let (g, x) = (&ins[0], &ins[1]);
            let others = products_of_others(t, x, dims.as_deref())?;
            // g with the reduced dims kept, whether or not the product kept them.
            let kept = t.apply(Op::Sum { dims: dims.clone(), keepdim: true }, &[x])?;
            let g = t.apply(Op::ReshapeLike, &[g, &kept])?;
            t.mul(&g, &others)
        })
    }
}

/// The product of the others in each element's slice along `dim`: the exclusive running
/// products from each end, multiplied (no division, so exact with zeros).
fn others_along<D: Differentiator>(t: &mut D, x: &D::Value, dim: isize) -> Result<D::Value> {
    let scan = |t: &mut D, reverse: bool| {
        let order = ScanOrder { exclusive: true, reverse };
        t.apply(Op::Table(TableOps::Cumprod(Cumprod::new(dim, order))), &[x])
    };
    let (before, after) = (scan(t, false)?, scan(t, true)?);
    t.mul(&before, &after)
}

/// The product of the others in each element's slice over `dims` (None: all), written with
/// differentiable ops. Over dims d1..dm, the others differing first at dk multiply to the
/// products of the others along dk of the products over d(k+1)..dm.
fn products_of_others<D: Differentiator>(t: &mut D, x: &D::Value, dims: Option<&[isize]>) -> Result<D::Value> {
    let Some(dims) = dims else {
        let flat = t.apply(Op::Reshape(vec![-1]), &[x])?;
        let others = others_along(t, &flat, 0)?;
        return t.apply(Op::ReshapeLike, &[&others, x]);
    };
    let mut product = t.apply(Op::FullLike(1.0), &[x])?;
    for (k, &dim) in dims.iter().enumerate() {
        let rest = &dims[k + 1..];
        let inner = if rest.is_empty() {
            x.clone()
        } else {
            let op = Prod { dims: Some(rest.to_vec()), keepdim: true, widen: false };
            t.apply(Op::Table(TableOps::Prod(op)), &[x])?
        };
        let others = others_along(t, &inner, dim)?;
        product = t.mul(&product, &others)?;
    }
    Ok(product)
}

/// Whether every (`all`) or some (`any`) element in a slice is true, reading nonzero as true.
struct Truth<P> {
    any: bool,
    truthy: P,
}

impl<T: Copy, P: Fn(T) -> bool + Sync> Fold<T> for Truth<P> {
    type Acc = bool;
    fn identity(&self) -> bool {
        !self.any
    }
    #[inline]
    fn step(&self, acc: bool, v: T) -> bool {
        if self.any {
            acc | (self.truthy)(v)
        } else {
            acc & (self.truthy)(v)
        }
    }
    fn merge(&self, a: bool, b: bool) -> bool {
        if self.any {
            a | b
        } else {
            a & b
        }
    }
}

/// `all` or `any` over `dims` of `x` of any dtype: nonzero (and NaN) is true, as in torch.
fn truth(x: &Tensor, dims: Option<&[isize]>, keepdim: bool, any: bool) -> Result<Tensor> {
    let op = if any { "any" } else { "all" };
    let dims = forward::reduce_dims(op, x, dims)?;
    let out_shape = reduced_shape(x.shape(), &dims, keepdim);
    let out = dispatch!(x.dtype(), |T| {
        let truthy = Truth { any, truthy: |v: T| v != T::default() };
        x.with_contiguous(|s: &[T]| fold_dims(&truthy, s, x.shape(), &dims))?
    });
    Tensor::from_vec(out, out_shape)
}

/// TF1's `reduce_all`/`reduce_any` take bool tensors only.
fn infer_truth(
    op: &str,
    tf_name: &str,
    inputs: &[Meta<'_>],
    dims: Option<&[isize]>,
    keepdim: bool,
) -> Result<(PartialShape, DType)> {
    let (shape, dtype) = *nth(inputs, 0, op)?;
    if dtype != DType::Bool {
        return dtype_err(format!(
            "{tf_name}: expected a bool tensor, got {}; compare it first (tf.not_equal(x, 0))",
            dtype.name()
        ));
    }
    Ok((crate::graph::infer::reduce(tf_name, shape, dims, keepdim)?, DType::Bool))
}

macro_rules! truth_op {
    ($ty:ident, $name:literal, $any:literal, $tf:literal, $doc:literal) => {
        #[derive(Clone, Debug)]
        pub struct $ty {
            dims: Option<Vec<isize>>,
            keepdim: bool,
        }

        impl TableOp for $ty {
            const SPEC: Spec = Spec {
                name: $name,
                torch_aliases: &[],
                tf: &[$tf, concat!("math.", $tf)],
                doc: $doc,
                differentiable: false,
                inputs: INPUT_TENSOR,
                params: &ALL_DIMS_PARAMS,
            };

            fn build(args: &Args) -> Result<Self> {
                Ok($ty { dims: args.dims(0)?, keepdim: args.flag(1)? })
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                truth(*nth(inputs, 0, $name)?, self.dims.as_deref(), self.keepdim, $any)
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                infer_truth($name, $tf, inputs, self.dims.as_deref(), self.keepdim)
            }

            fn saves(&self, _needs: &[bool]) -> Saves {
                Saves { inputs: 0, output: false }
            }

            fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                Ok(vec![None])
            }
        }
    };
}

truth_op!(
    All,
    "all",
    false,
    "reduce_all",
    "Whether every element over `dim` is true (nonzero); a bool tensor. TF1's `reduce_all` takes bool tensors only."
);
truth_op!(
    Any,
    "any",
    true,
    "reduce_any",
    "Whether some element over `dim` is true (nonzero); a bool tensor. TF1's `reduce_any` takes bool tensors only."
);

/// The number of nonzero elements in a slice.
struct Nonzero;

impl<T: Copy + Default + PartialEq> Fold<T> for Nonzero {
    type Acc = i64;
    fn identity(&self) -> i64 {
        0
    }
    #[inline]
    fn step(&self, acc: i64, v: T) -> i64 {
        acc + i64::from(v != T::default())
    }
    fn merge(&self, a: i64, b: i64) -> i64 {
        a + b
    }
}

/// torch's `count_nonzero(input, dim=None)` (no keepdim) and TF1's
/// `count_nonzero(input_tensor, axis=None, keepdims=None, dtype=int64)`.
const COUNT_PARAMS: &[Param] = &[
    Param {
        torch: "dim",
        tf: "axis",
        tf_aliases: &["reduction_indices"],
        kind: Kind::OptDims,
        torch_default: Some("None"),
        tf_default: Some("None"),
    },
    Param {
        torch: "",
        tf: "keepdims",
        tf_aliases: &["keep_dims"],
        kind: Kind::Bool,
        torch_default: Some("False"),
        tf_default: Some("False"),
    },
    Param {
        torch: "",
        tf: "dtype",
        tf_aliases: &[],
        kind: Kind::OptDType,
        torch_default: None,
        tf_default: Some("None"),
    },
];

#[derive(Clone, Debug)]
pub struct CountNonzero {
    dims: Option<Vec<isize>>,
    keepdim: bool,
    dtype: DType,
}

impl TableOp for CountNonzero {
    const SPEC: Spec = Spec {
        name: "count_nonzero",
        torch_aliases: &[],
        tf: &["count_nonzero", "math.count_nonzero"],
        doc: "The number of nonzero (true, NaN) elements over `dim` (all of them by default), as int64 (TF1: \
              `dtype`).",
        differentiable: false,
        inputs: INPUT_TENSOR,
        params: COUNT_PARAMS,
    };

    fn build(args: &Args) -> Result<Self> {
        let dtype = args.opt_dtype(2)?.unwrap_or(DType::I64);
        if dtype == DType::Bool {
            return dtype_err("count_nonzero: dtype must be a numeric dtype, got bool");
        }
        Ok(CountNonzero { dims: args.dims(0)?, keepdim: args.flag(1)?, dtype })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, "count_nonzero")?;
        let dims = forward::reduce_dims("count_nonzero", x, self.dims.as_deref())?;
        let out_shape = reduced_shape(x.shape(), &dims, self.keepdim);
        let counts = dispatch!(x.dtype(), |T| x.with_contiguous(|s: &[T]| fold_dims(&Nonzero, s, x.shape(), &dims))?);
        let counts = Tensor::from_vec(counts, out_shape)?;
        if self.dtype == DType::I64 {
            return Ok(counts);
        }
        forward::cast(&counts, self.dtype)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (shape, _) = *nth(inputs, 0, "count_nonzero")?;
        Ok((crate::graph::infer::reduce("count_nonzero", shape, self.dims.as_deref(), self.keepdim)?, self.dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0, output: false }
    }

    fn vjp<D: Differentiator>(&self, _d: &mut D, _a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(vec![None])
    }
}
