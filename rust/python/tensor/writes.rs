//! In-place methods (`add_`, `zero_`, `x[key] = v`'s writers): each checks, then writes
//! through the core's in-place writers, which bump the version counter.

use super::*;

#[pymethods]
impl PyTensor {
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
                crate::python::errors::argument_type_error(format!(
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
}

/// The right-hand side of `x op= other`: a tensor or a number.
pub(super) fn in_place_value(other: &Bound<'_, PyAny>, op: BinaryOp) -> PyResult<in_place::Value> {
    operand(other)?.ok_or_else(|| {
        Error::InvalidArgument(format!("{}_: the other operand must be a tensor or a number", op.name())).into()
    })
}
