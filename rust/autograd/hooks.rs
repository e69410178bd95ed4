//! Tensor hooks: user code the reverse pass calls with a tensor's gradient
//! (`register_hook`, which may replace it), or with a leaf once its `.grad` has
//! been accumulated (`register_post_accumulate_grad_hook`, which data-parallel
//! training uses to start reducing a gradient as soon as it is ready).
//!
//! A leaf keeps its hooks; a non-leaf tensor's hooks live on the node that made
//! it, keyed by which of the node's outputs it is, since the reverse pass meets
//! node outputs and not tensors.
//!
//! Also the callbacks queued during a pass to run once it is over (torch's
//! `Variable._execution_engine.queue_callback`), with which data-parallel
//! training waits for the reductions its hooks started.

use crate::autograd::node::Node;
use crate::error::{grad_err, Result};
use crate::shape::fmt_shape;
use crate::tensor::{Tensor, WeakTensor};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// Called with a gradient; returns a replacement, or None to keep it.
pub trait GradHook: Send + Sync {
    fn call(&self, grad: &Tensor) -> Result<Option<Tensor>>;
}

/// A node's gradient hooks: (which output, hook id, hook).
pub type NodeHooks = Vec<(usize, u64, Arc<dyn GradHook>)>;

/// Called with a leaf after its `.grad` has been updated.
pub trait PostAccumulateHook: Send + Sync {
    fn call(&self, leaf: &Tensor) -> Result<()>;
}

/// Where a hook was registered, so that its handle can remove it.
pub enum HookOwner {
    Leaf(WeakTensor),
    Node(Weak<Node>),
}

/// What `register_*` returns: removes the hook (if its tensor still exists).
pub struct HookHandle {
    owner: HookOwner,
    id: u64,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

impl HookHandle {
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Unregisters the hook; removing it twice does nothing.
    pub fn remove(&self) {
        match &self.owner {
            HookOwner::Leaf(weak) => {
                if let Some(t) = weak.upgrade() {
                    t.with_meta(|meta| {
                        meta.grad_hooks.retain(|(id, _)| *id != self.id);
                        meta.post_accumulate_hooks.retain(|(id, _)| *id != self.id);
                    });
                }
            }
            HookOwner::Node(weak) => {
                if let Some(node) = weak.upgrade() {
                    node.hooks.lock().retain(|(_, id, _)| *id != self.id);
                }
            }
        }
    }
}

/// `tensor.register_hook(hook)`.
pub fn register_grad_hook(tensor: &Tensor, hook: Arc<dyn GradHook>) -> Result<HookHandle> {
    if !tensor.requires_grad() {
        return grad_err("cannot register a hook on a tensor that doesn't require gradient");
    }
    let id = next_id();
    let owner = match tensor.grad_fn() {
        Some(node) => {
            node.hooks.lock().push((tensor.output_nr(), id, hook));
            HookOwner::Node(Arc::downgrade(&node))
        }
        None => {
            tensor.with_meta(|meta| meta.grad_hooks.push((id, hook)));
            HookOwner::Leaf(tensor.downgrade())
        }
    };
    Ok(HookHandle { owner, id })
}

/// `tensor.register_post_accumulate_grad_hook(hook)`: leaves only, as in torch.
pub fn register_post_accumulate_hook(tensor: &Tensor, hook: Arc<dyn PostAccumulateHook>) -> Result<HookHandle> {
    if !tensor.requires_grad() {
        return grad_err("cannot register a hook on a tensor that doesn't require gradient");
    }
    if !tensor.is_leaf() {
        return grad_err(
            "post accumulate grad hooks cannot be registered on non-leaf tensors; \
             register them on the parameters (leaves) instead",
        );
    }
    let id = next_id();
    tensor.with_meta(|meta| meta.post_accumulate_hooks.push((id, hook)));
    Ok(HookHandle { owner: HookOwner::Leaf(tensor.downgrade()), id })
}

/// Runs `hooks` in registration order on `grad`, each seeing the previous one's result.
/// A replacement must keep the gradient's shape and dtype.
pub fn run_grad_hooks<'a>(hooks: impl IntoIterator<Item = &'a Arc<dyn GradHook>>, mut grad: Tensor) -> Result<Tensor> {
    for hook in hooks {
        if let Some(new) = hook.call(&grad)? {
            if new.shape() != grad.shape() || new.dtype() != grad.dtype() {
                return grad_err(format!(
                    "a hook has changed the size or dtype of the gradient: it got a {} gradient of shape {} \
                     and returned a {} tensor of shape {}; return a tensor like its argument, or None",
                    grad.dtype().name(),
                    fmt_shape(grad.shape()),
                    new.dtype().name(),
                    fmt_shape(new.shape())
                ));
            }
            grad = new;
        }
    }
    Ok(grad)
}

/// The gradient hooks of a leaf, copied out so that no lock is held while user code runs.
pub fn leaf_grad_hooks(leaf: &Tensor) -> Vec<Arc<dyn GradHook>> {
    leaf.with_meta(|meta| meta.grad_hooks.iter().map(|(_, h)| h.clone()).collect())
}

/// Whether the leaf has post-accumulate hooks (then the pass writes its `.grad` as soon as it is final).
pub fn has_post_accumulate_hooks(leaf: &Tensor) -> bool {
    leaf.with_meta(|meta| !meta.post_accumulate_hooks.is_empty())
}

/// Runs a leaf's post-accumulate hooks (after its `.grad` was written).
pub fn run_post_accumulate_hooks(leaf: &Tensor) -> Result<()> {
    let hooks: Vec<_> = leaf.with_meta(|meta| meta.post_accumulate_hooks.iter().map(|(_, h)| h.clone()).collect());
    hooks.iter().try_for_each(|hook| hook.call(leaf))
}

/// Replaces the gradients of `node`'s outputs by what their tensors' hooks return.
pub fn run_node_hooks(node: &Node, grads: &mut [Option<Tensor>]) -> Result<()> {
    let hooks: Vec<_> = node.hooks.lock().iter().map(|(out, _, h)| (*out, h.clone())).collect();
    for (out_nr, hook) in hooks {
        if let Some(Some(g)) = grads.get_mut(out_nr).map(Option::take) {
            grads[out_nr] = Some(run_grad_hooks([&hook], g)?);
        }
    }
    Ok(())
}

/// Called once, after the reverse pass during which it was queued.
pub trait PassCallback: Send {
    fn call(&self) -> Result<()>;
}

thread_local! {
    /// The callback queues of the passes running on this thread, innermost last
    /// (a hook may run a backward of its own).
    static PASS_CALLBACKS: RefCell<Vec<VecDeque<Box<dyn PassCallback>>>> = const { RefCell::new(Vec::new()) };
}

/// The callback queue of one pass: open while it runs, dropped (with whatever
/// is left in it) when the pass ends, failed or not.
pub struct PassCallbacks {
    depth: usize,
}

impl PassCallbacks {
    pub fn open() -> PassCallbacks {
        let depth = PASS_CALLBACKS.with(|queues| {
            let mut queues = queues.borrow_mut();
            queues.push(VecDeque::new());
            queues.len()
        });
        PassCallbacks { depth }
    }

    /// Runs the queued callbacks in order, including those they queue themselves;
    /// the first error stops them and the rest are dropped.
    pub fn run(self) -> Result<()> {
        while let Some(callback) = self.next() {
            callback.call()?;
        }
        Ok(())
    }

    fn next(&self) -> Option<Box<dyn PassCallback>> {
        // The borrow ends before the callback runs, so that it may queue another.
        PASS_CALLBACKS.with(|queues| queues.borrow_mut().get_mut(self.depth - 1)?.pop_front())
    }
}

impl Drop for PassCallbacks {
    fn drop(&mut self) {
        let dropped = PASS_CALLBACKS.with(|queues| {
            let mut queues = queues.borrow_mut();
            queues.split_off(self.depth - 1)
        });
        // User callbacks are dropped after the borrow ends, in case dropping one runs code.
        drop(dropped);
    }
}

/// Queues `callback` to run after the innermost reverse pass running on this thread.
pub fn queue_callback(callback: Box<dyn PassCallback>) -> Result<()> {
    let refused = PASS_CALLBACKS.with(|queues| match queues.borrow_mut().last_mut() {
        Some(queue) => {
            queue.push_back(callback);
            None
        }
        None => Some(callback),
    });
    if refused.is_some() {
        return grad_err(
            "Final callbacks can only be installed during backward pass: call queue_callback from a hook or \
             a custom Function's backward while backward() or autograd.grad() runs",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autograd::engine::{backward, BackwardOptions};
    use crate::autograd::record::apply;
    use crate::dtype::Scalar;
    use crate::kernels::elementwise::{BinaryOp, ScalarOp, UnaryOp};
    use crate::op::Op;
    use std::sync::Mutex;

    type Log = Arc<Mutex<Vec<String>>>;

    struct Record(Log, &'static str);

    impl PostAccumulateHook for Record {
        fn call(&self, leaf: &Tensor) -> Result<()> {
            let grad = leaf.grad().map(|g| g.to_f64_vec()).unwrap_or_default();
            self.0.lock().unwrap().push(format!("{} hook {grad:?}", self.1));
            Ok(())
        }
    }

    impl PassCallback for Record {
        fn call(&self) -> Result<()> {
            self.0.lock().unwrap().push(self.1.to_string());
            Ok(())
        }
    }

    /// Queues a `Record` callback when called as a post-accumulate hook.
    struct QueueOne(Log);

    impl PostAccumulateHook for QueueOne {
        fn call(&self, _: &Tensor) -> Result<()> {
            queue_callback(Box::new(Record(self.0.clone(), "callback")))
        }
    }

    fn leaf(values: &[f64]) -> Tensor {
        let t = Tensor::from_vec(values.to_vec(), vec![values.len()]).unwrap();
        t.set_requires_grad(true);
        t
    }

    /// loss = sum(exp(3y) * w): w's gradient is final two nodes before y's.
    fn run(y: &Tensor, w: &Tensor, log: &Log) -> Result<()> {
        let deep = apply(Op::Unary(UnaryOp::Exp), &[&apply(Op::Scalar(ScalarOp::Mul, Scalar::Float(3.0)), &[y])?])?;
        let loss = apply(Op::Sum { dims: None, keepdim: false }, &[&apply(Op::Binary(BinaryOp::Mul), &[&deep, w])?])?;
        let seed = Tensor::full(loss.shape(), 1.0, loss.dtype())?;
        let node_log = log.clone();
        let mut each_node = move || {
            node_log.lock().unwrap().push("node".into());
            Ok(())
        };
        let options = BackwardOptions {
            retain_graph: false,
            create_graph: false,
            between_nodes: &mut each_node,
            detect_anomaly: false,
        };
        backward(&[(loss, seed)], options)
    }

    #[test]
    fn a_leafs_post_accumulate_hooks_run_when_its_gradient_is_final_and_callbacks_after_the_pass() {
        let (y, w) = (leaf(&[0.0]), leaf(&[2.0]));
        let log: Log = Arc::default();
        register_post_accumulate_hook(&w, Arc::new(Record(log.clone(), "w"))).unwrap();
        register_post_accumulate_hook(&w, Arc::new(QueueOne(log.clone()))).unwrap();
        register_post_accumulate_hook(&y, Arc::new(Record(log.clone(), "y"))).unwrap();
        run(&y, &w, &log).unwrap();
        let expected = ["node", "node", "w hook [1.0]", "node", "node", "y hook [6.0]", "callback"];
        assert_eq!(*log.lock().unwrap(), expected);
    }

    #[test]
    fn callbacks_are_refused_outside_a_pass_and_a_failed_pass_drops_its_own() {
        let log: Log = Arc::default();
        let err = queue_callback(Box::new(Record(log.clone(), "outside"))).unwrap_err().to_string();
        assert!(err.contains("only be installed during backward pass"), "{err}");
        let (y, w) = (leaf(&[0.0]), leaf(&[2.0]));
        register_post_accumulate_hook(&w, Arc::new(QueueOne(log.clone()))).unwrap();
        let deep = apply(Op::Unary(UnaryOp::Exp), &[&y]).unwrap();
        crate::forward::fill(&deep, Scalar::Float(0.0)).unwrap(); // ExpBackward's saved output is stale
        let loss =
            apply(Op::Sum { dims: None, keepdim: false }, &[&apply(Op::Binary(BinaryOp::Mul), &[&deep, &w]).unwrap()])
                .unwrap();
        let seed = Tensor::full(loss.shape(), 1.0, loss.dtype()).unwrap();
        let mut no_check = || Ok(());
        let options = BackwardOptions {
            retain_graph: false,
            create_graph: false,
            between_nodes: &mut no_check,
            detect_anomaly: false,
        };
        assert!(backward(&[(loss, seed)], options).is_err());
        assert!(log.lock().unwrap().is_empty(), "the failed pass ran its callback");
        assert!(queue_callback(Box::new(Record(log.clone(), "after"))).is_err(), "the failed pass left its queue open");
    }
}
