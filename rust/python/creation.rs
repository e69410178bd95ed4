//! Tensor factories. The Python layer parses PyTorch-style arguments; these
//! functions receive plain shapes and dtypes.

use super::convert::{parse_dtype, repr, share_from_numpy, tensor_from_numpy, type_name};
use super::errors::{argument_type_error, guard};
use super::tensor::PyTensor;
use crate::error::Error;
use crate::random::{self, Distribution};
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
fn user_shape(shape: &Bound<'_, PyAny>) -> PyResult<Shape> {
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
fn requires_grad_flag(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    value
        .extract::<bool>()
        .map_err(|_| argument_type_error(format!("requires_grad must be a bool, got {}", type_name(value))))
}

fn finish(t: Tensor, requires_grad: bool) -> PyResult<PyTensor> {
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

#[pyfunction]
#[pyo3(signature = (shape, dtype, kind, a, b, requires_grad, seed=None))]
#[allow(clippy::too_many_arguments)]
pub fn _random(
    py: Python<'_>,
    shape: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyAny>,
    kind: &str,
    a: f64,
    b: f64,
    requires_grad: &Bound<'_, PyAny>,
    seed: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let requires_grad = requires_grad_flag(requires_grad)?;
    let seed = match seed {
        Some(s) if !s.is_none() => Some(seed_value(s, kind_op(kind), "generator")?),
        _ => None,
    };
    let shape = user_shape(shape)?;
    let dtype = parse_dtype(dtype)?;
    let dist = match kind {
        "normal" => Distribution::Normal { mean: a, std: b },
        "uniform" => Distribution::Uniform { low: a, high: b },
        other => return Err(Error::InvalidArgument(format!("unknown distribution '{other}'")).into()),
    };
    let _ctrl_c = crate::interrupt::Armed::on_main_thread();
    let t = guard(|| Ok(py.detach(|| random::sample(&shape, dtype, dist, seed))?))?;
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

fn kind_op(kind: &str) -> &'static str {
    if kind == "normal" {
        "randn"
    } else {
        "rand"
    }
}

/// A seed as torch takes it: an int in [-2**63, 2**64); a negative one wraps to
/// its two's complement (so -1 is 2**64 - 1).
fn seed_value(seed: &Bound<'_, PyAny>, op: &str, name: &str) -> PyResult<u64> {
    let int = seed.cast::<PyInt>().map(|i| i.clone().into_any()).or_else(|_| {
        seed.call_method0("__index__").map_err(|_| {
            argument_type_error(format!("{op}: argument '{name}' must be an int, got {}", type_name(seed)))
        })
    })?;
    if let Ok(unsigned) = int.extract::<u64>() {
        return Ok(unsigned);
    }
    match int.extract::<i64>() {
        // A negative seed wraps to its two's complement, as in torch.
        Ok(negative) => Ok(negative as u64),
        Err(_) => Err(Error::InvalidArgument(format!(
            "{op}: the seed must be an int in [-2**63, 2**64) (negative seeds wrap around), got {}",
            repr(&int)
        ))
        .into()),
    }
}

/// Seeds the generator behind `randn`, `rand` and friends.
#[pyfunction]
pub fn manual_seed(seed: &Bound<'_, PyAny>) -> PyResult<()> {
    random::manual_seed(seed_value(seed, "manual_seed", "seed")?);
    Ok(())
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
