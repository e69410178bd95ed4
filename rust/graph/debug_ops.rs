//! TF1's debugging ops: `Print` (its input, and a line on standard error each time it
//! runs), `Assert` (no value; fails the run when its condition is false) and
//! `CheckNumerics` (its input; fails the run on NaN or Inf).

use super::summarize::summarize_value;
use super::{Graph, NodeId, NodeKind};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::Write;

/// An item of an assertion's data: a text, or the next of the node's tensor inputs.
#[derive(Clone, Debug, PartialEq)]
pub enum AssertItem {
    Text(String),
    Tensor,
}

#[derive(Clone, Debug, PartialEq)]
pub enum DebugOp {
    /// Inputs [input, data...]: the value is `input`; each run writes `message` and each
    /// data tensor (`summarize` elements of each, all when negative) as one line to
    /// standard error, only in the first `first_n` runs of a session when set.
    Print { message: String, first_n: Option<u64>, summarize: i64 },
    /// Inputs [condition, tensors...]: fails the run with "assertion failed: [item] ..."
    /// when the bool scalar condition is false. No value.
    Assert { summarize: i64, data: Vec<AssertItem> },
    /// Input [x], a float tensor: the value is x; fails the run when x holds NaN or Inf.
    CheckNumerics { message: String },
}

/// How many times each `Print` node with a `first_n` ran in a session.
pub type PrintCounts = Mutex<HashMap<NodeId, u64>>;

impl DebugOp {
    pub fn type_name(&self) -> &'static str {
        match self {
            DebugOp::Print { .. } => "Print",
            DebugOp::Assert { .. } => "Assert",
            DebugOp::CheckNumerics { .. } => "CheckNumerics",
        }
    }

    pub fn has_value(&self) -> bool {
        !matches!(self, DebugOp::Assert { .. })
    }

    /// Whether the gradient of the value flows to input 0 unchanged (the others get none).
    pub fn passes_gradient(&self) -> bool {
        self.has_value()
    }

    /// What checks the gradient flowing back through the op: TF's `CheckNumerics` gradient
    /// is checked too, with its message after "... detected in gradient. ".
    pub fn gradient_check(&self) -> Option<DebugOp> {
        match self {
            DebugOp::CheckNumerics { message } => Some(DebugOp::CheckNumerics {
                message: format!("Not a number (NaN) or infinity (Inf) values detected in gradient. {message}"),
            }),
            _ => None,
        }
    }

    /// Runs the op of node `node` on its input values.
    pub fn run(&self, node: NodeId, inputs: &[&Tensor], counts: Option<&PrintCounts>) -> Result<Option<Tensor>> {
        match self {
            DebugOp::Print { message, first_n, summarize } => {
                if should_print(node, *first_n, counts) {
                    write_line(&print_line(message, &inputs[1..], *summarize));
                }
                Ok(Some(inputs[0].clone()))
            }
            DebugOp::Assert { summarize, data } => {
                if condition_holds(inputs[0])? {
                    return Ok(None);
                }
                Err(Error::InvalidArgument(assert_message(data, &inputs[1..], *summarize)))
            }
            DebugOp::CheckNumerics { message } => {
                check_numerics(inputs[0], message)?;
                Ok(Some(inputs[0].clone()))
            }
        }
    }
}

/// Counts this run of a `Print` node; false past its first `first_n` runs.
fn should_print(node: NodeId, first_n: Option<u64>, counts: Option<&PrintCounts>) -> bool {
    let (Some(first_n), Some(counts)) = (first_n, counts) else { return true };
    let mut counts = counts.lock();
    let count = counts.entry(node).or_insert(0);
    if *count >= first_n {
        return false;
    }
    *count += 1;
    true
}

/// TF's `PrintOp` line: the message, then each tensor summarized in brackets.
pub fn print_line(message: &str, data: &[&Tensor], summarize: i64) -> String {
    let mut line = message.to_string();
    for t in data {
        line.push('[');
        line.push_str(&summarize_value(t, summarize));
        line.push(']');
    }
    line
}

/// One write of the whole line on the locked standard error (file descriptor 2), so
/// lines of runs on other threads do not interleave with it.
fn write_line(line: &str) {
    let mut stderr = std::io::stderr().lock();
    // As TF's `std::cerr <<`: a closed or full stderr does not fail the run.
    let _ = writeln!(stderr, "{line}");
    let _ = stderr.flush();
}

/// Whether an assertion's condition holds; TF's error for one that is not a scalar.
fn condition_holds(condition: &Tensor) -> Result<bool> {
    // TF's `IsLegacyScalar`: rank 0, or one dimension of size 1.
    let legacy_scalar = condition.rank() == 0 || (condition.rank() == 1 && condition.shape()[0] == 1);
    if !legacy_scalar {
        return Err(Error::InvalidArgument(format!(
            "In[0] should be a scalar: [{}]",
            condition.shape().iter().map(usize::to_string).collect::<Vec<_>>().join(",")
        )));
    }
    Ok(condition.to_f64_vec().first().is_some_and(|&v| v != 0.0))
}

/// TF's `AssertOp` message.
pub fn assert_message(data: &[AssertItem], tensors: &[&Tensor], summarize: i64) -> String {
    let mut tensors = tensors.iter();
    let items: Vec<String> = data
        .iter()
        .map(|item| match item {
            AssertItem::Text(text) => format!("[{text}]"),
            AssertItem::Tensor => {
                format!("[{}]", tensors.next().map_or(String::new(), |t| summarize_value(t, summarize)))
            }
        })
        .collect();
    format!("assertion failed: {}", items.join(" "))
}

/// TF's `CheckNumerics`: "{message} : Tensor had NaN values" (or Inf, or Inf and NaN).
fn check_numerics(x: &Tensor, message: &str) -> Result<()> {
    let values = x.to_f64_vec();
    let nan = values.iter().any(|v| v.is_nan());
    let inf = values.iter().any(|v| v.is_infinite());
    let what = match (inf, nan) {
        (false, false) => return Ok(()),
        (true, true) => "Inf and NaN",
        (true, false) => "Inf",
        (false, true) => "NaN",
    };
    Err(Error::InvalidArgument(format!("{message} : Tensor had {what} values")))
}

impl Graph {
    /// Adds a debugging op node; checks its inputs as TF does when it builds the op.
    pub fn debug_op(&mut self, op: DebugOp, inputs: Vec<NodeId>, name: Option<&str>) -> Result<NodeId> {
        self.check_inputs(&inputs)?;
        let Some(&first) = inputs.first() else {
            return Err(Error::InvalidArgument(format!("{} needs an input", op.type_name())));
        };
        let node = self.node(first)?;
        let (dtype, shape) = (node.dtype, node.shape.clone());
        match &op {
            DebugOp::Print { .. } => {}
            DebugOp::Assert { data, .. } => {
                if dtype != DType::Bool {
                    return Err(Error::DType(format!(
                        "Input 'condition' of 'Assert' Op has type {} that does not match expected type of bool.",
                        dtype.name()
                    )));
                }
                let tensors = data.iter().filter(|d| **d == AssertItem::Tensor).count();
                if tensors != inputs.len() - 1 {
                    return Err(Error::InvalidArgument(format!(
                        "Assert: its data names {tensors} tensors but it has {} tensor inputs",
                        inputs.len() - 1
                    )));
                }
            }
            DebugOp::CheckNumerics { .. } => {
                if !dtype.is_float() {
                    return Err(Error::DType(format!(
                        "Value passed to parameter 'tensor' has DataType {} not in list of allowed values: \
                         float32, float64",
                        dtype.name()
                    )));
                }
            }
        }
        let (dtype, shape) = if op.has_value() { (dtype, shape) } else { (DType::Bool, Some(vec![])) };
        let base = op.type_name().to_string();
        self.push(NodeKind::Debug(op), inputs, Some(name.unwrap_or(&base)), dtype, shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::session::{RunHooks, Session};
    use crate::graph::AssignMode;
    use parking_lot::RwLock;
    use std::sync::Arc;

    fn run(session: &Session, fetches: &[NodeId]) -> Result<Vec<Option<Tensor>>> {
        let mut no_check = || Ok(());
        session.run(fetches, &[], vec![], RunHooks { between_steps: &mut no_check, trace: None })
    }

    #[test]
    fn a_false_assertion_fails_the_run_with_tf_message_and_stores_no_assignment() {
        let mut graph = Graph::new();
        let (var, read) = graph.variable(DType::F64, vec![], Some("v"));
        let one = graph.constant(Tensor::scalar(1.0, DType::F64), None);
        let init = graph.assign(var, AssignMode::Set, false, one, None).unwrap();
        let bump = graph.assign(var, AssignMode::Add, false, one, None).unwrap();
        let no = graph.constant(Tensor::scalar(0.0, DType::Bool), None);
        let shown = graph.constant(Tensor::from_vec(vec![1i32, 2, 3, 4], vec![2, 2]).unwrap(), None);
        let data = vec![AssertItem::Text("x is".into()), AssertItem::Tensor];
        let check = graph.debug_op(DebugOp::Assert { summarize: 3, data }, vec![no, shown], None).unwrap();
        let session = Session::new(Arc::new(RwLock::new(graph)));
        run(&session, &[init]).unwrap();
        let err = run(&session, &[bump, check]).err().unwrap();
        assert!(matches!(&err, Error::InvalidArgument(m) if m == "assertion failed: [x is] [[1 2][3...]...]"), "{err}");
        assert_eq!(run(&session, &[read]).unwrap()[0].as_ref().unwrap().to_f64_vec(), [1.0]);
    }

    #[test]
    fn first_n_counts_the_runs_of_each_session() {
        let mut graph = Graph::new();
        let x = graph.constant(Tensor::scalar(2.0, DType::F32), None);
        let op = DebugOp::Print { message: "x ".into(), first_n: Some(2), summarize: 3 };
        let printed = graph.debug_op(op, vec![x, x], None).unwrap();
        let graph = Arc::new(RwLock::new(graph));
        let session = Session::new(graph.clone());
        for _ in 0..3 {
            assert_eq!(run(&session, &[printed]).unwrap()[0].as_ref().unwrap().to_f64_vec(), [2.0]);
        }
        assert_eq!(session.print_counts.lock()[&printed], 2);
        let other = Session::new(graph);
        run(&other, &[printed]).unwrap();
        assert_eq!(other.print_counts.lock()[&printed], 1);
    }

    #[test]
    fn check_numerics_names_what_it_found() {
        let values = Tensor::from_vec(vec![1.0f32, f32::INFINITY, f32::NAN], vec![3]).unwrap();
        let err = check_numerics(&values, "m").unwrap_err().to_string();
        assert_eq!(err, "m : Tensor had Inf and NaN values");
        assert!(check_numerics(&Tensor::from_vec(vec![1.0f64], vec![1]).unwrap(), "m").is_ok());
    }
}
