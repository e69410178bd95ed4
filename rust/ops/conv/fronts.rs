//! The public convolutions `conv2d`, `conv1d` and `conv_transpose2d`: their table
//! entries (specs and parameters on both fronts) and the reading of their arguments
//! into a `ConvConfig`.

use super::ConvConfig;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::PartialShape;
use crate::ops::args::{param, Padding};
use crate::ops::spatial::{Pad, Window};
use crate::ops::{nth, Args, Input, Kind, Meta, Param, Spec, TableOp, TorchFront, TF_SEMANTICS};
use crate::rules::{Differentiator, RuleArgs, Saves};
use crate::tensor::Tensor;

const INPUT_AND_WEIGHT: &[Input] =
    &[Input { torch: "input", tf: "input", list: false }, Input { torch: "weight", tf: "filter", list: false }];

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
pub struct Conv2d(pub(super) Box<ConvConfig>);

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
pub struct Conv1d(pub(super) Box<ConvConfig>);

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
