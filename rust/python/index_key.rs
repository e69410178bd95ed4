//! Index keys: a Python key (`x[key]`) as core index items or a bool mask. The
//! core (`crate::indexing`) decides what the items mean; this only reads them.

use super::convert::{repr, tensor_from_numpy};
use super::errors::argument_type_error;
use super::tensor::PyTensor;
use crate::dtype::DType;
use crate::error::Error;
use crate::op::IndexItem;
use crate::tensor::Tensor;
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PySlice, PyTuple};

/// An index key: basic items (ints, slices, None, ...) or a bool mask.
pub enum IndexKey {
    Items(Vec<IndexItem>),
    Mask(Tensor),
}

pub fn index_key(key: &Bound<'_, PyAny>) -> PyResult<IndexKey> {
    if let Some(mask) = bool_mask(key)? {
        return Ok(IndexKey::Mask(mask));
    }
    let parts: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
        Ok(t) => t.iter().collect(),
        Err(_) => vec![key.clone()],
    };
    parts.iter().map(index_item).collect::<PyResult<_>>().map(IndexKey::Items)
}

fn index_item(part: &Bound<'_, PyAny>) -> PyResult<IndexItem> {
    if part.is_none() {
        return Ok(IndexItem::NewAxis);
    }
    if part.is_instance_of::<PyEllipsis>() {
        return Ok(IndexItem::Ellipsis);
    }
    if let Ok(slice) = part.cast::<PySlice>() {
        let step = slice_bound(&slice.getattr("step")?)?.unwrap_or(1);
        let (start, stop) = (slice_bound(&slice.getattr("start")?)?, slice_bound(&slice.getattr("stop")?)?);
        return Ok(IndexItem::Slice { start, stop, step });
    }
    // Before ints: `True` is an int to Python, but a 0-d bool index to numpy.
    if let Some(b) = bool_scalar(part)? {
        return Ok(IndexItem::Bool(b));
    }
    if !part.is_instance_of::<PyTensor>() {
        if let Ok(i) = part.extract::<isize>() {
            return Ok(IndexItem::Int(i));
        }
        if has_index(part) {
            return Err(Error::Index(format!(
                "index {} is out of bounds: it does not fit in a 64-bit integer",
                repr(part)
            ))
            .into());
        }
    }
    if bool_mask(part)?.is_some() {
        return Err(Error::Index("a bool mask must be the whole index (x[mask]), not part of a tuple".into()).into());
    }
    Err(Error::Index(format!(
        "only integers, slices (`:`), ellipsis (`...`), None, bools and bool masks are valid indices (got {})",
        repr(part)
    ))
    .into())
}

fn is_numpy(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyUntypedArray>()
        || obj.get_type().module().is_ok_and(|m| m.to_cow().is_ok_and(|m| m == "numpy" || m.starts_with("numpy.")))
}

/// `True`, `numpy.True_`, or a 0-d bool array or tensor: numpy treats them alike.
fn bool_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Some(b.is_true()));
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().inner;
        return Ok((t.dtype() == DType::Bool && t.rank() == 0).then(|| t.to_f64_vec()[0] != 0.0));
    }
    if is_numpy(obj) && numpy_kind(obj) == Some('b') && obj.getattr("ndim")?.extract::<usize>()? == 0 {
        return Ok(Some(obj.is_truthy()?));
    }
    Ok(None)
}

fn numpy_kind(obj: &Bound<'_, PyAny>) -> Option<char> {
    obj.getattr("dtype").and_then(|d| d.getattr("kind")).and_then(|k| k.extract::<char>()).ok()
}

fn has_index(obj: &Bound<'_, PyAny>) -> bool {
    obj.hasattr("__index__").unwrap_or(false)
}

/// A bool tensor or numpy bool array with at least one dim (0-d ones are bool scalars).
fn bool_mask(obj: &Bound<'_, PyAny>) -> PyResult<Option<Tensor>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        let inner = t.get().inner.clone();
        return match (inner.dtype(), inner.rank()) {
            (DType::Bool, 0) => Ok(None),
            (DType::Bool, _) => Ok(Some(inner)),
            _ => Err(Error::Index(
                "tensors used as indices must be bool masks; integer-tensor (advanced) indexing is not supported, use slices".into(),
            )
            .into()),
        };
    }
    if let Ok(array) = obj.cast::<PyUntypedArray>() {
        if array.ndim() > 0 && numpy_kind(obj) == Some('b') {
            return tensor_from_numpy(obj).map(Some);
        }
    }
    Ok(None)
}

/// A slice bound as Python reads it: None, or an integer clamped to the isize
/// range (`x[2**70:]` is `x[sys.maxsize:]`, as in `slice.indices`).
fn slice_bound(v: &Bound<'_, PyAny>) -> PyResult<Option<isize>> {
    if v.is_none() {
        return Ok(None);
    }
    if let Ok(i) = v.extract::<isize>() {
        return Ok(Some(i));
    }
    if !has_index(v) {
        return Err(argument_type_error(format!(
            "slice indices must be integers or None or have an __index__ method (got {})",
            repr(v)
        )));
    }
    let big = v.call_method0("__index__")?;
    Ok(Some(if big.gt(0)? { isize::MAX } else { isize::MIN }))
}
