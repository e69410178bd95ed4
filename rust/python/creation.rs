//! Tensor factories. The Python layer parses PyTorch-style arguments; these
//! functions receive plain shapes and dtypes.

use super::convert::{parse_dtype, repr, share_from_numpy, tensor_from_numpy, type_name};
use super::errors::{argument_type_error, guard};
use super::tensor::PyTensor;
use crate::error::Error;
use crate::shape::Shape;
use crate::tensor::Tensor;
use pyo3::prelude::*;
use pyo3::types::PyInt;

/// Validates a user shape: every dim must be non-negative.
fn checked_shape(shape: &[i64]) -> PyResult<Shape> {
    if let Some(&bad) = shape.iter().find(|&&d| d < 0) {
        return Err(Error::Shape(format!("Trying to create tensor with negative dimension {bad}: {shape:?}")).into());
    }
    Ok(shape.iter().map(|&d| d as usize).collect())
}

/// A shape from the Python layer. A size that does not fit in 64 bits cannot be
/// allocated (or, negative, is no size at all): PyO3 would raise a bare OverflowError.
pub(super) fn user_shape(shape: &Bound<'_, PyAny>) -> PyResult<Shape> {
    if let Ok(dims) = shape.extract::<Vec<i64>>() {
        return checked_shape(&dims);
    }
    let sizes: Vec<Bound<'_, PyAny>> = shape.try_iter()?.collect::<PyResult<_>>()?;
    if let Some(bad) = sizes.iter().find(|s| s.lt(0).unwrap_or(false)) {
        return Err(Error::Shape(format!(
            "Trying to create tensor with negative dimension {}: {}",
            repr(bad),
            repr(shape)
        ))
        .into());
    }
    if sizes.iter().all(|s| s.is_instance_of::<PyInt>()) {
        return Err(Error::OutOfMemory(format!(
            "cannot allocate a tensor of shape {}: a size does not fit in 64 bits; use a smaller shape",
            repr(shape)
        ))
        .into());
    }
    Err(argument_type_error(format!("a shape must be a sequence of ints, got {}", repr(shape))))
}

/// `requires_grad=` of a factory: a bool (Python's or numpy's), as in torch.
pub(super) fn requires_grad_flag(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    value
        .extract::<bool>()
        .map_err(|_| argument_type_error(format!("requires_grad must be a bool, got {}", type_name(value))))
}

pub(super) fn finish(t: Tensor, requires_grad: bool) -> PyResult<PyTensor> {
    if requires_grad {
        if !t.dtype().is_float() {
            return Err(Error::Gradient(format!(
                "Only Tensors of floating point and complex dtype can require gradients (the tensor is {}); \
                 make it with a float dtype, or leave requires_grad=False",
                t.dtype().name()
            ))
            .into());
        }
        t.set_requires_grad(true);
    }
    Ok(PyTensor::wrap(t))
}

#[pyfunction]
pub fn _full(
    py: Python<'_>,
    shape: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyAny>,
    requires_grad: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let requires_grad = requires_grad_flag(requires_grad)?;
    let value = super::convert::scalar_value(value)?.ok_or_else(|| {
        argument_type_error(format!("full: the fill value must be a number, got {}", type_name(value)))
    })?;
    let shape = user_shape(shape)?;
    let dtype = parse_dtype(dtype)?;
    let t = guard(|| Ok(py.detach(|| Tensor::full(&shape, value, dtype))?))?;
    finish(t, requires_grad)
}

/// A tensor from a numpy array (float32, float64 or bool). With `share`, it uses the
/// array's memory when the layout allows (C-contiguous, aligned, writeable, float);
/// otherwise, and without `share`, it copies.
#[pyfunction]
#[pyo3(signature = (array, requires_grad, share=false))]
pub fn _from_numpy(array: &Bound<'_, PyAny>, requires_grad: &Bound<'_, PyAny>, share: bool) -> PyResult<PyTensor> {
    let requires_grad = requires_grad_flag(requires_grad)?;
    let shared = if share { share_from_numpy(array)? } else { None };
    let tensor = match shared {
        Some(t) => t,
        None => tensor_from_numpy(array)?,
    };
    finish(tensor, requires_grad)
}

/// TF's `range(start, limit, delta)` of numbers, in `dtype`: the value of a constant
/// `rustgrad.static.range` node (the same values as its `Range` op for graph tensors).
#[pyfunction]
pub fn _range_values(
    start: &Bound<'_, PyAny>,
    limit: &Bound<'_, PyAny>,
    delta: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let number = |v: &Bound<'_, PyAny>, name: &str| {
        super::convert::scalar_value(v)?
            .ok_or_else(|| argument_type_error(format!("range: {name} must be a number, got {}", type_name(v))))
    };
    let (start, limit, delta) = (number(start, "start")?, number(limit, "limit")?, number(delta, "delta")?);
    let dtype = parse_dtype(dtype)?;
    Ok(PyTensor::wrap(guard(|| Ok(crate::ops::creation::range_values(start, limit, delta, dtype)?))?))
}

#[pyfunction]
pub fn set_num_threads(py: Python<'_>, threads: &Bound<'_, PyAny>) -> PyResult<()> {
    let threads: i64 = super::convert::arg(threads, "set_num_threads", "threads")?;
    // Starting hundreds of threads takes a while: other Python threads run meanwhile.
    Ok(py.detach(|| crate::kernels::threads::set_num_threads(threads))?)
}

#[pyfunction]
pub fn get_num_threads() -> usize {
    crate::kernels::threads::num_threads()
}

/// Frees the large buffers kept for reuse (see rust/buffer_pool.rs).
#[pyfunction]
pub fn empty_cache() {
    crate::buffer_pool::empty();
}

/// Bytes of freed tensor memory kept for reuse.
#[pyfunction]
pub fn memory_cached() -> usize {
    crate::buffer_pool::pooled_bytes()
}

/// Called in a forked child (os.register_at_fork): the parent's pool threads do not exist there.
#[pyfunction]
pub fn _after_fork_in_child() {
    crate::kernels::threads::forget_pool_after_fork();
    crate::buffer_pool::forget_after_fork();
}
