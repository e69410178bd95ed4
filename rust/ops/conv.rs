//! Convolutions: `conv1d`, `conv2d` (TF `nn.conv2d`, NHWC or NCHW with an HWIO filter) and
//! `conv_transpose2d`, all on the im2col kernels of `kernels/conv.rs`. Their gradients are
//! the internal ops `conv_input_grad` and `conv_weight_grad`, which read the sizes they need
//! from a reference tensor at run time, so the one rule serves static graphs of unknown shapes.

use super::args::Padding;
use super::spatial::{oihw_shape, out_size, weight_from_oihw, weight_oihw, Pad, Window};
use super::{internal, nth, Args, Input, Kind, Meta, Param, Spec, TableOp, TableOps, TorchFront, TF_SEMANTICS};
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

const INPUT_AND_WEIGHT: &[Input] =
    &[Input { torch: "input", tf: "input", list: false }, Input { torch: "weight", tf: "filter", list: false }];

const fn param(
    torch: &'static str,
    tf: &'static str,
    kind: Kind,
    torch_default: Option<&'static str>,
    tf_default: Option<&'static str>,
) -> Param {
    Param { torch, tf, tf_aliases: &[], kind, torch_default, tf_default }
}

/// `conv2d(input, weight, stride=1, padding=0, dilation=1, groups=1)`; TF's `nn.conv2d(input,
/// filter, strides, padding, use_cudnn_on_gpu=True, data_format='NHWC', dilations=[1, 1, 1, 1])`.
const CONV2D_PARAMS: &[Param] = &[
    param("stride", "strides", Kind::Ints, Some("1"), None),
    param("padding", "padding", Kind::Padding, Some("0"), None),
    param("", "use_cudnn_on_gpu", Kind::Bool, Some("True"), Some("True")),
    param("", "data_format", Kind::Str, Some("'NCHW'"), Some("'NHWC'")),
    param("dilation", "dilations", Kind::Ints, Some("1"), Some("[1, 1, 1, 1]")),
    param("groups", "", Kind::Int, Some("1"), Some("1")),
    TF_SEMANTICS,
];

/// `conv1d(input, weight, stride=1, padding=0, dilation=1, groups=1)`; TF's `nn.conv1d(value,
/// filters, stride, padding, use_cudnn_on_gpu=None, data_format='NWC', dilations=1)`.
const CONV1D_PARAMS: &[Param] = &[
    param("stride", "stride", Kind::Ints, Some("1"), None),
    param("padding", "padding", Kind::Padding, Some("0"), None),
    param("", "use_cudnn_on_gpu", Kind::OptBool, Some("None"), Some("None")),
    param("", "data_format", Kind::OptStr, Some("'NCW'"), Some("None")),
    param("dilation", "dilations", Kind::Ints, Some("1"), Some("1")),
    param("groups", "", Kind::Int, Some("1"), Some("1")),
    TF_SEMANTICS,
];

/// The data format named by TF's `data_format` (None: TF's channels-last default).
fn channels_last(op: &str, spatial: usize, format: Option<&str>) -> Result<bool> {
    let (first, last) = if spatial == 1 { ("NCW", "NWC") } else { ("NCHW", "NHWC") };
    match format {
        None => Ok(true),
        Some(f) if f == last || (spatial == 1 && f == "NHWC") => Ok(true),
        Some(f) if f == first || (spatial == 1 && f == "NCHW") => Ok(false),
        Some(f) => Err(Error::InvalidArgument(format!("{op}: data_format must be '{last}' or '{first}', got '{f}'"))),
    }
}

fn build_conv(args: &Args, op: &'static str, spatial: usize, format: Option<&str>) -> Result<ConvConfig> {
    let tf = args.flag(6)?;
    let window = Window { op, spatial, channels_last: channels_last(op, spatial, format)?, tf };
    let padding = window.padding(&args.padding(1)?)?;
    let stride = window.per_dim("stride", &args.required_ints(0, "stride")?, 1)?;
    let dilation = window.per_dim("dilation", &args.required_ints(4, "dilation")?, 1)?;
    let groups = args.int(5)?;
    if groups < 1 {
        return Err(Error::InvalidArgument(format!("{op}: groups must be a positive integer, got {groups}")));
    }
    if padding == Pad::Same && !tf && stride != [1, 1] {
        return Err(Error::InvalidArgument(format!("{op}: padding='same' is not supported for strided convolutions")));
    }
    Ok(ConvConfig {
        window,
        stride,
        padding,
        dilation,
        groups: groups as usize,
        output_padding: [0, 0],
        transposed: false,
        hwio: tf,
    })
}

macro_rules! conv_table_op {
    ($ty:ident, $spec:expr, $front:expr) => {
        impl TableOp for $ty {
            const SPEC: Spec = $spec;
            const TORCH_FRONT: TorchFront = $front;

            fn build(args: &Args) -> Result<Self> {
                build_any(args).map(|cfg| $ty(Box::new(cfg)))
            }

            fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
                self.0.run(nth(inputs, 0, self.0.op())?, nth(inputs, 1, self.0.op())?)
            }

            fn infer(&self, inputs: &[Meta<'_>]) -> Result<(PartialShape, DType)> {
                self.0.infer(inputs)
            }

            fn saves(&self, needs: &[bool]) -> Saves {
                self.0.saves(needs)
            }

            fn vjp<D: Differentiator>(&self, d: &mut D, a: RuleArgs<'_, D::Value>) -> Result<Vec<Option<D::Value>>> {
                self.0.vjp(d, a)
            }

            fn tf_type(&self) -> &'static str {
                $ty::TF_TYPE
            }
        }
    };
}

/// 2-D convolution.
#[derive(Clone, Debug)]
pub struct Conv2d(Box<ConvConfig>);

impl Conv2d {
    const TF_TYPE: &'static str = "Conv2D";
}

fn build_conv2d(args: &Args) -> Result<ConvConfig> {
    let format = args.text(3)?.to_string();
    build_conv(args, "conv2d", 2, Some(&format))
}

conv_table_op!(
    Conv2d,
    Spec {
        name: "conv2d",
        torch_aliases: &[],
        tf: &["nn.conv2d"],
        doc: "2-D convolution (cross-correlation) of an NCHW input (TF: NHWC, or NCHW by `data_format`) with \
              an OIHW weight (TF: an HWIO filter), with stride, padding, dilation and groups.",
        differentiable: true,
        inputs: INPUT_AND_WEIGHT,
        params: CONV2D_PARAMS,
    },
    TorchFront::FUNCTION_AND_FUNCTIONAL
);

/// 1-D convolution.
#[derive(Clone, Debug)]
pub struct Conv1d(Box<ConvConfig>);

impl Conv1d {
    const TF_TYPE: &'static str = "";
}

fn build_conv1d(args: &Args) -> Result<ConvConfig> {
    let format = args.opt_text(3)?.map(str::to_string);
    build_conv(args, "conv1d", 1, format.as_deref())
}

conv_table_op!(
    Conv1d,
    Spec {
        name: "conv1d",
        torch_aliases: &[],
        tf: &["nn.conv1d(value)"],
        doc: "1-D convolution of an NCL input (TF: NWC, or NCW by `data_format`) with an OIL weight (TF: a WIO \
              filter), with stride, padding, dilation and groups.",
        differentiable: true,
        inputs: &[
            Input { torch: "input", tf: "value", list: false },
            Input { torch: "weight", tf: "filters", list: false }
        ],
        params: CONV1D_PARAMS,
    },
    TorchFront::FUNCTION_AND_FUNCTIONAL
);

/// 2-D transposed convolution (the input gradient of a convolution).
#[derive(Clone, Debug)]
pub struct ConvTranspose2d(Box<ConvConfig>);

impl ConvTranspose2d {
    const TF_TYPE: &'static str = "";
}

fn build_conv_transpose2d(args: &Args) -> Result<ConvConfig> {
    let op = "conv_transpose2d";
    let window = Window { op, spatial: 2, channels_last: false, tf: false };
    let padding = window.padding(&Padding::Ints(args.required_ints(1, "padding")?, false))?;
    let stride = window.per_dim("stride", &args.required_ints(0, "stride")?, 1)?;
    let dilation = window.per_dim("dilation", &args.required_ints(4, "dilation")?, 1)?;
    let shifted: Vec<isize> = args.required_ints(2, "output_padding")?.iter().map(|v| v + 1).collect();
    let [oph, opw] = window.per_dim("output_padding", &shifted, 1)?;
    let output_padding = [oph - 1, opw - 1];
    if output_padding[0] >= stride[0] || output_padding[1] >= stride[1] {
        return Err(Error::InvalidArgument(format!(
            "{op}: output padding must be smaller than the stride, got output_padding {output_padding:?} and stride \
             {stride:?}"
        )));
    }
    let groups = args.int(3)?;
    if groups < 1 {
        return Err(Error::InvalidArgument(format!("{op}: groups must be a positive integer, got {groups}")));
    }
    Ok(ConvConfig {
        window,
        stride,
        padding,
        dilation,
        groups: groups as usize,
        output_padding,
        transposed: true,
        hwio: false,
    })
}

conv_table_op!(
    ConvTranspose2d,
    Spec {
        name: "conv_transpose2d",
        torch_aliases: &[],
        tf: &[],
        doc: "2-D transposed convolution of an NCHW input with an (in, out/groups, kh, kw) weight: the gradient of \
              `conv2d` with respect to its input, with stride, padding, output_padding, groups and dilation.",
        differentiable: true,
        inputs: INPUT_AND_WEIGHT,
        params: &[
            param("stride", "stride", Kind::Ints, Some("1"), Some("1")),
            param("padding", "padding", Kind::Ints, Some("0"), Some("0")),
            param("output_padding", "output_padding", Kind::Ints, Some("0"), Some("0")),
            param("groups", "groups", Kind::Int, Some("1"), Some("1")),
            param("dilation", "dilation", Kind::Ints, Some("1"), Some("1")),
        ],
    },
    TorchFront::FUNCTION_AND_FUNCTIONAL
);

/// Which builder a `conv_table_op!` type uses, by its spec's name.
fn build_any(args: &Args) -> Result<ConvConfig> {
    match args.op {
        "conv2d" => build_conv2d(args),
        "conv1d" => build_conv1d(args),
        "conv_transpose2d" => build_conv_transpose2d(args),
        other => Err(Error::Internal(format!("{other}: not a convolution"))),
    }
}

/// `(g, w, x)`: the gradient of a plain convolution with respect to its input `x`, of which
/// only the shape is read.
#[derive(Clone, Debug)]
pub struct ConvInputGrad(Box<ConvConfig>);

/// `(g, x, w)`: the gradient of a plain convolution with respect to its weight `w`, of which
/// only the shape is read.
#[derive(Clone, Debug)]
pub struct ConvWeightGrad(Box<ConvConfig>);

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
