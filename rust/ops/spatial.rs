//! What convolutions and poolings share: their window arguments on both fronts (torch's
//! `stride=2`, `padding='same'`; TF's `strides=[1, 2, 2, 1]`, `padding='SAME'`), and moving
//! tensors between the caller's layout (NCHW or NHWC, batched or not, 1-D or 2-D) and the
//! kernels' batched NCHW.

use super::args::Padding;
use crate::error::{shape_err, Error, Result};
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

/// Padding as the kernels resolve it once the input's size is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pad {
    /// (before, after) per spatial dim: (top, bottom), (left, right).
    Explicit([[usize; 2]; 2]),
    /// TF's SAME (and torch's `'same'`, which needs stride 1): the output has ceil(size / stride)
    /// positions, and an odd total padding puts the extra element after.
    Same,
    Valid,
}

impl Pad {
    /// (before, after) along one dim of `size` for a window spanning `span` elements.
    pub fn resolve(&self, axis: usize, size: usize, span: usize, stride: usize) -> [usize; 2] {
        match self {
            Pad::Explicit(p) => p[axis],
            Pad::Valid => [0, 0],
            Pad::Same => {
                let out = size.div_ceil(stride);
                let total = ((out.max(1) - 1) * stride + span).saturating_sub(size);
                [total / 2, total - total / 2]
            }
        }
    }
}

/// Where the arguments come from, and the layout of the tensors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// The op's torch name, for messages.
    pub op: &'static str,
    /// 1 (conv1d: N·C·L) or 2 (N·C·H·W).
    pub spatial: usize,
    /// Channels last (TF's NHWC / NWC).
    pub channels_last: bool,
    /// The arguments were spelt as TF spells them (strides over every dim, pairs of paddings).
    pub tf: bool,
}

impl Window {
    /// The index of the channels dim among `rank` dims.
    fn channel_dim(&self, rank: usize) -> usize {
        if self.channels_last {
            rank - 1
        } else {
            rank - self.spatial - 1
        }
    }

    /// Per spatial dim (height first; a 1-D op has height 1): a stride, kernel size or dilation
    /// given as one int, one per spatial dim, or (TF) one per dim of the input.
    pub fn per_dim(&self, name: &str, values: &[isize], default_h: usize) -> Result<[usize; 2]> {
        let full = self.spatial + 2;
        let picked: Vec<isize> = match values.len() {
            1 => vec![values[0]; self.spatial],
            n if n == self.spatial => values.to_vec(),
            n if self.tf && n == full => {
                let c = self.channel_dim(full);
                if values[0] != 1 || values[c] != 1 {
                    return Err(Error::InvalidArgument(format!(
                        "{}: {name} in the batch and depth dimensions must be 1, got {values:?}",
                        self.op
                    )));
                }
                (0..full).filter(|&d| d != 0 && d != c).map(|d| values[d]).collect()
            }
            n => {
                return Err(Error::InvalidArgument(format!(
                    "{}: {name} must be one int or {} ints{}, got {n}",
                    self.op,
                    self.spatial,
                    if self.tf { format!(" (or {full})") } else { String::new() }
                )))
            }
        };
        if let Some(bad) = picked.iter().find(|&&v| v < 1) {
            return Err(Error::InvalidArgument(format!("{}: {name} must be positive, got {bad}", self.op)));
        }
        let at = |i: usize| picked[i] as usize;
        Ok(if self.spatial == 1 { [default_h, at(0)] } else { [at(0), at(1)] })
    }

    /// The padding argument: a name, ints per spatial dim (symmetric), or TF's pairs per dim.
    pub fn padding(&self, padding: &Padding) -> Result<Pad> {
        match padding {
            Padding::Name(name) => match name.to_ascii_lowercase().as_str() {
                "same" => Ok(Pad::Same),
                "valid" => Ok(Pad::Valid),
                _ => Err(Error::InvalidArgument(format!(
                    "{}: padding must be {} or ints, got '{name}'",
                    self.op,
                    if self.tf { "'SAME', 'VALID'" } else { "'same', 'valid'" }
                ))),
            },
            Padding::Ints(ints, true) => self.pairs(ints),
            Padding::Ints(ints, false) => {
                let both = self.per_dim_allow_zero("padding", ints)?;
                Ok(Pad::Explicit([[both[0], both[0]], [both[1], both[1]]]))
            }
        }
    }

    fn per_dim_allow_zero(&self, name: &str, ints: &[isize]) -> Result<[usize; 2]> {
        if let Some(bad) = ints.iter().find(|&&v| v < 0) {
            return Err(Error::InvalidArgument(format!("{}: {name} must be non-negative, got {bad}", self.op)));
        }
        let shifted: Vec<isize> = ints.iter().map(|v| v + 1).collect();
        let [h, w] = Window { tf: false, ..self.clone() }.per_dim(name, &shifted, 1)?;
        Ok([h - 1, w - 1])
    }

    /// TF's explicit paddings: one (before, after) pair per dim of the input, zero in the batch
    /// and depth dims.
    fn pairs(&self, ints: &[isize]) -> Result<Pad> {
        let full = self.spatial + 2;
        if ints.len() != 2 * full || ints.iter().any(|&v| v < 0) {
            return Err(Error::InvalidArgument(format!(
                "{}: explicit paddings must be {full} non-negative (before, after) pairs, got {ints:?}",
                self.op
            )));
        }
        let c = self.channel_dim(full);
        if ints[0] != 0 || ints[1] != 0 || ints[2 * c] != 0 || ints[2 * c + 1] != 0 {
            return Err(Error::InvalidArgument(format!(
                "{}: explicit paddings in the batch and depth dimensions must be 0, got {ints:?}",
                self.op
            )));
        }
        let spatial: Vec<[usize; 2]> =
            (0..full).filter(|&d| d != 0 && d != c).map(|d| [ints[2 * d] as usize, ints[2 * d + 1] as usize]).collect();
        Ok(Pad::Explicit(if self.spatial == 1 { [[0, 0], spatial[0]] } else { [spatial[0], spatial[1]] }))
    }

    /// Whether a tensor of this rank is a batch (rank spatial + 2) or one sample (rank spatial + 1);
    /// any other rank is refused.
    pub fn batched(&self, what: &str, shape: &[usize]) -> Result<bool> {
        match shape.len() {
            r if r == self.spatial + 2 => Ok(true),
            r if r == self.spatial + 1 && !self.tf => Ok(false),
            _ => shape_err(format!(
                "{}: expected {}{}-D {what}, but got {what} of shape {}",
                self.op,
                if self.tf { String::new() } else { format!("{}-D (unbatched) or ", self.spatial + 1) },
                self.spatial + 2,
                fmt_shape(shape)
            )),
        }
    }

    /// The batched NCHW layout of a tensor of this shape and these strides.
    fn nchw_layout(&self, batched: bool, mut shape: Vec<usize>, mut strides: Vec<isize>) -> (Vec<usize>, Vec<isize>) {
        if !batched {
            shape.insert(0, 1);
            strides.insert(0, 0);
        }
        if self.channels_last {
            shape[1..].rotate_right(1);
            strides[1..].rotate_right(1);
        }
        if self.spatial == 1 {
            shape.insert(2, 1);
            strides.insert(2, 0);
        }
        (shape, strides)
    }

    /// The batched NCHW shape of an input of this shape.
    pub fn nchw_shape(&self, shape: &[usize]) -> Result<[usize; 4]> {
        let batched = self.batched("input", shape)?;
        let (s, _) = self.nchw_layout(batched, shape.to_vec(), vec![0; shape.len()]);
        Ok([s[0], s[1], s[2], s[3]])
    }

    /// `x` as a contiguous batched NCHW tensor (a 1-D op's input as N·C·1·L).
    pub fn to_nchw(&self, x: &Tensor) -> Result<Tensor> {
        let batched = self.batched("input", x.shape())?;
        let (shape, strides) = self.nchw_layout(batched, x.shape().to_vec(), x.strides().to_vec());
        x.view_as_layout(shape, strides, x.offset())?.contiguous()
    }

    /// A batched NCHW result (contiguous values of `shape`) in the layout of an input of `like` shape.
    pub fn from_nchw(&self, values: Tensor, like_batched: bool) -> Result<Tensor> {
        let mut shape = values.shape().to_vec();
        let mut strides = values.strides().to_vec();
        if self.spatial == 1 {
            shape.remove(2);
            strides.remove(2);
        }
        if self.channels_last {
            shape[1..].rotate_left(1);
            strides[1..].rotate_left(1);
        }
        if !like_batched {
            shape.remove(0);
            strides.remove(0);
        }
        values.view_as_layout(shape, strides, values.offset())?.contiguous()
    }
}

fn oihw_layout(spatial: usize, hwio: bool, mut shape: Vec<usize>, mut strides: Vec<isize>) -> (Vec<usize>, Vec<isize>) {
    if hwio {
        shape.rotate_right(2);
        strides.rotate_right(2);
        shape.swap(0, 1);
        strides.swap(0, 1);
    }
    if spatial == 1 {
        shape.insert(2, 1);
        strides.insert(2, 0);
    }
    (shape, strides)
}

fn check_weight_rank(shape: &[usize], spatial: usize, op: &str) -> Result<()> {
    if shape.len() != spatial + 2 {
        return shape_err(format!(
            "{op}: expected a {}-D weight, but got weight of shape {}",
            spatial + 2,
            fmt_shape(shape)
        ));
    }
    Ok(())
}

/// The OIHW shape of a weight of this shape.
pub fn oihw_shape(shape: &[usize], spatial: usize, hwio: bool, op: &str) -> Result<[usize; 4]> {
    check_weight_rank(shape, spatial, op)?;
    let (s, _) = oihw_layout(spatial, hwio, shape.to_vec(), vec![0; shape.len()]);
    Ok([s[0], s[1], s[2], s[3]])
}

/// A weight (OIHW; TF's HWIO with `hwio`; 1-D ops without H) as a contiguous OIHW tensor.
pub fn weight_oihw(w: &Tensor, spatial: usize, hwio: bool, op: &str) -> Result<Tensor> {
    check_weight_rank(w.shape(), spatial, op)?;
    let (shape, strides) = oihw_layout(spatial, hwio, w.shape().to_vec(), w.strides().to_vec());
    w.view_as_layout(shape, strides, w.offset())?.contiguous()
}

/// An OIHW weight gradient back in the weight's own layout.
pub fn weight_from_oihw(values: Tensor, spatial: usize, hwio: bool) -> Result<Tensor> {
    let mut shape = values.shape().to_vec();
    let mut strides = values.strides().to_vec();
    if spatial == 1 {
        shape.remove(2);
        strides.remove(2);
    }
    if hwio {
        shape.swap(0, 1);
        strides.swap(0, 1);
        shape.rotate_left(2);
        strides.rotate_left(2);
    }
    values.view_as_layout(shape, strides, values.offset())?.contiguous()
}

/// The size of a strided window's output over `size` padded by `pads`, or the error for a
/// window larger than the padded input.
pub fn out_size(op: &str, size: usize, pads: [usize; 2], span: usize, stride: usize, shape: &[usize]) -> Result<usize> {
    let padded = size + pads[0] + pads[1];
    if padded < span {
        return shape_err(format!(
            "{op}: the padded input size per channel ({padded}) is smaller than the kernel's span ({span}) for input \
             of shape {}; use a smaller kernel or more padding",
            fmt_shape(shape)
        ));
    }
    Ok((padded - span) / stride + 1)
}
