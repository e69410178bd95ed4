//! The op table, published as `_rustgrad.ops`: one `OpSpec` per op, named as in
//! the core. A spec is called on eager tensors, and static graphs `apply` it, so
//! neither front names an op by a string the core has to parse.

use super::convert::{self, tensor_arg};
use super::tensor::{run_op, PyTensor};
use crate::error::Error;
use crate::op::Op;
use crate::ops::args::{NumberOrName, Value};
use crate::ops::unary::UnaryOp;
use crate::ops::{Args, Builder, Kind, Spec, TABLE};
use crate::tensor::Tensor;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString, PyTuple};

#[derive(Clone, Copy)]
enum Entry {
    Unary(UnaryOp),
    Table(&'static Spec, Builder),
}

#[pyclass(frozen, name = "OpSpec", module = "rustgrad._rustgrad")]
pub struct PyOpSpec {
    entry: Entry,
}

/// Which front's argument names an error message uses.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Front {
    Torch,
    Tf,
}

impl PyOpSpec {
    fn spec(&self) -> &'static Spec {
        match self.entry {
            Entry::Unary(op) => op.spec(),
            Entry::Table(spec, _) => spec,
        }
    }

    /// The core op for these non-tensor arguments (all of the spec's params, in order).
    pub fn op(&self, params: &[Bound<'_, PyAny>], front: Front) -> PyResult<Op> {
        let spec = self.spec();
        if params.len() != spec.params.len() {
            return Err(Error::InvalidArgument(format!(
                "{}: expected {} arguments after the tensors, got {}",
                spec.name,
                spec.params.len(),
                params.len()
            ))
            .into());
        }
        match self.entry {
            Entry::Unary(op) => Ok(Op::Unary(op)),
            Entry::Table(spec, build) => {
                let values = spec
                    .params
                    .iter()
                    .zip(params)
                    .map(|(param, obj)| {
                        let name = if front == Front::Tf && !param.tf.is_empty() { param.tf } else { param.torch };
                        convert_value(obj, param.kind, spec.name, name)
                    })
                    .collect::<PyResult<Vec<Value>>>()?;
                Ok(Op::Table(build(&Args { op: spec.name, values })?))
            }
        }
    }
}

/// The eager tensors of a call: one per input, or every tensor of a list input.
fn eager_inputs(spec: &Spec, objs: &[Bound<'_, PyAny>]) -> PyResult<Vec<Tensor>> {
    let tensor = |obj: &Bound<'_, PyAny>, name: &str| Ok(tensor_arg(obj, spec.name, name)?.get().inner.clone());
    match (spec.inputs, objs) {
        ([only], [list]) if only.list => {
            if list.is_instance_of::<PyTensor>() || list.is_instance_of::<pyo3::types::PyString>() {
                return Err(super::errors::argument_type_error(format!(
                    "{}: argument '{}' must be a sequence of Tensors, got {}",
                    spec.name,
                    only.torch,
                    convert::type_name(list)
                )));
            }
            let items = list.try_iter().map_err(|_| {
                super::errors::argument_type_error(format!(
                    "{}: argument '{}' must be a sequence of Tensors, got {}",
                    spec.name,
                    only.torch,
                    convert::type_name(list)
                ))
            })?;
            let tensors = items.map(|item| tensor(&item?, only.torch)).collect::<PyResult<Vec<Tensor>>>()?;
            if tensors.is_empty() {
                return Err(
                    Error::InvalidArgument(format!("{}: expected a non-empty list of Tensors", spec.name)).into()
                );
            }
            Ok(tensors)
        }
        _ => spec.inputs.iter().zip(objs).map(|(input, obj)| tensor(obj, input.torch)).collect(),
    }
}

fn convert_value(obj: &Bound<'_, PyAny>, kind: Kind, op: &str, name: &str) -> PyResult<Value> {
    Ok(match kind {
        Kind::Int => Value::Int(convert::arg(obj, op, name)?),
        Kind::Bool => Value::Bool(convert::arg(obj, op, name)?),
        Kind::Float => Value::Float(convert::arg(obj, op, name)?),
        Kind::OptDims if obj.is_none() => Value::Dims(None),
        // `var(x, True)` is torch's old `unbiased` spelling: a bool is never a dim.
        Kind::OptDims if obj.is_instance_of::<PyBool>() => {
            return Err(super::errors::argument_type_error(format!(
                "{op}: argument '{name}' must be None, an int or a sequence of ints, got bool; pass flags by keyword"
            )))
        }
        Kind::OptDims => match obj.extract::<isize>() {
            Ok(single) => Value::Dims(Some(vec![single])),
            Err(_) => Value::Dims(Some(convert::arg::<Vec<isize>>(obj, op, name)?)),
        },
        Kind::OptBool => Value::OptBool(convert::opt_arg(Some(obj), op, name)?),
        Kind::OptFloat => Value::OptFloat(convert::opt_arg(Some(obj), op, name)?),
        Kind::Str => match obj.cast::<PyString>() {
            Ok(text) => Value::Str(text.to_cow()?.into_owned()),
            Err(_) => {
                return Err(super::errors::argument_type_error(format!(
                    "{op}: argument '{name}' must be a str, got {}",
                    convert::type_name(obj)
                )))
            }
        },
        Kind::OptDType if obj.is_none() => Value::DType(None),
        Kind::OptDType => Value::DType(Some(convert::parse_dtype(obj)?)),
        Kind::NumberOrName => match obj.cast::<PyString>() {
            Ok(text) => Value::NumberOrName(NumberOrName::Name(text.to_cow()?.into_owned())),
            Err(_) => Value::NumberOrName(NumberOrName::Number(convert::arg(obj, op, name)?)),
        },
    })
}

#[pymethods]
impl PyOpSpec {
    /// The core and torch name.
    #[getter]
    fn name(&self) -> &'static str {
        self.spec().name
    }

    /// `"unary"` for the elementwise one-tensor ops of `rust/ops/unary.rs`, else `"table"`.
    #[getter]
    fn kind(&self) -> &'static str {
        match self.entry {
            Entry::Unary(_) => "unary",
            Entry::Table(..) => "table",
        }
    }

    #[getter]
    fn torch_aliases(&self) -> Vec<&'static str> {
        self.spec().torch_aliases.to_vec()
    }

    /// TF1 names in `rustgrad.static`; empty when TF1 has none.
    #[getter]
    fn tf(&self) -> Vec<&'static str> {
        self.spec().tf.to_vec()
    }

    #[getter]
    fn doc(&self) -> &'static str {
        self.spec().doc
    }

    #[getter]
    fn differentiable(&self) -> bool {
        self.spec().differentiable
    }

    /// The tensor arguments as `(torch name, TF1 name, is a list of tensors)`.
    #[getter]
    fn inputs(&self) -> Vec<(&'static str, &'static str, bool)> {
        self.spec().inputs.iter().map(|i| (i.torch, i.tf, i.list)).collect()
    }

    /// The other arguments as `(torch name, TF1 name, TF1 aliases, kind annotation, torch
    /// default, TF1 default)`; an empty name: that front does not take it; a None default: required.
    #[allow(clippy::type_complexity)]
    #[getter]
    fn params(
        &self,
    ) -> Vec<(&'static str, &'static str, Vec<&'static str>, &'static str, Option<&'static str>, Option<&'static str>)>
    {
        self.spec()
            .params
            .iter()
            .map(|p| (p.torch, p.tf, p.tf_aliases.to_vec(), p.kind.annotation(), p.torch_default, p.tf_default))
            .collect()
    }

    /// Applies the op to eager tensors (its inputs, then every param in order),
    /// recording it when gradients are needed.
    #[pyo3(signature = (*args))]
    fn __call__(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let spec = self.spec();
        let args: Vec<Bound<'_, PyAny>> = args.iter().collect();
        let n = spec.inputs.len();
        if args.len() < n {
            return Err(Error::InvalidArgument(format!(
                "{}: expected {n} tensor arguments, got {}",
                spec.name,
                args.len()
            ))
            .into());
        }
        let tensors = eager_inputs(spec, &args[..n])?;
        let op = self.op(&args[n..], Front::Torch)?;
        let refs: Vec<&Tensor> = tensors.iter().collect();
        run_op(py, op, &refs)
    }

    fn __repr__(&self) -> String {
        format!("<op {}>", self.spec().name)
    }
}

/// `{name: OpSpec}` for every op in the table, in declaration order.
pub fn op_table(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let table = PyDict::new(py);
    for &op in UnaryOp::ALL {
        table.set_item(op.name(), PyOpSpec { entry: Entry::Unary(op) })?;
    }
    for &(spec, build) in TABLE {
        table.set_item(spec.name, PyOpSpec { entry: Entry::Table(spec, build) })?;
    }
    Ok(table)
}
