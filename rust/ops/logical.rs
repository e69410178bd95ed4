//! Logical ops and float tests, with bool results and no gradients (`logical_and`,
//! `isnan`, ...), and `nan_to_num`, which replaces what the tests find.
//!
//! Eager mode follows torch: any tensor is a truth value (nonzero, NaN included, is
//! true) and a bool tensor has no NaN. Static inference follows TF1: the logical ops
//! take bool tensors only, the tests float tensors only.

use super::binary::{broadcast_all, same_float_dtype, OPERANDS};
use super::{nth, Args, Kind, Meta, Param, Spec, TableOp, TableOps, TorchFront, ONE_INPUT};
use crate::dtype::float_dispatch;
use crate::dtype::DType;
use crate::error::{dtype_err, Result};
use crate::forward;
use crate::graph::PartialShape;
use crate::kernels::logical::{connect, float_test, nan_to_num, Connective, FloatTest};
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::broadcast_shapes;
use crate::storage::Element;
use crate::tensor::Tensor;

/// Static inference of a logical op: TF1 takes bool tensors only.
fn bool_inputs(spec: &Spec, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
    for (i, (_, dtype)) in inputs.iter().enumerate() {
        if *dtype != DType::Bool {
            let name = spec.inputs.get(i).map_or("x", |input| input.tf);
            return dtype_err(format!(
                "{}: Input '{name}' has type {} that does not match expected type of bool; compare it first \
                 (tf.not_equal(x, 0)) or cast it with tf.cast",
                spec.name,
                dtype.name()
            ));
        }
    }
    Ok((broadcast_all(spec.name, inputs)?, DType::Bool))
}

/// No input of a test or logical op has a gradient.
fn no_gradients<V>(a: &RuleArgs<'_, V>) -> Vec<Option<V>> {
    a.inputs.iter().map(|_| None).collect()
}

const NO_SAVES: Saves = Saves { inputs: 0, output: false };

macro_rules! connectives {
    ($(
        $op:ident { name: $name:literal, tf: [$($tf:literal),*], connective: $connective:ident, doc: $doc:literal }
    )*) => {$(
        #[derive(Clone, Debug)]
        pub struct $op;

        impl TableOp for $op {
            const SPEC: Spec = Spec {
                name: $name,
                torch_aliases: &[],
                tf: &[$($tf),*],
                doc: $doc,
                differentiable: false,
                inputs: OPERANDS,
                params: &[],
            };

            fn build(_args: &Args) -> Result<Self> {
                Ok($op)
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                let (a, b) = (nth(inputs, 0, $name)?, nth(inputs, 1, $name)?);
                let shape = broadcast_shapes($name, a.shape(), b.shape())?;
                crate::storage::ensure_allocatable(&shape, DType::Bool)?;
                let (a, b) = (forward::as_dtype_ref(a, DType::Bool)?, forward::as_dtype_ref(b, DType::Bool)?);
                forward::zip_tensors::<bool, bool>(&a, &b, shape, |shape, p, q| {
                    connect(Connective::$connective, shape, p, q)
                })
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                bool_inputs(&Self::SPEC, inputs)
            }

            fn saves(&self, _needs: &[bool]) -> Saves {
                NO_SAVES
            }

            fn vjp<D: Differentiator>(&self, _d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                Ok(no_gradients(&a))
            }
        }
    )*};
}

connectives! {
    LogicalAnd {
        name: "logical_and", tf: ["logical_and", "math.logical_and"], connective: And,
        doc: "Whether both input and other are true (nonzero), elementwise."
    }
    LogicalOr {
        name: "logical_or", tf: ["logical_or", "math.logical_or"], connective: Or,
        doc: "Whether input or other is true (nonzero), elementwise."
    }
    LogicalXor {
        name: "logical_xor", tf: ["logical_xor", "math.logical_xor"], connective: Xor,
        doc: "Whether exactly one of input and other is true (nonzero), elementwise."
    }
}

/// Whether each element is false (zero).
#[derive(Clone, Debug)]
pub struct LogicalNot;

impl TableOp for LogicalNot {
    const SPEC: Spec = Spec {
        name: "logical_not",
        torch_aliases: &[],
        tf: &["logical_not", "math.logical_not"],
        doc: "Whether input is false (zero), elementwise.",
        differentiable: false,
        inputs: ONE_INPUT,
        params: &[],
    };

    fn build(_args: &Args) -> Result<Self> {
        Ok(LogicalNot)
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = forward::as_dtype_ref(nth(inputs, 0, "logical_not")?, DType::Bool)?;
        let out = x.with_contiguous(|v: &[bool]| crate::kernels::elementwise::map(v, |b| !b))?;
        Tensor::from_vec(out, x.shape())
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        bool_inputs(&Self::SPEC, inputs)
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        NO_SAVES
    }

    fn vjp<D: Differentiator>(&self, _d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        Ok(no_gradients(&a))
    }
}

macro_rules! float_tests {
    ($(
        $op:ident {
            name: $name:literal, tf: [$($tf:literal),*], test: $test:ident, others: $others:literal, doc: $doc:literal
            $(, tf_type: $tf_type:literal)?
        }
    )*) => {$(
        #[derive(Clone, Debug)]
        pub struct $op;

        impl TableOp for $op {
            const SPEC: Spec = Spec {
                name: $name,
                torch_aliases: &[],
                tf: &[$($tf),*],
                doc: $doc,
                differentiable: false,
                inputs: ONE_INPUT,
                params: &[],
            };

            $(fn tf_type(&self) -> &'static str {
                $tf_type
            })?

            fn build(_args: &Args) -> Result<Self> {
                Ok($op)
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                let x = *nth(inputs, 0, $name)?;
                if !x.dtype().is_float() {
                    // No NaN or infinity but in a float.
                    return Tensor::full(x.shape(), if $others { 1.0 } else { 0.0 }, DType::Bool);
                }
                float_dispatch!(x.dtype(), $name, |T| {
                    let out = x.with_contiguous(|v: &[T]| float_test(FloatTest::$test, v))?;
                    Tensor::from_vec(out, x.shape())
                })
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                same_float_dtype(&Self::SPEC, inputs)?;
                Ok((nth(inputs, 0, $name)?.0.clone(), DType::Bool))
            }

            fn saves(&self, _needs: &[bool]) -> Saves {
                NO_SAVES
            }

            fn vjp<D: Differentiator>(&self, _d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                Ok(no_gradients(&a))
            }
        }
    )*};
}

float_tests! {
    IsNan {
        name: "isnan", tf: ["is_nan", "math.is_nan"], test: Nan, others: false,
        doc: "Whether each element is NaN.", tf_type: "IsNan"
    }
    IsInf {
        name: "isinf", tf: ["is_inf", "math.is_inf"], test: Inf, others: false,
        doc: "Whether each element is +inf or -inf.", tf_type: "IsInf"
    }
    IsPosInf {
        name: "isposinf", tf: [], test: PosInf, others: false,
        doc: "Whether each element is +inf."
    }
    IsNegInf {
        name: "isneginf", tf: [], test: NegInf, others: false,
        doc: "Whether each element is -inf."
    }
    IsFinite {
        name: "isfinite", tf: ["is_finite", "math.is_finite"], test: Finite, others: true,
        doc: "Whether each element is finite: neither NaN nor infinite.", tf_type: "IsFinite"
    }
}

/// `input` with NaN and the infinities replaced by numbers.
#[derive(Clone, Debug)]
pub struct NanToNum {
    nan: f64,
    posinf: Option<f64>,
    neginf: Option<f64>,
}

/// A replacement value of `nan_to_num`: TF1 has no such op, so both fronts name it as torch.
const fn replacement(name: &'static str, kind: Kind, default: &'static str) -> Param {
    Param { torch: name, tf: name, tf_aliases: &[], kind, torch_default: Some(default), tf_default: Some(default) }
}

impl TableOp for NanToNum {
    const TORCH_FRONT: TorchFront = TorchFront::FUNCTION_AND_METHOD.with_in_place();
    const SPEC: Spec = Spec {
        name: "nan_to_num",
        torch_aliases: &[],
        tf: &[],
        doc: "NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (None: the dtype's extremes).",
        differentiable: true,
        inputs: ONE_INPUT,
        params: &[
            replacement("nan", Kind::Float, "0.0"),
            replacement("posinf", Kind::OptFloat, "None"),
            replacement("neginf", Kind::OptFloat, "None"),
        ],
    };

    fn build(args: &Args) -> Result<Self> {
        Ok(NanToNum { nan: args.float(0)?, posinf: args.opt_float(1)?, neginf: args.opt_float(2)? })
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = *nth(inputs, 0, "nan_to_num")?;
        if !x.dtype().is_float() {
            return forward::copy(x);
        }
        float_dispatch!(x.dtype(), "nan_to_num", |T| {
            let largest = T::MAX.to_f64();
            let (nan, posinf, neginf) = (
                T::from_f64(self.nan),
                T::from_f64(self.posinf.unwrap_or(largest)),
                T::from_f64(self.neginf.unwrap_or(-largest)),
            );
            let out = x.with_contiguous(|v: &[T]| nan_to_num(v, nan, posinf, neginf))?;
            Tensor::from_vec(out, x.shape())
        })
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let dtype = same_float_dtype(&Self::SPEC, inputs)?;
        Ok((nth(inputs, 0, "nan_to_num")?.0.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 1, output: false }
    }

    /// The replaced elements are constants: the gradient passes where the input is finite.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = nth(a.inputs, 0, "nan_to_num")?;
        let finite = d.apply(Op::Table(TableOps::IsFinite(IsFinite)), &[x])?;
        let zero = d.zeros_like(a.grad)?;
        Ok(vec![Some(d.apply(Op::Where, &[&finite, a.grad, &zero])?)])
    }
}
