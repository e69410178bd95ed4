//! Conversions between Python values and core values: dtypes, devices,
//! numpy arrays, scalars, shapes and index keys.
//!
//! Dtypes are in `dtypes.rs`, devices in `devices.rs` and numpy arrays in `arrays.rs`;
//! operands, scalars and the checked reading of arguments are here.

mod arrays;
mod devices;
mod dtypes;

pub use arrays::{share_from_numpy, share_to_numpy, tensor_from_numpy, tensor_to_numpy};
pub use devices::{check_device, cpu_device, is_device_string, PyDevice};
pub use dtypes::{dtype_object, parse_dtype, PyDType};

use super::tensor::PyTensor;
use crate::dtype::Scalar;
use crate::error::Error;
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

pub fn repr(obj: &Bound<'_, PyAny>) -> String {
    obj.repr().map(|r| r.to_string()).unwrap_or_else(|_| "<object>".into())
}

/// A Python number, or a tensor, as an operand of an arithmetic op: the core's own
/// enum, so an in-place op's value goes to the core as it was converted.
pub use crate::autograd::in_place::Value as Operand;

/// Converts the other side of an operator. Returns None for types the operator
/// does not handle, so Python can try the reflected method (and then raise its
/// own TypeError). A complex number raises: there is no complex dtype.
pub fn operand(obj: &Bound<'_, PyAny>) -> PyResult<Option<Operand>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(Some(Operand::Tensor(t.get().inner.clone())));
    }
    // Python numbers first (the common case), then the complex check: numpy's complex
    // scalars convert to float, silently dropping the imaginary part.
    let is_python_number = obj.is_instance_of::<pyo3::types::PyFloat>() || obj.is_instance_of::<pyo3::types::PyInt>();
    if !is_python_number && is_complex(obj) {
        return Err(super::errors::argument_type_error(format!(
            "complex numbers are not supported: rustgrad has no complex dtype (got {})",
            repr(obj)
        )));
    }
    if let Some(s) = scalar_value(obj)? {
        return Ok(Some(Operand::Scalar(s)));
    }
    if is_array_like(obj)? {
        let t = obj.py().import("rustgrad")?.getattr("as_tensor")?.call1((obj,))?;
        return Ok(Some(Operand::Tensor(t.cast::<PyTensor>()?.get().inner.clone())));
    }
    Ok(None)
}

/// A Python number, or a numpy scalar, as a core `Scalar` of its category: a bool,
/// an int (which must fit in 64 bits) or a float. None for anything else.
pub fn scalar_value(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if obj.is_instance_of::<pyo3::types::PyFloat>() {
        return Ok(Some(Scalar::Float(obj.extract()?)));
    }
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(Some(Scalar::Bool(obj.is_truthy()?)));
    }
    let numpy_kind = if obj.is_instance_of::<pyo3::types::PyInt>() {
        Some('i')
    } else if obj.py().import("numpy")?.getattr("generic").is_ok_and(|g| obj.is_instance(&g).unwrap_or(false)) {
        obj.getattr("dtype").and_then(|d| d.getattr("kind")).and_then(|k| k.extract::<char>()).ok()
    } else {
        None
    };
    match numpy_kind {
        Some('b') => Ok(Some(Scalar::Bool(obj.is_truthy()?))),
        Some('i' | 'u') => match obj.extract::<i64>() {
            Ok(i) => Ok(Some(Scalar::Int(i))),
            Err(_) => Err(super::errors::overflow_error(format!(
                "value cannot be converted to type int64 without overflow: {}; use a float ({}.0) or a smaller \
                 number",
                repr(obj),
                repr(obj)
            ))),
        },
        _ => Ok(obj.extract::<f64>().ok().map(Scalar::Float)),
    }
}

fn is_array_like(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyTuple>()
        || obj.py().import("numpy")?.getattr("ndarray").is_ok_and(|nd| obj.is_instance(&nd).unwrap_or(false)))
}

/// A Python complex, or a numpy complex scalar or array (numpy's complex64 is not a Python complex).
fn is_complex(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<pyo3::types::PyComplex>()
        || obj.getattr("dtype").and_then(|d| d.getattr("kind")).is_ok_and(|k| k.eq("c").unwrap_or(false))
}

/// The right side of an in-place operator (`x += other`) that the operator
/// understands. Anything else fails to convert, which makes PyO3 return
/// `NotImplemented`: Python then tries `x + other`, and that raises the
/// TypeError (or defers to a graph tensor's reflected operator).
pub struct InPlaceOperand<'py>(pub Bound<'py, PyAny>);

impl<'a, 'py> FromPyObject<'a, 'py> for InPlaceOperand<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let obj = obj.to_owned();
        let understood = obj.cast::<PyTensor>().is_ok() || obj.extract::<f64>().is_ok() || is_array_like(&obj)?;
        if understood {
            Ok(InPlaceOperand(obj))
        } else {
            Err(super::errors::argument_type_error("not an operand of an in-place operator".into()))
        }
    }
}

pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "<unknown type>".into())
}

/// What an argument of this Rust type must be, for error messages.
pub trait ArgType: for<'a, 'py> FromPyObject<'a, 'py> {
    const EXPECTED: &'static str;
}

impl ArgType for bool {
    const EXPECTED: &'static str = "a bool";
}

impl ArgType for isize {
    const EXPECTED: &'static str = "an int";
}

impl ArgType for i64 {
    const EXPECTED: &'static str = "an int";
}

impl ArgType for f64 {
    const EXPECTED: &'static str = "a number";
}

impl ArgType for usize {
    const EXPECTED: &'static str = "a non-negative int";
}

impl ArgType for String {
    const EXPECTED: &'static str = "a str";
}

impl ArgType for Vec<isize> {
    const EXPECTED: &'static str = "an int or a sequence of ints";
}

impl ArgType for Vec<Vec<isize>> {
    const EXPECTED: &'static str = "a sequence of (before, after) pairs of ints";
}

/// Converts an argument of a public function or method with PyO3's rules, but a
/// value of the wrong type raises `ArgumentTypeError` and an integer too large
/// raises `NumericOverflowError`, each naming the op, the argument and what it
/// takes. (Typed PyO3 parameters would raise a bare TypeError or OverflowError,
/// outside the RustgradError hierarchy; public entry points take `&Bound<PyAny>`
/// and convert through here instead.)
pub fn arg<T: ArgType>(obj: &Bound<'_, PyAny>, op: &str, name: &str) -> PyResult<T> {
    obj.extract::<T>().map_err(|err| argument_error(obj, err.into(), op, name, T::EXPECTED))
}

/// `arg` for an optional argument: a missing argument and None both give None.
pub fn opt_arg<T: ArgType>(obj: Option<&Bound<'_, PyAny>>, op: &str, name: &str) -> PyResult<Option<T>> {
    match obj {
        Some(o) if !o.is_none() => arg(o, op, name).map(Some),
        _ => Ok(None),
    }
}

/// `arg` for an optional flag with a default.
pub fn flag(obj: Option<&Bound<'_, PyAny>>, default: bool, op: &str, name: &str) -> PyResult<bool> {
    Ok(opt_arg(obj, op, name)?.unwrap_or(default))
}

/// A Tensor argument, or `ArgumentTypeError` naming the op and the argument.
pub fn tensor_arg<'a, 'py>(obj: &'a Bound<'py, PyAny>, op: &str, name: &str) -> PyResult<&'a Bound<'py, PyTensor>> {
    obj.cast::<PyTensor>().map_err(|_| {
        super::errors::argument_type_error(format!("{op}: argument '{name}' must be a Tensor, got {}", type_name(obj)))
    })
}

fn argument_error(obj: &Bound<'_, PyAny>, err: PyErr, op: &str, name: &str, expected: &str) -> PyErr {
    let py = obj.py();
    if err.is_instance_of::<PyOverflowError>(py) {
        return super::errors::overflow_error(format!(
            "{op}: argument '{name}' is out of range: {} does not fit in a 64-bit integer",
            repr(obj)
        ));
    }
    if err.is_instance_of::<PyTypeError>(py) {
        return super::errors::argument_type_error(format!(
            "{op}: argument '{name}' must be {expected}, got {}",
            type_name(obj)
        ));
    }
    err
}

/// A shape given as `*sizes` or as one sequence, possibly with -1.
pub fn shape_args(args: &Bound<'_, PyTuple>) -> PyResult<Vec<isize>> {
    if args.len() == 1 {
        let first = args.get_item(0)?;
        if let Ok(v) = first.extract::<Vec<isize>>() {
            return Ok(v);
        }
    }
    args.extract::<Vec<isize>>().map_err(|_| {
        Error::InvalidArgument(format!(
            "expected a shape as integers or one sequence of integers, got {}",
            repr(args.as_any())
        ))
        .into()
    })
}
