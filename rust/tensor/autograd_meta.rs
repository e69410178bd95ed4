//! A tensor's autograd bookkeeping: its `AutogradMeta` (requires_grad, grad, grad_fn,
//! output_nr and hooks), the `History` bits mirrored from it so that recording an op
//! reads them without taking the lock, and the `Tensor` methods that read and write them.

use super::{Tensor, WeakTensor};
use crate::autograd::hooks::{GradHook, PostAccumulateHook};
use crate::autograd::node::Node;
use std::sync::atomic::Ordering;
use std::sync::Arc;

#[derive(Default)]
pub struct AutogradMeta {
    pub requires_grad: bool,
    pub grad: Option<Tensor>,
    pub grad_fn: Option<Arc<Node>>,
    /// Which output of `grad_fn` this tensor is (custom Functions have several).
    pub output_nr: usize,
    /// A leaf's gradient hooks, by id (a non-leaf's live on its `grad_fn`).
    pub grad_hooks: Vec<(u64, Arc<dyn GradHook>)>,
    /// Hooks run after the leaf's `.grad` is updated, by id.
    pub post_accumulate_hooks: Vec<(u64, Arc<dyn PostAccumulateHook>)>,
}

const REQUIRES_GRAD: u8 = 1;
const HAS_GRAD_FN: u8 = 2;

fn write_history(meta: &mut AutogradMeta, node: Option<Arc<Node>>, output_nr: usize) {
    meta.requires_grad = node.is_some() || meta.requires_grad;
    meta.grad_fn = node;
    meta.output_nr = output_nr;
}

fn history_bits(meta: &AutogradMeta) -> u8 {
    (meta.requires_grad as u8 * REQUIRES_GRAD) | (meta.grad_fn.is_some() as u8 * HAS_GRAD_FN)
}

/// Where gradients for a tensor go, as last written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum History {
    /// The tensor does not require grad.
    None,
    /// A leaf that requires grad: gradients accumulate into its `.grad`.
    Leaf,
    /// The output of a recorded op (see `grad_fn`).
    Node,
}

impl Tensor {
    pub fn requires_grad(&self) -> bool {
        self.history() != History::None
    }

    /// Read without the metadata's lock (from the mirror every write updates).
    pub fn history(&self) -> History {
        let bits = self.0.history.load(Ordering::Acquire);
        if bits & HAS_GRAD_FN != 0 {
            History::Node
        } else if bits & REQUIRES_GRAD != 0 {
            History::Leaf
        } else {
            History::None
        }
    }

    pub fn set_requires_grad(&self, value: bool) {
        self.with_meta(|meta| meta.requires_grad = value);
    }

    pub fn grad(&self) -> Option<Tensor> {
        self.0.meta.lock().grad.clone()
    }

    pub fn set_grad(&self, grad: Option<Tensor>) {
        self.0.meta.lock().grad = grad;
    }

    pub fn grad_fn(&self) -> Option<Arc<Node>> {
        self.0.meta.lock().grad_fn.clone()
    }

    pub fn output_nr(&self) -> usize {
        self.0.meta.lock().output_nr
    }

    pub fn set_history(&self, node: Option<Arc<Node>>, output_nr: usize) {
        self.with_meta(|meta| write_history(meta, node, output_nr));
    }

    /// `set_history` for a tensor nobody else holds yet (a new op output): no lock is
    /// needed then. Falls back to the locked write when the tensor is shared.
    pub fn set_history_of_new(&mut self, node: Option<Arc<Node>>, output_nr: usize) {
        match Arc::get_mut(&mut self.0) {
            Some(inner) => {
                let meta = inner.meta.get_mut();
                write_history(meta, node, output_nr);
                *inner.history.get_mut() = history_bits(meta);
            }
            None => self.set_history(node, output_nr),
        }
    }

    pub fn downgrade(&self) -> WeakTensor {
        WeakTensor(Arc::downgrade(&self.0))
    }

    /// Keeps this non-leaf tensor's gradient in `.grad` after backward (leaves always do).
    pub fn retain_grad(&self) -> crate::error::Result<()> {
        if !self.requires_grad() {
            return crate::error::grad_err("can't retain_grad on Tensor that has requires_grad=False");
        }
        if let Some(node) = self.grad_fn() {
            node.retained.lock().push((self.output_nr(), self.downgrade()));
        }
        Ok(())
    }

    pub fn is_leaf(&self) -> bool {
        self.history() != History::Node
    }

    pub fn with_meta<R>(&self, f: impl FnOnce(&mut AutogradMeta) -> R) -> R {
        let mut meta = self.0.meta.lock();
        let result = f(&mut meta);
        self.0.history.store(history_bits(&meta), Ordering::Release);
        result
    }
}
