//! What the shape families share: views over an input's storage (no copy), reshapes
//! that stay views when the strides allow, and arithmetic on partial (static) shapes.

use super::Meta;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::PartialShape;
use crate::shape::{contiguous_strides, normalize_dim, Shape, Strides};
use crate::tensor::Tensor;

/// The one tensor input of `op`.
pub fn only<'a>(inputs: &[&'a Tensor], op: &str) -> Result<&'a Tensor> {
    inputs.first().copied().ok_or_else(|| Error::InvalidArgument(format!("{op}: expected a tensor input")))
}

/// The shape and dtype of input `i` as static inference sees them.
pub fn meta<'a>(inputs: &[Meta<'a>], i: usize, op: &str) -> Result<Meta<'a>> {
    super::nth(inputs, i, op).copied()
}

/// The strides that read a tensor of `shape` and `strides` as `target` (as many elements,
/// row-major), or None when one stride per new dim cannot reach them (torch's `computeStride`).
pub fn view_strides(shape: &[usize], strides: &[isize], target: &[usize]) -> Option<Vec<isize>> {
    let numel: usize = shape.iter().product();
    if numel == 0 || shape.is_empty() {
        return (numel == target.iter().product::<usize>()).then(|| contiguous_strides(target));
    }
    let mut out = vec![0isize; target.len()];
    let mut view_d = target.len() as isize - 1;
    let mut chunk_base = strides[shape.len() - 1];
    let (mut tensor_numel, mut view_numel) = (1usize, 1usize);
    for d in (0..shape.len()).rev() {
        tensor_numel *= shape[d];
        let chunk_ends = d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel as isize * chunk_base);
        if !chunk_ends {
            continue;
        }
        while view_d >= 0 && (view_numel < tensor_numel || target[view_d as usize] == 1) {
            out[view_d as usize] = view_numel as isize * chunk_base;
            view_numel *= target[view_d as usize];
            view_d -= 1;
        }
        if view_numel != tensor_numel {
            return None;
        }
        if d > 0 {
            chunk_base = strides[d - 1];
            tensor_numel = 1;
            view_numel = 1;
        }
    }
    (view_d == -1).then_some(out)
}

/// `x` with another shape of the same size: a view when the strides allow, else a copy.
pub fn reshaped(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if let Some(strides) = view_strides(x.shape(), x.strides(), shape) {
        return x.view_as_layout(shape, strides, x.offset());
    }
    x.copy_with_shape(shape)
}

/// The view of `x` keeping `len` elements from `start` along `dim` (all already checked).
pub fn narrowed(x: &Tensor, dim: usize, start: usize, len: usize) -> Result<Tensor> {
    let mut shape = Shape::from_slice(x.shape());
    shape[dim] = len;
    let offset = (x.offset() as isize + start as isize * x.strides()[dim]) as usize;
    x.view_as_layout(shape, Strides::from_slice(x.strides()), offset)
}

/// The view of `x` with `dim` reversed (a negative stride).
pub fn flipped(x: &Tensor, dim: usize) -> Result<Tensor> {
    let n = x.shape()[dim];
    let mut strides = Strides::from_slice(x.strides());
    let offset = if n == 0 { x.offset() } else { (x.offset() as isize + (n as isize - 1) * strides[dim]) as usize };
    strides[dim] = -strides[dim];
    x.view_as_layout(x.shape(), strides, offset)
}

/// The view of `x`, whose `dim` has size 1, repeated `n` times along it (stride 0).
pub fn spread(x: &Tensor, dim: usize, n: usize) -> Result<Tensor> {
    let (mut shape, mut strides) = (Shape::from_slice(x.shape()), Strides::from_slice(x.strides()));
    shape[dim] = n;
    strides[dim] = 0;
    x.view_as_layout(shape, strides, x.offset())
}

/// `dim` normalised against the rank when the rank is known (so a bad dim fails at build time).
pub fn static_dim(op: &str, dim: isize, shape: &PartialShape) -> Result<Option<usize>> {
    shape.as_ref().map(|dims| normalize_dim(op, dim, dims.len())).transpose()
}

/// The product of partial dims: None when one is unknown.
pub fn product(dims: &[Option<usize>]) -> Option<usize> {
    dims.iter().try_fold(1usize, |acc, d| d.map(|v| acc * v))
}

/// A static shape and dtype that are the input's own (ops that keep the shape).
pub fn same_as(input: Meta<'_>) -> (PartialShape, DType) {
    (input.0.clone(), input.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattening_a_transpose_needs_a_copy_but_splitting_a_dim_does_not() {
        // [[0, 1, 2], [3, 4, 5]] transposed: shape [3, 2], strides [1, 3].
        assert_eq!(view_strides(&[3, 2], &[1, 3], &[6]), None);
        assert_eq!(view_strides(&[3, 2], &[1, 3], &[3, 2, 1]), Some(vec![1, 3, 3])); // any stride fits a dim of 1
        assert_eq!(view_strides(&[4, 6], &[6, 1], &[2, 2, 6]), Some(vec![12, 6, 1]));
        // Every other column of a [4, 12] matrix is evenly spaced; of a [4, 14] one it is not.
        assert_eq!(view_strides(&[4, 6], &[12, 2], &[24]), Some(vec![2]));
        assert_eq!(view_strides(&[4, 6], &[14, 2], &[24]), None);
        assert_eq!(view_strides(&[4, 6], &[14, 2], &[4, 2, 3]), Some(vec![14, 6, 2]));
        assert_eq!(view_strides(&[], &[], &[1, 1]), Some(vec![1, 1]));
        assert_eq!(view_strides(&[0, 3], &[3, 1], &[3, 0]), Some(vec![1, 1]));
    }
}
