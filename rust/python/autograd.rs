//! Autograd entry points: backward, grad, grad mode, anomaly mode, graph
//! nodes as Python objects, and user-defined Functions.

use super::convert::{flag, opt_arg, repr, type_name};
use super::errors::{argument_type_error, external, guard};
use super::tensor::PyTensor;
use crate::autograd::engine::{self, BackwardOptions};
use crate::autograd::grad_mode;
use crate::autograd::node::{Edge, Node};
use crate::autograd::record;
use crate::error::{Error, Result};
use crate::op::CustomBackward;
use crate::shape::fmt_shape;
use crate::tensor::Tensor;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

static DETECT_ANOMALY: AtomicBool = AtomicBool::new(false);

/// How often a long reverse pass looks for Ctrl-C.
const SIGNAL_CHECK_INTERVAL: Duration = Duration::from_millis(20);

/// A closure for the engine that raises KeyboardInterrupt (or whatever a signal
/// handler raised) between nodes, checked at most every 20 ms.
pub fn signal_checker() -> impl FnMut() -> Result<()> {
    let mut last = Instant::now();
    move || {
        if last.elapsed() < SIGNAL_CHECK_INTERVAL {
            return Ok(());
        }
        last = Instant::now();
        Python::attach(|py| py.check_signals()).map_err(external)
    }
}

fn default_grad(output: &Tensor) -> Result<Tensor> {
    if output.numel() != 1 {
        return Err(Error::Gradient(format!(
            "grad can be implicitly created only for scalar outputs (got a tensor of shape {}); pass \
             gradient= with the same shape",
            fmt_shape(output.shape())
        )));
    }
    Tensor::full(output.shape(), 1.0, output.dtype())
}

fn roots(outputs: Vec<Tensor>, grads: Vec<Option<Tensor>>) -> Result<Vec<(Tensor, Tensor)>> {
    outputs
        .into_iter()
        .zip(grads)
        .map(|(out, g)| {
            let g = match g {
                None => default_grad(&out)?,
                Some(g) if g.shape() != out.shape() => {
                    return Err(Error::Shape(format!(
                        "Mismatch in shape: grad_output[0] has a shape of {} and output[0] has a shape of {}",
                        fmt_shape(g.shape()),
                        fmt_shape(out.shape())
                    )))
                }
                Some(g) => g,
            };
            Ok((out, g))
        })
        .collect()
}

/// torch's warning for `backward(create_graph=True)`: `.grad` then holds a graph that
/// reaches the parameter itself.
fn warn_create_graph_cycle(py: Python<'_>) -> PyResult<()> {
    let message = c"Using backward() with create_graph=True will create a reference cycle between the parameter and \
its gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid this. \
If you have to use this function, make sure to reset the .grad fields of your parameters to None after use to break \
the cycle and avoid the leak.";
    PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyUserWarning>(), message, 1)
}

/// `Tensor.backward`: the reverse pass with the GIL released (hooks and callbacks take it back).
/// `retain_graph` None means `create_graph` (torch's default).
pub fn run_backward_py(
    py: Python<'_>,
    outputs: Vec<Tensor>,
    grads: Vec<Option<Tensor>>,
    retain_graph: Option<bool>,
    create_graph: bool,
) -> PyResult<()> {
    if create_graph {
        warn_create_graph_cycle(py)?;
    }
    let retain_graph = retain_graph.unwrap_or(create_graph);
    guard(|| {
        let roots = roots(outputs, grads)?;
        let anomaly = DETECT_ANOMALY.load(Ordering::Relaxed);
        let _ctrl_c = crate::interrupt::Armed::on_main_thread();
        Ok(py.detach(|| {
            let mut check = signal_checker();
            let options =
                BackwardOptions { retain_graph, create_graph, between_nodes: &mut check, detect_anomaly: anomaly };
            engine::backward(&roots, options)
        })?)
    })
}

/// A Tensor or a sequence of them (`op`'s argument `name`).
fn tensors(seq: &Bound<'_, PyAny>, op: &str, name: &str) -> PyResult<Vec<Tensor>> {
    Ok(optional_tensors(Some(seq), 1, op, name)?.into_iter().flatten().collect())
}

/// A Tensor, or a sequence of Tensors and Nones (`op`'s argument `name`); None gives `n` Nones.
fn optional_tensors(seq: Option<&Bound<'_, PyAny>>, n: usize, op: &str, name: &str) -> PyResult<Vec<Option<Tensor>>> {
    let not_tensors = |obj: &Bound<'_, PyAny>| {
        argument_type_error(format!(
            "{op}: argument '{name}' must be a Tensor or a sequence of Tensors, got {}",
            type_name(obj)
        ))
    };
    match seq {
        None => Ok(vec![None; n]),
        Some(s) if s.is_none() => Ok(vec![None; n]),
        Some(s) if s.cast::<PyTensor>().is_ok() => Ok(vec![Some(s.cast::<PyTensor>()?.get().inner.clone())]),
        Some(s) => s
            .try_iter()
            .map_err(|_| not_tensors(s))?
            .map(|item| {
                let item = item?;
                if item.is_none() {
                    Ok(None)
                } else {
                    Ok(Some(item.cast::<PyTensor>().map_err(|_| not_tensors(&item))?.get().inner.clone()))
                }
            })
            .collect(),
    }
}

/// `rustgrad.autograd.backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False)`.
#[pyfunction]
#[pyo3(
    signature = (tensors, grad_tensors=None, retain_graph=None, create_graph=None),
    text_signature = "(tensors, grad_tensors=None, retain_graph=None, create_graph=False)"
)]
pub fn backward(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    grad_tensors: Option<&Bound<'_, PyAny>>,
    retain_graph: Option<&Bound<'_, PyAny>>,
    create_graph: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let retain_graph = opt_arg::<bool>(retain_graph, "backward", "retain_graph")?;
    let create_graph = flag(create_graph, false, "backward", "create_graph")?;
    let outs = self::tensors(tensors, "backward", "tensors")?;
    let grads = optional_tensors(grad_tensors, outs.len(), "backward", "grad_tensors")?;
    run_backward_py(py, outs, grads, retain_graph, create_graph)
}

/// `rustgrad.autograd.grad`: gradients of outputs with respect to inputs, leaving `.grad` alone.
#[pyfunction]
#[pyo3(
    signature = (outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=None, allow_unused=None),
    text_signature = "(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False)"
)]
pub fn grad<'py>(
    py: Python<'py>,
    outputs: &Bound<'py, PyAny>,
    inputs: &Bound<'py, PyAny>,
    grad_outputs: Option<&Bound<'py, PyAny>>,
    retain_graph: Option<&Bound<'py, PyAny>>,
    create_graph: Option<&Bound<'py, PyAny>>,
    allow_unused: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let create_graph = flag(create_graph, false, "grad", "create_graph")?;
    // torch: retain_graph defaults to create_graph.
    let retain_graph = opt_arg::<bool>(retain_graph, "grad", "retain_graph")?.unwrap_or(create_graph);
    let allow_unused = flag(allow_unused, false, "grad", "allow_unused")?;
    let outs = tensors(outputs, "grad", "outputs")?;
    let ins = tensors(inputs, "grad", "inputs")?;
    for (i, t) in ins.iter().enumerate() {
        if !t.requires_grad() {
            return Err(Error::Gradient(format!(
                "One of the differentiated Tensors (input {i}) does not require grad"
            ))
            .into());
        }
    }
    let grads = optional_tensors(grad_outputs, outs.len(), "grad", "grad_outputs")?;
    let captured = guard(|| {
        let roots = roots(outs, grads)?;
        let anomaly = DETECT_ANOMALY.load(Ordering::Relaxed);
        let _ctrl_c = crate::interrupt::Armed::on_main_thread();
        Ok(py.detach(|| {
            let mut check = signal_checker();
            let options =
                BackwardOptions { retain_graph, create_graph, between_nodes: &mut check, detect_anomaly: anomaly };
            engine::grad(&roots, &ins, options)
        })?)
    })?;
    let mut out = Vec::with_capacity(captured.len());
    for (i, g) in captured.into_iter().enumerate() {
        match g {
            Some(g) => out.push(Py::new(py, PyTensor::wrap(g))?.into_any()),
            None if allow_unused => out.push(py.None()),
            None => {
                return Err(Error::Gradient(format!(
                    "One of the differentiated Tensors (input {i}) appears to not have been used in the graph. \
                     Set allow_unused=True if this is the desired behavior."
                ))
                .into())
            }
        }
    }
    PyTuple::new(py, out)
}

/// The work of `FunctionCtx.save_for_backward` for tensors and Nones: detached
/// aliases (sharing data and version counter, not history) and their versions.
/// Returns None when an item is neither, for the Python side to handle.
#[pyfunction]
pub fn _save_tensors<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyTuple>,
) -> PyResult<Option<(Bound<'py, PyTuple>, Bound<'py, PyTuple>)>> {
    let mut saved: Vec<Bound<'py, PyAny>> = Vec::with_capacity(items.len());
    let mut versions: Vec<Bound<'py, PyAny>> = Vec::with_capacity(items.len());
    for item in items.iter() {
        if item.is_none() {
            saved.push(item.clone());
            versions.push(item);
        } else if let Ok(t) = item.cast::<PyTensor>() {
            let t = &t.get().inner;
            versions.push(t.version().into_pyobject(py)?.into_any());
            saved.push(Bound::new(py, PyTensor::wrap(t.alias()))?.into_any());
        } else {
            return Ok(None);
        }
    }
    Ok(Some((PyTuple::new(py, saved)?, PyTuple::new(py, versions)?)))
}

/// An alias of `tensor` (same data and version counter) that is output `output_nr` of
/// `node`: a Function's saved output as its backward sees it under `create_graph`.
#[pyfunction]
pub fn _with_history(tensor: &Bound<'_, PyTensor>, node: &Bound<'_, PyNode>, output_nr: usize) -> PyTensor {
    let alias = tensor.get().inner.alias();
    alias.set_history(Some(node.get().inner.clone()), output_nr);
    PyTensor::wrap(alias)
}

/// The first saved tensor modified in place since it was saved (its index), if any.
#[pyfunction]
pub fn _first_changed(saved: &Bound<'_, PyTuple>, versions: &Bound<'_, PyTuple>) -> PyResult<Option<usize>> {
    for (i, (t, version)) in saved.iter().zip(versions.iter()).enumerate() {
        if let Ok(t) = t.cast::<PyTensor>() {
            if version.extract::<u64>()? != t.get().inner.version() {
                return Ok(Some(i));
            }
        } else if !t.is_none() && t.getattr("_version")?.ne(&version)? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

#[pyfunction]
pub fn is_grad_enabled() -> bool {
    grad_mode::is_enabled()
}

#[pyfunction]
pub fn _set_grad_enabled(enabled: bool) {
    grad_mode::set_enabled(enabled);
}

#[pyfunction]
pub fn _set_detect_anomaly(enabled: bool) {
    DETECT_ANOMALY.store(enabled, Ordering::Relaxed);
}

#[pyfunction]
pub fn is_anomaly_enabled() -> bool {
    DETECT_ANOMALY.load(Ordering::Relaxed)
}

/// A node of the backward graph, as `tensor.grad_fn`.
#[pyclass(frozen, name = "Node", module = "rustgrad.autograd")]
pub struct PyNode {
    inner: Arc<Node>,
}

impl PyNode {
    pub fn wrap(inner: Arc<Node>) -> PyNode {
        PyNode { inner }
    }
}

/// The sink of a leaf's gradient, as `AccumulateGrad` in PyTorch.
#[pyclass(frozen, name = "AccumulateGrad", module = "rustgrad.autograd")]
pub struct PyAccumulateGrad {
    variable: Tensor,
}

#[pymethods]
impl PyAccumulateGrad {
    #[getter]
    fn variable(&self) -> PyTensor {
        PyTensor::wrap(self.variable.clone())
    }

    fn name(&self) -> &'static str {
        "AccumulateGrad"
    }

    fn __repr__(&self) -> &'static str {
        "<AccumulateGrad>"
    }

    /// Two sinks are equal when they feed the same leaf tensor.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyAccumulateGrad>().is_ok_and(|o| o.get().variable.same_tensor(&self.variable))
    }

    fn __hash__(&self) -> isize {
        self.variable.id() as isize
    }
}

#[pymethods]
impl PyNode {
    fn name(&self) -> String {
        self.inner.name()
    }

    /// The op that produced the tensor (`mm`, `add`, or a Function's class name).
    #[getter]
    fn op_name(&self) -> String {
        self.inner.op.name()
    }

    #[getter]
    fn is_custom(&self) -> bool {
        matches!(self.inner.op, crate::op::Op::Custom(_))
    }

    /// Output shapes of the forward op.
    #[getter]
    fn output_shapes(&self) -> Vec<Vec<usize>> {
        self.inner.output_meta.iter().map(|(s, _)| s.to_vec()).collect()
    }

    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items = self
            .inner
            .next
            .iter()
            .map(|edge| -> PyResult<Bound<'py, PyTuple>> {
                match edge {
                    Some(Edge::Node(node, i)) => PyTuple::new(
                        py,
                        [Py::new(py, PyNode::wrap(node.clone()))?.into_any(), i.into_pyobject(py)?.into_any().unbind()],
                    ),
                    Some(Edge::Leaf(t)) => PyTuple::new(
                        py,
                        [
                            Py::new(py, PyAccumulateGrad { variable: t.clone() })?.into_any(),
                            0usize.into_pyobject(py)?.into_any().unbind(),
                        ],
                    ),
                    None => PyTuple::new(py, [py.None(), 0usize.into_pyobject(py)?.into_any().unbind()]),
                }
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }

    fn __repr__(&self) -> String {
        format!("<{} object>", self.inner.name())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyNode>().is_ok_and(|o| Arc::ptr_eq(&o.get().inner, &self.inner))
    }

    fn __hash__(&self) -> isize {
        Arc::as_ptr(&self.inner) as isize
    }
}

/// A Python `autograd.Function` on the tape: calls the user's `backward(ctx, *grads)`.
struct PythonFunction {
    name: String,
    backward: Py<PyAny>,
    ctx: Py<PyAny>,
    /// For each forward argument, its index among the tensor inputs (None for non-tensors).
    tensor_slots: Vec<Option<usize>>,
}

impl PythonFunction {
    fn call(&self, py: Python<'_>, grads: Vec<Tensor>) -> PyResult<Vec<Option<Tensor>>> {
        let mut args: Vec<Py<PyAny>> = vec![self.ctx.clone_ref(py)];
        for g in grads {
            args.push(Py::new(py, PyTensor::wrap(g))?.into_any());
        }
        let returned = self.backward.bind(py).call1(PyTuple::new(py, args)?)?;
        let values: Vec<Bound<'_, PyAny>> = match returned.cast::<PyTuple>() {
            Ok(t) => t.iter().collect(),
            Err(_) => vec![returned],
        };
        let backward_name = format!("{}Backward", self.name);
        if values.len() != self.tensor_slots.len() {
            return Err(Error::Gradient(format!(
                "function {backward_name} returned an incorrect number of gradients (expected {}, got {})",
                self.tensor_slots.len(),
                values.len()
            ))
            .into());
        }
        let n_tensors = self.tensor_slots.iter().flatten().count();
        let mut out = vec![None; n_tensors];
        for (position, (value, slot)) in values.iter().zip(&self.tensor_slots).enumerate() {
            if value.is_none() {
                continue;
            }
            let Some(slot) = slot else {
                return Err(Error::Gradient(format!(
                    "function {backward_name} returned a gradient different than None at position {} \
                     (a non-tensor argument); return None there",
                    position + 1
                ))
                .into());
            };
            let grad = value.cast::<PyTensor>().map_err(|_| {
                Error::Gradient(format!(
                    "function {backward_name} returned {} at position {}, but gradients must be Tensors or None",
                    repr(value),
                    position + 1
                ))
            })?;
            out[*slot] = Some(grad.get().inner.clone());
        }
        Ok(out)
    }
}

impl CustomBackward for PythonFunction {
    fn name(&self) -> &str {
        &self.name
    }

    fn backward(&self, grads: Vec<Tensor>) -> Result<Vec<Option<Tensor>>> {
        Python::attach(|py| self.call(py, grads)).map_err(external)
    }

    /// Lends the ctx this node (as `ctx._node`) for the call, so that `ctx.saved_tensors`
    /// can give the saved outputs their history. Only for the call: kept, it would make a
    /// cycle node -> function -> ctx -> node that Python's GC cannot see.
    fn backward_recorded(&self, grads: Vec<Tensor>, node: &Arc<Node>) -> Result<Vec<Option<Tensor>>> {
        Python::attach(|py| {
            let ctx = self.ctx.bind(py);
            ctx.setattr(intern!(py, "_node"), Py::new(py, PyNode::wrap(node.clone()))?)?;
            let result = self.call(py, grads);
            let lent_back = ctx.setattr(intern!(py, "_node"), py.None());
            let grads = result?;
            lent_back?;
            Ok(grads)
        })
        .map_err(external)
    }

    fn release(&self) {
        Python::attach(|py| {
            // Errors here would only come from a user overriding _release; nothing to undo.
            let _ = self.ctx.bind(py).call_method0("_release");
        });
    }
}

/// The eager part of `Function.apply`: makes the ctx, runs `cls.forward(ctx,
/// *args)` with grad mode off, and records the call when an input needs a
/// gradient. Returns `graph_path` (a marker object) when an argument is a graph
/// tensor (`graph_value`), whose static path the Python side takes.
#[pyfunction]
pub fn _apply_function<'py>(
    py: Python<'py>,
    cls: &Bound<'py, PyAny>,
    ctx_class: &Bound<'py, PyAny>,
    graph_value: &Bound<'py, PyAny>,
    graph_path: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut needs: smallvec::SmallVec<[bool; 4]> = smallvec::SmallVec::with_capacity(args.len());
    for arg in args.iter() {
        if let Ok(t) = arg.cast::<PyTensor>() {
            needs.push(t.get().inner.requires_grad());
        } else if arg.is_instance(graph_value)? {
            return Ok(graph_path.clone());
        } else {
            needs.push(false);
        }
    }
    let ctx = ctx_class.call0()?;
    ctx.setattr(intern!(py, "needs_input_grad"), PyTuple::new(py, &needs)?)?;
    let mut forward_args = Vec::with_capacity(args.len() + 1);
    forward_args.push(ctx.clone());
    forward_args.extend(args.iter());
    let recording = grad_mode::is_enabled();
    let result = {
        let _off = grad_mode::GradModeGuard::new(false);
        cls.getattr(intern!(py, "forward"))?.call1(PyTuple::new(py, forward_args)?)?
    };
    if !(recording && needs.contains(&true)) {
        return Ok(result);
    }
    let single = !result.is_instance_of::<PyTuple>();
    let outputs = if single { PyTuple::new(py, [&result])? } else { result.cast_into::<PyTuple>()? };
    let marked = ctx.getattr(intern!(py, "_non_differentiable"))?;
    let marked: Vec<Bound<'py, PyAny>> = marked.try_iter()?.collect::<PyResult<_>>()?;
    let non_differentiable = outputs.iter().map(|o| marked.iter().any(|m| m.is(&o))).collect();
    let name: String = cls.getattr(intern!(py, "__name__"))?.extract()?;
    let backward = cls.getattr(intern!(py, "backward"))?.unbind();
    note_saved_outputs(py, &ctx, &outputs)?;
    let recorded = record_function(py, name, backward, ctx.unbind(), args, &outputs, non_differentiable)?;
    if single {
        recorded.get_item(0)
    } else {
        Ok(recorded.into_any())
    }
}

/// Which of the tensors forward saved (`ctx._saved_sources`) are which of its outputs, as
/// `ctx._saved_output_index` (None for the others): under `create_graph`,
/// `ctx.saved_tensors` gives those the history of this call's node.
fn note_saved_outputs(py: Python<'_>, ctx: &Bound<'_, PyAny>, outputs: &Bound<'_, PyTuple>) -> PyResult<()> {
    let sources = ctx.getattr(intern!(py, "_saved_sources"))?;
    if sources.len()? == 0 {
        return Ok(());
    }
    let index = sources
        .try_iter()?
        .map(|s| {
            let s = s?;
            Ok(outputs.iter().position(|o| o.is(&s)))
        })
        .collect::<PyResult<Vec<Option<usize>>>>()?;
    ctx.setattr(intern!(py, "_saved_output_index"), PyTuple::new(py, index)?)
}

/// Puts a user Function's call on the tape. `outputs` are what its forward
/// returned; the caller gets aliases of them (same data and version counter),
/// which carry the new history. `non_differentiable[i]` marks outputs
/// given to `ctx.mark_non_differentiable`. Returns the outputs to hand the user.
fn record_function<'py>(
    py: Python<'py>,
    name: String,
    backward: Py<PyAny>,
    ctx: Py<PyAny>,
    args: &Bound<'py, PyTuple>,
    outputs: &Bound<'py, PyTuple>,
    non_differentiable: Vec<bool>,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut inputs = Vec::new();
    let mut tensor_slots = Vec::new();
    for arg in args.iter() {
        match arg.cast::<PyTensor>() {
            Ok(t) => {
                tensor_slots.push(Some(inputs.len()));
                inputs.push(t.get().inner.clone());
            }
            Err(_) => tensor_slots.push(None),
        }
    }
    let mut out_tensors = Vec::new();
    let mut out_objects: Vec<Py<PyAny>> = Vec::new();
    let mut differentiable = Vec::new();
    for (position, out) in outputs.iter().enumerate() {
        let t = out.cast::<PyTensor>().map_err(|_| {
            Error::InvalidArgument(format!(
                "{name}.forward must return Tensors (or a tuple of them), got {}",
                repr(&out)
            ))
        })?;
        let is_non_diff = non_differentiable.get(position).copied().unwrap_or(false);
        // The history goes on an alias handed to the caller, never on the tensor forward
        // returned: forward may keep that one (`ctx.out = out`), and with the history it
        // would make a cycle out -> node -> ctx -> out through Rust, which Python's GC
        // cannot see, leaking every output. An input returned unchanged keeps its own history.
        let fresh = t.get().inner.alias();
        differentiable.push(!is_non_diff);
        out_objects.push(Py::new(py, PyTensor::wrap(fresh.clone()))?.into_any());
        out_tensors.push(fresh);
    }
    let function = Arc::new(PythonFunction { name, backward, ctx, tensor_slots });
    record::record_custom(function, &inputs, &out_tensors, &differentiable);
    PyTuple::new(py, out_objects)
}
