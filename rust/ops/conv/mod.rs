//! Convolutions: `conv1d`, `conv2d` (TF `nn.conv2d`, NHWC or NCHW with an HWIO filter) and
//! `conv_transpose2d`, all on the im2col kernels of `kernels/conv.rs`. Their gradients are
//! the internal ops `conv_input_grad` and `conv_weight_grad`, which read the sizes they need
//! from a reference tensor at run time, so the one rule serves static graphs of unknown shapes.
//!
//! `ConvConfig` here is what one convolution computes; `fronts.rs` declares the three public
//! ops and reads their arguments, `grads.rs` the two gradient ops.

mod fronts;
mod grads;

pub use fronts::{Conv1d, Conv2d, ConvTranspose2d};
pub use grads::{ConvInputGrad, ConvWeightGrad};

use super::spatial::{out_size, weight_oihw, Pad, Window};
use super::{nth, Meta, TableOps};
use crate::dtype::{float_dispatch, DType};
use crate::error::{dtype_err, shape_err, Error, Result};
use crate::graph::PartialShape;
use crate::kernels::conv::{self as kernel, ConvGeom};
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

/// One convolution's arguments, resolved from either front's spelling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvConfig {
    window: Window,
    stride: [usize; 2],
    padding: Pad,
    dilation: [usize; 2],
    groups: usize,
    /// `conv_transpose2d`'s extra size at the bottom and right of its output.
    output_padding: [usize; 2],
    transposed: bool,
    /// TF's filter layout: (kh, kw, in, out).
    hwio: bool,
}

/// The sizes of a call, in NCHW/OIHW, before the output is sized.
struct Sizes {
    input: [usize; 4],
    weight: [usize; 4],
}

impl ConvConfig {
    fn op(&self) -> &'static str {
        self.window.op
    }

    fn groups_checked(
        &self,
        input: &[usize; 4],
        weight: &[usize; 4],
        in_shape: &[usize],
        w_shape: &[usize],
    ) -> Result<()> {
        let (op, g) = (self.op(), self.groups);
        if !weight[0].is_multiple_of(g) {
            return shape_err(format!(
                "{op}: Given groups={g}, expected weight to be divisible by {g} at dimension 0, but got weight of \
                 shape {}",
                fmt_shape(w_shape)
            ));
        }
        let channels = if self.transposed { weight[0] } else { weight[1] * g };
        if input[1] != channels {
            return shape_err(format!(
                "{op}: Given groups={g}, weight of shape {}, expected input of shape {} to have {channels} channels, \
                 but got {} channels instead",
                fmt_shape(w_shape),
                fmt_shape(in_shape),
                input[1]
            ));
        }
        Ok(())
    }

    /// The kernels' geometry of the convolution from `sizes.input` (conv's input) by `sizes.weight`.
    fn geometry(&self, sizes: &Sizes, in_shape: &[usize], w_shape: &[usize]) -> Result<ConvGeom> {
        let (input, weight) = (&sizes.input, &sizes.weight);
        self.groups_checked(input, weight, in_shape, w_shape)?;
        let span = |axis: usize| self.dilation[axis] * (weight[2 + axis] - 1) + 1;
        if weight[2] == 0 || weight[3] == 0 {
            return shape_err(format!("{}: the kernel of weight {} is empty", self.op(), fmt_shape(w_shape)));
        }
        if self.transposed {
            let out = |axis: usize| -> Result<usize> {
                let p = self.padding.resolve(axis, 0, 0, 1);
                let full = (input[2 + axis] - 1) * self.stride[axis] + span(axis) + self.output_padding[axis];
                full.checked_sub(p[0] + p[1]).filter(|&s| s > 0).ok_or_else(|| {
                    Error::Shape(format!(
                        "{}: the output of input of shape {} with weight of shape {} would be empty; use less padding",
                        self.op(),
                        fmt_shape(in_shape),
                        fmt_shape(w_shape)
                    ))
                })
            };
            let pad = self.padding.resolve(0, 0, 0, 1)[0];
            let pad_w = self.padding.resolve(1, 0, 0, 1)[0];
            return Ok(ConvGeom {
                n: input[0],
                c_in: weight[1] * self.groups,
                h: out(0)?,
                w: out(1)?,
                c_out: weight[0],
                kh: weight[2],
                kw: weight[3],
                oh: input[2],
                ow: input[3],
                stride: self.stride,
                pad: [pad, pad_w],
                dilation: self.dilation,
                groups: self.groups,
            });
        }
        let pads = |axis: usize| self.padding.resolve(axis, input[2 + axis], span(axis), self.stride[axis]);
        let size =
            |axis: usize| out_size(self.op(), input[2 + axis], pads(axis), span(axis), self.stride[axis], in_shape);
        Ok(ConvGeom {
            n: input[0],
            c_in: input[1],
            h: input[2],
            w: input[3],
            c_out: weight[0],
            kh: weight[2],
            kw: weight[3],
            oh: size(0)?,
            ow: size(1)?,
            stride: self.stride,
            pad: [pads(0)[0], pads(1)[0]],
            dilation: self.dilation,
            groups: self.groups,
        })
    }

    /// The convolution's input (NCHW) and weight (OIHW) of a call, and whether the input is batched.
    fn canonical(&self, x: &Tensor, w: &Tensor) -> Result<(Tensor, Tensor, bool)> {
        let batched = self.window.batched("input", x.shape())?;
        let w4 = weight_oihw(w, self.window.spatial, self.hwio, self.op())?;
        Ok((self.window.to_nchw(x)?, w4, batched))
    }

    /// The forward op: a convolution, or for `transposed` the input gradient of one.
    fn run(&self, x: &Tensor, w: &Tensor) -> Result<Tensor> {
        let dtype = same_float_dtype(self.op(), x, w)?;
        let (x4, w4, batched) = self.canonical(x, w)?;
        let geom = self.geometry(&Sizes { input: four(&x4), weight: four(&w4) }, x.shape(), w.shape())?;
        let out = float_dispatch!(dtype, self.op(), |T| {
            let xs = x4.to_vec::<T>()?;
            let ws = w4.to_vec::<T>()?;
            if self.transposed {
                let mut out = crate::storage::zeroed_vec::<T>(geom.input_len());
                kernel::input_grad(&geom, &xs, &ws, &mut out)?;
                Tensor::from_vec(out, [geom.n, geom.c_in, geom.h, geom.w].as_slice())?
            } else {
                let mut out = crate::storage::zeroed_vec::<T>(geom.output_len());
                kernel::forward(&geom, &xs, &ws, &mut out)?;
                Tensor::from_vec(out, [geom.n, geom.c_out, geom.oh, geom.ow].as_slice())?
            }
        });
        self.window.from_nchw(out, batched)
    }

    /// The static output shape: known where the sizes it needs are.
    fn infer_shape(&self, x: &PartialShape, w: &PartialShape) -> Result<PartialShape> {
        let (Some(x), Some(w)) = (x, w) else { return Ok(None) };
        let spatial = self.window.spatial;
        if x.len() != spatial + 2 || w.len() != spatial + 2 {
            return shape_err(format!(
                "{}: input and filter must be {}-D, got input of rank {} and filter of rank {}",
                self.op(),
                spatial + 2,
                x.len(),
                w.len()
            ));
        }
        let c = if self.window.channels_last { spatial + 1 } else { 1 };
        let (w_in, w_out, k0) = if self.hwio { (spatial, spatial + 1, 0) } else { (1, 0, 2) };
        if let (Some(have), Some(per_group)) = (x[c], w[w_in]) {
            let want = if self.transposed { w[w_out] } else { Some(per_group * self.groups) };
            if want.is_some_and(|want| want != have) {
                return shape_err(format!(
                    "{}: Depth of input ({have}) is not a multiple of input depth of filter ({per_group})",
                    self.op()
                ));
            }
        }
        let channels = if self.transposed { w[w_in].map(|v| v * self.groups) } else { w[w_out] };
        let spatial_dims: Vec<usize> = (0..x.len()).filter(|&d| d != 0 && d != c).collect();
        let mut out = x.clone();
        out[c] = channels;
        for (i, &d) in spatial_dims.iter().enumerate() {
            let axis = if spatial == 1 { 1 } else { i };
            let (size, k) = (x[d], w[k0 + i]);
            out[d] = match (size, k) {
                (Some(size), Some(k)) => Some(self.out_size_static(axis, size, k, x)?),
                _ => None,
            };
        }
        Ok(Some(out))
    }

    fn out_size_static(&self, axis: usize, size: usize, k: usize, x: &[Option<usize>]) -> Result<usize> {
        let span = self.dilation[axis] * (k.max(1) - 1) + 1;
        if self.transposed {
            let p = self.padding.resolve(axis, 0, 0, 1);
            let full = (size.max(1) - 1) * self.stride[axis] + span + self.output_padding[axis];
            return Ok(full.saturating_sub(p[0] + p[1]));
        }
        let pads = self.padding.resolve(axis, size, span, self.stride[axis]);
        let shape: Vec<usize> = x.iter().map(|d| d.unwrap_or(0)).collect();
        out_size(self.op(), size, pads, span, self.stride[axis], &shape)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (x, dtype) = *nth(inputs, 0, self.op())?;
        let (w, w_dtype) = *nth(inputs, 1, self.op())?;
        if dtype != w_dtype {
            return dtype_err(format!(
                "{}: input has dtype {} but filter has dtype {}; cast one with tf.cast",
                self.op(),
                dtype.name(),
                w_dtype.name()
            ));
        }
        if !dtype.is_float() {
            return dtype_err(format!("{}: expected a float tensor but got {}", self.op(), dtype.name()));
        }
        Ok((self.infer_shape(x, w)?, dtype))
    }

    /// A plain convolution with these arguments (the gradient of a transposed one is one).
    fn plain(&self) -> ConvConfig {
        ConvConfig { transposed: false, output_padding: [0, 0], ..self.clone() }
    }

    fn saves(&self, needs: &[bool]) -> Saves {
        let need = |i: usize| needs.get(i).copied().unwrap_or(false);
        // The input's gradient reads the weight; the weight's reads the input.
        Saves { inputs: (u32::from(need(1))) | (u32::from(need(0)) << 1), output: false }
    }

    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        let x = nth(a.inputs, 0, self.op())?;
        let w = nth(a.inputs, 1, self.op())?;
        let need = |i: usize| a.needs.get(i).copied().unwrap_or(false);
        let plain = Box::new(self.plain());
        let gx = if !need(0) {
            None
        } else if self.transposed {
            Some(d.apply(conv_op(plain.clone()), &[a.grad, w])?)
        } else {
            Some(d.apply(Op::Table(TableOps::ConvInputGrad(ConvInputGrad(plain.clone()))), &[a.grad, w, x])?)
        };
        let gw = if !need(1) {
            None
        } else if self.transposed {
            Some(d.apply(Op::Table(TableOps::ConvWeightGrad(ConvWeightGrad(plain))), &[x, a.grad, w])?)
        } else {
            Some(d.apply(Op::Table(TableOps::ConvWeightGrad(ConvWeightGrad(plain))), &[a.grad, x, w])?)
        };
        Ok(vec![gx, gw])
    }
}

/// The table op running a plain convolution of this config.
fn conv_op(cfg: Box<ConvConfig>) -> Op {
    if cfg.window.spatial == 1 {
        Op::Table(TableOps::Conv1d(Conv1d(cfg)))
    } else {
        Op::Table(TableOps::Conv2d(Conv2d(cfg)))
    }
}

/// The sizes of a 4-D tensor.
fn four(t: &Tensor) -> [usize; 4] {
    let s = t.shape();
    [s[0], s[1], s[2], s[3]]
}

fn same_float_dtype(op: &str, x: &Tensor, w: &Tensor) -> Result<DType> {
    if x.dtype() != w.dtype() {
        return dtype_err(format!(
            "{op}: Input type ({}) and weight type ({}) should be the same",
            x.dtype().name(),
            w.dtype().name()
        ));
    }
    Ok(x.dtype())
}
