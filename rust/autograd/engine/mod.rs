//! The reverse pass: one topological order over the nodes reachable from the
//! roots, walked once, deeper nodes first. Leaf gradients are summed on the side;
//! a leaf's gradient is final once every edge into it has been walked. A leaf
//! with post-accumulate hooks then gets its `.grad` written and its hooks run
//! right away, so that data-parallel training can start reducing it while the
//! rest of the pass runs (as in torch). Every other leaf is written only when
//! the whole pass has succeeded, so a failed backward leaves its `.grad` alone.

mod node_rule;

pub use node_rule::EagerValue;

use super::grad_mode::GradModeGuard;
use super::hooks;
use super::id_map::IdMap;
use super::node::{Edge, Node};
use super::record;
use crate::error::{grad_err, Result};
use crate::forward;
use crate::kernels::elementwise::BinaryOp;
use crate::op::Op;
use crate::tensor::Tensor;
use node_rule::run_node;
use std::collections::BinaryHeap;
use std::sync::Arc;

/// Options of one reverse pass.
pub struct BackwardOptions<'a> {
    pub retain_graph: bool,
    /// Record the pass itself (grad mode on, as torch), so that its gradients can be
    /// differentiated again. Off, the pass evaluates and records nothing.
    pub create_graph: bool,
    /// Called between nodes; an error (e.g. Ctrl-C) stops the pass with nothing changed.
    pub between_nodes: &'a mut dyn FnMut() -> Result<()>,
    /// With anomaly detection on, a NaN produced by a node stops the pass and names it.
    pub detect_anomaly: bool,
}

/// Max-heap entry: among nodes whose gradients are complete, the deepest (highest
/// `sequence`) comes out first.
struct Ready(u64, Arc<Node>);

impl PartialEq for Ready {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ready {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

fn accumulate(slot: &mut Option<Tensor>, grad: Tensor, create_graph: bool) -> Result<()> {
    *slot = Some(match slot.take() {
        None => grad,
        Some(previous) if create_graph => record::apply(Op::Binary(BinaryOp::Add), &[&previous, &grad])?,
        Some(previous) => {
            let sum = forward::binary(BinaryOp::Add, &previous, &grad)?;
            crate::compile::add_grads(&previous, &grad, &sum);
            sum
        }
    });
    Ok(())
}

/// Every node reachable from the roots, and how many reachable edges point at
/// each node and at each leaf.
struct Reachable {
    dependencies: IdMap<usize, usize>,
    leaf_dependencies: IdMap<usize, usize>,
    nodes: Vec<Arc<Node>>,
}

fn dependencies(roots: &[Arc<Node>]) -> Result<Reachable> {
    let mut deps: IdMap<usize, usize> = IdMap::default();
    let mut leaf_deps: IdMap<usize, usize> = IdMap::default();
    let mut seen: IdMap<usize, Arc<Node>> = IdMap::default();
    let mut stack: Vec<Arc<Node>> = roots.to_vec();
    for r in roots {
        seen.insert(r.id(), r.clone());
    }
    while let Some(node) = stack.pop() {
        if node.saved.lock().is_none() {
            return grad_err(format!(
                "Trying to backward through the graph a second time (or directly access saved tensors after \
                 they have already been freed): {} was already freed. Specify retain_graph=True if you need to \
                 backward through the graph a second time or to access saved tensors after calling backward.",
                node.name()
            ));
        }
        for edge in node.next.iter().flatten() {
            match edge {
                Edge::Node(child, _) => {
                    *deps.entry(child.id()).or_insert(0) += 1;
                    if let std::collections::hash_map::Entry::Vacant(slot) = seen.entry(child.id()) {
                        slot.insert(child.clone());
                        stack.push(child.clone());
                    }
                }
                Edge::Leaf(leaf) => *leaf_deps.entry(leaf.id()).or_insert(0) += 1,
            }
        }
    }
    Ok(Reachable { dependencies: deps, leaf_dependencies: leaf_deps, nodes: seen.into_values().collect() })
}

fn has_nan(t: &Tensor) -> bool {
    t.dtype().is_float() && t.to_f64_vec().iter().any(|v| v.is_nan())
}

/// The leaves' gradients during a pass: summed as they arrive, and finished
/// (hooked, captured, written or set aside) once no edge into the leaf is left.
struct LeafSums<'a> {
    sums: IdMap<usize, (Tensor, Option<Tensor>)>,
    pending: IdMap<usize, usize>,
    /// `autograd.grad`'s inputs that are leaves: (leaf id, slot in `captured`).
    capture: Option<&'a IdMap<usize, usize>>,
    /// Final gradients of leaves without post-accumulate hooks, written after the pass.
    deferred: Vec<(Tensor, Tensor)>,
    create_graph: bool,
}

impl LeafSums<'_> {
    /// Adds a leaf's gradient given as a root of the pass (no edge is walked for it).
    fn add_root(&mut self, leaf: &Tensor, grad: Tensor) -> Result<()> {
        let entry = self.sums.entry(leaf.id()).or_insert_with(|| (leaf.clone(), None));
        accumulate(&mut entry.1, grad, self.create_graph)
    }

    /// Adds what one edge brought into `leaf`; when that was the last edge into it,
    /// the leaf's id goes into `finished`.
    fn add_edge(&mut self, leaf: &Tensor, grad: Option<Tensor>, finished: &mut Vec<usize>) -> Result<()> {
        if let Some(grad) = grad {
            self.add_root(leaf, grad)?;
        }
        let left = self.pending.get_mut(&leaf.id()).map(|d| {
            *d = d.saturating_sub(1);
            *d
        });
        if left == Some(0) {
            finished.push(leaf.id());
        }
        Ok(())
    }

    /// Adds the leaves given as roots; those that no edge of the pass reaches are final already.
    fn add_roots(&mut self, roots: Vec<(Tensor, Tensor)>, captured: &mut [Option<Tensor>]) -> Result<()> {
        let mut final_now = Vec::new();
        for (leaf, grad) in roots {
            self.add_root(&leaf, grad)?;
            if !self.pending.contains_key(&leaf.id()) && !final_now.contains(&leaf.id()) {
                final_now.push(leaf.id());
            }
        }
        self.finish(&final_now, captured)
    }

    /// Finishes the leaves in `ids`, whose gradients are final: runs their gradient
    /// hooks and captures them; in `backward()`, writes the `.grad` of those with
    /// post-accumulate hooks and then runs these hooks (each once all of them are
    /// written), and sets the others aside for after the pass.
    fn finish(&mut self, ids: &[usize], captured: &mut [Option<Tensor>]) -> Result<()> {
        let mut now = Vec::new();
        for id in ids {
            let Some((leaf, Some(grad))) = self.sums.remove(id) else { continue };
            let grad = hooks::run_grad_hooks(&hooks::leaf_grad_hooks(&leaf), grad)?;
            match self.capture {
                Some(capture) => {
                    if let Some(&slot) = capture.get(id) {
                        captured[slot] = Some(grad);
                    }
                }
                None if hooks::has_post_accumulate_hooks(&leaf) => now.push((leaf, grad)),
                None => self.deferred.push((leaf, grad)),
            }
        }
        write_grads(now, self.create_graph)
    }
}

/// What a reverse pass produced: gradients for leaves, and for requested tensors.
pub struct BackwardResult {
    pub leaf_grads: Vec<(Tensor, Tensor)>,
    pub captured: Vec<Option<Tensor>>,
}

/// `backward()`: the reverse pass from `roots` (each with its gradient), the
/// `.grad` writes set aside for its end, then the callbacks queued during it.
pub fn backward(roots: &[(Tensor, Tensor)], options: BackwardOptions<'_>) -> Result<()> {
    let callbacks = hooks::PassCallbacks::open();
    let create_graph = options.create_graph;
    let result = run_backward(roots, None, options)?;
    write_grads(result.leaf_grads, create_graph)?;
    callbacks.run()
}

/// `autograd.grad`: the gradients of `inputs` (None where none reached them),
/// after the callbacks queued during the pass have run; `.grad` is left alone.
pub fn grad(
    roots: &[(Tensor, Tensor)],
    inputs: &[Tensor],
    options: BackwardOptions<'_>,
) -> Result<Vec<Option<Tensor>>> {
    let callbacks = hooks::PassCallbacks::open();
    let result = run_backward(roots, Some(inputs), options)?;
    callbacks.run()?;
    Ok(result.captured)
}

/// The reverse pass from `roots` (each with its gradient). With `capture`, the
/// gradients of those tensors are returned and leaves are left alone. Without it,
/// leaves with post-accumulate hooks are written (and their hooks run) during the
/// pass, and the other leaves' gradients are returned for the caller to write.
pub fn run_backward(
    roots: &[(Tensor, Tensor)],
    capture: Option<&[Tensor]>,
    options: BackwardOptions<'_>,
) -> Result<BackwardResult> {
    // Grad mode during the pass is create_graph, as in torch: off, nothing is recorded.
    let create_graph = options.create_graph;
    if crate::compile::tracing() && (create_graph || options.detect_anomaly) {
        crate::compile::stop(|| "backward with create_graph=True or anomaly detection".into());
    }
    let _grad_mode = GradModeGuard::new(create_graph);
    let mut root_leaves: Vec<(Tensor, Tensor)> = Vec::new();
    let mut buffers: IdMap<usize, Vec<Option<Tensor>>> = IdMap::default();
    let mut root_nodes = Vec::new();
    for (i, (root, grad)) in roots.iter().enumerate() {
        match root.grad_fn() {
            Some(node) => {
                let slots = buffers.entry(node.id()).or_insert_with(|| vec![None; node.output_meta.len()]);
                accumulate(&mut slots[root.output_nr()], grad.clone(), create_graph)?;
                root_nodes.push(node);
            }
            None if root.requires_grad() => root_leaves.push((root.clone(), grad.clone())),
            None => {
                return grad_err(format!(
                    "element {i} of tensors does not require grad and does not have a grad_fn; \
                     create the inputs with requires_grad=True"
                ))
            }
        }
    }
    let Reachable { dependencies: mut deps, leaf_dependencies, nodes: all_nodes } = dependencies(&root_nodes)?;

    // Tensors whose gradient the caller wants: leaves by identity, others by (node, output).
    let mut capture_leaf: IdMap<usize, usize> = IdMap::default();
    let mut capture_node: IdMap<(usize, usize), usize> = IdMap::default();
    for (i, t) in capture.unwrap_or(&[]).iter().enumerate() {
        match t.grad_fn() {
            Some(node) => capture_node.insert((node.id(), t.output_nr()), i),
            None => capture_leaf.insert(t.id(), i),
        };
    }
    let mut captured: Vec<Option<Tensor>> = vec![None; capture.map_or(0, |c| c.len())];
    let mut retained_grads: Vec<(Tensor, Tensor)> = Vec::new();
    let mut leaves = LeafSums {
        sums: IdMap::default(),
        pending: leaf_dependencies,
        capture: capture.map(|_| &capture_leaf),
        deferred: Vec::new(),
        create_graph,
    };
    leaves.add_roots(root_leaves, &mut captured)?;

    let mut ready: BinaryHeap<Ready> = BinaryHeap::new();
    for node in &root_nodes {
        if !deps.contains_key(&node.id()) && !ready.iter().any(|r| Arc::ptr_eq(&r.1, node)) {
            ready.push(Ready(node.sequence, node.clone()));
        }
    }
    while let Some(Ready(_, node)) = ready.pop() {
        (options.between_nodes)()?;
        let mut grads = buffers.remove(&node.id()).unwrap_or_else(|| vec![None; node.output_meta.len()]);
        if crate::compile::tracing() {
            stop_trace_at_hooks(&node);
        }
        hooks::run_node_hooks(&node, &mut grads)?;
        for (out_nr, g) in grads.iter().enumerate() {
            if let (Some(&slot), Some(g)) = (capture_node.get(&(node.id(), out_nr)), g) {
                captured[slot] = Some(g.clone());
            }
        }
        if capture.is_none() {
            for (out_nr, weak) in node.retained.lock().iter() {
                if let (Some(tensor), Some(Some(g))) = (weak.upgrade(), grads.get(*out_nr)) {
                    retained_grads.push((tensor, g.clone()));
                }
            }
        }
        let input_grads = run_node(&node, grads, create_graph)?;
        let first_nan = || input_grads.iter().position(|g| g.as_ref().is_some_and(has_nan));
        if let Some(i) = options.detect_anomaly.then(first_nan).flatten() {
            return grad_err(format!(
                "Function '{}' returned nan values in its {i}th output. The forward op was '{}'; \
                 check its inputs for values outside its domain",
                node.name(),
                node.op.name()
            ));
        }
        let mut finished_leaves = Vec::new();
        for (edge, grad) in node.next.iter().zip(input_grads) {
            match edge {
                Some(Edge::Node(child, out_nr)) => {
                    if let Some(grad) = grad {
                        let slots = buffers.entry(child.id()).or_insert_with(|| vec![None; child.output_meta.len()]);
                        accumulate(&mut slots[*out_nr], grad, create_graph)?;
                    }
                    let left = deps.get_mut(&child.id()).map(|d| {
                        *d -= 1;
                        *d
                    });
                    if left == Some(0) {
                        ready.push(Ready(child.sequence, child.clone()));
                    }
                }
                Some(Edge::Leaf(leaf)) => leaves.add_edge(leaf, grad, &mut finished_leaves)?,
                None => {}
            }
        }
        leaves.finish(&finished_leaves, &mut captured)?;
    }
    // Every edge has been walked, so no leaf is left unfinished; this is only a safeguard.
    let unfinished: Vec<usize> = leaves.sums.keys().copied().collect();
    leaves.finish(&unfinished, &mut captured)?;
    if !options.retain_graph {
        for node in &all_nodes {
            node.release_saved();
            if let Op::Custom(custom) = &node.op {
                custom.release();
            }
        }
    }
    let mut leaf_out = leaves.deferred;
    // Non-leaf tensors that asked to keep their gradient are updated like leaves.
    leaf_out.extend(retained_grads);
    Ok(BackwardResult { leaf_grads: leaf_out, captured })
}

/// Hooks and `retain_grad` run user code or keep values that a replay would not.
fn stop_trace_at_hooks(node: &Node) {
    let leaf_hooks = node.next.iter().flatten().any(|edge| match edge {
        Edge::Leaf(leaf) => !hooks::leaf_grad_hooks(leaf).is_empty() || hooks::has_post_accumulate_hooks(leaf),
        Edge::Node(..) => false,
    });
    if leaf_hooks || !node.hooks.lock().is_empty() || !node.retained.lock().is_empty() {
        crate::compile::stop(|| "a tensor hook, post-accumulate hook or retain_grad() in the backward pass".into());
    }
}

/// Writes gradients into `.grad`, then runs the leaves' post-accumulate hooks,
/// each once all of these gradients are written.
pub fn write_grads(leaf_grads: Vec<(Tensor, Tensor)>, create_graph: bool) -> Result<()> {
    for (leaf, grad) in &leaf_grads {
        if create_graph {
            accumulate_recorded_into_leaf(leaf, grad.clone())?;
        } else {
            accumulate_into_leaf(leaf, grad.clone())?;
        }
    }
    leaf_grads.iter().try_for_each(|(leaf, _)| hooks::run_post_accumulate_hooks(leaf))
}

/// Adds `grad` into `leaf.grad`, in place when a gradient is already there
/// (so `w.grad` keeps its identity, as in PyTorch).
pub fn accumulate_into_leaf(leaf: &Tensor, grad: Tensor) -> Result<()> {
    crate::compile::accumulate_leaf(leaf, &grad);
    match leaf.grad() {
        None => {
            let owned = if grad.is_contiguous() && grad.is_uniquely_owned() { grad } else { forward::copy(&grad)? };
            leaf.set_grad(Some(owned));
            Ok(())
        }
        Some(existing) => forward::add_in_place(&existing, &grad, 1.0),
    }
}

/// `accumulate_into_leaf` for `backward(create_graph=True)`: recorded and out of
/// place, so `.grad` keeps the history of both terms (torch does the same).
fn accumulate_recorded_into_leaf(leaf: &Tensor, grad: Tensor) -> Result<()> {
    let _recording = GradModeGuard::new(true);
    let total = match leaf.grad() {
        None if grad.is_contiguous() && grad.is_uniquely_owned() => grad,
        // The caller may hold `grad` (a seed given for a leaf root): `.grad` gets a copy.
        None => record::apply(Op::Copy, &[&grad])?,
        Some(existing) => record::apply(Op::Binary(BinaryOp::Add), &[&existing, &grad])?,
    };
    leaf.set_grad(Some(total));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autograd::record::apply;
    use crate::dtype::Scalar;
    use crate::kernels::elementwise::{ScalarOp, UnaryOp};

    fn leaf(values: &[f64], shape: &[usize]) -> Tensor {
        let t = Tensor::from_vec(values.to_vec(), shape.to_vec()).unwrap();
        t.set_requires_grad(true);
        t
    }

    fn backward(root: &Tensor, retain_graph: bool) -> Result<()> {
        let seed = Tensor::full(root.shape(), 1.0, root.dtype())?;
        let mut no_check = || Ok(());
        let options =
            BackwardOptions { retain_graph, create_graph: false, between_nodes: &mut no_check, detect_anomaly: false };
        for (leaf, grad) in run_backward(&[(root.clone(), seed)], None, options)?.leaf_grads {
            accumulate_into_leaf(&leaf, grad)?;
        }
        Ok(())
    }

    fn sum_all(t: &Tensor) -> Tensor {
        apply(Op::Sum { dims: None, keepdim: false }, &[t]).unwrap()
    }

    #[test]
    fn gradients_of_a_shared_input_accumulate() {
        // loss = sum(x * x + 3x) -> dloss/dx = 2x + 3
        let x = leaf(&[1.0, -2.0, 0.5], &[3]);
        let square = apply(Op::Binary(BinaryOp::Mul), &[&x, &x]).unwrap();
        let linear = apply(Op::Scalar(ScalarOp::Mul, Scalar::Float(3.0)), &[&x]).unwrap();
        let loss = sum_all(&apply(Op::Binary(BinaryOp::Add), &[&square, &linear]).unwrap());
        backward(&loss, false).unwrap();
        assert_eq!(x.grad().unwrap().to_f64_vec(), vec![5.0, -1.0, 4.0]);
    }

    #[test]
    fn leaf_gradients_add_up_across_backward_calls_and_graphs_are_freed() {
        let x = leaf(&[2.0], &[1]);
        let loss = sum_all(&apply(Op::Unary(UnaryOp::Square), &[&x]).unwrap());
        backward(&loss, true).unwrap();
        backward(&loss, false).unwrap();
        assert_eq!(x.grad().unwrap().to_f64_vec(), vec![8.0]);
        let err = backward(&loss, false).unwrap_err().to_string();
        assert!(err.contains("retain_graph=True"), "{err}");
    }

    #[test]
    fn non_leaf_gradients_are_not_kept() {
        let x = leaf(&[1.0, 2.0], &[2]);
        let hidden = apply(Op::Unary(UnaryOp::Exp), &[&x]).unwrap();
        backward(&sum_all(&hidden), false).unwrap();
        assert!(hidden.grad().is_none());
        assert!(x.grad().is_some());
    }

    #[test]
    fn a_failed_backward_changes_no_gradient() {
        let x = leaf(&[1.0, 2.0], &[2]);
        x.set_grad(Some(Tensor::from_vec(vec![10.0, 20.0], vec![2]).unwrap()));
        let out = apply(Op::Unary(UnaryOp::Exp), &[&x]).unwrap();
        // Modify the saved output in place: the rule must refuse to read it.
        crate::forward::fill(&out, Scalar::Float(0.0)).unwrap();
        let err = backward(&sum_all(&out), false).unwrap_err().to_string();
        assert!(err.contains("modified by an inplace operation"), "{err}");
        assert_eq!(x.grad().unwrap().to_f64_vec(), vec![10.0, 20.0]);
    }

    #[test]
    fn nothing_is_recorded_without_grad_mode() {
        let x = leaf(&[1.0], &[1]);
        let _guard = GradModeGuard::new(false);
        let y = apply(Op::Unary(UnaryOp::Exp), &[&x]).unwrap();
        assert!(y.grad_fn().is_none());
        assert!(!y.requires_grad());
    }

    #[test]
    fn matmul_gradients_match_the_closed_form() {
        // C = A·B, loss = sum(C): dA = 1·Bᵀ (row sums of B), dB = Aᵀ·1 (column sums of A).
        let a = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        let b = leaf(&[1.0, -1.0, 2.0, 0.5, 0.0, 3.0], &[3, 2]);
        let c = apply(Op::MatMul { transpose_a: false, transpose_b: false }, &[&a, &b]).unwrap();
        backward(&sum_all(&c), false).unwrap();
        assert_eq!(a.grad().unwrap().to_f64_vec(), vec![0.0, 2.5, 3.0, 0.0, 2.5, 3.0]);
        assert_eq!(b.grad().unwrap().to_f64_vec(), vec![5.0, 5.0, 7.0, 7.0, 9.0, 9.0]);
    }
}
