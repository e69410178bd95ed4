//! Pooling: `max_pool2d` (TF `nn.max_pool`, `nn.max_pool2d`), its indices for
//! `return_indices=True`, `avg_pool2d` (TF `nn.avg_pool`, `nn.avg_pool2d`) and
//! `adaptive_avg_pool2d`, on the kernels of `kernels/pool.rs`. Their gradients are internal
//! ops that take the input as reference, so they size themselves at run time.

use super::args::param;
use super::spatial::{Pad, Window};
use super::{
    internal, nth, Args, Input, Kind, Meta, Param, Spec, TableOp, TableOps, TorchFront, ONE_INPUT, TF_SEMANTICS,
};
use crate::dtype::{float_dispatch, DType};
use crate::error::{dtype_err, shape_err, Error, Result};
use crate::graph::PartialShape;
use crate::kernels::pool::{self as kernel, Divisor, PoolGeom};
use crate::op::Op;
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

/// What a pooling does in each window.
#[derive(Clone, Debug, PartialEq)]
pub enum Reduce {
    Max,
    /// The average, divided as `Divisor` says.
    Avg(Divisor),
    /// The adaptive average to this output size (height, width).
    Adaptive([usize; 2]),
}

/// One pooling's arguments, resolved from either front's spelling.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolConfig {
    window: Window,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: Pad,
    dilation: [usize; 2],
    ceil_mode: bool,
    reduce: Reduce,
}

impl PoolConfig {
    fn op(&self) -> &'static str {
        self.window.op
    }

    /// The output size along one axis (torch's rule, with `ceil_mode`; TF's for SAME and VALID).
    fn out_size(&self, axis: usize, size: usize) -> Result<(usize, [usize; 2])> {
        if let Reduce::Adaptive(out) = self.reduce {
            return Ok((out[axis], [0, 0]));
        }
        let (k, s, d) = (self.kernel[axis], self.stride[axis], self.dilation[axis]);
        let span = d * (k - 1) + 1;
        let pads = self.padding.resolve(axis, size, span, s);
        let out = match self.padding {
            Pad::Same => size.div_ceil(s),
            Pad::Valid => (size + 1).saturating_sub(span).div_ceil(s),
            Pad::Explicit(_) => {
                let padded = size + pads[0] + pads[1];
                if padded < span {
                    0
                } else {
                    let extra = if self.ceil_mode { s - 1 } else { 0 };
                    let mut out = (padded - span + extra) / s + 1;
                    // The last window must start inside the input or its left padding.
                    if self.ceil_mode && (out - 1) * s >= size + pads[0] {
                        out -= 1;
                    }
                    out
                }
            }
        };
        Ok((out, pads))
    }

    fn geometry(&self, x4: [usize; 4], shape: &[usize]) -> Result<PoolGeom> {
        let (oh, pad_h) = self.out_size(0, x4[2])?;
        let (ow, pad_w) = self.out_size(1, x4[3])?;
        if oh == 0 || ow == 0 {
            return shape_err(format!(
                "{}: the output of input of shape {} would be empty (kernel {:?}, stride {:?}); use a smaller kernel \
                 or more padding",
                self.op(),
                fmt_shape(shape),
                self.kernel,
                self.stride
            ));
        }
        Ok(PoolGeom {
            planes: x4[0] * x4[1],
            h: x4[2],
            w: x4[3],
            oh,
            ow,
            kernel: self.kernel,
            stride: self.stride,
            pad: [pad_h[0], pad_w[0]],
            pad_end: [pad_h[1], pad_w[1]],
            dilation: self.dilation,
        })
    }

    fn output_nchw(geom: &PoolGeom, x4: [usize; 4]) -> [usize; 4] {
        [x4[0], x4[1], geom.oh, geom.ow]
    }

    fn float_input(&self, x: &Tensor) -> Result<DType> {
        if !x.dtype().is_float() {
            return dtype_err(format!(
                "{}: expected a float tensor but got {}; convert it with .float() first",
                self.op(),
                x.dtype().name()
            ));
        }
        Ok(x.dtype())
    }

    /// The pooled values (`indices`: the flat indices of the maxima, int64).
    fn run(&self, x: &Tensor, indices: bool) -> Result<Tensor> {
        if self.reduce == Reduce::Max {
            let (values, idx) = self.max_pool(x, !indices, indices)?;
            return values.or(idx).ok_or_else(|| Error::Internal(format!("{}: nothing computed", self.op())));
        }
        let dtype = self.float_input(x)?;
        let batched = self.window.batched("input", x.shape())?;
        let x4 = self.window.to_nchw(x)?;
        let dims = [x4.shape()[0], x4.shape()[1], x4.shape()[2], x4.shape()[3]];
        let geom = self.geometry(dims, x.shape())?;
        let out_shape = Self::output_nchw(&geom, dims);
        let out = float_dispatch!(dtype, self.op(), |T| {
            let mut out = crate::storage::zeroed_vec::<T>(geom.output_len());
            x4.with_contiguous::<T, _>(|xs| match self.reduce {
                Reduce::Adaptive(_) => kernel::adaptive_avg(&geom, xs, &mut out),
                Reduce::Avg(how) => kernel::avg(&geom, how, xs, &mut out),
                Reduce::Max => {}
            })?;
            Tensor::from_vec(out, out_shape.as_slice())?
        });
        self.window.from_nchw(out, batched)
    }

    /// Max pooling's values and the flat indices of its maxima (int64), each when asked
    /// for, from one pass over `x`.
    fn max_pool(&self, x: &Tensor, values: bool, indices: bool) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let dtype = self.float_input(x)?;
        let batched = self.window.batched("input", x.shape())?;
        let x4 = self.window.to_nchw(x)?;
        let dims = [x4.shape()[0], x4.shape()[1], x4.shape()[2], x4.shape()[3]];
        let geom = self.geometry(dims, x.shape())?;
        let out_shape = Self::output_nchw(&geom, dims);
        let (pooled, idx) = float_dispatch!(dtype, self.op(), |T| {
            let mut idx = crate::storage::zeroed_vec::<i64>(geom.output_len());
            let mut out = if values { crate::storage::zeroed_vec::<T>(geom.output_len()) } else { vec![] };
            x4.with_contiguous::<T, _>(|xs| {
                kernel::max_indices(&geom, xs, &mut idx);
                if values {
                    kernel::take_indices(&geom, xs, &idx, &mut out);
                }
            })?;
            let pooled = if values { Some(Tensor::from_vec(out, out_shape.as_slice())?) } else { None };
            (pooled, Tensor::from_vec(idx, out_shape.as_slice())?)
        });
        let pooled = pooled.map(|p| self.window.from_nchw(p, batched)).transpose()?;
        let idx = if indices { Some(self.window.from_nchw(idx, batched)?) } else { None };
        Ok((pooled, idx))
    }

    /// The output gradient `g` as NCHW, checked against the pooling of an input of `x_dims`.
    fn nchw_grad(&self, g: &Tensor, geom: &PoolGeom, x_dims: [usize; 4]) -> Result<Tensor> {
        let g4 = self.window.to_nchw(g)?;
        if g4.shape() != Self::output_nchw(geom, x_dims) {
            return shape_err(format!(
                "{}_backward: the output gradient has shape {} but the pooling's output is {}",
                self.op(),
                fmt_shape(g.shape()),
                fmt_shape(&Self::output_nchw(geom, x_dims))
            ));
        }
        Ok(g4)
    }

    /// The input's gradient for the output's gradient `g`.
    fn grad(&self, g: &Tensor, x: &Tensor) -> Result<Tensor> {
        if self.reduce == Reduce::Max {
            let (_, indices) = self.max_pool(x, false, true)?;
            let indices = indices.ok_or_else(|| Error::Internal(format!("{}: no indices", self.op())))?;
            return self.max_grad(g, &indices, x.shape());
        }
        let dtype = self.float_input(g)?;
        let batched = self.window.batched("input", x.shape())?;
        let x_dims = self.window.nchw_shape(x.shape())?;
        let geom = self.geometry(x_dims, x.shape())?;
        let g4 = self.nchw_grad(g, &geom, x_dims)?;
        let out = float_dispatch!(dtype, self.op(), |T| {
            let mut gx = crate::storage::zeroed_vec::<T>(geom.input_len());
            g4.with_contiguous::<T, _>(|gs| match self.reduce {
                Reduce::Avg(how) => kernel::avg_grad(&geom, how, gs, &mut gx),
                Reduce::Adaptive(_) => kernel::adaptive_avg_grad(&geom, gs, &mut gx),
                Reduce::Max => {}
            })?;
            Tensor::from_vec(gx, x_dims.as_slice())?
        });
        self.window.from_nchw(out, batched)
    }

    /// Max pooling's input gradient (for an input of `x_shape`) from the flat indices of
    /// its maxima: each output's gradient added at its maximum.
    fn max_grad(&self, g: &Tensor, indices: &Tensor, x_shape: &[usize]) -> Result<Tensor> {
        let dtype = self.float_input(g)?;
        let batched = self.window.batched("input", x_shape)?;
        let x_dims = self.window.nchw_shape(x_shape)?;
        let geom = self.geometry(x_dims, x_shape)?;
        let g4 = self.nchw_grad(g, &geom, x_dims)?;
        let i4 = self.window.to_nchw(indices)?;
        let plane = (geom.h * geom.w) as i64;
        if i4.shape() != g4.shape() || indices.dtype() != DType::I64 {
            return Err(Error::Internal(format!(
                "{}_backward: indices of shape {} and dtype {} for an output gradient of shape {}",
                self.op(),
                fmt_shape(indices.shape()),
                indices.dtype().name(),
                fmt_shape(g.shape())
            )));
        }
        let out = float_dispatch!(dtype, self.op(), |T| {
            let mut gx = crate::storage::zeroed_vec::<T>(geom.input_len());
            i4.with_contiguous::<i64, _>(|idx| {
                if idx.iter().any(|&i| !(0..plane).contains(&i)) {
                    return Err(Error::Internal(format!("{}_backward: an index lies outside its plane", self.op())));
                }
                g4.with_contiguous::<T, _>(|gs| kernel::max_grad(&geom, gs, idx, &mut gx))
            })??;
            Tensor::from_vec(gx, x_dims.as_slice())?
        });
        self.window.from_nchw(out, batched)
    }

    fn infer(&self, inputs: &[Meta<'_>], indices: bool) -> Result<(PartialShape, DType)> {
        let (x, dtype) = *nth(inputs, 0, self.op())?;
        if !dtype.is_float() {
            return dtype_err(format!("{}: expected a float tensor but got {}", self.op(), dtype.name()));
        }
        let out_dtype = if indices { DType::I64 } else { dtype };
        let Some(x) = x else { return Ok((None, out_dtype)) };
        let spatial = self.window.spatial;
        if x.len() != spatial + 2 && (self.window.tf || x.len() != spatial + 1) {
            return shape_err(format!("{}: input must be {}-D, got rank {}", self.op(), spatial + 2, x.len()));
        }
        let batched = x.len() == spatial + 2;
        let c = if self.window.channels_last { x.len() - 1 } else { usize::from(batched) };
        let spatial_dims: Vec<usize> = (0..x.len()).filter(|&d| !(batched && d == 0) && d != c).collect();
        let mut out = x.clone();
        for (i, &d) in spatial_dims.iter().enumerate() {
            let axis = if spatial == 1 { 1 } else { i };
            out[d] = match x[d] {
                Some(size) => Some(self.out_size(axis, size)?.0),
                None => None,
            };
        }
        Ok((Some(out), out_dtype))
    }
}

/// `max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False)`; TF's
/// `nn.max_pool(value, ksize, strides, padding, data_format='NHWC')`.
const MAX_POOL_PARAMS: &[Param] = &[
    param("kernel_size", "ksize", Kind::Ints, None, None),
    param("stride", "strides", Kind::Ints, Some("None"), None),
    param("padding", "padding", Kind::Padding, Some("0"), None),
    param("", "data_format", Kind::Str, Some("'NCHW'"), Some("'NHWC'")),
    param("dilation", "", Kind::Ints, Some("1"), Some("1")),
    param("ceil_mode", "", Kind::Bool, Some("False"), Some("False")),
    TF_SEMANTICS,
];

/// `avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
/// divisor_override=None)`; TF's `nn.avg_pool(value, ksize, strides, padding, data_format='NHWC')`,
/// which divides by the number of input elements in each window.
const AVG_POOL_PARAMS: &[Param] = &[
    param("kernel_size", "ksize", Kind::Ints, None, None),
    param("stride", "strides", Kind::Ints, Some("None"), None),
    param("padding", "padding", Kind::Padding, Some("0"), None),
    param("", "data_format", Kind::Str, Some("'NCHW'"), Some("'NHWC'")),
    param("ceil_mode", "", Kind::Bool, Some("False"), Some("False")),
    param("count_include_pad", "", Kind::Bool, Some("True"), Some("False")),
    param("divisor_override", "", Kind::OptInt, Some("None"), Some("None")),
    TF_SEMANTICS,
];

fn channels_last(op: &str, format: &str) -> Result<bool> {
    match format {
        "NHWC" => Ok(true),
        "NCHW" => Ok(false),
        f => Err(Error::InvalidArgument(format!("{op}: data_format must be 'NHWC' or 'NCHW', got '{f}'"))),
    }
}

/// The window arguments common to max and average pooling: (kernel, stride, padding).
fn window_args(args: &Args, window: &Window) -> Result<([usize; 2], [usize; 2], Pad)> {
    let kernel = window.per_dim("kernel_size", &args.required_ints(0, "kernel_size")?, 1)?;
    let stride = match args.dims(1)? {
        Some(s) if !s.is_empty() => window.per_dim("stride", &s, 1)?,
        _ => kernel,
    };
    let padding = window.padding(&args.padding(2)?)?;
    if let Pad::Explicit(p) = &padding {
        if !window.tf {
            for axis in 0..2 {
                if p[axis][0] * 2 > kernel[axis] {
                    return Err(Error::InvalidArgument(format!(
                        "{}: pad should be at most half of effective kernel size, but got pad={}, kernel_size={}",
                        window.op, p[axis][0], kernel[axis]
                    )));
                }
            }
        }
    }
    if !window.tf && matches!(padding, Pad::Same | Pad::Valid) {
        return Err(Error::InvalidArgument(format!("{}: padding must be an int or a pair of ints", window.op)));
    }
    Ok((kernel, stride, padding))
}

fn build_max_pool(args: &Args, op: &'static str) -> Result<PoolConfig> {
    let tf = args.flag(6)?;
    let window = Window { op, spatial: 2, channels_last: channels_last(op, args.text(3)?)?, tf };
    let (kernel, stride, padding) = window_args(args, &window)?;
    let dilation = window.per_dim("dilation", &args.required_ints(4, "dilation")?, 1)?;
    Ok(PoolConfig { window, kernel, stride, padding, dilation, ceil_mode: args.flag(5)?, reduce: Reduce::Max })
}

macro_rules! pool_op {
    ($ty:ident, $name:literal, $tf:expr, $doc:literal, $params:expr, $front:expr, $build:expr, indices: $indices:literal) => {
        #[derive(Clone, Debug)]
        pub struct $ty(Box<PoolConfig>);

        impl TableOp for $ty {
            const SPEC: Spec = Spec {
                name: $name,
                torch_aliases: &[],
                tf: $tf,
                doc: $doc,
                differentiable: !$indices,
                inputs: ONE_INPUT_NAMED,
                params: $params,
            };
            const TORCH_FRONT: TorchFront = $front;

            fn build(args: &Args) -> Result<Self> {
                $build(args).map(|cfg| $ty(Box::new(cfg)))
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                self.0.run(nth(inputs, 0, $name)?, $indices)
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                self.0.infer(inputs, $indices)
            }

            fn saves(&self, needs: &[bool]) -> Saves {
                let reads_input = self.0.reduce == Reduce::Max && needs.first().copied().unwrap_or(false);
                Saves { inputs: u32::from(reads_input), output: false }
            }

            fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                if $indices || !a.needs.first().copied().unwrap_or(false) {
                    return Ok(vec![None]);
                }
                let x = nth(a.inputs, 0, $name)?;
                if self.0.reduce == Reduce::Max {
                    // The indices are their own node, so a plan that also runs the pooling
                    // computes them in the pooling's pass (`graph/fusion.rs`).
                    let indices =
                        d.apply(Op::Table(TableOps::MaxPool2dIndices(MaxPool2dIndices(self.0.clone()))), &[x])?;
                    let grad = Op::Table(TableOps::MaxPoolGrad(MaxPoolGrad(self.0.clone())));
                    return Ok(vec![Some(d.apply(grad, &[a.grad, &indices, x])?)]);
                }
                let grad = Op::Table(TableOps::PoolGrad(PoolGrad(self.0.clone())));
                Ok(vec![Some(d.apply(grad, &[a.grad, x])?)])
            }
        }
    };
}

/// The one input of a pooling: torch's `input`, TF's `input` (`value` for `nn.max_pool`).
const ONE_INPUT_NAMED: &[Input] = &[Input { torch: "input", tf: "input", list: false }];

pool_op!(
    MaxPool2d,
    "max_pool2d",
    &["nn.max_pool(value)", "nn.max_pool2d"],
    "2-D max pooling over an NCHW input (TF: NHWC, or NCHW by `data_format`); NaN wins a window.",
    MAX_POOL_PARAMS,
    TorchFront::FUNCTION_AND_FUNCTIONAL,
    |args: &Args| build_max_pool(args, "max_pool2d"),
    indices: false
);

pool_op!(
    MaxPool2dIndices,
    "max_pool2d_indices",
    &[],
    "The flat index (over H·W of its plane, int64) of each window's maximum in `max_pool2d`: the indices of \
     `F.max_pool2d(..., return_indices=True)`.",
    MAX_POOL_PARAMS,
    TorchFront::FUNCTIONAL,
    |args: &Args| build_max_pool(args, "max_pool2d_indices"),
    indices: true
);

pool_op!(
    AvgPool2d,
    "avg_pool2d",
    &["nn.avg_pool(value)", "nn.avg_pool2d"],
    "2-D average pooling over an NCHW input (TF: NHWC, dividing by the number of input elements in each window).",
    AVG_POOL_PARAMS,
    TorchFront::FUNCTIONAL,
    |args: &Args| -> Result<PoolConfig> {
        let op = "avg_pool2d";
        let tf = args.flag(7)?;
        let window = Window { op, spatial: 2, channels_last: channels_last(op, args.text(3)?)?, tf };
        let (kernel, stride, padding) = window_args(args, &window)?;
        let how = match args.opt_int(6)? {
            Some(0) => return Err(Error::DivisionByZero(format!("{op}: divisor_override must not be 0"))),
            Some(d) => Divisor::Fixed(d as f64),
            None if args.flag(5)? => Divisor::WithPadding,
            None => Divisor::InputOnly,
        };
        let reduce = Reduce::Avg(how);
        Ok(PoolConfig { window, kernel, stride, padding, dilation: [1, 1], ceil_mode: args.flag(4)?, reduce })
    },
    indices: false
);

pool_op!(
    AdaptiveAvgPool2d,
    "adaptive_avg_pool2d",
    &[],
    "2-D adaptive average pooling of an NCHW input to `output_size`: output row i averages input rows \
     floor(i·H/out) to ceil((i+1)·H/out).",
    &[param("output_size", "output_size", Kind::Ints, None, None)],
    TorchFront::FUNCTIONAL,
    |args: &Args| -> Result<PoolConfig> {
        let op = "adaptive_avg_pool2d";
        let window = Window { op, spatial: 2, channels_last: false, tf: false };
        let sizes = args.required_ints(0, "output_size")?;
        let shifted: Vec<isize> = sizes.iter().map(|v| v + 1).collect();
        let [h, w] = window.per_dim("output_size", &shifted, 1)?;
        let out = [h - 1, w - 1];
        let reduce = Reduce::Adaptive(out);
        Ok(PoolConfig { window, kernel: [1, 1], stride: [1, 1], padding: Pad::Valid, dilation: [1, 1], ceil_mode: false, reduce })
    },
    indices: false
);

/// `(g, x)`: the gradient of a pooling with respect to its input `x`.
#[derive(Clone, Debug)]
pub struct PoolGrad(Box<PoolConfig>);

impl TableOp for PoolGrad {
    const SPEC: Spec = internal("pool_grad", ONE_INPUT);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("pool_grad is built by the poolings' rules only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.0.grad(nth(inputs, 0, "pool_grad")?, nth(inputs, 1, "pool_grad")?)
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (_, dtype) = *nth(inputs, 0, "pool_grad")?;
        let (shape, _) = *nth(inputs, 1, "pool_grad")?;
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        Saves { inputs: 0b11, output: false }
    }

    /// An average pooling's gradient is linear in g: its adjoint is the pooling itself.
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        if !a.needs.first().copied().unwrap_or(false) {
            return Ok(vec![None, None]);
        }
        let pool = match self.0.reduce {
            Reduce::Avg(_) => TableOps::AvgPool2d(AvgPool2d(self.0.clone())),
            Reduce::Adaptive(_) => TableOps::AdaptiveAvgPool2d(AdaptiveAvgPool2d(self.0.clone())),
            // Max pooling's rule emits `MaxPoolGrad` (below), never this op.
            Reduce::Max => return Err(Error::Internal("pool_grad: max pooling has max_pool_grad".into())),
        };
        Ok(vec![Some(d.apply(Op::Table(pool), &[a.grad])?), None])
    }
}

/// `(g, indices, x)`: max pooling's input gradient from the flat indices of its maxima
/// (`max_pool2d_indices`); `x` gives only the shape.
#[derive(Clone, Debug)]
pub struct MaxPoolGrad(Box<PoolConfig>);

impl TableOp for MaxPoolGrad {
    const SPEC: Spec = internal("max_pool_grad", ONE_INPUT);

    fn build(_args: &Args) -> Result<Self> {
        Err(Error::Internal("max_pool_grad is built by max pooling's rule only".into()))
    }

    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let op = "max_pool_grad";
        self.0.max_grad(nth(inputs, 0, op)?, nth(inputs, 1, op)?, nth(inputs, 2, op)?.shape())
    }

    fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
        let (_, dtype) = *nth(inputs, 0, "max_pool_grad")?;
        let (shape, _) = *nth(inputs, 2, "max_pool_grad")?;
        Ok((shape.clone(), dtype))
    }

    fn saves(&self, _needs: &[bool]) -> Saves {
        // Only recorded when a backward is (create_graph): its rule reads the indices.
        Saves { inputs: 0b10, output: false }
    }

    /// Linear in g: the adjoint of putting g at each window's maximum is picking gg there,
    /// with the planes flattened (the indices are flat over H·W).
    fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
        if !a.needs.first().copied().unwrap_or(false) {
            return Ok(vec![None, None, None]);
        }
        let (g, indices) = (nth(a.inputs, 0, "max_pool_grad")?, nth(a.inputs, 1, "max_pool_grad")?);
        // The (H, W) dims, and where the flattened plane then lies.
        let (start, end, along) = if self.0.window.channels_last { (-3, -2, -2) } else { (-2, -1, -1) };
        let flatten = |d: &mut D, v: &D::Value| {
            d.apply(Op::Table(TableOps::Flatten(super::reshapes::Flatten::new(start, end))), &[v])
        };
        let planes = flatten(d, a.grad)?;
        let flat_indices = flatten(d, indices)?;
        let take = Op::Table(TableOps::TakeAlongDim(super::ordering::TakeAlongDim::along(along)));
        let picked = d.apply(take, &[&planes, &flat_indices])?;
        Ok(vec![Some(d.apply(Op::ReshapeLike, &[&picked, g])?), None, None])
    }
}

impl MaxPool2d {
    /// Whether `indices` computes the indices of this pooling's maxima (same arguments).
    pub fn has_indices(&self, indices: &MaxPool2dIndices) -> bool {
        self.0 == indices.0
    }

    /// The pooled values and the flat indices of their maxima, from one pass over `x`.
    pub fn with_indices(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        match self.0.max_pool(x, true, true)? {
            (Some(values), Some(indices)) => Ok((values, indices)),
            _ => Err(Error::Internal("max_pool2d: values or indices missing".into())),
        }
    }
}
