//! Shapes, strides and numpy broadcasting.

use crate::error::{shape_err, Error, Result};

pub type Shape = smallvec::SmallVec<[usize; 4]>;
/// A layout's strides, inline up to four dims as `Shape` is.
pub type Strides = smallvec::SmallVec<[isize; 4]>;

/// `[2, 3]` — how shapes appear in every error message.
pub fn fmt_shape(shape: &[usize]) -> String {
    format!("{shape:?}")
}

pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Element count, or an error if it overflows `usize`.
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).ok_or_else(|| {
        Error::OutOfMemory(format!(
            "cannot allocate a tensor of shape {}: the element count overflows",
            fmt_shape(shape)
        ))
    })
}

pub fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![0; shape.len()];
    fill_contiguous_strides(shape, &mut strides);
    strides
}

/// Writes the row-major strides of `shape` into `strides` (of the same length).
pub fn fill_contiguous_strides(shape: &[usize], strides: &mut [isize]) {
    let mut step = 1isize;
    for (stride, &dim) in strides.iter_mut().zip(shape).rev() {
        *stride = step;
        step *= dim.max(1) as isize;
    }
}

/// The lowest and highest element index a layout addresses, or None when it addresses
/// none (a zero-size shape) or the arithmetic overflows.
pub fn extent(shape: &[usize], strides: &[isize], offset: usize) -> Option<(isize, isize)> {
    if shape.len() != strides.len() || shape.contains(&0) {
        return None;
    }
    let (mut low, mut high) = (isize::try_from(offset).ok()?, isize::try_from(offset).ok()?);
    for (&d, &s) in shape.iter().zip(strides) {
        let reach = isize::try_from(d - 1).ok()?.checked_mul(s)?;
        if reach < 0 {
            low = low.checked_add(reach)?;
        } else {
            high = high.checked_add(reach)?;
        }
    }
    Some((low, high))
}

/// Whether every element the layout addresses lies in `0..len`. A zero-size layout
/// addresses nothing, and fits when its offset is at most `len`.
pub fn fits_in(shape: &[usize], strides: &[isize], offset: usize, len: usize) -> bool {
    if shape.len() != strides.len() {
        return false;
    }
    if shape.contains(&0) {
        return offset <= len;
    }
    extent(shape, strides, offset).is_some_and(|(low, high)| low >= 0 && (high as usize) < len)
}

/// The broadcast shape of two shapes, numpy rules.
pub fn broadcast_shapes(op: &str, a: &[usize], b: &[usize]) -> Result<Shape> {
    if a == b {
        return Ok(Shape::from_slice(a));
    }
    let rank = a.len().max(b.len());
    let mut out: Shape = smallvec::smallvec![0; rank];
    for i in 0..rank {
        let da = if i + a.len() >= rank { a[i + a.len() - rank] } else { 1 };
        let db = if i + b.len() >= rank { b[i + b.len() - rank] } else { 1 };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return shape_err(format!(
                "{op}: the size of tensor a ({da}) must match the size of tensor b ({db}) at \
                 non-singleton dimension {i} (shapes {} and {}); make the shapes broadcastable, \
                 e.g. with reshape or unsqueeze",
                fmt_shape(a),
                fmt_shape(b)
            ));
        };
    }
    Ok(out)
}

/// Strides to read a tensor of `shape`/`strides` as if it had the broadcast shape `target`.
pub fn broadcast_strides(shape: &[usize], strides: &[isize], target: &[usize]) -> Vec<isize> {
    let offset = target.len() - shape.len();
    (0..target.len())
        .map(|i| if i < offset || shape[i - offset] == 1 && target[i] != 1 { 0 } else { strides[i - offset] })
        .collect()
}

/// Normalises possibly negative dims against `rank`, sorted. A dim named twice
/// (`(0, 0)`, or `(1, -1)` at rank 2) is refused, as PyTorch and numpy refuse it.
pub fn normalize_dims(op: &str, dims: &[isize], rank: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        out.push(normalize_dim(op, d, rank)?);
    }
    out.sort_unstable();
    if let Some(pair) = out.windows(2).find(|pair| pair[0] == pair[1]) {
        return shape_err(format!(
            "{op}: dim {} appears multiple times in the list of dims {dims:?}; name each dim once",
            pair[0]
        ));
    }
    Ok(out)
}

pub fn normalize_dim(op: &str, dim: isize, rank: usize) -> Result<usize> {
    let r = rank.max(1) as isize;
    let d = if dim < 0 { dim + r } else { dim };
    if d < 0 || d >= r {
        return Err(Error::Index(format!(
            "{op}: dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -r,
            r - 1
        )));
    }
    Ok(d as usize)
}

/// Resolves a reshape target with at most one -1 against `numel`.
pub fn infer_reshape(from: &[usize], to: &[isize]) -> Result<Shape> {
    let total = numel(from);
    let invalid = || shape_err(format!("shape '{:?}' is invalid for input of size {total}", to));
    let mut known = 1usize;
    let mut infer_at = None;
    for (i, &d) in to.iter().enumerate() {
        match d {
            -1 if infer_at.is_none() => infer_at = Some(i),
            -1 => return shape_err("reshape: only one dimension can be inferred (-1)"),
            d if d < 0 => return invalid(),
            d => known = known.saturating_mul(d as usize),
        }
    }
    let mut out: Shape = to.iter().map(|&d| d.max(0) as usize).collect();
    if let Some(i) = infer_at {
        if known == 0 || !total.is_multiple_of(known) {
            return invalid();
        }
        out[i] = total / known;
    } else if known != total {
        return invalid();
    }
    Ok(out)
}

/// The shape after reducing `dims` (already normalised).
pub fn reduced_shape(shape: &[usize], dims: &[usize], keepdim: bool) -> Shape {
    let mut out = Shape::with_capacity(shape.len());
    for (i, &d) in shape.iter().enumerate() {
        if dims.contains(&i) {
            if keepdim {
                out.push(1);
            }
        } else {
            out.push(d);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast_shapes("add", &[3, 1], &[1, 4]).unwrap().to_vec(), vec![3, 4]);
        assert_eq!(broadcast_shapes("add", &[2, 3], &[3]).unwrap().to_vec(), vec![2, 3]);
        assert_eq!(broadcast_shapes("add", &[], &[5]).unwrap().to_vec(), vec![5]);
        assert_eq!(broadcast_shapes("add", &[0, 1], &[1, 3]).unwrap().to_vec(), vec![0, 3]);
        let err = broadcast_shapes("add", &[2, 3], &[2, 4]).unwrap_err().to_string();
        assert!(err.contains("[2, 3]") && err.contains("[2, 4]") && err.contains("must match"));
    }

    #[test]
    fn broadcast_strides_zero_out_expanded_dims() {
        assert_eq!(broadcast_strides(&[3, 1], &[1, 1], &[2, 3, 4]), vec![0, 1, 0]);
    }

    #[test]
    fn reshape_infers_one_dimension() {
        assert_eq!(infer_reshape(&[4, 6], &[-1, 3]).unwrap().to_vec(), vec![8, 3]);
        assert!(infer_reshape(&[4, 6], &[5, -1]).is_err());
        assert!(infer_reshape(&[4, 6], &[-1, -1]).is_err());
        assert!(infer_reshape(&[4, 6], &[5, 7]).unwrap_err().to_string().contains("invalid for input of size 24"));
    }

    #[test]
    fn dims_normalise_negative_values() {
        assert_eq!(normalize_dims("sum", &[-1, 0], 3).unwrap(), vec![0, 2]);
        assert!(normalize_dims("sum", &[3], 3).is_err());
        assert!(matches!(normalize_dims("sum", &[1, -1], 2), Err(Error::Shape(_))));
    }
}
