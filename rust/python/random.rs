//! Bindings for random numbers: the `Generator` class and the samplers behind
//! `rand`, `randn`, `randint`, `randperm`, `normal`, `bernoulli`, `multinomial` and
//! the in-place `uniform_`/`normal_`/`bernoulli_`/`random_`. The Python layer
//! (`rustgrad/_random.py`) parses torch's overloads; these take plain values.

use super::convert::{arg, check_device, parse_dtype, repr, tensor_arg, type_name};
use super::creation::{finish, requires_grad_flag, user_shape};
use super::errors::{argument_type_error, guard};
use super::tensor::PyTensor;
use crate::dtype::DType;
use crate::error::Error;
use crate::random::{self, Distribution, Generator, State};
use crate::tensor::Tensor;
use pyo3::prelude::*;
use pyo3::types::PyInt;
use std::sync::Arc;

/// torch's `Generator`: a seedable source of random numbers that random functions
/// take as `generator=`. Threads may share one.
#[pyclass(frozen, name = "Generator", module = "rustgrad")]
pub struct PyGenerator {
    inner: Arc<Generator>,
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

/// The generator a `generator=` argument names: the default one for None, a
/// `Generator`, or (a rustgrad extension) an int, which seeds a private generator
/// for this call only.
fn generator_arg(obj: Option<&Bound<'_, PyAny>>, op: &str) -> PyResult<Arc<Generator>> {
    match obj {
        None => Ok(random::default_generator().clone()),
        Some(o) if o.is_none() => Ok(random::default_generator().clone()),
        Some(o) => match o.cast::<PyGenerator>() {
            Ok(g) => Ok(g.get().inner.clone()),
            Err(_) if o.is_instance_of::<PyInt>() || o.hasattr("__index__").unwrap_or(false) => {
                Ok(Arc::new(Generator::new(seed_value(o, op, "generator")?)))
            }
            Err(_) => Err(argument_type_error(format!(
                "{op}: argument 'generator' must be an int seed or a rustgrad.Generator, got {}",
                type_name(o)
            ))),
        },
    }
}

#[pymethods]
impl PyGenerator {
    /// A new generator, seeded with torch's default seed (67280421310721).
    #[new]
    #[pyo3(signature = (device=None))]
    fn new(device: Option<&Bound<'_, PyAny>>) -> PyResult<PyGenerator> {
        check_device(device)?;
        Ok(PyGenerator { inner: Arc::new(Generator::new(random::generator::DEFAULT_SEED)) })
    }

    /// Restarts the generator's sequence from `seed`; returns the generator.
    fn manual_seed<'py>(slf: Bound<'py, Self>, seed: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        slf.get().inner.manual_seed(seed_value(seed, "manual_seed", "seed")?);
        Ok(slf)
    }

    /// Restarts the sequence from a non-deterministic seed; returns that seed.
    fn seed(&self) -> u64 {
        self.inner.reseed()
    }

    /// The seed the current sequence started from.
    fn initial_seed(&self) -> u64 {
        self.inner.initial_seed()
    }

    /// The generator's state as a uint8 tensor, for `set_state`.
    fn get_state(&self) -> PyResult<PyTensor> {
        let bytes = self.inner.state().to_bytes().to_vec();
        Ok(PyTensor::wrap(Tensor::from_vec(bytes, vec![State::BYTES])?))
    }

    /// Restores a state from `get_state`; returns the generator.
    fn set_state<'py>(slf: Bound<'py, Self>, new_state: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let t = &tensor_arg(new_state, "set_state", "new_state")?.get().inner;
        if t.dtype() != DType::U8 {
            return Err(Error::DType(format!(
                "set_state: expected a uint8 tensor (torch.ByteTensor) from get_state(), but got {}",
                t.dtype().name()
            ))
            .into());
        }
        let state = State::from_bytes(&t.to_vec::<u8>()?)?;
        slf.get().inner.set_state(state);
        Ok(slf)
    }

    #[getter]
    fn device(&self, py: Python<'_>) -> PyResult<Py<super::convert::PyDevice>> {
        super::convert::cpu_device(py)
    }

    fn __repr__(&self) -> &'static str {
        "<rustgrad.Generator>"
    }
}

/// The `Generator` object of the default generator (`rustgrad.default_generator`).
pub fn default_generator(py: Python<'_>) -> PyResult<Py<PyGenerator>> {
    Py::new(py, PyGenerator { inner: random::default_generator().clone() })
}

/// Draws of a distribution in a new tensor: `rand`/`randn` (`kind` "uniform"/"normal", floats
/// `a`, `b`), `randint` (`kind` "integers", ints `a` ≤ values < `b`) and `bernoulli` with a float p (`a`).
#[pyfunction]
#[pyo3(signature = (shape, dtype, kind, a, b, requires_grad, generator=None, op=None))]
#[allow(clippy::too_many_arguments)]
pub fn _random(
    py: Python<'_>,
    shape: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyAny>,
    kind: &str,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    requires_grad: &Bound<'_, PyAny>,
    generator: Option<&Bound<'_, PyAny>>,
    op: Option<&str>,
) -> PyResult<PyTensor> {
    let op = op.unwrap_or(match kind {
        "normal" => "randn",
        "integers" => "randint",
        _ => "rand",
    });
    let requires_grad = requires_grad_flag(requires_grad)?;
    let generator = generator_arg(generator, op)?;
    let shape = user_shape(shape)?;
    let dtype = parse_dtype(dtype)?;
    let dist = distribution(kind, a, b, op)?;
    let _ctrl_c = crate::interrupt::Armed::on_main_thread();
    let t = guard(|| Ok(py.detach(|| random::sample(op, &shape, dtype, dist, &generator))?))?;
    finish(t, requires_grad)
}

fn distribution(kind: &str, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, op: &str) -> PyResult<Distribution> {
    let float = |v: &Bound<'_, PyAny>, name: &str| arg::<f64>(v, op, name);
    let int = |v: &Bound<'_, PyAny>, name: &str| arg::<i64>(v, op, name);
    Ok(match kind {
        "normal" => Distribution::Normal { mean: float(a, "mean")?, std: float(b, "std")? },
        "uniform" => Distribution::Uniform { low: float(a, "from")?, high: float(b, "to")? },
        "truncated_normal" => Distribution::TruncatedNormal { mean: float(a, "mean")?, std: float(b, "stddev")? },
        "integers" => Distribution::Integers { low: int(a, "low")?, high: int(b, "high")? },
        "bernoulli" => Distribution::Bernoulli { p: float(a, "p")? },
        other => return Err(Error::InvalidArgument(format!("{op}: unknown distribution '{other}'")).into()),
    })
}

/// Overwrites `tensor` with draws of a distribution (`kind` and `a`, `b` as for `_random`):
/// `uniform_`, `normal_`, `random_` and `bernoulli_` with a float p.
#[pyfunction]
#[pyo3(signature = (tensor, op, kind, a, b, generator=None))]
pub fn _fill_random(
    py: Python<'_>,
    tensor: &Bound<'_, PyAny>,
    op: &str,
    kind: &str,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let t = tensor_arg(tensor, op, "self")?.get().inner.clone();
    let generator = generator_arg(generator, op)?;
    let dist = distribution(kind, a, b, op)?;
    guard(|| Ok(py.detach(|| random::fill(op, &t, dist, &generator))?))
}

/// `randperm(n)`: the integers `0..n` in random order.
#[pyfunction]
#[pyo3(signature = (n, dtype, requires_grad, generator=None))]
pub fn _randperm(
    py: Python<'_>,
    n: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyAny>,
    requires_grad: &Bound<'_, PyAny>,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let requires_grad = requires_grad_flag(requires_grad)?;
    let n: i64 = arg(n, "randperm", "n")?;
    let n = usize::try_from(n)
        .map_err(|_| Error::Shape(format!("randperm: n must be non-negative, got {n}; pass a size >= 0")))?;
    let generator = generator_arg(generator, "randperm")?;
    let dtype = parse_dtype(dtype)?;
    let _ctrl_c = crate::interrupt::Armed::on_main_thread();
    let t = guard(|| Ok(py.detach(|| random::randperm(n, dtype, &generator))?))?;
    finish(t, requires_grad)
}

/// `bernoulli(input)`: 0 or 1 for each probability of `input`; or, `into` given,
/// `into.bernoulli_(input)`: `into` overwritten with coin flips of the probabilities
/// `input` (broadcast to its shape).
#[pyfunction]
#[pyo3(signature = (input, generator=None, into=None))]
pub fn _bernoulli(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    generator: Option<&Bound<'_, PyAny>>,
    into: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<PyTensor>> {
    let op = if into.is_some() { "bernoulli_" } else { "bernoulli" };
    let p = tensor_arg(input, op, if into.is_some() { "p" } else { "input" })?.get().inner.clone();
    let generator = generator_arg(generator, op)?;
    match into {
        None => Ok(Some(PyTensor::wrap(guard(|| Ok(py.detach(|| random::bernoulli(&p, &generator))?))?))),
        Some(dst) => {
            let dst = tensor_arg(dst, op, "self")?.get().inner.clone();
            guard(|| Ok(py.detach(|| random::discrete::bernoulli_into(&dst, &p, &generator))?))?;
            Ok(None)
        }
    }
}

/// `multinomial(input, num_samples, replacement)`: int64 category indices.
#[pyfunction]
#[pyo3(signature = (input, num_samples, replacement, generator=None))]
pub fn _multinomial(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    num_samples: &Bound<'_, PyAny>,
    replacement: &Bound<'_, PyAny>,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let weights = tensor_arg(input, "multinomial", "input")?.get().inner.clone();
    let num_samples: i64 = arg(num_samples, "multinomial", "num_samples")?;
    let replacement: bool = arg(replacement, "multinomial", "replacement")?;
    let num_samples = usize::try_from(num_samples)
        .map_err(|_| Error::InvalidArgument("multinomial: cannot sample n_sample <= 0 samples".into()))?;
    let generator = generator_arg(generator, "multinomial")?;
    let t = guard(|| Ok(py.detach(|| random::multinomial(&weights, num_samples, replacement, &generator))?))?;
    Ok(PyTensor::wrap(t))
}

/// `normal(mean, std)` with tensors (broadcast together).
#[pyfunction]
#[pyo3(signature = (mean, std, generator=None))]
pub fn _normal(
    py: Python<'_>,
    mean: &Bound<'_, PyAny>,
    std: &Bound<'_, PyAny>,
    generator: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let mean = tensor_arg(mean, "normal", "mean")?.get().inner.clone();
    let std = tensor_arg(std, "normal", "std")?.get().inner.clone();
    let generator = generator_arg(generator, "normal")?;
    Ok(PyTensor::wrap(guard(|| Ok(py.detach(|| random::normal(&mean, &std, &generator))?))?))
}
