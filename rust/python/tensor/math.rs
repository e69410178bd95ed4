//! Arithmetic, products, reductions and comparisons: the methods that compute a new
//! tensor from this one and operands.

use super::*;

#[pymethods]
impl PyTensor {
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
}

/// torch.matmul (`record::matmul` promotes vectors and broadcasts batches).
fn matmul_any(py: Python<'_>, a: &Tensor, b: &Tensor) -> PyResult<PyTensor> {
    run_core(py, &[a, b], true, || record::matmul(a, b))
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

pub(super) fn where_operand(v: &Bound<'_, PyAny>) -> PyResult<Operand> {
    operand(v)?.ok_or_else(|| {
        Error::InvalidArgument(format!(
            "where: x and y must be tensors or numbers, got {}",
            convert::repr(&v.get_type().into_any())
        ))
        .into()
    })
}
