//! Elementwise float ops of two tensors (`atan2`, `pow`, `fmod`, ...), one
//! `binary_ops!` entry each, and `lerp` of three.
//!
//! An entry reads:
//! - `name`, `torch_aliases`, `tf`, `doc`: see [`Spec`];
//! - `inputs`: each operand's torch and TF1 name (`atan2` is TF's `atan2(y, x)`);
//! - `kernel: |a, b| ...`: the value for one pair of elements, compiled once per float type;
//! - `split_f32: |a, b| (value, rare)` (optional): `kernel`'s float32 value without the edge cases
//!   of a split `vecmath` function where `rare` is false (see `BinaryKernel::of_f32_checked`);
//! - `reads`: whether the rule reads the inputs and the output, so the eager tape keeps only that;
//! - `grad: |d, x, y, out, g| (gx, gy)`: each operand's gradient before it is summed back
//!   to the operand's shape (broadcasting), built from ops emitted through `d`;
//! - `numbers` (optional): a cheaper op for a call where an operand is a plain number
//!   (`x ** 2` stays a scalar op); see [`TableOp::with_numbers`];
//! - `in_place: true` (optional): torch also has the method `Tensor.NAME_` (`pow_`).
//!
//! Operands broadcast as in numpy. Eager mode promotes float32 with float64 to float64,
//! as torch; static inference refuses operands of different dtypes, as TF1.

use super::{nth, Args, Input, Meta, Spec, TableOp, TableOps, TorchFront};
use crate::dtype::float_dispatch;
use crate::dtype::{DType, Participant, Scalar};
use crate::error::{dtype_err, Result};
use crate::forward;
use crate::graph::infer::broadcast;
use crate::graph::PartialShape;
use crate::kernels::binary::{zip3_broadcast, BinaryKernel, BinaryMath, ZipKernel};
use crate::kernels::elementwise::{BinaryOp, CmpOp, ScalarOp, UnaryOp};
use crate::kernels::vecmath;
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;
use std::borrow::Cow;

/// The two operands of most binary ops: torch's `input` and `other`, TF's `x` and `y`.
pub const OPERANDS: &[Input] =
    &[Input { torch: "input", tf: "x", list: false }, Input { torch: "other", tf: "y", list: false }];

/// The inputs' common dtype in a static graph: TF1 never promotes, and these ops take floats only.
pub fn same_float_dtype(spec: &Spec, inputs: &[Meta<'_>]) -> Result<DType> {
    let (_, first) = *nth(inputs, 0, spec.name)?;
    for (i, (_, dtype)) in inputs.iter().enumerate() {
        let name = |k: usize| spec.inputs.get(k).map_or("x", |input| input.tf);
        if !dtype.is_float() {
            return dtype_err(format!(
                "{}: Value passed to parameter '{}' has DataType {} not in list of allowed values: float32, float64",
                spec.name,
                name(i),
                dtype.name()
            ));
        }
        if *dtype != first {
            return dtype_err(format!(
                "{}: Input '{}' has type {} that does not match type {} of argument '{}'; cast one with tf.cast",
                spec.name,
                name(i),
                dtype.name(),
                first.name(),
                name(0)
            ));
        }
    }
    Ok(first)
}

/// The shape all the inputs broadcast to, as far as static inference knows it.
pub fn broadcast_all(op: &str, inputs: &[Meta<'_>]) -> Result<PartialShape> {
    let (first, _) = *nth(inputs, 0, op)?;
    inputs[1..].iter().try_fold(first.clone(), |shape, (next, _)| broadcast(op, &shape, next))
}

// Shorthands for the ops the rules below emit.

fn add<D: Differentiator>(d: &mut D, a: &D::Value, b: &D::Value) -> Result<D::Value> {
    d.apply(Op::Binary(BinaryOp::Add), &[a, b])
}

fn sub<D: Differentiator>(d: &mut D, a: &D::Value, b: &D::Value) -> Result<D::Value> {
    d.apply(Op::Binary(BinaryOp::Sub), &[a, b])
}

fn neg<D: Differentiator>(d: &mut D, a: &D::Value) -> Result<D::Value> {
    d.unary(UnaryOp::Neg, a)
}

/// Whether `cmp(a, 0)` holds, elementwise.
fn against_zero<D: Differentiator>(d: &mut D, cmp: CmpOp, a: &D::Value) -> Result<D::Value> {
    let zero = d.zeros_like(a)?;
    d.apply(Op::Compare(cmp), &[a, &zero])
}

/// `value` where `mask` holds, else 0.
fn keep_where<D: Differentiator>(d: &mut D, mask: &D::Value, value: &D::Value) -> Result<D::Value> {
    let zero = d.zeros_like(value)?;
    d.apply(Op::Where, &[mask, value, &zero])
}

/// `value` where `mask` does not hold, else 0.
fn zero_where<D: Differentiator>(d: &mut D, mask: &D::Value, value: &D::Value) -> Result<D::Value> {
    let zero = d.zeros_like(value)?;
    d.apply(Op::Where, &[mask, &zero, value])
}

/// `g` where `cmp(x, y)` holds, else 0: the gradient of one side of a clamp.
fn pass_where<D: Differentiator>(d: &mut D, cmp: CmpOp, x: &D::Value, y: &D::Value, g: &D::Value) -> Result<D::Value> {
    let mask = d.apply(Op::Compare(cmp), &[x, y])?;
    keep_where(d, &mask, g)
}

/// Where `fmax` (`cmp` Ge) or `fmin` (Le) picks its input: `cmp(x, y)` holds, or `y` is NaN.
fn picks_input<D: Differentiator>(d: &mut D, cmp: CmpOp, x: &D::Value, y: &D::Value) -> Result<D::Value> {
    let wins = d.apply(Op::Compare(cmp), &[x, y])?;
    let other_nan = table(d, TableOps::IsNan(super::logical::IsNan), &[y])?;
    table(d, TableOps::LogicalOr(super::logical::LogicalOr), &[&wins, &other_nan])
}

fn table<D: Differentiator>(d: &mut D, op: TableOps, inputs: &[&D::Value]) -> Result<D::Value> {
    d.apply(Op::Table(op), inputs)
}

/// Whether a `binary_ops!` entry computes integer operands in float32 (`ints: Promote`,
/// as torch's `atan2`) rather than refusing them.
macro_rules! promotes_ints {
    () => {
        false
    };
    (Promote) => {
        true
    };
}

macro_rules! binary_ops {
    ($(
        $op:ident {
            name: $name:literal, torch_aliases: [$($alias:literal),* $(,)?], tf: [$($tf:literal),* $(,)?],
            inputs: [($t0:literal, $f0:literal), ($t1:literal, $f1:literal)],
            doc: $doc:literal,
            kernel: |$a:ident, $b:ident| $kernel:expr,
            $(split_f32: |$sa:ident, $sb:ident| $split:expr,)?
            reads: (inputs: $reads_inputs:literal, output: $reads_output:literal),
            grad: |$d:ident, $x:ident, $y:ident, $out:ident, $g:ident| ($gx:expr, $gy:expr $(,)?),
            $(numbers: |$n:ident| $numbers:expr,)?
            $(ints: $ints:ident,)?
            $(tf_type: $tf_type:literal,)?
            $(in_place: $in_place:literal,)?
        }
    )*) => {$(
        #[derive(Clone, Debug)]
        pub struct $op;

        impl TableOp for $op {
            const SPEC: Spec = Spec {
                name: $name,
                torch_aliases: &[$($alias),*],
                tf: &[$($tf),*],
                doc: $doc,
                differentiable: true,
                inputs: &[Input { torch: $t0, tf: $f0, list: false }, Input { torch: $t1, tf: $f1, list: false }],
                params: &[],
            };

            $(const TORCH_FRONT: TorchFront = match $in_place {
                true => TorchFront::FUNCTION_AND_METHOD.with_in_place(),
                false => TorchFront::FUNCTION_AND_METHOD,
            };)?

            $(fn tf_type(&self) -> &'static str {
                $tf_type
            })?

            fn build(_args: &Args) -> Result<Self> {
                Ok($op)
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                let (a, b, shape) = forward::promoted_pair($name, nth(inputs, 0, $name)?, nth(inputs, 1, $name)?)?;
                // torch computes integer (and bool) operands of these ops in float32; TF1's
                // static inference refuses them before a run gets here.
                let (a, b) = match promotes_ints!($($ints)?) && !a.dtype().is_float() {
                    true => (
                        Cow::Owned(forward::cast(&a, DType::F32)?),
                        Cow::Owned(forward::cast(&b, DType::F32)?),
                    ),
                    false => (a, b),
                };
                #[derive(Clone, Copy)]
                struct Kernel;
                impl BinaryKernel for Kernel {
                    #[inline(always)]
                    fn of_f32($a: f32, $b: f32) -> f32 {
                        $kernel
                    }
                    #[inline(always)]
                    fn of_f64($a: f64, $b: f64) -> f64 {
                        $kernel
                    }
                    $(
                        const SPLIT: bool = true;
                        #[inline(always)]
                        fn of_f32_checked($sa: f32, $sb: f32) -> (f32, bool) {
                            $split
                        }
                    )?
                }
                float_dispatch!(a.dtype(), $name, |T| forward::zip_tensors::<T, T>(&a, &b, shape, |shape, p, q| {
                    T::zip_kernel::<Kernel>(shape, p, q)
                }))
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                let dtype = same_float_dtype(&Self::SPEC, inputs)?;
                Ok((broadcast_all($name, inputs)?, dtype))
            }

            fn saves(&self, _needs: &[bool]) -> Saves {
                Saves { inputs: if $reads_inputs { 0b11 } else { 0 }, output: $reads_output }
            }

            #[allow(unused_variables)]
            fn vjp<D: Differentiator>(
                &self,
                d: &mut D,
                a: RuleArgs<'_, D::Value>,
            ) -> Result<Vec<Option<D::Value>>> {
                let ($x, $y, $out, $g) = (nth(a.inputs, 0, $name)?, nth(a.inputs, 1, $name)?, a.output, a.grad);
                let need = |i: usize| a.needs.get(i).copied().unwrap_or(false);
                let $d = d;
                let gx = if need(0) { Some($gx) } else { None };
                let gy = if need(1) { Some($gy) } else { None };
                // Broadcasting spread each operand over the output: its gradient is summed back.
                let gx = gx.map(|v| $d.apply(Op::SumToLike, &[&v, $x])).transpose()?;
                let gy = gy.map(|v| $d.apply(Op::SumToLike, &[&v, $y])).transpose()?;
                Ok(vec![gx, gy])
            }

            $(
                fn with_numbers(&self, $n: &[Option<Scalar>]) -> Option<(Op, Vec<usize>)> {
                    $numbers
                }
            )?
        }
    )*};
}

binary_ops! {
    Atan2 {
        name: "atan2", torch_aliases: ["arctan2"], tf: ["atan2", "math.atan2"],
        inputs: [("input", "y"), ("other", "x")],
        doc: "The angle of the point (other, input) in radians, in [-pi, pi].",
        kernel: |a, b| a.angle(b),
        reads: (inputs: true, output: false),
        grad: |d, x, y, out, g| (
            {
                // d atan2(x, y) = (y dx - x dy) / (x² + y²)
                let (xx, yy) = (d.unary(UnaryOp::Square, x)?, d.unary(UnaryOp::Square, y)?);
                let radius = add(d, &xx, &yy)?;
                let scaled = d.mul(g, y)?;
                d.div(&scaled, &radius)?
            },
            {
                let (xx, yy) = (d.unary(UnaryOp::Square, x)?, d.unary(UnaryOp::Square, y)?);
                let radius = add(d, &xx, &yy)?;
                let scaled = d.mul(g, x)?;
                let slope = d.div(&scaled, &radius)?;
                neg(d, &slope)?
            },
        ),
        ints: Promote,
        in_place: true,
    }
    Hypot {
        name: "hypot", torch_aliases: [], tf: [],
        inputs: [("input", "x"), ("other", "y")],
        doc: "sqrt(input² + other²), without overflow for large operands.",
        kernel: |a, b| a.hypot(b),
        reads: (inputs: true, output: true),
        grad: |d, x, y, out, g| (
            {
                let slope = d.div(x, out)?;
                d.mul(g, &slope)?
            },
            {
                let slope = d.div(y, out)?;
                d.mul(g, &slope)?
            },
        ),
        in_place: true,
    }
    Fmod {
        name: "fmod", torch_aliases: [], tf: ["truncatemod", "math.truncatemod"],
        inputs: [("input", "x"), ("other", "y")],
        doc: "The remainder of input / other rounded toward zero: it has the sign of input (C's fmod).",
        kernel: |a, b| a % b,
        reads: (inputs: true, output: false),
        grad: |d, x, y, out, g| (
            g.clone(),
            {
                // fmod(x, y) = x - trunc(x / y)·y
                let ratio = d.div(x, y)?;
                let quotient = d.unary(UnaryOp::Trunc, &ratio)?;
                let slope = d.mul(g, &quotient)?;
                neg(d, &slope)?
            },
        ),
        tf_type: "TruncateMod",
        in_place: true,
    }
    Pow {
        name: "pow", torch_aliases: [], tf: ["pow", "math.pow"],
        inputs: [("input", "x"), ("exponent", "y")],
        doc: "input raised to the power exponent; either may be a number.",
        kernel: |a, b| a.raised_to(b),
        reads: (inputs: true, output: true),
        grad: |d, x, y, out, g| (
            {
                // d x^y / dx = y·x^(y-1), and 0 where y is 0 (even at x = 0, as torch).
                let lowered = d.scalar(y, ScalarOp::Sub, 1.0)?;
                let power = table(d, TableOps::Pow(Pow), &[x, &lowered])?;
                let slope = d.mul(y, &power)?;
                let scaled = d.mul(g, &slope)?;
                let flat = against_zero(d, CmpOp::Eq, y)?;
                zero_where(d, &flat, &scaled)?
            },
            {
                // d x^y / dy = x^y·log(x), and 0 where x is 0 and y >= 0 (as torch).
                let log = d.unary(UnaryOp::Log, x)?;
                let slope = d.mul(out, &log)?;
                let scaled = d.mul(g, &slope)?;
                let at_zero = against_zero(d, CmpOp::Eq, x)?;
                let non_negative = against_zero(d, CmpOp::Ge, y)?;
                let both = table(d, TableOps::LogicalAnd(super::logical::LogicalAnd), &[&at_zero, &non_negative])?;
                zero_where(d, &both, &scaled)?
            },
        ),
        numbers: |n| match n {
            [None, Some(s)] => Some((Op::Scalar(ScalarOp::Pow, *s), vec![0])),
            [Some(s), None] => Some((Op::Scalar(ScalarOp::RPow, *s), vec![1])),
            _ => None,
        },
        in_place: true,
    }
    Copysign {
        name: "copysign", torch_aliases: [], tf: [],
        inputs: [("input", "x"), ("other", "y")],
        doc: "The magnitude of input with the sign of other (the sign bit, so -0.0 counts as negative).",
        kernel: |a, b| a.copysign(b),
        reads: (inputs: true, output: true),
        grad: |d, x, y, out, g| (
            {
                // ±1 by whether the sign changed; 0 at x = 0, as torch.
                let ratio = d.div(out, x)?;
                let at_zero = against_zero(d, CmpOp::Eq, x)?;
                let slope = zero_where(d, &at_zero, &ratio)?;
                d.mul(g, &slope)?
            },
            d.zeros_like(g)?,
        ),
        ints: Promote,
        in_place: true,
    }
    Xlogy {
        name: "xlogy", torch_aliases: [], tf: ["math.xlogy"],
        inputs: [("input", "x"), ("other", "y")],
        doc: "input·log(other), and 0 where input is 0 (unless other is NaN).",
        kernel: |a, b| a.xlogy(b),
        // For a positive normal y (not NaN) xlogy is 0 or x·ln(y), and ln needs none of its edges.
        split_f32: |a, b| {
            let (log, rare) = vecmath::ElementFn::common_checked(&vecmath::Ln, b);
            (if a == 0.0 { 0.0 } else { a * log }, rare)
        },
        reads: (inputs: true, output: false),
        grad: |d, x, y, out, g| (
            {
                // xlogy(x != 0, y): log(y), 0 where x is 0, NaN where y is.
                let nonzero = against_zero(d, CmpOp::Ne, x)?;
                let ones = d.apply(Op::FullLike(1.0), &[x])?;
                let indicator = keep_where(d, &nonzero, &ones)?;
                let slope = table(d, TableOps::Xlogy(Xlogy), &[&indicator, y])?;
                d.mul(g, &slope)?
            },
            {
                let ratio = d.div(x, y)?;
                d.mul(g, &ratio)?
            },
        ),
        ints: Promote,
        in_place: true,
    }
    SquaredDifference {
        name: "squared_difference", torch_aliases: [], tf: ["math.squared_difference", "squared_difference"],
        inputs: [("input", "x"), ("other", "y")],
        doc: "(input - other)², elementwise.",
        kernel: |a, b| (a - b) * (a - b),
        reads: (inputs: true, output: false),
        grad: |d, x, y, out, g| (
            {
                let diff = sub(d, x, y)?;
                let twice = d.scalar(&diff, ScalarOp::Mul, 2.0)?;
                d.mul(g, &twice)?
            },
            {
                let diff = sub(d, y, x)?;
                let twice = d.scalar(&diff, ScalarOp::Mul, 2.0)?;
                d.mul(g, &twice)?
            },
        ),
    }
    Logaddexp {
        name: "logaddexp", torch_aliases: [], tf: [],
        inputs: [("input", "x"), ("other", "y")],
        doc: "log(e^input + e^other), without overflow.",
        kernel: |a, b| a.log_add_exp(b),
        reads: (inputs: true, output: true),
        grad: |d, x, y, out, g| (
            {
                let shifted = sub(d, x, out)?;
                let share = d.unary(UnaryOp::Exp, &shifted)?;
                d.mul(g, &share)?
            },
            {
                let shifted = sub(d, y, out)?;
                let share = d.unary(UnaryOp::Exp, &shifted)?;
                d.mul(g, &share)?
            },
        ),
    }
    Fmax {
        name: "fmax", torch_aliases: [], tf: [],
        inputs: [("input", "x"), ("other", "y")],
        doc: "The larger of input and other, ignoring a NaN (maximum propagates it).",
        kernel: |a, b| a.max(b),
        reads: (inputs: true, output: false),
        grad: |d, x, y, out, g| (
            {
                // As torch: to input where it is picked (ties included) or other is NaN.
                let picked = picks_input(d, CmpOp::Ge, x, y)?;
                keep_where(d, &picked, g)?
            },
            {
                let picked = picks_input(d, CmpOp::Ge, x, y)?;
                zero_where(d, &picked, g)?
            },
        ),
    }
    Fmin {
        name: "fmin", torch_aliases: [], tf: [],
        inputs: [("input", "x"), ("other", "y")],
        doc: "The smaller of input and other, ignoring a NaN (minimum propagates it).",
        kernel: |a, b| a.min(b),
        reads: (inputs: true, output: false),
        grad: |d, x, y, out, g| (
            {
                let picked = picks_input(d, CmpOp::Le, x, y)?;
                keep_where(d, &picked, g)?
            },
            {
                let picked = picks_input(d, CmpOp::Le, x, y)?;
                zero_where(d, &picked, g)?
            },
        ),
    }
    ClampMin {
        name: "clamp_min", torch_aliases: [], tf: [],
        inputs: [("input", "x"), ("min", "min")],
        doc: "input raised to at least min (NaN in either stays NaN); min may be a tensor or a number.",
        kernel: |a, b| if a.is_nan() || b.is_nan() { a + b } else if a < b { b } else { a },
        reads: (inputs: true, output: false),
        grad: |d, x, y, out, g| (pass_where(d, CmpOp::Ge, x, y, g)?, pass_where(d, CmpOp::Lt, x, y, g)?),
        numbers: |n| match n {
            [None, Some(s)] if !s.as_f64().is_nan() => Some((Op::Clamp { min: Some(s.as_f64()), max: None }, vec![0])),
            _ => None,
        },
        tf_type: "Maximum",
        in_place: true,
    }
    ClampMax {
        name: "clamp_max", torch_aliases: [], tf: [],
        inputs: [("input", "x"), ("max", "max")],
        doc: "input lowered to at most max (NaN in either stays NaN); max may be a tensor or a number.",
        kernel: |a, b| if a.is_nan() || b.is_nan() { a + b } else if a > b { b } else { a },
        reads: (inputs: true, output: false),
        grad: |d, x, y, out, g| (pass_where(d, CmpOp::Le, x, y, g)?, pass_where(d, CmpOp::Gt, x, y, g)?),
        numbers: |n| match n {
            [None, Some(s)] if !s.as_f64().is_nan() => Some((Op::Clamp { min: None, max: Some(s.as_f64()) }, vec![0])),
            _ => None,
        },
        tf_type: "Minimum",
        in_place: true,
    }
}

/// `input + weight·(end - input)`, from the nearer end (exact at weight 0 and 1, as torch).
#[derive(Clone, Debug)]
pub struct Lerp;

impl TableOp for Lerp {
    const TORCH_FRONT: TorchFront = TorchFront::FUNCTION_AND_METHOD.with_in_place();
    const SPEC: Spec = Spec {
        name: "lerp",
        torch_aliases: &[],
        tf: &[],
        doc: "The linear interpolation input + weight·(end - input); weight may be a tensor or a number.",
        differentiable: true,
        inputs: &[
            Input { torch: "input", tf: "x", list: false },
            Input { torch: "end", tf: "end", list: false },
            Input { torch: "weight", tf: "weight", list: false },
        ],
        params: &[],
    };

    fn build(_args: &Args) -> Result<Self> {
        Ok(Lerp)
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (x, end, weight) = (nth(inputs, 0, "lerp")?, nth(inputs, 1, "lerp")?, nth(inputs, 2, "lerp")?);
        let shape = broadcast_shapes("lerp", &broadcast_shapes("lerp", x.shape(), end.shape())?, weight.shape())?;
        let dtype = crate::dtype::result_type(&[x, end, weight].map(|t| Participant::tensor(t.dtype(), t.rank())));
        crate::storage::ensure_allocatable(&shape, dtype)?;
        let [x, end, weight] = [x, end, weight].map(|t| forward::as_dtype_ref(t, dtype));
        let (x, end, weight) = (x?, end?, weight?);
        float_dispatch!(dtype, "lerp", |T| forward::zip3_tensors::<T, T>(
            [&x, &end, &weight],
            shape,
            |shape, [p, q, r]| { zip3_broadcast(shape, p, q, r, |a: T, e: T, w: T| a.lerp(e, w)) }
        ))
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let dtype = same_float_dtype(&Self::SPEC, inputs)?;
        Ok((broadcast_all("lerp", inputs)?, dtype))
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        let need = |i: usize| needs.get(i).copied().unwrap_or(false);
        // The ends are read for the weight's gradient, the weight for the ends'.
        let ends = if need(2) { 0b011 } else { 0 };
        let weight = if need(0) || need(1) { 0b100 } else { 0 };
        Saves { inputs: ends | weight, output: false }
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let (x, end, weight) = (nth(a.inputs, 0, "lerp")?, nth(a.inputs, 1, "lerp")?, nth(a.inputs, 2, "lerp")?);
        let need = |i: usize| a.needs.get(i).copied().unwrap_or(false);
        let g = a.grad;
        let gx = if need(0) {
            let rest = d.scalar(weight, ScalarOp::RSub, 1.0)?;
            Some(d.mul(g, &rest)?)
        } else {
            None
        };
        let gend = if need(1) { Some(d.mul(g, weight)?) } else { None };
        let gweight = if need(2) {
            let span = sub(d, end, x)?;
            Some(d.mul(g, &span)?)
        } else {
            None
        };
        [(gx, x), (gend, end), (gweight, weight)]
            .into_iter()
            .map(|(grad, like)| grad.map(|v| d.apply(Op::SumToLike, &[&v, like])).transpose())
            .collect()
    }
}

#[cfg(test)]
#[path = "binary_tests.rs"]
mod tests;
