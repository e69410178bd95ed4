//! Indexing: `x[key]` and `x[key] = value` through the one key parser (`index_key`).

use super::*;

#[pymethods]
impl PyTensor {
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
            .ok_or_else(|| crate::python::errors::argument_type_error("len() of a 0-d tensor".into()))
    }

    fn __iter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let n = slf.get().__len__()?;
        let rows = (0..n)
            .map(|i| slf.get().__getitem__(py, &i.into_pyobject(py)?.into_any()))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, rows)?.call_method0("__iter__")
    }

    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        if crate::compile::tracing() {
            crate::python::compile::data_read(py, "bool(tensor)")?;
        }
        if self.inner.numel() != 1 {
            return Err(Error::Shape(format!(
                "Boolean value of Tensor with {} values is ambiguous; use .any() style reductions or .item()",
                self.inner.numel()
            ))
            .into());
        }
        Ok(self.inner.to_f64_vec()[0] != 0.0)
    }

    fn __float__(&self, py: Python<'_>) -> PyResult<f64> {
        if crate::compile::tracing() {
            crate::python::compile::data_read(py, "float(tensor)")?;
        }
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
        if crate::compile::tracing() {
            crate::python::compile::data_read(py, "int(tensor)")?;
        }
        if !self.inner.dtype().is_float() {
            return python_number(py, Scalar::Int(self.single_integer("int")?));
        }
        let value = self.__float__(py)?;
        if value.is_nan() {
            return Err(Error::InvalidArgument("cannot convert float NaN to integer".into()).into());
        }
        if value.is_infinite() {
            return Err(crate::python::errors::overflow_error("cannot convert float infinity to integer".into()));
        }
        Ok(PyFloat::new(py, value).call_method0("__int__")?.unbind())
    }

    /// An integer (or bool) tensor of one element used as an index (`range(t)`, `seq[t]`), as in torch.
    fn __index__(&self, py: Python<'_>) -> PyResult<i64> {
        if crate::compile::tracing() {
            crate::python::compile::data_read(py, "a tensor used as an index")?;
        }
        if self.inner.dtype().is_float() || self.inner.numel() != 1 {
            return Err(crate::python::errors::argument_type_error(format!(
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
}
