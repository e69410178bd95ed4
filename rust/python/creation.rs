//! Tensor factories. The Python layer parses PyTorch-style arguments; these
//! functions receive plain shapes and dtypes.

use super::convert::{parse_dtype, share_from_numpy, tensor_from_numpy};
use super::errors::guard;
use super::tensor::PyTensor;
use crate::error::Error;
use crate::random::{self, Distribution};
use crate::shape::Shape;
use crate::tensor::Tensor;
use pyo3::prelude::*;

/// Validates a user shape: every dim must be non-negative.
fn checked_shape(shape: &[i64]) -> PyResult<Shape> {
    if let Some(&bad) = shape.iter().find(|&&d| d < 0) {
        return Err(Error::Shape(format!("Trying to create tensor with negative dimension {bad}: {shape:?}")).into());
    }
    Ok(shape.iter().map(|&d| d as usize).collect())
}

fn finish(t: Tensor, requires_grad: bool) -> PyResult<PyTensor> {
    if requires_grad {
        if !t.dtype().is_float() {
            return Err(Error::Gradient("only Tensors of floating point dtype can require gradients".into()).into());
        }
        t.set_requires_grad(true);
    }
    Ok(PyTensor::wrap(t))
}

#[pyfunction]
pub fn _full(
    py: Python<'_>,
    shape: Vec<i64>,
    value: f64,
    dtype: &Bound<'_, PyAny>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let shape = checked_shape(&shape)?;
    let dtype = parse_dtype(dtype)?;
    let t = guard(|| Ok(py.detach(|| Tensor::full(&shape, value, dtype))?))?;
    finish(t, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (shape, dtype, kind, a, b, requires_grad, seed=None))]
#[allow(clippy::too_many_arguments)]
pub fn _random(
    py: Python<'_>,
    shape: Vec<i64>,
    dtype: &Bound<'_, PyAny>,
    kind: &str,
    a: f64,
    b: f64,
    requires_grad: bool,
    seed: Option<u64>,
) -> PyResult<PyTensor> {
    let shape = checked_shape(&shape)?;
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
pub fn _from_numpy(array: &Bound<'_, PyAny>, requires_grad: bool, share: bool) -> PyResult<PyTensor> {
    let shared = if share { share_from_numpy(array)? } else { None };
    let tensor = match shared {
        Some(t) => t,
        None => tensor_from_numpy(array)?,
    };
    finish(tensor, requires_grad)
}

#[pyfunction]
pub fn manual_seed(seed: u64) {
    random::manual_seed(seed);
}

#[pyfunction]
pub fn set_num_threads(py: Python<'_>, threads: usize) -> PyResult<()> {
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
