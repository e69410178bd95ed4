//! The internal ops `conv_input_grad` and `conv_weight_grad`: a plain convolution's
//! gradients with respect to its input and its weight, and their own gradients.

use super::{conv_op, four, same_float_dtype, ConvConfig, Sizes};
use crate::dtype::{float_dispatch, DType};
use crate::error::{shape_err, Error, Result};
use crate::graph::PartialShape;
use crate::kernels::conv::{self as kernel, ConvGeom};
use crate::op::Op;
use crate::ops::spatial::{oihw_shape, weight_from_oihw, weight_oihw};
use crate::ops::{internal, nth, Args, Meta, Spec, TableOp, TableOps};
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

/// `(g, w, x)`: the gradient of a plain convolution with respect to its input `x`, of which
/// only the shape is read.
#[derive(Clone, Debug)]
pub struct ConvInputGrad(pub(super) Box<ConvConfig>);

/// `(g, x, w)`: the gradient of a plain convolution with respect to its weight `w`, of which
/// only the shape is read.
#[derive(Clone, Debug)]
pub struct ConvWeightGrad(pub(super) Box<ConvConfig>);

/// Checks that a gradient has the output's size that the geometry gives.
fn check_grad_size(cfg: &ConvConfig, geom: &ConvGeom, g4: &Tensor) -> Result<()> {
    let want = [geom.n, geom.c_out, geom.oh, geom.ow];
    if g4.shape() != want {
        return shape_err(format!(
            "{}_backward: the output gradient has shape {} but the convolution's output is {}",
            cfg.op(),
            fmt_shape(g4.shape()),
            fmt_shape(&want)
        ));
    }
    Ok(())
}

impl TableOp for ConvInputGrad {
    const SPEC: Spec = internal("conv_input_grad", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("conv_input_grad is built by the convolutions' rules only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let cfg = &self.0;
        let (g, w, x) = (*nth(inputs, 0, cfg.op())?, *nth(inputs, 1, cfg.op())?, *nth(inputs, 2, cfg.op())?);
        let dtype = same_float_dtype(cfg.op(), g, w)?;
        let batched = cfg.window.batched("input", x.shape())?;
        let x4_shape = cfg.window.nchw_shape(x.shape())?;
        let w4 = weight_oihw(w, cfg.window.spatial, cfg.hwio, cfg.op())?;
        let g4 = cfg.window.to_nchw(g)?;
        let sizes = Sizes { input: x4_shape, weight: four(&w4) };
        let geom = cfg.geometry(&sizes, x.shape(), w.shape())?;
        check_grad_size(cfg, &geom, &g4)?;
        let out = float_dispatch!(dtype, cfg.op(), |T| {
            let mut out = crate::storage::zeroed_vec::<T>(geom.input_len());
            kernel::input_grad(&geom, &g4.to_vec::<T>()?, &w4.to_vec::<T>()?, &mut out)?;
            Tensor::from_vec(out, x4_shape.as_slice())?
        });
        cfg.window.from_nchw(out, batched)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (_, dtype) = *nth(inputs, 0, "conv_input_grad")?;
        let (shape, _) = *nth(inputs, 2, "conv_input_grad")?;
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        // The first-order pass reads the weight; a recorded one (create_graph) reads g too.
        let reads_g = needs.get(1).copied().unwrap_or(false);
        Saves { inputs: 0b10 | u32::from(reads_g), output: false }
    }

    /// Bilinear in (g, w); x is read for its shape only. `<gg, Jₓᵀg> = <conv(gg, w), g>`, so
    /// d/dg is the convolution of gg, and d/dw the weight gradient with gg as the input.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let cfg = &self.0;
        let (g, w) = (nth(a.inputs, 0, cfg.op())?, nth(a.inputs, 1, cfg.op())?);
        let need = |i: usize| a.needs.get(i).copied().unwrap_or(false);
        let dg = if need(0) { Some(d.apply(conv_op(cfg.clone()), &[a.grad, w])?) } else { None };
        let dw = if need(1) {
            Some(d.apply(Op::Table(TableOps::ConvWeightGrad(ConvWeightGrad(cfg.clone()))), &[g, a.grad, w])?)
        } else {
            None
        };
        Ok(vec![dg, dw, None])
    }
}

impl TableOp for ConvWeightGrad {
    const SPEC: Spec = internal("conv_weight_grad", &[]);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("conv_weight_grad is built by the convolutions' rules only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let cfg = &self.0;
        let (g, x, w) = (*nth(inputs, 0, cfg.op())?, *nth(inputs, 1, cfg.op())?, *nth(inputs, 2, cfg.op())?);
        let dtype = same_float_dtype(cfg.op(), g, x)?;
        let w4_shape = oihw_shape(w.shape(), cfg.window.spatial, cfg.hwio, cfg.op())?;
        let x4 = cfg.window.to_nchw(x)?;
        let g4 = cfg.window.to_nchw(g)?;
        let sizes = Sizes { input: four(&x4), weight: w4_shape };
        let geom = cfg.geometry(&sizes, x.shape(), w.shape())?;
        check_grad_size(cfg, &geom, &g4)?;
        let out = float_dispatch!(dtype, cfg.op(), |T| {
            let mut out = crate::storage::zeroed_vec::<T>(geom.weight_len());
            kernel::weight_grad(&geom, &g4.to_vec::<T>()?, &x4.to_vec::<T>()?, &mut out)?;
            Tensor::from_vec(out, w4_shape.as_slice())?
        });
        weight_from_oihw(out, cfg.window.spatial, cfg.hwio)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (_, dtype) = *nth(inputs, 0, "conv_weight_grad")?;
        let (shape, _) = *nth(inputs, 2, "conv_weight_grad")?;
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0b11, output: false }
    }

    /// Bilinear in (g, x); w is read for its shape only. `<gg, J_wᵀg> = <conv(x, gg), g>`, so
    /// d/dg is the convolution of x by gg, and d/dx the input gradient through gg.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let cfg = &self.0;
        let (g, x) = (nth(a.inputs, 0, cfg.op())?, nth(a.inputs, 1, cfg.op())?);
        let need = |i: usize| a.needs.get(i).copied().unwrap_or(false);
        let dg = if need(0) { Some(d.apply(conv_op(cfg.clone()), &[x, a.grad])?) } else { None };
        let dx = if need(1) {
            Some(d.apply(Op::Table(TableOps::ConvInputGrad(ConvInputGrad(cfg.clone()))), &[g, a.grad, x])?)
        } else {
            None
        };
        Ok(vec![dg, dx, None])
    }
}
