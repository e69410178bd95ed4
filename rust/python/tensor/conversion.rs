//! Conversion out of a tensor: Python numbers and lists, numpy arrays, dtypes and devices.

use super::*;

#[pymethods]
impl PyTensor {
    // ----- conversion -----

    /// The value of a one-element tensor as a Python float, int or bool, by its dtype.
    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let value = python_number(py, self.inner.item()?)?;
        if crate::compile::tracing() {
            return crate::python::compile::traced_item(py, &self.inner, value);
        }
        Ok(value)
    }

    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if crate::compile::tracing() {
            crate::python::compile::data_read(py, "Tensor.tolist()")?;
        }
        // A copy: the list must not depend on this tensor's memory.
        Ok(convert::tensor_to_numpy(py, &self.inner)?.call_method0("tolist")?.unbind())
    }

    /// A numpy array sharing this tensor's memory (as in PyTorch): writes to one show in the other.
    fn numpy<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let inner = &slf.get().inner;
        if crate::compile::tracing() {
            crate::python::compile::data_read(slf.py(), "Tensor.numpy()")?;
        }
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
        if crate::compile::tracing() {
            crate::python::compile::data_read(py, "numpy.asarray(tensor)")?;
        }
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
        crate::python::dlpack::export_tensor(slf, stream, max_version, dl_device, copy)
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
}

/// A core number as the Python number of its category.
pub(super) fn python_number(py: Python<'_>, value: Scalar) -> PyResult<Py<PyAny>> {
    Ok(match value {
        Scalar::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Scalar::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
    })
}

/// torch's tensor type name of a dtype (`LongTensor` for int64).
pub(super) fn tensor_type_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "FloatTensor",
        DType::F64 => "DoubleTensor",
        DType::I64 => "LongTensor",
        DType::I32 => "IntTensor",
        DType::U8 => "ByteTensor",
        DType::Bool => "BoolTensor",
    }
}

/// The rule of `numpy()` and `np.asarray`: no numpy view of a tensor that requires grad.
pub(super) fn check_numpy_export(t: &Tensor) -> PyResult<()> {
    if t.requires_grad() {
        return Err(Error::Gradient(
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.".into(),
        )
        .into());
    }
    Ok(())
}

pub(super) fn copy_unavoidable(why: &str) -> PyErr {
    Error::InvalidArgument(format!(
        "Unable to avoid copy while creating an array as requested: {why}. Use np.asarray(t) \
         (copy=None) to allow the copy"
    ))
    .into()
}
