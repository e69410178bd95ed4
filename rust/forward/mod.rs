//! Forward evaluation of every `Op` on concrete tensors. Both the eager API and
//! the static executor call `forward`; neither knows how a kernel works.
//!
//! By concern: `elementwise` (unary, scalar, binary, compare, where and dtype
//! promotion), `matmul` (2-D products and the fused update/activation kernels),
//! `batched_matmul` (products with batch dims, numpy's `matmul`),
//! `reduce` (sums, means, extremes and their gradients), `layout` (views, casts,
//! copies, broadcasting, masks) and `in_place` (writers into existing storage).

mod batched_matmul;
mod elementwise;
mod in_place;
mod layout;
mod matmul;
pub mod optim;
mod reduce;

pub use elementwise::{
    as_dtype, as_dtype_ref, binary, clamp, clamp_dtype, compare, mask_grad_threshold, promoted, promoted_pair, scalar,
    scalar_dtype, unary, where_select, zip3_tensors, zip_tensors,
};
pub use in_place::{add_in_place, check_writable, fill, masked_fill, update_in_place, write_into};
pub use layout::{broadcast_to, cast, copy, expand_mask, index, index_layout, masked_select, reshape, transpose};
pub use matmul::{
    check_matmul_update, matmul2d, matmul_activation, matmul_sgd_step_in_place, matmul_update, matmul_update_in_place,
    overwritable_like, updatable_in_place,
};
pub use reduce::{check_mean_dtype, extreme, reduce_dims, scale_by_item, sum, sum_of_squares, sum_to};

use elementwise::mask_grad;
use layout::{index_backward, masked_scatter};
use reduce::expand_reduced;

use crate::error::{Error, Result};
use crate::op::Op;
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

pub fn forward(op: &Op, inputs: &[&Tensor]) -> Result<Tensor> {
    let context = || {
        let operands: Vec<String> =
            inputs.iter().map(|t| format!("{} {}", t.dtype().name(), fmt_shape(t.shape()))).collect();
        format!("{} of {}", op.name(), operands.join(" and "))
    };
    crate::storage::catch_kernel_unwind(context, || evaluate(op, inputs))
}

fn evaluate(op: &Op, inputs: &[&Tensor]) -> Result<Tensor> {
    let arg = |i: usize| -> Result<&Tensor> {
        inputs.get(i).copied().ok_or_else(|| {
            Error::InvalidArgument(format!("{}: expected at least {} inputs, got {}", op.name(), i + 1, inputs.len()))
        })
    };
    match op {
        Op::Unary(u) => unary(*u, arg(0)?),
        Op::Scalar(s, v) => scalar(*s, arg(0)?, *v),
        Op::Clamp { min, max } => clamp(arg(0)?, *min, *max),
        Op::Binary(b) => binary(*b, arg(0)?, arg(1)?),
        Op::Compare(c) => compare(*c, arg(0)?, arg(1)?),
        Op::Where => where_select(arg(0)?, arg(1)?, arg(2)?),
        Op::MatMul { transpose_a, transpose_b } => batched_matmul::matmul(arg(0)?, arg(1)?, *transpose_a, *transpose_b),
        Op::Sum { dims, keepdim } => sum(arg(0)?, dims.as_deref(), *keepdim, false),
        Op::Mean { dims, keepdim } => sum(arg(0)?, dims.as_deref(), *keepdim, true),
        Op::Extreme { largest, dims, keepdim } => extreme(arg(0)?, dims.as_deref(), *keepdim, *largest),
        Op::Reshape(shape) => reshape(arg(0)?, shape),
        Op::Transpose(d0, d1) => transpose(arg(0)?, *d0, *d1),
        Op::Index(items) => index(arg(0)?, items),
        Op::MaskedSelect => masked_select(arg(0)?, arg(1)?),
        Op::Cast(dtype) => cast(arg(0)?, *dtype),
        Op::Copy | Op::StopGradient => copy(arg(0)?),
        Op::SumToLike => sum_to(arg(0)?, arg(1)?.shape(), arg(1)?.dtype()),
        Op::BroadcastLike => broadcast_to(arg(0)?, arg(1)?.shape()),
        Op::ReshapeLike => {
            let like: Vec<isize> = arg(1)?.shape().iter().map(|&d| d as isize).collect();
            reshape(arg(0)?, &like)
        }
        Op::ExpandReduced { dims, keepdim, mean } => expand_reduced(arg(0)?, arg(1)?, dims.as_deref(), *keepdim, *mean),
        Op::FullLike(v) => Tensor::full(arg(0)?.shape(), *v, arg(0)?.dtype()),
        Op::ReluBackward => mask_grad(arg(0)?, arg(1)?, "threshold_backward", |x: f64| x > 0.0),
        Op::ClampBackward { min, max } => {
            let (lo, hi) = (min.unwrap_or(f64::NEG_INFINITY), max.unwrap_or(f64::INFINITY));
            mask_grad(arg(0)?, arg(1)?, "clamp_backward", move |x: f64| x >= lo && x <= hi)
        }
        Op::IndexBackward(items) => index_backward(arg(0)?, arg(1)?, items),
        Op::MaskedScatter => masked_scatter(arg(0)?, arg(1)?, arg(2)?),
        Op::CheckGradShape(index) => check_grad_shape(arg(0)?, arg(1)?, *index),
        Op::Table(t) => t.forward(inputs),
        Op::Custom(c) => Err(Error::InvalidArgument(format!(
            "custom Function {} has no native forward; call it through its apply()",
            c.name()
        ))),
    }
}

/// `grad_ys[index]` of a static `gradients` call, checked against its y at run time.
fn check_grad_shape(g: &Tensor, y: &Tensor, index: usize) -> Result<Tensor> {
    if g.shape() != y.shape() {
        let shape = |t: &Tensor| crate::graph::known(t.shape());
        return Err(grad_ys_shape_error(index, &shape(g), &shape(y), None));
    }
    Ok(g.clone())
}

/// The error for a `grad_ys` whose shape is not its y's (TF's "Incompatible shapes").
pub fn grad_ys_shape_error(
    index: usize,
    grad: &crate::graph::PartialShape,
    y: &crate::graph::PartialShape,
    y_name: Option<&str>,
) -> Error {
    let named = y_name.map_or(String::new(), |name| format!(" ('{name}')"));
    Error::Shape(format!(
        "gradients: Incompatible shapes: grad_ys[{index}] has shape {} but ys[{index}]{named} has shape {}; \
         each grad_ys must have the shape of its y",
        crate::graph::fmt_partial(grad),
        crate::graph::fmt_partial(y)
    ))
}
