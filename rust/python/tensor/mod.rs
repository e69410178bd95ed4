//! `rustgrad.Tensor`: the Python face of a core tensor. Every method converts
//! its arguments, calls the core (releasing the GIL for large work) and wraps
//! the result; no math happens here.

use crate::autograd::{in_place, record};
use crate::dtype::{result_type, DType, Participant, Scalar};
use crate::error::Error;
use crate::kernels::elementwise::{BinaryOp, CmpOp, ScalarOp, UnaryOp};
use crate::op::Op;
use crate::ops::indexing::{Combine, Pick, PickRows};
use crate::ops::{binary, TableOps};
use crate::python::autograd::{run_backward_py, PyNode};
use crate::python::convert::{self, cpu_device, dtype_object, operand, shape_args, Operand};
use crate::python::errors::guard;
use crate::python::index_key::{index_key, IndexKey};
use crate::shape::fmt_shape;
use crate::tensor::Tensor;
use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList, PyString, PyTuple};

mod conversion;
mod indexing;
mod math;
mod writes;

use conversion::python_number;
pub use math::{_matmul, _where};
use writes::in_place_value;

/// Work of at least this many elements runs with the GIL released; for smaller
/// tensors releasing and re-taking it costs more than the kernel.
const GIL_RELEASE_MIN_ELEMENTS: usize = 1 << 14;

#[pyclass(name = "Tensor", module = "rustgrad", subclass, weakref, frozen)]
pub struct PyTensor {
    pub inner: Tensor,
}

impl PyTensor {
    pub fn wrap(inner: Tensor) -> PyTensor {
        PyTensor { inner }
    }
}

/// Runs a core op on tensors, recording it when needed, with the panic guard and
/// the GIL released for large inputs.
pub fn run_op(py: Python<'_>, op: Op, inputs: &[&Tensor]) -> PyResult<PyTensor> {
    if copies_nothing(&op, inputs) {
        return guard(|| Ok(PyTensor::wrap(record::apply(op, inputs)?)));
    }
    let is_matmul = matches!(op, Op::MatMul { .. });
    run_core(py, inputs, is_matmul, || record::apply(op, inputs))
}

/// Whether `op` only makes a view of its contiguous inputs (a slice, a transpose, an
/// unsqueeze): it touches no element, so releasing the GIL around it would cost more than the
/// op (`x[5]` took 493 ns on a 1400×64 tensor, which released it, and 411 on a 10×64 one). A
/// reshape of a strided tensor may copy, so such inputs keep the size rule.
fn copies_nothing(op: &Op, inputs: &[&Tensor]) -> bool {
    op.is_view() && inputs.iter().all(|t| t.is_contiguous())
}

/// Runs `f`, a core computation on `inputs`, with the panic guard and the GIL
/// released for large inputs (products from a smaller size: they do more work per element).
fn run_core(
    py: Python<'_>,
    inputs: &[&Tensor],
    is_matmul: bool,
    f: impl FnOnce() -> crate::error::Result<Tensor> + Send,
) -> PyResult<PyTensor> {
    guard(|| {
        let work = work_estimate(inputs);
        let out = if work >= GIL_RELEASE_MIN_ELEMENTS || is_matmul && work >= 4096 {
            let _ctrl_c = crate::interrupt::Armed::on_main_thread();
            py.detach(f)
        } else {
            f()
        };
        Ok(PyTensor::wrap(out?))
    })
}

/// How many elements a kernel on `inputs` may touch: the largest input, or the size of
/// the inputs' broadcast shape, whichever is larger (a column plus a row, or their
/// product, make a large output from small inputs). Only decides whether to release the GIL,
/// so below the smallest threshold (4096) it answers with the largest input alone.
fn work_estimate(inputs: &[&Tensor]) -> usize {
    let (mut largest, mut product) = (0usize, 1usize);
    for t in inputs {
        let n = t.numel();
        (largest, product) = (largest.max(n), product.saturating_mul(n));
    }
    // A broadcast shape holds at most the product of its inputs' sizes: when that is
    // below 4096, the walk over dims below cannot change the decision.
    if product < 4096 {
        return largest;
    }
    let rank = inputs.iter().map(|t| t.rank()).max().unwrap_or(0);
    let dim_from_right = |t: &Tensor, d: usize| t.rank().checked_sub(d + 1).map_or(1, |i| t.shape()[i]);
    let broadcast = (0..rank)
        .map(|d| inputs.iter().map(|t| dim_from_right(t, d)).max().unwrap_or(1))
        .fold(1usize, usize::saturating_mul);
    largest.max(broadcast)
}

/// Runs an in-place kernel that writes `t` under the panic guard, with the GIL
/// released when `t` is large (as `run_op` does), so other Python threads run.
pub(super) fn in_place_kernel(
    py: Python<'_>,
    t: &Tensor,
    kernel: impl FnOnce() -> crate::error::Result<()> + Send,
) -> PyResult<()> {
    guard(|| Ok(if t.numel() >= GIL_RELEASE_MIN_ELEMENTS { py.detach(kernel) } else { kernel() }?))
}

fn unary(py: Python<'_>, x: &Tensor, op: UnaryOp) -> PyResult<PyTensor> {
    run_op(py, Op::Unary(op), &[x])
}

/// `x op other` where other may be a tensor or a Python number. `reflected`
/// means the Python expression was `other op x`.
fn arith(
    py: Python<'_>,
    x: &Tensor,
    other: &Bound<'_, PyAny>,
    op: BinaryOp,
    reflected: bool,
) -> PyResult<Option<PyTensor>> {
    // Tensor operands are borrowed, not cloned: a one-element op costs a few hundred ns.
    if let Ok(t) = other.cast::<PyTensor>() {
        let t = &t.get().inner;
        let inputs = if reflected { [t, x] } else { [x, t] };
        return run_op(py, Op::Binary(op), &inputs).map(Some);
    }
    let Some(other) = operand(other)? else { return Ok(None) };
    let result = match other {
        Operand::Tensor(t) if reflected => run_op(py, Op::Binary(op), &[&t, x]),
        Operand::Tensor(t) => run_op(py, Op::Binary(op), &[x, &t]),
        Operand::Scalar(s) => run_op(py, Op::Scalar(op.with_scalar(reflected), s), &[x]),
    };
    result.map(Some)
}

/// An operator's result: the tensor, or `NotImplemented` for an operand it does not
/// understand, so that Python tries the other operand's reflected method and then
/// raises its own "unsupported operand type(s)" TypeError.
fn or_not_implemented(py: Python<'_>, result: Option<PyTensor>) -> PyResult<Py<PyAny>> {
    match result {
        Some(t) => Ok(Py::new(py, t)?.into_any()),
        None => Ok(py.NotImplemented()),
    }
}

/// The method form of a binary op (`x.add(other)`): an operand it does not
/// understand is an `ArgumentTypeError` naming the op and the type.
fn binary_method(py: Python<'_>, x: &Tensor, other: &Bound<'_, PyAny>, op: BinaryOp, name: &str) -> PyResult<PyTensor> {
    arith(py, x, other, op, false)?.ok_or_else(|| unsupported_operand(name, other))
}

fn unsupported_operand(op: &str, other: &Bound<'_, PyAny>) -> PyErr {
    crate::python::errors::argument_type_error(format!(
        "{op}: the other operand must be a Tensor, a number or an array-like, got {}",
        convert::type_name(other)
    ))
}

/// `x ** other` (or `other ** x` when `reflected`): a number exponent or base is a scalar op,
/// a tensor one the table's `pow`, which broadcasts and differentiates both operands.
fn pow(py: Python<'_>, x: &Tensor, other: &Bound<'_, PyAny>, reflected: bool) -> PyResult<Option<PyTensor>> {
    match operand(other)? {
        None => Ok(None),
        Some(Operand::Scalar(s)) => {
            let op = if reflected { ScalarOp::RPow } else { ScalarOp::Pow };
            run_op(py, Op::Scalar(op, s), &[x]).map(Some)
        }
        Some(Operand::Tensor(t)) => {
            let inputs = if reflected { [&t, x] } else { [x, &t] };
            run_op(py, Op::Table(TableOps::Pow(binary::Pow)), &inputs).map(Some)
        }
    }
}

/// A bound of `clamp`: None, a number, or a tensor (which broadcasts against the input).
fn clamp_bound(obj: Option<&Bound<'_, PyAny>>, op: &str, name: &str) -> PyResult<Option<Operand>> {
    match obj {
        Some(o) if o.is_instance_of::<PyTensor>() => {
            Ok(Some(Operand::Tensor(o.cast::<PyTensor>()?.get().inner.clone())))
        }
        _ => Ok(convert::opt_arg::<f64>(obj, op, name)?.map(|v| Operand::Scalar(Scalar::Float(v)))),
    }
}

/// `clamp(min, max)` with each bound None, a number or a tensor (`record::clamp`).
fn clamp(
    py: Python<'_>,
    x: &Tensor,
    min: Option<&Bound<'_, PyAny>>,
    max: Option<&Bound<'_, PyAny>>,
    op: &str,
) -> PyResult<PyTensor> {
    let (min, max) = (clamp_bound(min, op, "min")?, clamp_bound(max, op, "max")?);
    run_core(py, &[x], false, || record::clamp(x, min, max))
}

/// A reduction's `dim=`: None, one int or a sequence of ints.
fn dims_arg(dim: Option<&Bound<'_, PyAny>>, op: &str) -> PyResult<Option<Vec<isize>>> {
    match dim {
        None => Ok(None),
        Some(d) if d.is_none() => Ok(None),
        Some(d) => match d.extract::<isize>() {
            Ok(single) => Ok(Some(vec![single])),
            Err(_) => Ok(Some(convert::arg::<Vec<isize>>(d, op, "dim")?)),
        },
    }
}

/// A value to write with `fill_`/`__setitem__`: a number or a tensor.
fn value_tensor(value: &Bound<'_, PyAny>, dtype: DType) -> PyResult<Tensor> {
    match operand(value)? {
        Some(Operand::Tensor(t)) => Ok(t),
        Some(Operand::Scalar(s)) => Ok(Tensor::scalar(s, dtype)),
        None => Err(Error::InvalidArgument(format!(
            "cannot assign a value of type {} to a tensor",
            convert::repr(&value.get_type().into_any())
        ))
        .into()),
    }
}

#[pymethods]
impl PyTensor {
    /// The legacy constructor, as `torch.Tensor`: `Tensor(2, 3)` is a 2x3 float32 tensor
    /// (zero-filled), `Tensor([2, 3])` holds the data as float32, `Tensor()` is empty.
    /// (rustgrad.tensor(...) and the other creation functions are the usual way.)
    #[new]
    #[pyo3(signature = (*args, **kwargs))]
    fn py_new(py: Python<'_>, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<PyTensor> {
        let t = py.import("rustgrad._tensor_protocols")?.getattr("legacy_new")?.call(args, kwargs)?;
        Ok(PyTensor::wrap(t.cast::<PyTensor>()?.get().inner.clone()))
    }

    /// Makes numpy defer to our reflected operators: `ndarray * tensor` is a tensor.
    #[classattr]
    fn __array_priority__() -> f64 {
        1000.0
    }

    // ----- attributes -----

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape())
    }

    #[pyo3(signature = (dim=None))]
    fn size<'py>(&self, py: Python<'py>, dim: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        match convert::opt_arg::<isize>(dim, "size", "dim")? {
            None => Ok(PyTuple::new(py, self.inner.shape())?.into_any()),
            Some(d) => {
                let d = crate::shape::normalize_dim("size", d, self.inner.rank())?;
                Ok(self.inner.shape()[d].into_pyobject(py)?.into_any())
            }
        }
    }

    fn dim(&self) -> usize {
        self.inner.rank()
    }

    #[getter]
    fn ndim(&self) -> usize {
        self.inner.rank()
    }

    fn numel(&self) -> usize {
        self.inner.numel()
    }

    fn nelement(&self) -> usize {
        self.inner.numel()
    }

    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<Py<convert::PyDType>> {
        dtype_object(py, self.inner.dtype())
    }

    #[getter]
    fn device(&self, py: Python<'_>) -> PyResult<Py<convert::PyDevice>> {
        cpu_device(py)
    }

    #[getter]
    fn is_cuda(&self) -> bool {
        false
    }

    fn is_floating_point(&self) -> bool {
        self.inner.dtype().is_float()
    }

    fn is_contiguous(&self) -> bool {
        self.inner.is_contiguous()
    }

    /// The address of the first element, as `torch.Tensor.data_ptr()`. Code given the
    /// address can write without bumping the version: the storage is marked exported.
    fn data_ptr(&self) -> usize {
        self.inner.storage().mark_exported();
        self.inner.data_ptr()
    }

    #[getter]
    fn get_requires_grad(&self) -> bool {
        self.inner.requires_grad()
    }

    #[setter]
    fn set_requires_grad(&self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = convert::arg::<bool>(value, "requires_grad", "value")?;
        self.check_can_require_grad(value)?;
        self.inner.set_requires_grad(value);
        Ok(())
    }

    #[pyo3(signature = (requires_grad=None), text_signature = "($self, requires_grad=True)")]
    fn requires_grad_<'py>(
        slf: Bound<'py, Self>,
        requires_grad: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let requires_grad = convert::flag(requires_grad, true, "requires_grad_", "requires_grad")?;
        slf.get().check_can_require_grad(requires_grad)?;
        slf.get().inner.set_requires_grad(requires_grad);
        Ok(slf)
    }

    #[getter]
    fn get_grad(&self) -> Option<PyTensor> {
        let grad = self.inner.grad();
        crate::compile::grad_read(&self.inner, grad.as_ref());
        grad.map(PyTensor::wrap)
    }

    #[setter]
    fn set_grad(&self, grad: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        match grad {
            None => {
                crate::compile::grad_set(&self.inner, None);
                self.inner.set_grad(None)
            }
            Some(g) => {
                let g = convert::tensor_arg(g, "grad", "value").map_err(|_| {
                    crate::python::errors::argument_type_error(format!(
                        "assigned grad expected to be a Tensor or None but got grad of type {}",
                        convert::type_name(g)
                    ))
                })?;
                let g = g.get().inner.clone();
                if g.shape() != self.inner.shape() || g.dtype() != self.inner.dtype() {
                    return Err(Error::Gradient(format!(
                        "assigned grad has data of a different type or size: got a {} tensor of shape {}, \
                         expected {} {}",
                        g.dtype().name(),
                        fmt_shape(g.shape()),
                        self.inner.dtype().name(),
                        fmt_shape(self.inner.shape())
                    ))
                    .into());
                }
                crate::compile::grad_set(&self.inner, Some(&g));
                self.inner.set_grad(Some(g));
            }
        }
        Ok(())
    }

    #[getter]
    fn grad_fn(&self) -> Option<PyNode> {
        self.inner.grad_fn().map(PyNode::wrap)
    }

    #[getter]
    fn is_leaf(&self) -> bool {
        self.inner.is_leaf()
    }

    #[getter]
    fn _version(&self) -> u64 {
        self.inner.version()
    }

    /// The same data, detached from the graph (as `Tensor.data` in PyTorch).
    #[getter]
    fn data(&self) -> PyTensor {
        PyTensor::wrap(self.inner.alias())
    }

    #[getter(T)]
    fn transposed(&self, py: Python<'_>) -> PyResult<PyTensor> {
        match self.inner.rank() {
            0 | 1 => Ok(PyTensor::wrap(self.inner.clone())),
            2 => run_op(py, Op::Transpose(0, 1), &[&self.inner]),
            r => Err(Error::Shape(format!(
                "T: only defined for tensors of up to 2 dimensions (got {r}); use .transpose(d0, d1)"
            ))
            .into()),
        }
    }

    /// The matrices in the last two dims transposed, as a view (`transpose(-2, -1)`).
    #[getter(mT)]
    fn matrix_transposed(&self, py: Python<'_>) -> PyResult<PyTensor> {
        if self.inner.rank() < 2 {
            return Err(Error::Shape(format!(
                "mT: only defined for matrices and batches of matrices, got a {}-D tensor",
                self.inner.rank()
            ))
            .into());
        }
        run_op(py, Op::Transpose(-2, -1), &[&self.inner])
    }

    // ----- autograd -----

    #[pyo3(
        signature = (gradient=None, retain_graph=None, create_graph=None, inputs=None),
        text_signature = "($self, gradient=None, retain_graph=None, create_graph=False, inputs=None)"
    )]
    fn backward(
        &self,
        py: Python<'_>,
        gradient: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<&Bound<'_, PyAny>>,
        create_graph: Option<&Bound<'_, PyAny>>,
        inputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let retain_graph = convert::opt_arg::<bool>(retain_graph, "backward", "retain_graph")?;
        let create_graph = convert::flag(create_graph, false, "backward", "create_graph")?;
        if inputs.is_some_and(|i| !i.is_none()) {
            return Err(Error::Gradient(
                "backward(inputs=...) is not supported; use rustgrad.autograd.grad(outputs, inputs)".into(),
            )
            .into());
        }
        let grad = match gradient {
            Some(g) if !g.is_none() => Some(value_tensor(g, self.inner.dtype())?),
            _ => None,
        };
        run_backward_py(py, vec![self.inner.clone()], vec![grad], retain_graph, create_graph)
    }

    /// Keeps this non-leaf tensor's gradient in `.grad` after backward.
    fn retain_grad(&self) -> PyResult<()> {
        Ok(self.inner.retain_grad()?)
    }

    /// Calls `hook(grad)` with this tensor's gradient during backward; a Tensor it
    /// returns replaces the gradient. Returns a handle whose `remove()` unregisters it.
    fn register_hook(&self, hook: &Bound<'_, PyAny>) -> PyResult<super::hooks::PyRemovableHandle> {
        super::hooks::register_hook(&self.inner, hook)
    }

    /// Calls `hook(tensor)` after backward has updated this leaf's `.grad`.
    fn register_post_accumulate_grad_hook(&self, hook: &Bound<'_, PyAny>) -> PyResult<super::hooks::PyRemovableHandle> {
        super::hooks::register_post_accumulate_grad_hook(&self.inner, hook)
    }
}

impl PyTensor {
    pub(super) fn check_can_require_grad(&self, value: bool) -> PyResult<()> {
        if value && !self.inner.dtype().is_float() {
            return Err(Error::Gradient(format!(
                "only Tensors of floating point and complex dtype can require gradients (this one is {}); \
                 convert it with .float() first",
                self.inner.dtype().name()
            ))
            .into());
        }
        if !value && !self.inner.is_leaf() {
            return Err(Error::Gradient(
                "you can only change requires_grad flags of leaf variables; use .detach() to get a tensor without history".into(),
            )
            .into());
        }
        Ok(())
    }

    /// The value of a one-element integer or bool tensor, exactly.
    pub(super) fn single_integer(&self, op: &str) -> PyResult<i64> {
        match self.inner.item()? {
            Scalar::Int(i) => Ok(i),
            Scalar::Bool(b) => Ok(b as i64),
            Scalar::Float(_) => Err(Error::Internal(format!("{op}: a float tensor is no integer")).into()),
        }
    }

    pub(super) fn cast_to(&self, py: Python<'_>, dtype: DType) -> PyResult<PyTensor> {
        if dtype == self.inner.dtype() {
            return Ok(PyTensor::wrap(self.inner.clone()));
        }
        run_op(py, Op::Cast(dtype), &[&self.inner])
    }

    pub(super) fn binary_in_place(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: BinaryOp) -> PyResult<()> {
        let value = in_place_value(other, op)?;
        let t = &self.inner;
        in_place_kernel(py, t, || in_place::binary(t, op, &value))
    }
}
