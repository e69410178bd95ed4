//! What a graph node is: its kinds, the TF op type each shows, and the records
//! the graph keeps per node and per variable.

use super::{apply_adam, debug_ops, FrameId, NodeId, PartialShape, VarId};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::Op;
use crate::random::Sampler;
use crate::tensor::Tensor;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssignMode {
    Set,
    Add,
    Sub,
}

/// A user Function called on graph tensors. Its backward builds gradient nodes
/// (the binding runs the user's Python `backward` on graph tensors).
pub trait GraphFunction: Send + Sync {
    fn name(&self) -> &str;
    /// Gradient nodes for the function's tensor inputs, given one gradient node per output.
    fn backward(&self, grads: Vec<NodeId>) -> Result<Vec<Option<NodeId>>>;
}

#[derive(Clone)]
pub enum NodeKind {
    /// Fed at run time.
    Placeholder,
    Constant(Tensor),
    /// Reads a variable's value as it was at the start of the run.
    VariableRead(VarId),
    /// Draws new values each time a run reaches it; inputs: what the sampler reads
    /// (the tensor `ShuffleRows` shuffles). With a seed, each session repeats the same sequence.
    Random {
        sampler: Sampler,
        seed: Option<u64>,
    },
    Op(Op),
    /// Input 0 is the value; the output is the variable's new value, stored when the run ends.
    /// With `locking` (TF's `use_locking=True`), runs of plans holding it take the
    /// variable's lock from their start to their end, so they update it one at a time.
    Assign {
        var: VarId,
        mode: AssignMode,
        locking: bool,
    },
    /// TF1's fused Adam step (see `apply_adam`): inputs are the reads of var, m and v, the
    /// scalars and the gradient; the value is var's new value. var, m and v's new values are
    /// stored when the run ends; `locking` as for `Assign`.
    ApplyAdam {
        vars: apply_adam::AdamVars,
        locking: bool,
    },
    /// Runs its inputs for their effects; has no value.
    Group,
    /// A user Function call: inputs are its forward outputs, then its tensor inputs. No value.
    FunctionCall {
        function: Arc<dyn GraphFunction>,
        num_outputs: usize,
    },
    /// Output `index` of a FunctionCall: inputs are [call, forward output]; the value is the latter's.
    FunctionOutput {
        index: usize,
    },
    /// `Print`, `Assert` and `CheckNumerics` (see `debug_ops`).
    Debug(debug_ops::DebugOp),
    /// Loop variable `index` inside a while loop's cond or body frame (see `frames`).
    FrameArg {
        index: usize,
    },
    /// Runs one of `branches` (frames), chosen by input 0 (a bool, or an int index);
    /// the other inputs are the branches' captures. No value: its `Unpack`s have the outputs.
    Cond {
        branches: Vec<FrameId>,
        outputs: usize,
        /// Nodes of the branches whose values the Cond also outputs (after its `outputs`) for
        /// its gradient, when the branch that computes them runs (see `cond_gradients::export`).
        exports: Vec<NodeId>,
    },
    /// Runs the `body` frame while the `cond` frame gives true. Inputs: the `vars` initial
    /// values, the frames' captures, and the maximum number of iterations when
    /// `max_iterations`. No value: its `Unpack`s have the final values, then the trip
    /// count (output `vars`), then one stack per node of the body frame's `stacked` (see
    /// `while_gradients`). Without `back_prop`, no gradient flows through it (TF1).
    While {
        cond: FrameId,
        body: FrameId,
        vars: usize,
        max_iterations: bool,
        back_prop: bool,
    },
    /// Output `index` of the Cond or While (`exit`) that is its input, stored by the owner's step.
    Unpack {
        index: usize,
        exit: bool,
    },
}

impl NodeKind {
    /// The TF-style op type, as `op.type` shows it, of a node of this kind whose output has
    /// `shape`: TF's `matmul` of matrices is `MatMul`, of batches (or of unknown ranks) `BatchMatMulV2`.
    pub fn type_name(&self, shape: &PartialShape) -> String {
        match self {
            NodeKind::Op(Op::MatMul { .. }) if shape.as_ref().is_none_or(|d| d.len() != 2) => "BatchMatMulV2".into(),
            NodeKind::Placeholder => "Placeholder".into(),
            NodeKind::Constant(_) => "Const".into(),
            NodeKind::VariableRead(_) => "VariableV2".into(),
            NodeKind::Random { sampler, .. } => sampler.type_name().into(),
            NodeKind::Op(op) => tf_op_name(op),
            NodeKind::Assign { mode: AssignMode::Set, .. } => "Assign".into(),
            NodeKind::Assign { mode: AssignMode::Add, .. } => "AssignAdd".into(),
            NodeKind::Assign { mode: AssignMode::Sub, .. } => "AssignSub".into(),
            NodeKind::ApplyAdam { .. } => "ApplyAdam".into(),
            NodeKind::Group => "NoOp".into(),
            NodeKind::FunctionCall { function, .. } => function.name().to_string(),
            NodeKind::FunctionOutput { .. } => "FunctionOutput".into(),
            NodeKind::Debug(op) => op.type_name().into(),
            NodeKind::FrameArg { .. } => "Identity".into(),
            NodeKind::Cond { .. } => "If".into(),
            NodeKind::While { .. } => "While".into(),
            NodeKind::Unpack { exit: false, .. } => "Merge".into(),
            NodeKind::Unpack { exit: true, .. } => "Exit".into(),
        }
    }

    pub fn has_value(&self) -> bool {
        match self {
            NodeKind::Group | NodeKind::FunctionCall { .. } | NodeKind::Cond { .. } | NodeKind::While { .. } => false,
            NodeKind::Debug(op) => op.has_value(),
            _ => true,
        }
    }
}

/// CamelCase op names in TF's style (`MatMul`, `Sum`, `Maximum`).
pub(crate) fn tf_op_name(op: &Op) -> String {
    use crate::kernels::elementwise::{BinaryOp, CmpOp, UnaryOp};
    let name = match op {
        Op::MatMul { .. } => "MatMul",
        Op::Binary(BinaryOp::Add) => "AddV2",
        Op::Binary(BinaryOp::Sub) => "Sub",
        Op::Binary(BinaryOp::Mul) => "Mul",
        Op::Binary(BinaryOp::Div) => "RealDiv",
        Op::Binary(BinaryOp::Maximum) => "Maximum",
        Op::Binary(BinaryOp::Minimum) => "Minimum",
        Op::Binary(BinaryOp::FloorDiv) => "FloorDiv",
        Op::Binary(BinaryOp::Remainder) => "FloorMod",
        Op::Compare(CmpOp::Lt) => "Less",
        Op::Compare(CmpOp::Le) => "LessEqual",
        Op::Compare(CmpOp::Gt) => "Greater",
        Op::Compare(CmpOp::Ge) => "GreaterEqual",
        Op::Compare(CmpOp::Eq) => "Equal",
        Op::Compare(CmpOp::Ne) => "NotEqual",
        Op::Where => "Select",
        Op::Unary(UnaryOp::Relu) => "Relu",
        Op::Unary(UnaryOp::Square) => "Square",
        Op::Sum { .. } => "Sum",
        Op::Mean { .. } => "Mean",
        Op::Extreme { largest: true, .. } => "Max",
        Op::Extreme { largest: false, .. } => "Min",
        Op::Copy => "Identity",
        Op::StopGradient => "StopGradient",
        Op::Reshape(_) => "Reshape",
        Op::Transpose(..) => "Transpose",
        Op::Cast(_) => "Cast",
        Op::Table(t) if !t.tf_type().is_empty() => t.tf_type(),
        _ => return op.backward_name().trim_end_matches("Backward0").to_string(),
    };
    name.to_string()
}

#[derive(Clone)]
pub struct GraphNode {
    pub kind: NodeKind,
    pub inputs: Vec<NodeId>,
    /// Nodes that run before this one without giving it a value (TF's control inputs).
    pub control_inputs: Vec<NodeId>,
    pub name: String,
    pub dtype: DType,
    pub shape: PartialShape,
    /// The cond branch or loop frame the node belongs to (`ROOT` outside control flow).
    pub frame: FrameId,
}

#[derive(Clone)]
pub struct VariableInfo {
    pub name: String,
    pub read_node: NodeId,
    pub dtype: DType,
    pub shape: Vec<usize>,
}
