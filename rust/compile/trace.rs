//! The tracer: while an eager call runs, maps each tensor value to a slot and
//! appends what ran to a `Program`. Anything it cannot replay stops it: the call
//! itself already ran eagerly, so a stopped trace loses nothing.

use super::program::{describe_instr, Bound, FeedGuard, Instr, LeafRef, Program, StateGuard};
use crate::dtype::DType;
use crate::tensor::Tensor;
use std::collections::{HashMap, HashSet};

/// A value's identity: the same data seen through the same layout. Aliases
/// (saved tensors, a Function's outputs) share it; an in-place write keeps it.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    storage: usize,
    offset: usize,
    shape: Vec<usize>,
    strides: Vec<isize>,
    dtype: DType,
}

fn key(t: &Tensor) -> Key {
    Key {
        storage: storage_id(t),
        offset: t.offset(),
        shape: t.shape().to_vec(),
        strides: t.strides().to_vec(),
        dtype: t.dtype(),
    }
}

pub(crate) fn storage_id(t: &Tensor) -> usize {
    std::sync::Arc::as_ptr(t.storage()) as usize
}

pub struct Tracer {
    feeds: Vec<Tensor>,
    slots: HashMap<Key, usize>,
    n_slots: usize,
    bound: Vec<(usize, Bound)>,
    instrs: Vec<Instr>,
    /// Every tensor seen: keeps storage addresses from being reused during the trace.
    keep_alive: Vec<Tensor>,
    /// Storages made during the trace, and those of them made from a Python number.
    created: HashSet<usize>,
    constants: HashSet<usize>,
    /// Storages of constants bound into the program: replays share them, so none may be written.
    bound_constants: HashSet<usize>,
    /// Each storage's version when first seen, and the storages traced writes went to.
    versions: HashMap<usize, (Tensor, u64)>,
    written: HashSet<usize>,
    leaves: Vec<(LeafRef, Tensor)>,
    guards: Vec<StateGuard>,
    grad_mode: bool,
    stop: Option<String>,
}

impl Tracer {
    pub fn new(feeds: Vec<Tensor>) -> Tracer {
        let mut tracer = Tracer {
            feeds: Vec::new(),
            slots: HashMap::new(),
            n_slots: 0,
            bound: Vec::new(),
            instrs: Vec::new(),
            keep_alive: Vec::new(),
            created: HashSet::new(),
            constants: HashSet::new(),
            bound_constants: HashSet::new(),
            versions: HashMap::new(),
            written: HashSet::new(),
            leaves: Vec::new(),
            guards: Vec::new(),
            grad_mode: crate::autograd::grad_mode::is_enabled(),
            stop: None,
        };
        for (k, t) in feeds.iter().enumerate() {
            let slot = tracer.new_slot(t);
            tracer.bound.push((slot, Bound::Feed(k)));
        }
        tracer.feeds = feeds;
        tracer
    }

    pub fn stopped(&self) -> bool {
        self.stop.is_some()
    }

    pub fn stop(&mut self, reason: String) {
        if self.stop.is_none() {
            self.stop = Some(reason);
        }
    }

    pub fn note_created(&mut self, t: &Tensor, constant: bool) {
        let id = storage_id(t);
        self.created.insert(id);
        if constant {
            self.constants.insert(id);
        }
        self.keep_alive.push(t.clone());
    }

    fn new_slot(&mut self, t: &Tensor) -> usize {
        let slot = self.n_slots;
        self.n_slots += 1;
        self.map(t, slot);
        slot
    }

    fn map(&mut self, t: &Tensor, slot: usize) {
        self.slots.insert(key(t), slot);
        self.versions.entry(storage_id(t)).or_insert_with(|| (t.clone(), t.version()));
        self.keep_alive.push(t.clone());
    }

    /// The slot holding `t`'s value; binds a tensor from before the call on first sight.
    fn slot_of(&mut self, t: &Tensor) -> Option<usize> {
        if let Some(&slot) = self.slots.get(&key(t)) {
            return Some(slot);
        }
        let id = storage_id(t);
        if self.created.contains(&id) && !self.constants.contains(&id) {
            self.stop(format!(
                "a {} tensor of shape {:?} was made by an operation compile does not trace",
                t.dtype().name(),
                t.shape()
            ));
            return None;
        }
        if self.constants.contains(&id) {
            self.bound_constants.insert(id);
        } else {
            self.guards.push(StateGuard::RequiresGrad(t.clone(), t.requires_grad()));
        }
        let slot = self.new_slot(t);
        self.bound.push((slot, Bound::Fixed(t.clone())));
        Some(slot)
    }

    fn slots_of(&mut self, inputs: &[&Tensor]) -> Option<Vec<usize>> {
        inputs.iter().map(|t| self.slot_of(t)).collect()
    }

    pub fn op(&mut self, op: &crate::op::Op, inputs: &[&Tensor], out: &Tensor) {
        if let Some(inputs) = self.slots_of(inputs) {
            let slot = self.new_slot(out);
            self.instrs.push(Instr::Op { op: op.clone(), inputs, out: slot });
        }
    }

    pub fn add_grads(&mut self, a: &Tensor, b: &Tensor, out: &Tensor) {
        if let (Some(a), Some(b)) = (self.slot_of(a), self.slot_of(b)) {
            let slot = self.new_slot(out);
            self.instrs.push(Instr::AddGrads { a, b, out: slot });
        }
    }

    pub fn cast(&mut self, x: &Tensor, dtype: DType, out: &Tensor) {
        if let Some(x) = self.slot_of(x) {
            let slot = self.new_slot(out);
            self.instrs.push(Instr::Cast { x, dtype, out: slot });
        }
    }

    pub fn write(&mut self, write: super::program::Write, dst: &Tensor, srcs: &[&Tensor]) {
        let id = storage_id(dst);
        if self.bound_constants.contains(&id) {
            self.stop("an in-place write into a tensor made from Python numbers inside the step".into());
            return;
        }
        let (Some(d), Some(srcs)) = (self.slot_of(dst), self.slots_of(srcs)) else { return };
        self.written.insert(id);
        self.instrs.push(Instr::Write { write, dst: d, srcs });
    }

    fn leaf_ref(&mut self, leaf: &Tensor) -> LeafRef {
        let r = match self.feeds.iter().position(|f| f.same_tensor(leaf)) {
            Some(k) => LeafRef::Feed(k),
            None => LeafRef::Fixed(leaf.clone()),
        };
        if !self.leaves.iter().any(|(_, l)| l.same_tensor(leaf)) {
            self.leaves.push((r.clone(), leaf.clone()));
            let state = leaf.grad().map(|g| (g.shape().to_vec(), g.dtype()));
            self.guards.push(StateGuard::GradState(r.clone(), state));
            self.guards.push(StateGuard::RequiresGrad(leaf.clone(), leaf.requires_grad()));
            self.keep_alive.push(leaf.clone());
        }
        r
    }

    /// Before `accumulate_into_leaf(leaf, grad)` runs.
    pub fn accumulate_leaf(&mut self, leaf: &Tensor, grad: &Tensor) {
        let r = self.leaf_ref(leaf);
        if let Some(existing) = leaf.grad() {
            // Its storage is written by the accumulation: not an untraced write.
            self.written.insert(storage_id(&existing));
            self.slot_of(&existing);
        }
        if let Some(g) = self.slot_of(grad) {
            self.instrs.push(Instr::AccumulateLeaf { leaf: r, grad: g });
        }
    }

    /// `leaf.grad` read from Python: the value of the leaf's `.grad` at this point of a replay.
    pub fn grad_read(&mut self, leaf: &Tensor, grad: Option<&Tensor>) {
        let r = self.leaf_ref(leaf);
        let Some(grad) = grad else { return };
        let slot = self.new_slot(grad);
        self.instrs.push(Instr::GradOf { leaf: r, out: slot });
    }

    pub fn grad_set(&mut self, leaf: &Tensor, value: Option<&Tensor>) {
        let r = self.leaf_ref(leaf);
        let value = match value {
            Some(v) => match self.slot_of(v) {
                Some(s) => Some(s),
                None => return,
            },
            None => None,
        };
        self.instrs.push(Instr::SetGrad { leaf: r, value });
    }

    /// A capturable Adam step: it writes the parameters, moments and step counts.
    pub fn adam(&mut self, t: &super::adam::AdamTensors, hyper: &crate::forward::optim::AdamHyper) {
        let all = t.all();
        for &w in all.iter().filter(|w| !t.grads.iter().any(|g| g.same_tensor(w))) {
            if self.bound_constants.contains(&storage_id(w)) {
                self.stop("Adam's state made from Python numbers inside the step".into());
                return;
            }
        }
        let Some(tensors) = self.slots_of(&all) else { return };
        for w in &all {
            self.written.insert(storage_id(w));
        }
        let (n, amsgrad, tensor_lr, hyper) = (t.params.len(), t.max_exp_avg_sqs.is_some(), t.lr.is_some(), *hyper);
        self.instrs.push(Instr::Adam { tensors, n, amsgrad, tensor_lr, hyper });
    }

    /// The slot of a value read out to Python (`item()`), if it can be replayed.
    pub fn read(&mut self, t: &Tensor) -> Option<usize> {
        self.slot_of(t)
    }

    /// The program, or why the call cannot be replayed.
    pub fn finish(mut self, outputs: &[super::Output]) -> Result<Program, String> {
        let mut out_slots = Vec::new();
        for o in outputs {
            match o {
                super::Output::Tensor(t) => {
                    if let Some(s) = self.slot_of(t) {
                        out_slots.push(s)
                    }
                }
                super::Output::Slot(s) => out_slots.push(*s),
            }
        }
        if let Some(reason) = self.stop.take() {
            return Err(reason);
        }
        for (id, (t, version)) in &self.versions {
            if t.version() != *version && !self.written.contains(id) {
                return Err(format!(
                    "a {} tensor of shape {:?} was written in place by an operation compile does not trace",
                    t.dtype().name(),
                    t.shape()
                ));
            }
        }
        let signature = self.signature(&out_slots);
        let instrs = super::fuse::fuse_leaf_steps(std::mem::take(&mut self.instrs), self.n_slots, &out_slots);
        let frees = frees(&instrs, self.n_slots, &out_slots);
        Ok(Program {
            n_slots: self.n_slots,
            bound: self.bound,
            instrs,
            frees,
            outputs: out_slots,
            feeds: self
                .feeds
                .iter()
                .map(|t| FeedGuard { shape: t.shape().to_vec(), dtype: t.dtype(), requires_grad: t.requires_grad() })
                .collect(),
            guards: self.guards,
            grad_mode: self.grad_mode,
            signature,
        })
    }

    /// Everything that decides what a replay computes: two calls whose traces have the
    /// same signature ran the same kernels on the same values and constants.
    fn signature(&self, outputs: &[usize]) -> String {
        let name = |t: &Tensor| format!("t{:x}", t.id());
        let leaf_name = |r: &LeafRef| match r {
            LeafRef::Feed(k) => format!("feed{k}"),
            LeafRef::Fixed(t) => name(t),
        };
        let mut s = format!("grad_mode={}\n", self.grad_mode);
        for (slot, bound) in &self.bound {
            let _ = match bound {
                Bound::Feed(k) => std::fmt::Write::write_fmt(&mut s, format_args!("{slot} = feed {k}\n")),
                Bound::Fixed(t) if self.constants.contains(&storage_id(t)) => std::fmt::Write::write_fmt(
                    &mut s,
                    format_args!("{slot} = const {:?} {:?} {}\n", t.dtype(), t.shape(), values_digest(t)),
                ),
                Bound::Fixed(t) => std::fmt::Write::write_fmt(&mut s, format_args!("{slot} = {}\n", name(t))),
            };
        }
        for guard in &self.guards {
            if let StateGuard::GradState(r, state) = guard {
                s.push_str(&format!("grad of {} at start: {state:?}\n", leaf_name(r)));
            }
        }
        for instr in &self.instrs {
            describe_instr(&mut s, instr, &leaf_name);
        }
        s.push_str(&format!("outputs {outputs:?}\n"));
        s
    }
}

/// For each instruction, the slots read for the last time by it.
fn frees(instrs: &[Instr], n_slots: usize, outputs: &[usize]) -> Vec<Vec<usize>> {
    let mut last = vec![None; n_slots];
    for (i, instr) in instrs.iter().enumerate() {
        instr.for_each_slot(&mut |s| last[s] = Some(i));
    }
    for &s in outputs {
        last[s] = None;
    }
    let mut frees = vec![Vec::new(); instrs.len()];
    for (s, at) in last.into_iter().enumerate() {
        if let Some(i) = at {
            frees[i].push(s);
        }
    }
    frees
}

/// The values of a constant, exactly: listed when few, else a hash of their bits.
fn values_digest(t: &Tensor) -> String {
    use std::hash::{Hash, Hasher};
    let values = t.to_f64_vec();
    if values.len() <= 16 {
        return format!("{values:?}");
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    values.iter().for_each(|v| v.to_bits().hash(&mut h));
    format!("#{:x}", h.finish())
}
