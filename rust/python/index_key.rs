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
use numpy::PyUntypedArray;
use pyo3::exceptions::PyOverflowError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyEllipsis, PyInt, PyList, PySlice, PyString, PyTuple, PyType};

/// A key as either front reads it.
pub enum ParsedKey<'py> {
    /// Basic items: ints, slices, None, `...`, bools.
    Items(Vec<IndexItem>),
    /// A bool tensor or numpy bool array with at least one dim, as the whole key.
    Mask(Tensor),
    /// A static graph tensor of dtype bool as the whole key.
    GraphMask(Bound<'py, PyAny>),
    /// Items with index tensors (`IndexItem::Tensor`), and those tensors in key order.
    Advanced(Vec<IndexItem>, Vec<IndexTensor<'py>>),
}

/// An index tensor of a key: an eager tensor (from a tensor, a numpy array or a list),
/// or a static graph tensor.
pub enum IndexTensor<'py> {
    Eager(Tensor),
    Graph(Bound<'py, PyAny>),
}

/// An eager key: basic items, a bool mask, or items with index tensors.
pub enum IndexKey {
    Items(Vec<IndexItem>),
    Mask(Tensor),
    Advanced(Vec<IndexItem>, Vec<Tensor>),
}

fn graph_in_eager_key(obj: &Bound<'_, PyAny>) -> PyErr {
    Error::Index(format!(
        "a static graph tensor cannot index an eager tensor (got {}); run it in a Session and index with the result",
        repr(obj)
    ))
    .into()
}

pub fn index_key(key: &Bound<'_, PyAny>) -> PyResult<IndexKey> {
    match parse_key(key)? {
        ParsedKey::Items(items) => Ok(IndexKey::Items(items)),
        ParsedKey::Mask(mask) => Ok(IndexKey::Mask(mask)),
        ParsedKey::GraphMask(mask) => Err(graph_in_eager_key(&mask)),
        ParsedKey::Advanced(items, tensors) => {
            let eager = tensors
                .into_iter()
                .map(|t| match t {
                    IndexTensor::Eager(t) => Ok(t),
                    IndexTensor::Graph(g) => Err(graph_in_eager_key(&g)),
                })
                .collect::<PyResult<Vec<Tensor>>>()?;
            Ok(IndexKey::Advanced(items, eager))
        }
    }
}

/// One part of a key, as parsed.
enum Part<'py> {
    Item(IndexItem),
    Tensor(IndexTensor<'py>, DType),
}

pub fn parse_key<'py>(key: &Bound<'py, PyAny>) -> PyResult<ParsedKey<'py>> {
    let (mut items, mut tensors) = (Vec::new(), Vec::new());
    let mut add = |part: Part<'py>| match part {
        Part::Tensor(tensor, _) => {
            items.push(IndexItem::Tensor);
            tensors.push(tensor);
        }
        Part::Item(item) => items.push(item),
    };
    match key.cast::<PyTuple>() {
        Ok(parts) => {
            for obj in parts.iter() {
                add(part(&obj)?);
            }
        }
        Err(_) => match part(key)? {
            // A bool mask as the whole key: numpy's x[mask], which a 1-D selection serves.
            Part::Tensor(IndexTensor::Eager(mask), DType::Bool) => return Ok(ParsedKey::Mask(mask)),
            Part::Tensor(IndexTensor::Graph(mask), DType::Bool) => return Ok(ParsedKey::GraphMask(mask)),
            other => add(other),
        },
    }
    crate::indexing::check_key(&items)?;
    if tensors.is_empty() {
        return Ok(ParsedKey::Items(items));
    }
    Ok(ParsedKey::Advanced(items, tensors))
}

/// The core index items of a key, for a static graph's index ops.
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
/// `Tensor` for a numpy or eager mask, the graph tensor that is the whole key, or
/// `(IndexItems, [index tensors])` for a key with index tensors (eager tensors, from
/// tensors, arrays and lists, or graph tensors).
#[pyfunction]
pub fn _parse_index_key<'py>(key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = key.py();
    Ok(match parse_key(key)? {
        ParsedKey::Items(items) => Bound::new(py, PyIndexItems { items })?.into_any(),
        ParsedKey::Mask(mask) => Bound::new(py, PyTensor::wrap(mask))?.into_any(),
        ParsedKey::GraphMask(mask) => mask,
        ParsedKey::Advanced(items, tensors) => {
            let objects = tensors
                .into_iter()
                .map(|t| match t {
                    IndexTensor::Eager(t) => Ok(Bound::new(py, PyTensor::wrap(t))?.into_any()),
                    IndexTensor::Graph(g) => Ok(g),
                })
                .collect::<PyResult<Vec<_>>>()?;
            let items = Bound::new(py, PyIndexItems { items })?.into_any();
            PyTuple::new(py, [items, PyList::new(py, objects)?.into_any()])?.into_any()
        }
    })
}

fn part<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Part<'py>> {
    // The commonest key first: an exact Python int (a bool's type is a subclass of int).
    if obj.is_exact_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<isize>() {
            return Ok(Part::Item(IndexItem::Int(i)));
        }
    }
    if obj.is_none() {
        return Ok(Part::Item(IndexItem::NewAxis));
    }
    if obj.is_instance_of::<PyEllipsis>() {
        return Ok(Part::Item(IndexItem::Ellipsis));
    }
    if let Ok(slice) = obj.cast::<PySlice>() {
        let py = obj.py();
        let bound = |name: &Bound<'py, PyString>| slice_bound(&slice.getattr(name)?);
        let step = bound(intern!(py, "step"))?.unwrap_or(1);
        let (start, stop) = (bound(intern!(py, "start"))?, bound(intern!(py, "stop"))?);
        return Ok(Part::Item(IndexItem::Slice { start, stop, step }));
    }
    // Before ints: `True` is an int to Python, but a 0-d bool index to numpy.
    if let Some(b) = bool_scalar(obj)? {
        return Ok(Part::Item(IndexItem::Bool(b)));
    }
    if let Some(tensor) = index_tensor(obj)? {
        return Ok(tensor);
    }
    match obj.extract::<isize>() {
        Ok(i) => return Ok(Part::Item(IndexItem::Int(i))),
        Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
            return Err(Error::Index(format!(
                "index {} is out of bounds: it does not fit in a 64-bit integer",
                repr(obj)
            ))
            .into());
        }
        Err(_) => {}
    }
    Err(not_an_index(obj))
}

fn not_an_index(obj: &Bound<'_, PyAny>) -> PyErr {
    Error::Index(format!(
        "only integers, slices (`:`), ellipsis (`...`), None, bools, and integer or bool tensors, arrays and lists \
         are valid indices (got {})",
        repr(obj)
    ))
    .into()
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

fn not_an_index_dtype(dtype: &str) -> PyErr {
    Error::Index(format!(
        "tensors used as indices must be long, int, byte or bool tensors, got a {dtype} tensor; convert it with \
         .long()"
    ))
    .into()
}

/// torch 2 reads a uint8 index tensor as a mask, and warns that this is deprecated.
fn warn_uint8_mask(py: Python<'_>) -> PyResult<()> {
    let message = c"indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.";
    PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyUserWarning>(), message, 1)
}

/// An index tensor given as a tensor, a graph tensor, a numpy array or a list
/// (None for anything else). A 0-d integer tensor or array is an int (read
/// through `__index__`), as numpy reads it; a float tensor is an error.
fn index_tensor<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Part<'py>>> {
    let py = obj.py();
    if let Ok(t) = obj.cast::<PyTensor>() {
        let inner = t.get().inner.clone();
        return match inner.dtype() {
            dtype if dtype.is_float() => Err(not_an_index_dtype(dtype.name())),
            _ if inner.rank() == 0 => Ok(None),
            DType::U8 => {
                warn_uint8_mask(py)?;
                Ok(Some(Part::Tensor(IndexTensor::Eager(inner), DType::U8)))
            }
            dtype => Ok(Some(Part::Tensor(IndexTensor::Eager(inner), dtype))),
        };
    }
    if is_graph_tensor(obj)? {
        let dtype = parse_dtype(&obj.getattr("dtype")?)?;
        if dtype.is_float() {
            return Err(not_an_index_dtype(dtype.name()));
        }
        if dtype == DType::U8 {
            warn_uint8_mask(py)?;
        }
        return Ok(Some(Part::Tensor(IndexTensor::Graph(obj.clone()), dtype)));
    }
    let array = if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let array = py.import("numpy")?.getattr("asarray")?.call1((obj,))?;
        // An empty list holds no dtype: numpy reads it as float64, indexing as integers.
        let empty = array.getattr("size")?.extract::<usize>()? == 0;
        if empty {
            array.call_method1("astype", ("int64",))?
        } else {
            array
        }
    } else if obj.is_instance_of::<PyUntypedArray>() {
        if obj.getattr("ndim")?.extract::<usize>()? == 0 {
            return Ok(None);
        }
        obj.clone()
    } else {
        return Ok(None);
    };
    match numpy_kind(&array) {
        Some('b') => Ok(Some(Part::Tensor(IndexTensor::Eager(tensor_from_numpy(&array)?), DType::Bool))),
        Some('i' | 'u') => {
            let ints = array.call_method1("astype", ("int64",))?;
            Ok(Some(Part::Tensor(IndexTensor::Eager(tensor_from_numpy(&ints)?), DType::I64)))
        }
        Some(_) if obj.is_instance_of::<PyUntypedArray>() => Err(Error::Index(format!(
            "arrays used as indices must be of integer (or boolean) type, got an array of dtype {}",
            repr(&array.getattr("dtype")?)
        ))
        .into()),
        _ => Err(not_an_index(obj)),
    }
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
