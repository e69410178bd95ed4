//! Bindings for static graphs: `Graph` (building, gradients) and `Session`
//! (compiled, cached plans run with the GIL released).

use super::convert::{
    dtype_object, parse_dtype, repr, scalar_value, share_from_numpy, share_to_numpy, tensor_from_numpy,
    tensor_to_numpy, PyDType,
};
use super::errors::{external, guard};
use super::index_key::PyIndexItems;
use super::ops::{Front, PyOpSpec};
use super::tensor::PyTensor;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::session::{RunHooks, Session, PLAN_CACHE_CAPACITY};
use crate::graph::{fmt_partial, gradients::gradients, AssignMode, Graph, GraphFunction, NodeId, PartialShape};
use crate::kernels::elementwise::{BinaryOp, CmpOp, ScalarOp};
use crate::op::Op;
use crate::ops::indexing::{Combine, Onto, Pick, PickRows, PutRows};
use crate::ops::{creation, introspect, TableOps};
use crate::random::{combine_seeds, Distribution};
use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::sync::Arc;

fn binary_op(name: &str) -> Option<BinaryOp> {
    Some(match name {
        "add" => BinaryOp::Add,
        "sub" => BinaryOp::Sub,
        "mul" => BinaryOp::Mul,
        "div" => BinaryOp::Div,
        "maximum" => BinaryOp::Maximum,
        "minimum" => BinaryOp::Minimum,
        "floor_divide" => BinaryOp::FloorDiv,
        "remainder" => BinaryOp::Remainder,
        _ => return None,
    })
}

fn scalar_op(name: &str) -> Option<ScalarOp> {
    Some(match name {
        "add" => ScalarOp::Add,
        "sub" => ScalarOp::Sub,
        "rsub" => ScalarOp::RSub,
        "mul" => ScalarOp::Mul,
        "div" => ScalarOp::Div,
        "rdiv" => ScalarOp::RDiv,
        "pow" => ScalarOp::Pow,
        "rpow" => ScalarOp::RPow,
        "maximum" => ScalarOp::Max,
        "minimum" => ScalarOp::Min,
        "floor_divide" => ScalarOp::FloorDiv,
        "rfloor_divide" => ScalarOp::RFloorDiv,
        "remainder" => ScalarOp::Remainder,
        "rremainder" => ScalarOp::RRemainder,
        _ => return None,
    })
}

fn cmp_op(name: &str) -> Option<CmpOp> {
    Some(match name {
        "lt" => CmpOp::Lt,
        "le" => CmpOp::Le,
        "gt" => CmpOp::Gt,
        "ge" => CmpOp::Ge,
        "eq" => CmpOp::Eq,
        "ne" => CmpOp::Ne,
        _ => return None,
    })
}

/// Builds a core op from the Python description `(kind, *args)`.
fn parse_op(kind: &str, args: &Bound<'_, PyTuple>) -> PyResult<Op> {
    let arg = |i: usize| args.get_item(i);
    let unknown = || -> PyErr {
        Error::InvalidArgument(format!("unknown graph op '{kind}' with arguments {}", repr(args.as_any()))).into()
    };
    Ok(match kind {
        "binary" => Op::Binary(binary_op(&arg(0)?.extract::<String>()?).ok_or_else(unknown)?),
        "scalar" => Op::Scalar(
            scalar_op(&arg(0)?.extract::<String>()?).ok_or_else(unknown)?,
            scalar_value(&arg(1)?)?.ok_or_else(unknown)?,
        ),
        "compare" => Op::Compare(cmp_op(&arg(0)?.extract::<String>()?).ok_or_else(unknown)?),
        "clamp" => Op::Clamp { min: arg(0)?.extract()?, max: arg(1)?.extract()? },
        "where" => Op::Where,
        "matmul" => Op::MatMul { transpose_a: arg(0)?.extract()?, transpose_b: arg(1)?.extract()? },
        "bmm" => Op::Table(TableOps::Bmm(crate::ops::bmm::Bmm)),
        "sum" => Op::Sum { dims: arg(0)?.extract()?, keepdim: arg(1)?.extract()? },
        "mean" => Op::Mean { dims: arg(0)?.extract()?, keepdim: arg(1)?.extract()? },
        "max" => Op::Extreme { largest: true, dims: arg(0)?.extract()?, keepdim: arg(1)?.extract()? },
        "min" => Op::Extreme { largest: false, dims: arg(0)?.extract()?, keepdim: arg(1)?.extract()? },
        "reshape" => Op::Reshape(arg(0)?.extract()?),
        "transpose" => Op::Transpose(arg(0)?.extract()?, arg(1)?.extract()?),
        "index" => Op::Index(arg(0)?.cast::<PyIndexItems>()?.get().items.clone()),
        "masked_select" => Op::MaskedSelect,
        "advanced_index" => {
            let pick = Pick::Key(arg(0)?.cast::<PyIndexItems>()?.get().items.clone());
            Op::Table(TableOps::PickRows(PickRows { pick }))
        }
        "index_put" => {
            let pick = Pick::Key(arg(0)?.cast::<PyIndexItems>()?.get().items.clone());
            Op::Table(TableOps::PutRows(PutRows { pick, combine: Combine::Set, onto: Onto::Copy }))
        }
        "cast" => Op::Cast(parse_dtype(&arg(0)?)?),
        "identity" => Op::Copy,
        "stop_gradient" => Op::StopGradient,
        "full_like" => Op::FullLike(arg(0)?.extract()?),
        _ => return Err(unknown()),
    })
}

/// A user Function called on graph tensors: its Python backward builds the gradient nodes.
struct PythonGraphFunction {
    name: String,
    backward: Py<PyAny>,
}

impl GraphFunction for PythonGraphFunction {
    fn name(&self) -> &str {
        &self.name
    }

    fn backward(&self, grads: Vec<NodeId>) -> Result<Vec<Option<NodeId>>> {
        Python::attach(|py| -> PyResult<Vec<Option<NodeId>>> { self.backward.bind(py).call1((grads,))?.extract() })
            .map_err(external)
    }
}

/// Another thread's undoable edit (a `gradients` call) is adding to the graph: lets
/// it go on (with the GIL released), then returns to try again; Ctrl-C stops the wait.
fn wait_for_other_edit() -> PyResult<()> {
    Python::attach(|py| {
        py.detach(|| std::thread::sleep(std::time::Duration::from_micros(200)));
        py.check_signals()
    })
}

#[pyclass(frozen, name = "GraphCore", module = "rustgrad.static")]
pub struct PyGraph {
    pub inner: Arc<RwLock<Graph>>,
}

impl PyGraph {
    pub(super) fn with<T>(&self, f: impl FnOnce(&Graph) -> Result<T>) -> PyResult<T> {
        guard(|| Ok(f(&self.inner.read())?))
    }

    /// Edits the graph; waits while another thread's undoable edit is open.
    pub(super) fn with_mut<T>(&self, f: impl FnOnce(&mut Graph) -> Result<T>) -> PyResult<T> {
        guard(|| loop {
            {
                let mut graph = self.inner.write();
                if graph.may_edit() {
                    return Ok(f(&mut graph)?);
                }
            }
            wait_for_other_edit()?;
        })
    }
}

#[pymethods]
impl PyGraph {
    #[new]
    fn new() -> PyGraph {
        PyGraph { inner: Arc::new(RwLock::new(Graph::new())) }
    }

    #[pyo3(signature = (dtype, shape, name=None))]
    fn placeholder(&self, dtype: &Bound<'_, PyAny>, shape: PartialShape, name: Option<String>) -> PyResult<NodeId> {
        let dtype = parse_dtype(dtype)?;
        self.with_mut(|g| Ok(g.placeholder(dtype, shape, name.as_deref())))
    }

    #[pyo3(signature = (array, name=None))]
    fn constant(&self, array: &Bound<'_, PyAny>, name: Option<String>) -> PyResult<NodeId> {
        let value = tensor_from_numpy(array)?;
        self.with_mut(|g| Ok(g.constant(value, name.as_deref())))
    }

    /// A random node: `kind` "normal", "uniform", "truncated_normal" (floats `a`, `b`) or
    /// "integers" (ints `low` = `a` ≤ values < `b`). `seed` is TF1's (graph seed, op seed)
    /// pair (`tf.get_seed`): with it, each session repeats the node's sequence.
    /// With `dims`, a 1-D integer node, the samples take the shape it holds at run time
    /// instead of `shape`.
    #[pyo3(signature = (kind, a, b, shape, dtype, seed=None, name=None, dims=None))]
    #[allow(clippy::too_many_arguments)]
    fn random(
        &self,
        kind: &str,
        a: &Bound<'_, PyAny>,
        b: &Bound<'_, PyAny>,
        shape: Vec<usize>,
        dtype: &Bound<'_, PyAny>,
        seed: Option<(u64, u64)>,
        name: Option<String>,
        dims: Option<NodeId>,
    ) -> PyResult<NodeId> {
        let dtype = parse_dtype(dtype)?;
        let dist = match kind {
            "normal" => Distribution::Normal { mean: a.extract()?, std: b.extract()? },
            "uniform" => Distribution::Uniform { low: a.extract()?, high: b.extract()? },
            "truncated_normal" => Distribution::TruncatedNormal { mean: a.extract()?, std: b.extract()? },
            "integers" => Distribution::Integers { low: a.extract()?, high: b.extract()? },
            other => return Err(Error::InvalidArgument(format!("unknown distribution '{other}'")).into()),
        };
        let seed = seed.map(|(graph, op)| combine_seeds(graph, op));
        if let Some(dims) = dims {
            return self.with_mut(|g| g.random_shaped(dist, dims, dtype, seed, name.as_deref()));
        }
        self.with_mut(|g| g.random(dist, shape, dtype, seed, name.as_deref()))
    }

    /// A random node: `input` with its first dim shuffled (TF's `random_shuffle`).
    #[pyo3(signature = (input, seed=None, name=None))]
    fn shuffle(&self, input: NodeId, seed: Option<(u64, u64)>, name: Option<String>) -> PyResult<NodeId> {
        let seed = seed.map(|(graph, op)| combine_seeds(graph, op));
        self.with_mut(|g| g.shuffle(input, seed, name.as_deref()))
    }

    /// TF's `Range` of three 0-d graph tensors of one dtype.
    #[pyo3(signature = (start, limit, delta, name=None))]
    fn range(&self, start: NodeId, limit: NodeId, delta: NodeId, name: Option<String>) -> PyResult<NodeId> {
        let op = Op::Table(TableOps::Range(creation::Range));
        self.with_mut(|g| g.op(op, vec![start, limit, delta], name.as_deref()))
    }

    /// TF's `Fill` of a 0-d `value` over `shape` when it is known, else over the values of the 1-D `dims`.
    #[pyo3(signature = (value, dims=None, shape=None, name=None))]
    fn fill(
        &self,
        value: NodeId,
        dims: Option<NodeId>,
        shape: Option<Vec<usize>>,
        name: Option<String>,
    ) -> PyResult<NodeId> {
        let inputs = dims.into_iter().chain([value]).collect();
        let op = Op::Table(TableOps::Fill(creation::Fill::new(shape)));
        self.with_mut(|g| g.op(op, inputs, name.as_deref()))
    }

    /// TF's `Shape` ("shape", with `out_type`), `Size` ("size", with `out_type`) or `Rank`
    /// ("rank") of `input`: values read from the tensor a run gives.
    #[pyo3(signature = (kind, input, out_type=None, name=None))]
    fn introspect(
        &self,
        kind: &str,
        input: NodeId,
        out_type: Option<&Bound<'_, PyAny>>,
        name: Option<String>,
    ) -> PyResult<NodeId> {
        let out = out_type.map(parse_dtype).transpose()?.unwrap_or(DType::I32);
        let op = match kind {
            "shape" => TableOps::ShapeOf(introspect::ShapeOf::new(out)?),
            "size" => TableOps::SizeOf(introspect::SizeOf::new(out)?),
            "rank" => TableOps::RankOf(introspect::RankOf),
            other => return Err(Error::InvalidArgument(format!("unknown introspection op '{other}'")).into()),
        };
        self.with_mut(|g| g.op(Op::Table(op), vec![input], name.as_deref()))
    }

    /// TF's `Reshape` of `input` to the shape the 1-D integer node `dims` holds at run time.
    #[pyo3(signature = (input, dims, name=None))]
    fn reshape_to(&self, input: NodeId, dims: NodeId, name: Option<String>) -> PyResult<NodeId> {
        let op = Op::Table(TableOps::ReshapeTo(introspect::ReshapeTo));
        self.with_mut(|g| g.op(op, vec![input, dims], name.as_deref()))
    }

    #[pyo3(signature = (dtype, shape, name=None))]
    fn variable(&self, dtype: &Bound<'_, PyAny>, shape: Vec<usize>, name: Option<String>) -> PyResult<(usize, NodeId)> {
        let dtype = parse_dtype(dtype)?;
        self.with_mut(|g| Ok(g.variable(dtype, shape, name.as_deref())))
    }

    #[pyo3(signature = (kind, args, inputs, name=None))]
    fn op(&self, kind: &str, args: &Bound<'_, PyTuple>, inputs: Vec<NodeId>, name: Option<String>) -> PyResult<NodeId> {
        let op = parse_op(kind, args)?;
        self.with_mut(|g| g.op(op, inputs, name.as_deref()))
    }

    /// Adds a node applying an op of the table to `inputs`, with its other arguments `args`.
    /// `numbers[i]` is the Python number input i was made from (its constant node is in
    /// `inputs`): the op may take a cheaper form for it (`tf.pow(x, 2.0)` is a scalar op).
    #[pyo3(signature = (spec, inputs, name=None, args=None, numbers=None))]
    fn apply(
        &self,
        spec: &PyOpSpec,
        inputs: Vec<NodeId>,
        name: Option<String>,
        args: Option<&Bound<'_, PyTuple>>,
        numbers: Option<Vec<Option<Bound<'_, PyAny>>>>,
    ) -> PyResult<NodeId> {
        let params: Vec<Bound<'_, PyAny>> = args.map(|a| a.iter().collect()).unwrap_or_default();
        let op = spec.op(&params, Front::Tf)?;
        // Each number already became a constant of its tensor's dtype, so its Python kind fits that dtype.
        let numbers: Option<Vec<Option<crate::dtype::Scalar>>> = numbers
            .map(|ns| {
                ns.iter()
                    .map(|n| n.as_ref().map(super::convert::scalar_value).transpose().map(Option::flatten))
                    .collect()
            })
            .transpose()?;
        let (op, inputs) = match numbers.as_deref().and_then(|numbers| op.with_numbers(numbers)) {
            Some((cheaper, keep)) => (cheaper, keep.iter().filter_map(|&i| inputs.get(i).copied()).collect()),
            None => (op, inputs),
        };
        self.with_mut(|g| g.op(op, inputs, name.as_deref()))
    }

    #[pyo3(signature = (var, mode, value, name=None, use_locking=false))]
    fn assign(
        &self,
        var: usize,
        mode: &str,
        value: NodeId,
        name: Option<String>,
        use_locking: bool,
    ) -> PyResult<NodeId> {
        let mode = match mode {
            "add" => AssignMode::Add,
            "sub" => AssignMode::Sub,
            _ => AssignMode::Set,
        };
        self.with_mut(|g| g.assign(var, mode, use_locking, value, name.as_deref()))
    }

    /// TF1's `ApplyAdam` of the variables `var`, `m`, `v`; `scalars` are the nodes of
    /// beta1_power, beta2_power, lr, beta1, beta2 and epsilon, in that order.
    #[pyo3(signature = (var, m, v, scalars, grad, name=None, use_locking=false))]
    #[allow(clippy::too_many_arguments)]
    fn apply_adam(
        &self,
        var: usize,
        m: usize,
        v: usize,
        scalars: [NodeId; 6],
        grad: NodeId,
        name: Option<String>,
        use_locking: bool,
    ) -> PyResult<NodeId> {
        let vars = crate::graph::apply_adam::AdamVars { var, m, v };
        self.with_mut(|g| g.apply_adam(vars, scalars, grad, use_locking, name.as_deref()))
    }

    /// Begins an undoable edit by this thread (they nest); waits while another
    /// thread's is open. Other threads' edits of the graph wait until it ends.
    fn begin_edit(&self) -> PyResult<()> {
        guard(|| loop {
            if self.inner.write().begin_edit() {
                return Ok(());
            }
            wait_for_other_edit()?;
        })
    }

    /// Ends this thread's innermost edit; with `undo`, removes every node,
    /// variable and name it added.
    fn end_edit(&self, undo: bool) -> PyResult<()> {
        guard(|| Ok(self.inner.write().end_edit(undo)?))
    }

    #[pyo3(signature = (inputs, name=None))]
    fn group(&self, inputs: Vec<NodeId>, name: Option<String>) -> PyResult<NodeId> {
        self.with_mut(|g| g.group(inputs, name.as_deref()))
    }

    fn function_call(
        &self,
        name: String,
        backward: Py<PyAny>,
        outputs: Vec<NodeId>,
        inputs: Vec<NodeId>,
    ) -> PyResult<(NodeId, Vec<NodeId>)> {
        let function = Arc::new(PythonGraphFunction { name, backward });
        self.with_mut(|g| g.function_call(function, &outputs, &inputs))
    }

    /// Symbolic gradients; the graph lock is not held while a user Function's backward runs.
    #[pyo3(signature = (ys, xs, grad_ys, stops=Vec::new()))]
    fn gradients(
        &self,
        ys: Vec<NodeId>,
        xs: Vec<NodeId>,
        grad_ys: Vec<Option<NodeId>>,
        stops: Vec<NodeId>,
    ) -> PyResult<Vec<Option<NodeId>>> {
        guard(|| Ok(gradients(&self.inner, &ys, &xs, &grad_ys, &stops)?))
    }

    fn num_nodes(&self) -> usize {
        self.inner.read().nodes.len()
    }

    fn node_name(&self, id: NodeId) -> PyResult<String> {
        self.with(|g| Ok(g.node(id)?.name.clone()))
    }

    fn node_type(&self, id: NodeId) -> PyResult<String> {
        self.with(|g| {
            let node = g.node(id)?;
            Ok(node.kind.type_name(&node.shape))
        })
    }

    fn node_dtype(&self, py: Python<'_>, id: NodeId) -> PyResult<Py<PyDType>> {
        let dtype = self.with(|g| Ok(g.node(id)?.dtype))?;
        dtype_object(py, dtype)
    }

    fn node_shape(&self, id: NodeId) -> PyResult<PartialShape> {
        self.with(|g| Ok(g.node(id)?.shape.clone()))
    }

    fn node_shape_str(&self, id: NodeId) -> PyResult<String> {
        self.with(|g| Ok(fmt_partial(&g.node(id)?.shape)))
    }

    fn node_inputs(&self, id: NodeId) -> PyResult<Vec<NodeId>> {
        self.with(|g| Ok(g.node(id)?.inputs.clone()))
    }

    fn node_control_inputs(&self, id: NodeId) -> PyResult<Vec<NodeId>> {
        self.with(|g| Ok(g.node(id)?.control_inputs.clone()))
    }

    /// Opens a `control_dependencies` block of the calling thread (`None` clears the outer ones).
    #[pyo3(signature = (controls))]
    fn push_control_frame(&self, controls: Option<Vec<NodeId>>) -> PyResult<usize> {
        self.with_mut(|g| g.push_control_frame(controls))
    }

    /// Closes the calling thread's innermost `control_dependencies` block.
    fn pop_control_frame(&self) -> PyResult<()> {
        self.with_mut(|g| g.pop_control_frame())
    }

    fn node_has_value(&self, id: NodeId) -> PyResult<bool> {
        self.with(|g| Ok(g.node(id)?.kind.has_value()))
    }

    /// The variable an assign node writes (or a read node reads), if any.
    fn node_variable(&self, id: NodeId) -> PyResult<Option<usize>> {
        self.with(|g| {
            Ok(match g.node(id)?.kind {
                crate::graph::NodeKind::Assign { var, .. } | crate::graph::NodeKind::VariableRead(var) => Some(var),
                crate::graph::NodeKind::ApplyAdam { vars, .. } => Some(vars.var),
                _ => None,
            })
        })
    }

    fn node_is_custom(&self, id: NodeId) -> PyResult<bool> {
        self.with(|g| Ok(matches!(g.node(id)?.kind, crate::graph::NodeKind::FunctionCall { .. })))
    }

    fn variable_info(&self, var: usize) -> PyResult<(String, NodeId, Vec<usize>)> {
        self.with(|g| {
            let v = g.variables.get(var).ok_or_else(|| Error::InvalidArgument(format!("no variable {var}")))?;
            Ok((v.name.clone(), v.read_node, v.shape.clone()))
        })
    }

    /// The calling thread's name scope (`""` at the root).
    fn name_scope(&self) -> String {
        self.inner.read().name_scope().to_string()
    }

    fn set_name_scope(&self, scope: &str) -> PyResult<()> {
        self.with_mut(|g| {
            g.set_name_scope(scope);
            Ok(())
        })
    }

    /// `name` under the calling thread's name scope, made unique as TF's `Graph.unique_name`.
    #[pyo3(signature = (name, mark_as_used=true))]
    fn unique_name(&self, name: &str, mark_as_used: bool) -> PyResult<String> {
        self.with_mut(|g| Ok(g.unique_name(name, mark_as_used)))
    }

    fn num_variables(&self) -> usize {
        self.inner.read().variables.len()
    }
}

#[pyclass(frozen, name = "SessionCore", module = "rustgrad.static")]
pub struct PySession {
    inner: Session,
}

#[pymethods]
impl PySession {
    #[new]
    fn new(graph: &Bound<'_, PyGraph>) -> PySession {
        PySession { inner: Session::new(graph.get().inner.clone()) }
    }

    /// Runs the fetches with the given feeds (numpy arrays already cast to each
    /// placeholder's dtype). Returns one numpy array (or None) per fetch. With
    /// `trace` (a list), appends `(node name, op, seconds)` for every node run; with
    /// `memory` (a list) too, appends `(step, node name, op, stored, released)` for every
    /// step: `stored` lists the `(step, bytes, buffer)` of the values the step allocated, and
    /// `released` the steps whose values are freed after it.
    #[pyo3(signature = (fetches, feeds, values, trace=None, memory=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        fetches: Vec<NodeId>,
        feeds: Vec<NodeId>,
        values: Vec<Bound<'py, PyAny>>,
        trace: Option<Bound<'py, PyList>>,
        memory: Option<Bound<'py, PyList>>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.inner.check_open()?;
        // Feeds already have the placeholder's dtype (the Python side casts them): share their memory.
        let feed_tensors = values
            .iter()
            .map(|v| share_from_numpy(v)?.map_or_else(|| tensor_from_numpy(v), Ok))
            .collect::<PyResult<Vec<_>>>()?;
        let mut timings = Vec::new();
        let tracing = trace.is_some() || memory.is_some();
        let _ctrl_c = crate::interrupt::Armed::on_main_thread();
        let fetched = guard(|| {
            Ok(py.detach(|| {
                let mut check = super::autograd::signal_checker();
                let hooks = RunHooks { between_steps: &mut check, trace: tracing.then_some(&mut timings) };
                self.inner.run(&fetches, &feeds, feed_tensors, hooks)
            })?)
        })?;
        if let Some(list) = &trace {
            for record in &timings {
                list.append((&record.name, &record.kind, record.seconds))?;
            }
        }
        if let Some(list) = &memory {
            for record in timings {
                list.append((record.step, record.name, record.kind, record.stored, record.released))?;
            }
        }
        let out = PyList::empty(py);
        for value in fetched {
            match value {
                // A value computed by this run and held by nothing else is handed over without a
                // copy; variables, constants and feeds are copied so the caller owns the result.
                Some(t) if t.is_uniquely_owned() && !t.is_external() => {
                    let holder = Bound::new(py, PyTensor::wrap(t))?;
                    let shared = share_to_numpy(py, &holder.get().inner, holder.clone().into_any())?;
                    out.append(shared)?
                }
                Some(t) => out.append(tensor_to_numpy(py, &t)?)?,
                None => out.append(py.None())?,
            }
        }
        Ok(out)
    }

    fn close(&self) {
        self.inner.close();
    }

    /// How many compiled plans the session holds (at most `plan_cache_capacity`).
    fn plan_cache_size(&self) -> usize {
        self.inner.cached_plans()
    }

    /// How many compiled plans a session keeps; the least recently used goes first.
    #[classattr]
    fn plan_cache_capacity() -> usize {
        PLAN_CACHE_CAPACITY
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    fn variable_value<'py>(&self, py: Python<'py>, var: usize) -> PyResult<Option<Bound<'py, PyAny>>> {
        let value = self.inner.variable_value(var)?;
        value.map(|t| tensor_to_numpy(py, &t)).transpose()
    }

    fn set_variable_value(&self, var: usize, array: &Bound<'_, PyAny>) -> PyResult<()> {
        Ok(self.inner.set_variable_value(var, tensor_from_numpy(array)?)?)
    }
}
