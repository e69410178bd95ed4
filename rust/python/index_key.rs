//! Index keys: the one parser of a Python key (`x[key]`, `x[key] = v`), shared by
//! eager tensors and static graphs (through `_parse_index_key`). It turns the key
//! into core index items or a bool mask; the core (`crate::indexing`) decides what
//! the items mean against a shape.

use super::convert::{parse_dtype, repr, tensor_from_numpy};
use super::errors::argument_type_error;
use super::tensor::PyTensor;
use crate::dtype::DType;
use crate::error::Error;
use crate::op::IndexItem;
use crate::tensor::Tensor;
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyEllipsis, PySlice, PyTuple, PyType};

/// A key as either front reads it.
pub enum ParsedKey<'py> {
    /// Basic items: ints, slices, None, `...`, bools.
    Items(Vec<IndexItem>),
    /// A bool tensor or numpy bool array with at least one dim.
    Mask(Tensor),
    /// A static graph tensor of dtype bool as the whole key.
    GraphMask(Bound<'py, PyAny>),
}

/// An eager key: basic items or a bool mask.
pub enum IndexKey {
    Items(Vec<IndexItem>),
    Mask(Tensor),
}

pub fn index_key(key: &Bound<'_, PyAny>) -> PyResult<IndexKey> {
    match parse_key(key)? {
        ParsedKey::Items(items) => Ok(IndexKey::Items(items)),
        ParsedKey::Mask(mask) => Ok(IndexKey::Mask(mask)),
        ParsedKey::GraphMask(mask) => Err(Error::Index(format!(
            "a static graph tensor cannot index an eager tensor (got {}); run it in a Session and index with the result",
            repr(&mask)
        ))
        .into()),
    }
}

pub fn parse_key<'py>(key: &Bound<'py, PyAny>) -> PyResult<ParsedKey<'py>> {
    if let Some(mask) = mask(key)? {
        return Ok(mask);
    }
    let parts: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
        Ok(t) => t.iter().collect(),
        Err(_) => vec![key.clone()],
    };
    let items = parts.iter().map(index_item).collect::<PyResult<Vec<_>>>()?;
    crate::indexing::check_key(&items)?;
    Ok(ParsedKey::Items(items))
}

/// The core index items of a basic key, for a static graph's `index` op.
#[pyclass(frozen, name = "IndexItems", module = "rustgrad._rustgrad")]
pub struct PyIndexItems {
    pub items: Vec<IndexItem>,
}

#[pymethods]
impl PyIndexItems {
    fn __repr__(&self) -> String {
        format!("IndexItems({:?})", self.items)
    }
}

/// Parses a key for the static front: `IndexItems` for a basic key, a bool eager
/// `Tensor` for a numpy or eager mask, or the graph tensor that is the whole key.
#[pyfunction]
pub fn _parse_index_key<'py>(key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = key.py();
    Ok(match parse_key(key)? {
        ParsedKey::Items(items) => Bound::new(py, PyIndexItems { items })?.into_any(),
        ParsedKey::Mask(mask) => Bound::new(py, PyTensor::wrap(mask))?.into_any(),
        ParsedKey::GraphMask(mask) => mask,
    })
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
    if mask(part)?.is_some() {
        return Err(Error::Index("a bool mask must be the whole index (x[mask]), not part of a tuple".into()).into());
    }
    match part.extract::<isize>() {
        Ok(i) => return Ok(IndexItem::Int(i)),
        Err(e) if e.is_instance_of::<PyOverflowError>(part.py()) => {
            return Err(Error::Index(format!(
                "index {} is out of bounds: it does not fit in a 64-bit integer",
                repr(part)
            ))
            .into());
        }
        Err(_) => {}
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

fn is_graph_tensor(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    static GRAPH_VALUE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    obj.is_instance(GRAPH_VALUE.import(obj.py(), "rustgrad._graph_value", "GraphValue")?)
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

fn not_a_mask() -> PyErr {
    Error::Index(
        "tensors used as indices must be bool masks; integer-tensor (advanced) indexing is not supported, use slices"
            .into(),
    )
    .into()
}

/// A bool tensor, graph tensor or numpy bool array with at least one dim (0-d ones
/// are bool scalars, and a 0-d integer tensor is an integer); a tensor of another dtype
/// is an error.
fn mask<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<ParsedKey<'py>>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        let inner = t.get().inner.clone();
        return match (inner.dtype(), inner.rank()) {
            // A 0-d bool is a bool scalar, a 0-d integer tensor an integer (read through `__index__`).
            (DType::Bool, 0) => Ok(None),
            (dtype, 0) if dtype.is_integer() => Ok(None),
            (DType::Bool, _) => Ok(Some(ParsedKey::Mask(inner))),
            _ => Err(not_a_mask()),
        };
    }
    if is_graph_tensor(obj)? {
        return match parse_dtype(&obj.getattr("dtype")?)? {
            DType::Bool => Ok(Some(ParsedKey::GraphMask(obj.clone()))),
            _ => Err(not_a_mask()),
        };
    }
    if let Ok(array) = obj.cast::<PyUntypedArray>() {
        if array.ndim() > 0 && numpy_kind(obj) == Some('b') {
            return tensor_from_numpy(obj).map(|t| Some(ParsedKey::Mask(t)));
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
    if !v.hasattr("__index__").unwrap_or(false) {
        return Err(argument_type_error(format!(
            "slice indices must be integers or None or have an __index__ method (got {})",
            repr(v)
        )));
    }
    let big = v.call_method0("__index__")?;
    Ok(Some(if big.gt(0)? { isize::MAX } else { isize::MIN }))
}
