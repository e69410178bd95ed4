//! A node of the eager tape: the op that made a tensor, where its inputs'
//! gradients go, and the values its derivative rule needs.

use super::hooks::NodeHooks;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::Op;
use crate::shape::Shape;
use crate::tensor::{Tensor, WeakTensor};
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::sync::Arc;

/// Where the gradient of one input goes.
#[derive(Clone)]
pub enum Edge {
    /// Into the node that produced the input (and which of its outputs it was).
    Node(Arc<Node>, usize),
    /// Into a leaf's `.grad`.
    Leaf(Tensor),
}

/// A tensor kept for backward, with the version it had when saved.
#[derive(Clone)]
pub struct SavedTensor {
    pub tensor: Tensor,
    pub version: u64,
}

impl SavedTensor {
    pub fn new(t: &Tensor) -> SavedTensor {
        // An alias without history: saving an output must not make a cycle back to this node.
        SavedTensor { tensor: t.alias(), version: t.version() }
    }
}

pub struct Saved {
    pub inputs: Vec<Option<SavedTensor>>,
    pub output: Option<SavedTensor>,
}

/// The shape and dtype of a node's input or output. Shapes are inline for up to
/// four dimensions, so recording an op allocates the node and nothing else.
pub type Meta = (Shape, DType);

/// Per-input lists of a node, inline for the common one or two.
pub type PerInput<T> = SmallVec<[T; 2]>;

/// Per-output lists of a node, inline for the one output of built-in ops.
pub type PerOutput<T> = SmallVec<[T; 1]>;

pub struct Node {
    pub op: Op,
    /// One entry per op input; None where that input needs no gradient.
    pub next: PerInput<Option<Edge>>,
    /// Shape and dtype of each input without an edge, by input index (a rule may read its
    /// shape); an input with an edge has them from it (`input_meta`).
    pub unedged_meta: PerInput<(usize, Meta)>,
    /// Shape and dtype of each output, to make zero gradients for unused outputs
    /// (inline for one: only custom Functions have more).
    pub output_meta: PerOutput<Meta>,
    /// Freed after backward unless the graph is retained.
    pub saved: Mutex<Option<Saved>>,
    /// One more than the highest `sequence` of the nodes it reads (0 when it reads
    /// only leaves), so every node's is above its inputs'. Among nodes whose
    /// gradients are complete, the reverse pass runs the highest first.
    pub sequence: u64,
    /// Outputs whose gradient is kept in their `.grad` (`retain_grad()`), by output index.
    pub retained: Mutex<Vec<(usize, WeakTensor)>>,
    /// Gradient hooks of the node's outputs.
    pub hooks: Mutex<NodeHooks>,
}

/// A node's place in the reverse pass, from its inputs' nodes alone: unlike a
/// global creation counter, it costs no atomic operation when ops are recorded.
fn depth(next: &PerInput<Option<Edge>>) -> u64 {
    next.iter()
        .filter_map(|edge| match edge {
            Some(Edge::Node(node, _)) => Some(node.sequence + 1),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

impl Node {
    /// A new node, shared. It is written straight into its allocation: built on the stack
    /// and then moved, its ~500 bytes were copied once more for every recorded op (6% of a
    /// one-element add with requires_grad, in perf).
    pub fn shared<'t>(
        op: Op,
        next: PerInput<Option<Edge>>,
        unedged_meta: PerInput<(usize, Meta)>,
        outputs: impl IntoIterator<Item = &'t Tensor>,
        saved: Saved,
    ) -> Arc<Node> {
        let mut node = Arc::<Node>::new_uninit();
        let unique = Arc::get_mut(&mut node).expect("a new Arc is unique"); // invariant: nothing else holds it yet
        let p = unique.as_mut_ptr();
        // Field by field: writing a whole `Node { .. }` into the allocation still built most of
        // it on the stack and copied it.
        macro_rules! init {
            ($field:ident, $value:expr) => {
                // SAFETY: `p` is this new node's own allocation, unique (get_mut above) and
                // uninitialised; each field is written exactly once, in place, before `assume_init`.
                unsafe { (&raw mut (*p).$field).write($value) }
            };
        }
        init!(sequence, depth(&next));
        init!(op, op);
        init!(next, next);
        init!(unedged_meta, unedged_meta);
        // The output metadata and the saved tensors are filled in place, after their fields are
        // written empty: built apart and moved in, the metadata's padding was copied a few bytes
        // at a time, and `Mutex::new(Some(saved))` from one byte past an 8-byte boundary (after
        // the lock's byte): loads that straddled earlier stores and stalled, which perf showed
        // (`benchmarks/one_element_add.py`: 276 ns before, 259 after, with requires_grad).
        init!(output_meta, PerOutput::new());
        // SAFETY: the field was written just above, and `p` is this node's unique allocation, so
        // a reference to that one field is sound.
        let output_meta = unsafe { &mut (*p).output_meta };
        for out in outputs {
            output_meta.push((Shape::from_slice(out.shape()), out.dtype()));
        }
        init!(saved, Mutex::new(None));
        // SAFETY: as for `output_meta` above: the field is written and `p` is unique.
        let saved_slot = unsafe { &mut (*p).saved };
        *saved_slot.get_mut() = Some(saved);
        init!(retained, Mutex::new(Vec::new()));
        init!(hooks, Mutex::new(Vec::new()));
        // SAFETY: `init!` above wrote every field of `Node`: the `const _` after this impl
        // names the same fields without `..`, so a new field fails to compile until it is added to both.
        unsafe { node.assume_init() }
    }

    /// The shape and dtype of input `i`, to check the gradient a rule returns for it and to
    /// stand in for its value. Read through the edge when there is one: a leaf is the tensor
    /// itself, a node's output has its `output_meta` (neither changes). Only inputs without an
    /// edge have theirs copied into the node, which spares the common op two shape copies.
    pub fn input_meta(&self, i: usize) -> Result<(&[usize], DType)> {
        let meta = match self.next.get(i) {
            Some(Some(Edge::Leaf(t))) => Some((t.shape(), t.dtype())),
            Some(Some(Edge::Node(node, k))) => {
                node.output_meta.get(*k).map(|(shape, dtype)| (shape.as_slice(), *dtype))
            }
            Some(None) => {
                self.unedged_meta.iter().find(|(j, _)| *j == i).map(|(_, (shape, dtype))| (shape.as_slice(), *dtype))
            }
            None => None,
        };
        meta.ok_or_else(|| Error::Internal(format!("{}: no shape recorded for input {i}", self.name())))
    }

    pub fn name(&self) -> String {
        self.op.backward_name()
    }

    pub fn release_saved(&self) {
        *self.saved.lock() = None;
    }

    pub fn id(self: &Arc<Self>) -> usize {
        Arc::as_ptr(self) as usize
    }
}

/// The fields `Node::shared` writes, matched without `..`: adding a field to `Node` breaks
/// this pattern, which is the reminder to write the new field in `shared` as well.
const _: fn(&Node) =
    |Node { op: _, next: _, unedged_meta: _, output_meta: _, saved: _, sequence: _, retained: _, hooks: _ }| {};

/// Breaks long chains iteratively, so dropping a deep graph cannot overflow the stack.
impl Drop for Node {
    fn drop(&mut self) {
        fn take_unique_children(edges: &mut PerInput<Option<Edge>>, stack: &mut Vec<Node>) {
            for edge in edges.drain(..).flatten() {
                if let Edge::Node(node, _) = edge {
                    if let Ok(owned) = Arc::try_unwrap(node) {
                        stack.push(owned);
                    }
                }
            }
        }
        let mut stack = Vec::new();
        take_unique_children(&mut self.next, &mut stack);
        while let Some(mut node) = stack.pop() {
            take_unique_children(&mut node.next, &mut stack);
        }
    }
}
