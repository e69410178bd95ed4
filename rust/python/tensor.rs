//! `rustgrad.Tensor`: the Python face of a core tensor. Every method converts
//! its arguments, calls the core (releasing the GIL for large work) and wraps
//! the result; no math happens here.

use super::autograd::{run_backward_py, PyNode};
use super::convert::{self, cpu_device, dtype_object, operand, shape_args, Operand};
use super::errors::guard;
use super::index_key::{index_key, IndexKey};
use crate::autograd::{in_place, record};
use crate::dtype::{result_type, DType, Participant, Scalar};
use crate::error::Error;
use crate::kernels::elementwise::{BinaryOp, CmpOp, ScalarOp, UnaryOp};
use crate::op::Op;
use crate::ops::indexing::{Combine, Pick, PickRows};
use crate::ops::{binary, TableOps};
use crate::shape::fmt_shape;
use crate::tensor::Tensor;
use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList, PyString, PyTuple};

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
    let is_matmul = matches!(op, Op::MatMul { .. });
    run_core(py, inputs, is_matmul, || record::apply(op, inputs))
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
        let work = inputs.iter().map(|t| t.numel()).max().unwrap_or(0);
        let out = if work >= GIL_RELEASE_MIN_ELEMENTS || is_matmul && work >= 4096 {
            let _ctrl_c = crate::interrupt::Armed::on_main_thread();
            py.detach(f)
        } else {
            f()
        };
        Ok(PyTensor::wrap(out?))
    })
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
    super::errors::argument_type_error(format!(
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

    /// The address of the first element, as `torch.Tensor.data_ptr()`.
    fn data_ptr(&self) -> usize {
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
        self.inner.grad().map(PyTensor::wrap)
    }

    #[setter]
    fn set_grad(&self, grad: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        match grad {
            None => self.inner.set_grad(None),
            Some(g) => {
                let g = convert::tensor_arg(g, "grad", "value").map_err(|_| {
                    super::errors::argument_type_error(format!(
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

    // ----- shape and matmul -----

    fn mm(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, &convert::tensor_arg(other, "mm", "other")?.get().inner);
        run_core(py, &[a, b], true, || record::mm(a, b))
    }

    fn bmm(&self, py: Python<'_>, mat2: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (&self.inner, &convert::tensor_arg(mat2, "bmm", "mat2")?.get().inner);
        run_core(py, &[a, b], true, || record::bmm(a, b))
    }

    fn matmul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        matmul_any(py, &self.inner, &convert::tensor_arg(other, "matmul", "other")?.get().inner)
    }

    /// `x @ other`: a number is no matrix, so it gets `NotImplemented` (a TypeError), as in torch.
    fn __matmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let product = match operand(other)? {
            Some(Operand::Tensor(t)) => Some(matmul_any(py, &self.inner, &t)?),
            _ => None,
        };
        or_not_implemented(py, product)
    }

    fn __rmatmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let product = match operand(other)? {
            Some(Operand::Tensor(t)) => Some(matmul_any(py, &t, &self.inner)?),
            _ => None,
        };
        or_not_implemented(py, product)
    }

    fn t(&self, py: Python<'_>) -> PyResult<PyTensor> {
        if self.inner.rank() > 2 {
            return Err(Error::Shape(format!(
                "t() expects a tensor with <= 2 dimensions, but self is {}D",
                self.inner.rank()
            ))
            .into());
        }
        self.transposed(py)
    }

    fn transpose(&self, py: Python<'_>, dim0: &Bound<'_, PyAny>, dim1: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (dim0, dim1) = (convert::arg(dim0, "transpose", "dim0")?, convert::arg(dim1, "transpose", "dim1")?);
        run_op(py, Op::Transpose(dim0, dim1), &[&self.inner])
    }

    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        run_op(py, Op::Reshape(shape_args(shape)?), &[&self.inner])
    }

    #[pyo3(signature = (*shape))]
    fn view(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        if !self.inner.is_contiguous() {
            return Err(Error::Shape(
                "view size is not compatible with input tensor's size and stride; use .reshape(...) instead".into(),
            )
            .into());
        }
        self.reshape(py, shape)
    }

    /// This tensor when its layout is already row-major contiguous, else a contiguous copy.
    fn contiguous(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        if slf.get().inner.is_contiguous() {
            return Ok(slf);
        }
        let copy = run_op(slf.py(), Op::Copy, &[&slf.get().inner])?;
        Bound::new(slf.py(), copy)
    }

    // ----- math -----

    #[pyo3(signature = (min=None, max=None))]
    fn clamp(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        clamp(py, &self.inner, min, max, "clamp")
    }

    #[pyo3(signature = (min=None, max=None))]
    fn clip(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        clamp(py, &self.inner, min, max, "clip")
    }

    fn __neg__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        unary(py, &self.inner, UnaryOp::Neg)
    }

    fn __abs__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        unary(py, &self.inner, UnaryOp::Abs)
    }

    fn __pos__(&self) -> PyTensor {
        PyTensor::wrap(self.inner.clone())
    }

    /// `x ** other`; three-argument `pow(x, y, modulo)` is not supported (NotImplemented).
    fn __pow__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, modulo: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let result = if modulo.is_none() { pow(py, &self.inner, other, false)? } else { None };
        or_not_implemented(py, result)
    }

    fn __rpow__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, modulo: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let result = if modulo.is_none() { pow(py, &self.inner, other, true)? } else { None };
        or_not_implemented(py, result)
    }

    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        or_not_implemented(py, arith(py, &self.inner, other, BinaryOp::Add, false)?)
    }

    fn __radd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        or_not_implemented(py, arith(py, &self.inner, other, BinaryOp::Add, true)?)
    }

    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        or_not_implemented(py, arith(py, &self.inner, other, BinaryOp::Sub, false)?)
    }

    fn __rsub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        or_not_implemented(py, arith(py, &self.inner, other, BinaryOp::Sub, true)?)
    }

    fn __mul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        or_not_implemented(py, arith(py, &self.inner, other, BinaryOp::Mul, false)?)
    }

    fn __rmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        or_not_implemented(py, arith(py, &self.inner, other, BinaryOp::Mul, true)?)
    }

    fn __truediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        or_not_implemented(py, arith(py, &self.inner, other, BinaryOp::Div, false)?)
    }

    fn __rtruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        or_not_implemented(py, arith(py, &self.inner, other, BinaryOp::Div, true)?)
    }

    fn __floordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        or_not_implemented(py, arith(py, &self.inner, other, BinaryOp::FloorDiv, false)?)
    }

    fn __rfloordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        or_not_implemented(py, arith(py, &self.inner, other, BinaryOp::FloorDiv, true)?)
    }

    fn __mod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        or_not_implemented(py, arith(py, &self.inner, other, BinaryOp::Remainder, false)?)
    }

    fn __rmod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        or_not_implemented(py, arith(py, &self.inner, other, BinaryOp::Remainder, true)?)
    }

    /// `x // other`, rounding toward negative infinity (as Python); integer division by zero raises.
    fn floor_divide(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary_method(py, &self.inner, other, BinaryOp::FloorDiv, "floor_divide")
    }

    /// `x % other`, with the sign of `other` (as Python); integer remainder by zero raises.
    fn remainder(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary_method(py, &self.inner, other, BinaryOp::Remainder, "remainder")
    }

    fn add(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary_method(py, &self.inner, other, BinaryOp::Add, "add")
    }

    fn sub(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary_method(py, &self.inner, other, BinaryOp::Sub, "sub")
    }

    fn mul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary_method(py, &self.inner, other, BinaryOp::Mul, "mul")
    }

    fn div(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary_method(py, &self.inner, other, BinaryOp::Div, "div")
    }

    fn maximum(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary_method(py, &self.inner, other, BinaryOp::Maximum, "maximum")
    }

    fn minimum(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary_method(py, &self.inner, other, BinaryOp::Minimum, "minimum")
    }

    // ----- reductions -----

    #[pyo3(signature = (dim=None, keepdim=None))]
    fn sum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (keepdim, dims) = (convert::flag(keepdim, false, "sum", "keepdim")?, dims_arg(dim, "sum")?);
        let x = &self.inner;
        run_core(py, &[x], false, || record::sum(x, dims, keepdim))
    }

    #[pyo3(signature = (dim=None, keepdim=None))]
    fn mean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (keepdim, dims) = (convert::flag(keepdim, false, "mean", "keepdim")?, dims_arg(dim, "mean")?);
        let x = &self.inner;
        run_core(py, &[x], false, || record::mean(x, dims, keepdim))
    }

    #[pyo3(signature = (dim=None, keepdim=None))]
    fn amax(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let keepdim = convert::flag(keepdim, false, "amax", "keepdim")?;
        run_op(py, Op::Extreme { largest: true, dims: dims_arg(dim, "amax")?, keepdim }, &[&self.inner])
    }

    #[pyo3(signature = (dim=None, keepdim=None))]
    fn amin(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let keepdim = convert::flag(keepdim, false, "amin", "keepdim")?;
        run_op(py, Op::Extreme { largest: false, dims: dims_arg(dim, "amin")?, keepdim }, &[&self.inner])
    }

    /// `max()` over all elements. (With a dim PyTorch also returns indices; use `amax(dim)`.)
    fn max(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.amax(py, None, None)
    }

    fn min(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.amin(py, None, None)
    }

    // ----- comparisons -----

    /// Elementwise comparison. Other kinds of operand get `NotImplemented`: Python then
    /// gives `x == None` as False and raises TypeError for `x < "a"`, as torch does.
    fn __richcmp__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let cmp = match op {
            CompareOp::Lt => CmpOp::Lt,
            CompareOp::Le => CmpOp::Le,
            CompareOp::Gt => CmpOp::Gt,
            CompareOp::Ge => CmpOp::Ge,
            CompareOp::Eq => CmpOp::Eq,
            CompareOp::Ne => CmpOp::Ne,
        };
        let other = match operand(other)? {
            None => return Ok(py.NotImplemented()),
            Some(Operand::Tensor(t)) => t,
            // A number compares in the dtype it promotes the tensor to (`int_tensor < 2.5` in float32).
            Some(Operand::Scalar(s)) => Tensor::scalar(s, self.inner.dtype().promote_with_scalar(s.kind())),
        };
        or_not_implemented(py, Some(run_op(py, Op::Compare(cmp), &[&self.inner, &other])?))
    }

    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    // ----- conversion -----

    /// The value of a one-element tensor as a Python float, int or bool, by its dtype.
    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        python_number(py, self.inner.item()?)
    }

    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        // A copy: the list must not depend on this tensor's memory.
        Ok(convert::tensor_to_numpy(py, &self.inner)?.call_method0("tolist")?.unbind())
    }

    /// A numpy array sharing this tensor's memory (as in PyTorch): writes to one show in the other.
    fn numpy<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let inner = &slf.get().inner;
        check_numpy_export(inner)?;
        convert::share_to_numpy(slf.py(), inner, slf.clone().into_any())
    }

    /// numpy's conversion protocol (`np.asarray(t)`): shares memory unless `copy=True` is
    /// asked for. As `numpy()`, it refuses a tensor that requires grad: a write through
    /// the array would bypass the version counter that guards saved tensors. With
    /// `copy=False` a needed copy (bool data, another dtype) raises ValueError, as numpy 2 does.
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        slf: &Bound<'py, Self>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (py, inner) = (slf.py(), &slf.get().inner);
        let copy = convert::opt_arg::<bool>(copy, "__array__", "copy")?;
        check_numpy_export(inner)?;
        let never_copy = copy == Some(false);
        if never_copy && inner.dtype() == DType::Bool {
            return Err(copy_unavoidable("a bool tensor cannot share its memory with numpy"));
        }
        let array = if copy == Some(true) {
            convert::tensor_to_numpy(py, inner)?
        } else {
            convert::share_to_numpy(py, inner, slf.clone().into_any())?
        };
        let Some(dtype) = dtype.filter(|d| !d.is_none()) else { return Ok(array) };
        let wanted = py.import("numpy")?.getattr("dtype")?.call1((dtype,))?;
        if never_copy && !array.getattr("dtype")?.eq(&wanted)? {
            return Err(copy_unavoidable(&format!(
                "converting {} data to {} makes a new array",
                inner.dtype().name(),
                convert::repr(&wanted)
            )));
        }
        let no_copy_if_same = PyDict::new(py);
        no_copy_if_same.set_item("copy", false)?;
        array.call_method("astype", (wanted,), Some(&no_copy_if_same))
    }

    /// Pickles as the values (numpy bytes, dtype name, shape) and `requires_grad`,
    /// rebuilt by `rustgrad._tensor_protocols.rebuild_tensor`; the history is not kept.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py().import("rustgrad._tensor_protocols")?.getattr("reduce_tensor")?.call1((slf,))
    }

    /// `copy.deepcopy`: a leaf's data, `requires_grad` and `.grad` are copied (torch refuses non-leaves).
    fn __deepcopy__<'py>(slf: &Bound<'py, Self>, memo: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        slf.py().import("rustgrad._tensor_protocols")?.getattr("deepcopy_tensor")?.call1((slf, memo))
    }

    /// DLPack export: a capsule viewing this tensor's memory (for `np.from_dlpack` and friends).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        slf: &Bound<'py, Self>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<&Bound<'py, PyAny>>,
        dl_device: Option<&Bound<'py, PyAny>>,
        copy: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        super::dlpack::export_tensor(slf, stream, max_version, dl_device, copy)
    }

    /// DLPack device: (kDLCPU, 0).
    fn __dlpack_device__(&self) -> (i32, i32) {
        (1, 0)
    }

    fn clone(&self, py: Python<'_>) -> PyResult<PyTensor> {
        run_op(py, Op::Copy, &[&self.inner])
    }

    fn detach(&self) -> PyTensor {
        PyTensor::wrap(self.inner.alias())
    }

    fn detach_(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf.get().inner.set_history(None, 0);
        slf.get().inner.set_requires_grad(false);
        slf
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn to(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<PyTensor> {
        let mut dtype = None;
        let mut candidates: Vec<Bound<'_, PyAny>> = args.iter().collect();
        if let Some(kw) = kwargs {
            for key in ["dtype", "device"] {
                if let Some(v) = kw.get_item(key)? {
                    candidates.push(v);
                }
            }
        }
        for arg in candidates {
            if arg.is_none() {
                continue;
            }
            if arg.cast::<convert::PyDType>().is_ok() {
                dtype = Some(convert::parse_dtype(&arg)?);
            } else if arg.cast::<convert::PyDevice>().is_ok() {
                convert::check_device(Some(&arg))?;
            } else if let Ok(text) = arg.cast::<PyString>() {
                // A device type ('cpu', 'cuda:0', ...) is a device; any other string must name a dtype.
                if convert::is_device_string(&text.to_cow()?) {
                    convert::check_device(Some(&arg))?;
                } else {
                    dtype = Some(convert::parse_dtype(&arg)?);
                }
            } else if let Ok(t) = arg.cast::<PyTensor>() {
                dtype = Some(t.get().inner.dtype());
            } else {
                dtype = Some(convert::parse_dtype(&arg)?);
            }
        }
        match dtype {
            Some(d) if d != self.inner.dtype() => run_op(py, Op::Cast(d), &[&self.inner]),
            _ => Ok(PyTensor::wrap(self.inner.clone())),
        }
    }

    fn float(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.cast_to(py, DType::F32)
    }

    fn double(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.cast_to(py, DType::F64)
    }

    fn bool(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.cast_to(py, DType::Bool)
    }

    fn long(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.cast_to(py, DType::I64)
    }

    fn int(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.cast_to(py, DType::I32)
    }

    fn byte(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.cast_to(py, DType::U8)
    }

    /// `t.type(dtype)` casts as `t.to(dtype)` (a dtype, its name, or a tensor type name such as
    /// `'torch.LongTensor'`); `t.type()` names the tensor type, e.g. `'rustgrad.LongTensor'`.
    #[pyo3(signature = (dtype=None))]
    fn r#type(&self, py: Python<'_>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let Some(dtype) = dtype.filter(|d| !d.is_none()) else {
            let name = format!("rustgrad.{}", tensor_type_name(self.inner.dtype()));
            return Ok(PyString::new(py, &name).into_any().unbind());
        };
        let target = match dtype.cast::<PyString>() {
            Ok(text) => {
                let text = text.to_cow()?;
                let short = text.rsplit('.').next().unwrap_or_default();
                match DType::ALL.into_iter().find(|&d| tensor_type_name(d) == short) {
                    Some(d) => d,
                    None => convert::parse_dtype(dtype)?,
                }
            }
            Err(_) => convert::parse_dtype(dtype)?,
        };
        Ok(Py::new(py, self.cast_to(py, target)?)?.into_any())
    }

    fn is_signed(&self) -> bool {
        self.inner.dtype().is_signed()
    }

    fn cpu(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    // ----- in place -----

    fn zero_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let t = &slf.get().inner;
        in_place_kernel(slf.py(), t, || in_place::fill(t, Scalar::Int(0), "zero_"))?;
        Ok(slf)
    }

    fn fill_<'py>(slf: Bound<'py, Self>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let t = &slf.get().inner;
        let v = match operand(value)? {
            Some(Operand::Scalar(s)) => s,
            // Recorded like copy_: the value's gradient is the sum of the incoming one.
            Some(Operand::Tensor(v)) if v.numel() == 1 && v.requires_grad() => {
                in_place_kernel(slf.py(), t, || in_place::fill_with_tensor(t, &v))?;
                return Ok(slf);
            }
            Some(Operand::Tensor(t)) if t.numel() == 1 => t.item()?,
            _ => {
                return Err(
                    Error::InvalidArgument("fill_: the value must be a number or a one-element tensor".into()).into()
                )
            }
        };
        in_place_kernel(slf.py(), t, || in_place::fill(t, v, "fill_"))?;
        Ok(slf)
    }

    #[pyo3(signature = (other, alpha=None))]
    fn add_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        alpha: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = &slf.get().inner;
        let alpha = match alpha.filter(|a| !a.is_none()) {
            None => None,
            Some(a) => Some(convert::scalar_value(a)?.ok_or_else(|| {
                super::errors::argument_type_error(format!(
                    "add_: argument 'alpha' must be a number, got {}",
                    convert::type_name(a)
                ))
            })?),
        };
        let value = match alpha {
            None => in_place_value(other, BinaryOp::Add)?,
            Some(_) => in_place::Value::Tensor(value_tensor(other, t.dtype())?),
        };
        in_place_kernel(slf.py(), t, || in_place::add(t, &value, alpha))?;
        Ok(slf)
    }

    fn sub_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        slf.get().binary_in_place(slf.py(), other, BinaryOp::Sub)?;
        Ok(slf)
    }

    fn mul_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        slf.get().binary_in_place(slf.py(), other, BinaryOp::Mul)?;
        Ok(slf)
    }

    fn div_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        slf.get().binary_in_place(slf.py(), other, BinaryOp::Div)?;
        Ok(slf)
    }

    #[pyo3(signature = (min=None, max=None))]
    fn clamp_<'py>(
        slf: Bound<'py, Self>,
        min: Option<&Bound<'py, PyAny>>,
        max: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let (min, max) = (convert::opt_arg(min, "clamp_", "min")?, convert::opt_arg(max, "clamp_", "max")?);
        let t = &slf.get().inner;
        in_place_kernel(slf.py(), t, || in_place::clamp(t, min, max))?;
        Ok(slf)
    }

    fn copy_<'py>(slf: Bound<'py, Self>, src: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let t = &slf.get().inner;
        let value = value_tensor(src, t.dtype())?;
        in_place_kernel(slf.py(), t, || in_place::copy(t, &value))?;
        Ok(slf)
    }

    fn __iadd__(&self, py: Python<'_>, other: convert::InPlaceOperand<'_>) -> PyResult<()> {
        self.binary_in_place(py, &other.0, BinaryOp::Add)
    }

    fn __isub__(&self, py: Python<'_>, other: convert::InPlaceOperand<'_>) -> PyResult<()> {
        self.binary_in_place(py, &other.0, BinaryOp::Sub)
    }

    fn __imul__(&self, py: Python<'_>, other: convert::InPlaceOperand<'_>) -> PyResult<()> {
        self.binary_in_place(py, &other.0, BinaryOp::Mul)
    }

    fn __itruediv__(&self, py: Python<'_>, other: convert::InPlaceOperand<'_>) -> PyResult<()> {
        self.binary_in_place(py, &other.0, BinaryOp::Div)
    }

    fn __ifloordiv__(&self, py: Python<'_>, other: convert::InPlaceOperand<'_>) -> PyResult<()> {
        self.binary_in_place(py, &other.0, BinaryOp::FloorDiv)
    }

    fn __imod__(&self, py: Python<'_>, other: convert::InPlaceOperand<'_>) -> PyResult<()> {
        self.binary_in_place(py, &other.0, BinaryOp::Remainder)
    }

    fn floor_divide_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        slf.get().binary_in_place(slf.py(), other, BinaryOp::FloorDiv)?;
        Ok(slf)
    }

    fn remainder_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        slf.get().binary_in_place(slf.py(), other, BinaryOp::Remainder)?;
        Ok(slf)
    }

    // ----- indexing -----

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        match index_key(key)? {
            IndexKey::Mask(mask) => run_op(py, Op::MaskedSelect, &[&self.inner, &mask]),
            IndexKey::Items(items) => run_op(py, Op::Index(items), &[&self.inner]),
            IndexKey::Advanced(items, indices) => {
                let op = Op::Table(TableOps::PickRows(PickRows { pick: Pick::Key(items) }));
                let mut inputs = vec![&self.inner];
                inputs.extend(&indices);
                run_op(py, op, &inputs)
            }
        }
    }

    fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = value_tensor(value, self.inner.dtype())?;
        let (t, key) = (&self.inner, index_key(key)?);
        in_place_kernel(py, t, || match key {
            IndexKey::Mask(mask) => in_place::masked_put(t, &mask, &value),
            IndexKey::Items(items) => in_place::index_put(t, &items, &[], &value, Combine::Set),
            IndexKey::Advanced(items, indices) => in_place::index_put(t, &items, &indices, &value, Combine::Set),
        })
    }

    /// torch's `index_put_(indices, values, accumulate=False)`: `self[indices] = values`, or,
    /// with `accumulate`, `values` added (repeated indices add up, in order).
    #[pyo3(signature = (indices, values, accumulate=None))]
    fn index_put_<'py>(
        slf: Bound<'py, Self>,
        indices: &Bound<'py, PyAny>,
        values: &Bound<'py, PyAny>,
        accumulate: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let t = &slf.get().inner;
        let accumulate = convert::flag(accumulate, false, "index_put_", "accumulate")?;
        let key = PyTuple::new(slf.py(), indices.try_iter()?.collect::<PyResult<Vec<_>>>()?)?;
        let value = value_tensor(values, t.dtype())?;
        let combine = if accumulate { Combine::Add } else { Combine::Set };
        let (items, indices) = match index_key(key.as_any())? {
            IndexKey::Items(items) => (items, Vec::new()),
            IndexKey::Mask(mask) => (vec![crate::op::IndexItem::Tensor], vec![mask]),
            IndexKey::Advanced(items, indices) => (items, indices),
        };
        in_place_kernel(slf.py(), t, || in_place::index_put(t, &items, &indices, &value, combine))?;
        Ok(slf)
    }

    fn __len__(&self) -> PyResult<usize> {
        self.inner
            .shape()
            .first()
            .copied()
            .ok_or_else(|| super::errors::argument_type_error("len() of a 0-d tensor".into()))
    }

    fn __iter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let n = slf.get().__len__()?;
        let rows = (0..n)
            .map(|i| slf.get().__getitem__(py, &i.into_pyobject(py)?.into_any()))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, rows)?.call_method0("__iter__")
    }

    fn __bool__(&self) -> PyResult<bool> {
        if self.inner.numel() != 1 {
            return Err(Error::Shape(format!(
                "Boolean value of Tensor with {} values is ambiguous; use .any() style reductions or .item()",
                self.inner.numel()
            ))
            .into());
        }
        Ok(self.inner.to_f64_vec()[0] != 0.0)
    }

    fn __float__(&self) -> PyResult<f64> {
        if self.inner.numel() != 1 {
            return Err(Error::Shape(format!(
                "a Tensor with {} elements cannot be converted to Scalar",
                self.inner.numel()
            ))
            .into());
        }
        Ok(self.inner.to_f64_vec()[0])
    }

    /// `int(t)` truncates as Python's `int(float)` does, and refuses NaN and infinity as it does.
    fn __int__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if !self.inner.dtype().is_float() {
            return python_number(py, Scalar::Int(self.single_integer("int")?));
        }
        let value = self.__float__()?;
        if value.is_nan() {
            return Err(Error::InvalidArgument("cannot convert float NaN to integer".into()).into());
        }
        if value.is_infinite() {
            return Err(super::errors::overflow_error("cannot convert float infinity to integer".into()));
        }
        Ok(PyFloat::new(py, value).call_method0("__int__")?.unbind())
    }

    /// An integer (or bool) tensor of one element used as an index (`range(t)`, `seq[t]`), as in torch.
    fn __index__(&self) -> PyResult<i64> {
        if self.inner.dtype().is_float() || self.inner.numel() != 1 {
            return Err(super::errors::argument_type_error(format!(
                "only integer tensors of a single element can be converted to an index (this one is {} of \
                 shape {})",
                self.inner.dtype().name(),
                fmt_shape(self.inner.shape())
            )));
        }
        self.single_integer("__index__")
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        slf.py().import("rustgrad._repr")?.getattr("tensor_repr")?.call1((slf,))?.extract()
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
        if convert::flag(create_graph, false, "backward", "create_graph")? {
            return Err(Error::Gradient(
                "backward(create_graph=True): higher-order gradients are not supported by rustgrad yet".into(),
            )
            .into());
        }
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
        run_backward_py(py, vec![self.inner.clone()], vec![grad], retain_graph.unwrap_or(false))
    }

    /// Keeps this non-leaf tensor's gradient in `.grad` after backward.
    fn retain_grad(&self) -> PyResult<()> {
        Ok(self.inner.retain_grad()?)
    }
}

/// A core number as the Python number of its category.
fn python_number(py: Python<'_>, value: Scalar) -> PyResult<Py<PyAny>> {
    Ok(match value {
        Scalar::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Scalar::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
    })
}

/// torch's tensor type name of a dtype (`LongTensor` for int64).
fn tensor_type_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "FloatTensor",
        DType::F64 => "DoubleTensor",
        DType::I64 => "LongTensor",
        DType::I32 => "IntTensor",
        DType::U8 => "ByteTensor",
        DType::Bool => "BoolTensor",
    }
}

/// torch.matmul (`record::matmul` promotes vectors and broadcasts batches).
pub fn matmul_any(py: Python<'_>, a: &Tensor, b: &Tensor) -> PyResult<PyTensor> {
    run_core(py, &[a, b], true, || record::matmul(a, b))
}

impl PyTensor {
    fn check_can_require_grad(&self, value: bool) -> PyResult<()> {
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
    fn single_integer(&self, op: &str) -> PyResult<i64> {
        match self.inner.item()? {
            Scalar::Int(i) => Ok(i),
            Scalar::Bool(b) => Ok(b as i64),
            Scalar::Float(_) => Err(Error::Internal(format!("{op}: a float tensor is no integer")).into()),
        }
    }

    fn cast_to(&self, py: Python<'_>, dtype: DType) -> PyResult<PyTensor> {
        if dtype == self.inner.dtype() {
            return Ok(PyTensor::wrap(self.inner.clone()));
        }
        run_op(py, Op::Cast(dtype), &[&self.inner])
    }

    fn binary_in_place(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: BinaryOp) -> PyResult<()> {
        let value = in_place_value(other, op)?;
        let t = &self.inner;
        in_place_kernel(py, t, || in_place::binary(t, op, &value))
    }
}

/// The right-hand side of `x op= other`: a tensor or a number.
fn in_place_value(other: &Bound<'_, PyAny>, op: BinaryOp) -> PyResult<in_place::Value> {
    operand(other)?.ok_or_else(|| {
        Error::InvalidArgument(format!("{}_: the other operand must be a tensor or a number", op.name())).into()
    })
}

/// `rustgrad.matmul(a, b)`.
#[pyfunction]
pub fn _matmul(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    matmul_any(
        py,
        &convert::tensor_arg(a, "matmul", "input")?.get().inner,
        &convert::tensor_arg(b, "matmul", "other")?.get().inner,
    )
}

/// The rule of `numpy()` and `np.asarray`: no numpy view of a tensor that requires grad.
fn check_numpy_export(t: &Tensor) -> PyResult<()> {
    if t.requires_grad() {
        return Err(Error::Gradient(
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.".into(),
        )
        .into());
    }
    Ok(())
}

fn copy_unavoidable(why: &str) -> PyErr {
    Error::InvalidArgument(format!(
        "Unable to avoid copy while creating an array as requested: {why}. Use np.asarray(t) \
         (copy=None) to allow the copy"
    ))
    .into()
}

/// `rustgrad.where(condition, x, y)`.
#[pyfunction]
pub fn _where(
    py: Python<'_>,
    condition: &Bound<'_, PyAny>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let cond = match operand(condition)? {
        Some(Operand::Tensor(t)) => t,
        _ => return Err(Error::InvalidArgument("where: the condition must be a bool tensor".into()).into()),
    };
    let (x, y) = (where_operand(x)?, where_operand(y)?);
    // Numbers take the dtype torch's promotion gives the pair (`where(c, 1, 0)` is int64).
    let participant = |v: &Operand| match v {
        Operand::Tensor(t) => Participant::tensor(t.dtype(), t.rank()),
        Operand::Scalar(s) => Participant::Number(s.kind()),
    };
    let dtype = result_type(&[participant(&x), participant(&y)]);
    let as_tensor = |v: Operand| match v {
        Operand::Tensor(t) => t,
        Operand::Scalar(s) => Tensor::scalar(s, dtype),
    };
    run_op(py, Op::Where, &[&cond, &as_tensor(x), &as_tensor(y)])
}

fn where_operand(v: &Bound<'_, PyAny>) -> PyResult<Operand> {
    operand(v)?.ok_or_else(|| {
        Error::InvalidArgument(format!(
            "where: x and y must be tensors or numbers, got {}",
            convert::repr(&v.get_type().into_any())
        ))
        .into()
    })
}
