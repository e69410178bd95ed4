//! The op table, published as `_rustgrad.ops`: one `OpSpec` per op, named as in
//! the core. A spec is called on eager tensors, and static graphs `apply` it, so
//! neither front names an op by a string the core has to parse.

use super::convert::{self, tensor_arg};
use super::tensor::{run_op, PyTensor};
use crate::error::Error;
use crate::op::Op;
use crate::ops::args::{Axes, NumberOrName, Padding, Value};
use crate::ops::unary::UnaryOp;
use crate::ops::{numbers_as_tensors, Args, Builder, Kind, Operand, Role, Spec, TorchFront, TABLE, TABLE_EXTRAS};
use crate::tensor::Tensor;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString, PyTuple};

#[derive(Clone, Copy)]
enum Entry {
    Unary(UnaryOp),
    Table(&'static Spec, Builder, &'static [Role], &'static [&'static str], TorchFront),
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
            Entry::Table(spec, ..) => spec,
        }
    }

    /// The roles of the inputs; an empty list (or a missing entry) means data.
    fn input_roles(&self) -> &'static [Role] {
        match self.entry {
            Entry::Table(_, _, roles, ..) => roles,
            Entry::Unary(_) => &[],
        }
    }

    /// The role of input `i` (data unless the op says otherwise).
    fn role(&self, i: usize) -> Role {
        self.input_roles().get(i).copied().unwrap_or(Role::Data)
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
            Entry::Table(spec, build, ..) => {
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

/// The eager inputs of a call: one per input, or every tensor of a list input. Data inputs
/// may be Python numbers (`atan2(x, 2)`, `scatter(x, 1, index, 2.0)`); index and mask inputs
/// are tensors.
fn eager_inputs(this: &PyOpSpec, objs: &[Bound<'_, PyAny>]) -> PyResult<Vec<Operand>> {
    let spec = this.spec();
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
            Ok(tensors.into_iter().map(Operand::Tensor).collect())
        }
        ([_], [obj]) => Ok(vec![Operand::Tensor(tensor(obj, spec.inputs[0].torch)?)]),
        _ => (spec.inputs.iter().zip(objs).enumerate())
            .map(|(i, (input, obj))| match this.role(i) {
                Role::Data => tensor_or_number(spec, input.torch, obj),
                _ => tensor(obj, input.torch).map(Operand::Tensor),
            })
            .collect(),
    }
}

/// An input of an op of several inputs: a Tensor, or a Python number.
fn tensor_or_number(spec: &Spec, name: &str, obj: &Bound<'_, PyAny>) -> PyResult<Operand> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(Operand::Tensor(t.get().inner.clone()));
    }
    // Arrays and lists are not converted, as in torch: only numbers.
    match convert::operand(obj)? {
        Some(convert::Operand::Scalar(value)) => Ok(Operand::Number(value)),
        _ => Err(super::errors::argument_type_error(format!(
            "{}: argument '{name}' must be a Tensor or a number, got {}",
            spec.name,
            convert::type_name(obj)
        ))),
    }
}

/// Runs `op` on eager inputs: through the op's cheaper form for numbers where it has one,
/// else with each number as a 0-d tensor (`ops::numbers_as_tensors`).
fn run_eager(py: Python<'_>, this: &PyOpSpec, op: Op, inputs: Vec<Operand>) -> PyResult<PyTensor> {
    let spec = this.spec();
    let numbers: Vec<Option<crate::dtype::Scalar>> =
        inputs.iter().map(|i| if let Operand::Number(value) = i { Some(*value) } else { None }).collect();
    let Some(tensors) = numbers_as_tensors(inputs, this.input_roles())? else {
        let first = spec.inputs.first().map_or("input", |i| i.torch);
        return Err(super::errors::argument_type_error(format!(
            "{}: argument '{first}' must be a Tensor, got a number; one of the inputs must be a Tensor",
            spec.name
        )));
    };
    if let Some((cheaper, keep)) = op.with_numbers(&numbers) {
        let kept: Vec<&Tensor> = keep.iter().filter_map(|&i| tensors.get(i)).collect();
        return run_op(py, cheaper, &kept);
    }
    let refs: Vec<&Tensor> = tensors.iter().collect();
    run_op(py, op, &refs)
}

fn convert_value(obj: &Bound<'_, PyAny>, kind: Kind, op: &str, name: &str) -> PyResult<Value> {
    Ok(match kind {
        Kind::Int => Value::Int(convert::arg(obj, op, name)?),
        Kind::Bool => Value::Bool(convert::arg(obj, op, name)?),
        Kind::Float => Value::Float(convert::arg(obj, op, name)?),
        Kind::OptDims | Kind::Ints | Kind::Pairs if obj.is_none() => Value::Dims(None),
        // `var(x, True)` is torch's old `unbiased` spelling: a bool is never a dim.
        Kind::OptDims | Kind::Ints if obj.is_instance_of::<PyBool>() => {
            return Err(super::errors::argument_type_error(format!(
                "{op}: argument '{name}' must be None, an int or a sequence of ints, got bool; pass flags by keyword"
            )))
        }
        Kind::OptInt => Value::OptInt(optional(obj, |o| convert::arg(o, op, name))?),
        Kind::OptStr => Value::OptStr(optional(obj, |o| convert::arg(o, op, name))?),
        Kind::OptDims | Kind::Ints => match obj.extract::<isize>() {
            Ok(single) => Value::Dims(Some(vec![single])),
            Err(_) => Value::Dims(Some(convert::arg::<Vec<isize>>(obj, op, name)?)),
        },
        Kind::Pairs => Value::Dims(Some(pairs(obj, op, name)?)),
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
        Kind::Axes => Value::Axes(axes(obj, op, name)?),
        Kind::Padding => Value::Padding(padding(obj, op, name)?),
        Kind::NumberOrName => match obj.cast::<PyString>() {
            Ok(text) => Value::NumberOrName(NumberOrName::Name(text.to_cow()?.into_owned())),
            Err(_) => Value::NumberOrName(NumberOrName::Number(convert::arg(obj, op, name)?)),
        },
    })
}

/// `tensordot`'s dims: an int, or two entries (each a dim or a sequence of dims).
fn axes(obj: &Bound<'_, PyAny>, op: &str, name: &str) -> PyResult<Axes> {
    let refused = || {
        super::errors::argument_type_error(format!(
            "{op}: argument '{name}' must be an int or a pair of sequences of ints, got {}",
            convert::type_name(obj)
        ))
    };
    if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyString>() {
        return Err(refused());
    }
    if let Ok(count) = obj.extract::<isize>() {
        return Ok(Axes::Count(count));
    }
    let entries: Vec<Bound<'_, PyAny>> = obj.try_iter().map_err(|_| refused())?.collect::<PyResult<_>>()?;
    let [first, second] = entries.as_slice() else {
        return Err(Error::InvalidArgument(format!(
            "{op}: argument '{name}' must hold two lists of dims (one per operand), got {} entries",
            entries.len()
        ))
        .into());
    };
    let dims = |entry: &Bound<'_, PyAny>| -> PyResult<Vec<isize>> {
        match entry.extract::<isize>() {
            Ok(single) => Ok(vec![single]),
            Err(_) => convert::arg::<Vec<isize>>(entry, op, name),
        }
    };
    Ok(Axes::Lists(dims(first)?, dims(second)?))
}

/// A sequence of `(before, after)` pairs, flattened.
fn pairs(obj: &Bound<'_, PyAny>, op: &str, name: &str) -> PyResult<Vec<isize>> {
    let rows: Vec<Vec<isize>> = convert::arg(obj, op, name)?;
    if let Some(row) = rows.iter().find(|row| row.len() != 2) {
        return Err(Error::InvalidArgument(format!(
            "{op}: each entry of '{name}' must be a (before, after) pair, got {} values",
            row.len()
        ))
        .into());
    }
    Ok(rows.into_iter().flatten().collect())
}

/// A padding: a str, an int, a sequence of ints, or a sequence of (before, after) pairs.
fn padding(obj: &Bound<'_, PyAny>, op: &str, name: &str) -> PyResult<Padding> {
    if let Ok(text) = obj.cast::<PyString>() {
        return Ok(Padding::Name(text.to_cow()?.into_owned()));
    }
    if obj.is_instance_of::<PyBool>() {
        return Err(super::errors::argument_type_error(format!(
            "{op}: argument '{name}' must be an int, a sequence of ints or a str, got bool"
        )));
    }
    if let Ok(single) = obj.extract::<isize>() {
        return Ok(Padding::Ints(vec![single], false));
    }
    if let Ok(ints) = obj.extract::<Vec<isize>>() {
        return Ok(Padding::Ints(ints, false));
    }
    Ok(Padding::Ints(pairs(obj, op, name)?, true))
}

/// None, or `obj` converted.
fn optional<T>(obj: &Bound<'_, PyAny>, convert: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<T>) -> PyResult<Option<T>> {
    if obj.is_none() {
        Ok(None)
    } else {
        convert(obj).map(Some)
    }
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

    /// Whether the `Tensor` method also takes its one argument as separate ints
    /// (`x.permute(1, 0)` as well as `x.permute((1, 0))`): its only param is of kind `Ints`.
    #[getter]
    fn varargs(&self) -> bool {
        let spec = self.spec();
        matches!(spec.params, [only] if only.kind == Kind::Ints) && !spec.inputs.iter().any(|i| i.list)
    }

    #[getter]
    fn differentiable(&self) -> bool {
        self.spec().differentiable
    }

    /// The role of each tensor argument: `"data"`, `"index"` (an integer tensor of
    /// positions) or `"mask"` (a bool tensor).
    #[getter]
    fn roles(&self) -> Vec<&'static str> {
        (0..self.spec().inputs.len()).map(|i| self.role(i).name()).collect()
    }

    /// torch's argument names in the order of its signature, when a param comes between
    /// tensors (`gather(input, dim, index)`); empty: the tensors, then the params.
    #[getter]
    fn torch_order(&self) -> Vec<&'static str> {
        match self.entry {
            Entry::Table(_, _, _, order, _) => order.to_vec(),
            Entry::Unary(_) => Vec::new(),
        }
    }

    /// Where torch offers the op: `(torch.NAME, Tensor.NAME, torch.nn.functional.NAME, Tensor.NAME_)`.
    #[getter]
    fn torch_front(&self) -> (bool, bool, bool, bool) {
        let front = match self.entry {
            Entry::Table(_, _, _, _, front) => front,
            Entry::Unary(op) => op.torch_front(),
        };
        (front.function, front.method, front.functional, front.in_place)
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
        let args: smallvec::SmallVec<[Bound<'_, PyAny>; 4]> = args.iter().collect();
        let n = spec.inputs.len();
        if args.len() < n {
            return Err(Error::InvalidArgument(format!(
                "{}: expected {n} tensor arguments, got {}",
                spec.name,
                args.len()
            ))
            .into());
        }
        if let [only] = spec.inputs {
            if !only.list {
                // One tensor (every unary op, every view): the op runs on it as it is, since
                // `numbers_as_tensors` would give the tensor itself (the type of one operand is
                // its own), without the general path's lists.
                let tensor = tensor_arg(&args[0], spec.name, only.torch)?;
                let op = self.op(&args[1..], Front::Torch)?;
                return run_op(py, op, &[&tensor.get().inner]);
            }
        }
        let inputs = eager_inputs(self, &args[..n])?;
        let op = self.op(&args[n..], Front::Torch)?;
        run_eager(py, self, op, inputs)
    }

    /// The op's in-place form (`masked_fill_`, `scatter_`, `index_add_`): like a call,
    /// with the result written into the first tensor, which it must fit.
    #[pyo3(signature = (*args))]
    fn in_place(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
        let spec = self.spec();
        let args: Vec<Bound<'_, PyAny>> = args.iter().collect();
        let n = spec.inputs.len();
        if args.len() < n || spec.inputs.iter().any(|i| i.list) {
            return Err(Error::InvalidArgument(format!("{}_: expected {n} tensor arguments", spec.name)).into());
        }
        let mut inputs = eager_inputs(self, &args[..n])?.into_iter();
        let Some(Operand::Tensor(dst)) = inputs.next() else {
            return Err(super::errors::argument_type_error(format!(
                "{}_: the first argument must be a Tensor",
                spec.name
            )));
        };
        let op = self.op(&args[n..], Front::Torch)?;
        let (op, others) = crate::ops::in_place_operands(op, &dst, inputs.collect());
        let others: Vec<&Tensor> = others.iter().collect();
        let dst = &dst;
        let name = format!("{}_", spec.name);
        super::tensor::in_place_kernel(py, dst, || crate::autograd::in_place::table_op(dst, op, &others, &name))
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
    for (&(spec, build), &(roles, order, front)) in TABLE.iter().zip(TABLE_EXTRAS) {
        table.set_item(spec.name, PyOpSpec { entry: Entry::Table(spec, build, roles, order, front) })?;
    }
    Ok(table)
}
