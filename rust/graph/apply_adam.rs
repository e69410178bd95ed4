//! TF1's `ApplyAdam` node: one fused Adam step of a variable and its two slots,
//! whose three new values are stored when the run succeeds.

use super::{fmt_partial, known, may_be, Graph, NodeId, NodeKind, VarId};
use crate::error::{Error, Result};

/// The variables one `ApplyAdam` updates: the variable and its first and second moments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdamVars {
    pub var: VarId,
    pub m: VarId,
    pub v: VarId,
}

impl AdamVars {
    pub fn all(&self) -> [VarId; 3] {
        [self.var, self.m, self.v]
    }
}

/// The names of `ApplyAdam`'s scalar inputs, in TF's order (after var, m and v's reads);
/// the gradient comes last.
pub const SCALAR_INPUTS: [&str; 6] = ["beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"];

impl Graph {
    /// An `ApplyAdam` node: its inputs are the reads of var, m and v, then `scalars` (see
    /// `SCALAR_INPUTS`), then `grad`, as TF's `apply_adam`; its value is var's new value.
    pub fn apply_adam(
        &mut self,
        vars: AdamVars,
        scalars: [NodeId; 6],
        grad: NodeId,
        locking: bool,
        name: Option<&str>,
    ) -> Result<NodeId> {
        let info = |var: VarId| {
            self.variables
                .get(var)
                .cloned()
                .ok_or_else(|| Error::InvalidArgument(format!("ApplyAdam: variable {var} is not in this graph")))
        };
        let (target, m, v) = (info(vars.var)?, info(vars.m)?, info(vars.v)?);
        if vars.var == vars.m || vars.var == vars.v || vars.m == vars.v {
            return Err(Error::InvalidArgument(format!(
                "ApplyAdam of '{}': var, m and v must be three different variables",
                target.name
            )));
        }
        for slot in [&m, &v] {
            if slot.dtype != target.dtype || slot.shape != target.shape {
                return Err(Error::InvalidArgument(format!(
                    "ApplyAdam of '{}': the slot '{}' is {} {} but the variable is {} {}",
                    target.name,
                    slot.name,
                    slot.dtype.name(),
                    fmt_partial(&known(&slot.shape)),
                    target.dtype.name(),
                    fmt_partial(&known(&target.shape))
                )));
            }
        }
        self.check_inputs(&scalars)?;
        self.check_inputs(&[grad])?;
        for (&input, what) in scalars.iter().zip(SCALAR_INPUTS) {
            let node = &self.nodes[input];
            let is_scalar = node.shape.as_ref().is_none_or(|dims| dims.is_empty());
            if node.dtype != target.dtype || !is_scalar {
                return Err(Error::InvalidArgument(format!(
                    "ApplyAdam of '{}': {what} must be a {} scalar, got {} {}",
                    target.name,
                    target.dtype.name(),
                    node.dtype.name(),
                    fmt_partial(&node.shape)
                )));
            }
        }
        let g = &self.nodes[grad];
        if g.dtype != target.dtype || !may_be(&g.shape, &target.shape) {
            return Err(Error::InvalidArgument(format!(
                "ApplyAdam of '{}': var and grad must have the same dtype and shape, but var is {} {} and grad is {} {}",
                target.name,
                target.dtype.name(),
                fmt_partial(&known(&target.shape)),
                g.dtype.name(),
                fmt_partial(&g.shape)
            )));
        }
        let mut inputs = vec![target.read_node, m.read_node, v.read_node];
        inputs.extend(scalars);
        inputs.push(grad);
        let kind = NodeKind::ApplyAdam { vars, locking };
        self.push(kind, inputs, Some(name.unwrap_or("ApplyAdam")), target.dtype, known(&target.shape))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::graph::executor::execute_with;
    use crate::graph::plan::compile;
    use crate::tensor::Tensor;

    fn scalar(graph: &mut Graph, value: f64) -> NodeId {
        graph.constant(Tensor::scalar(value, DType::F64), None)
    }

    #[test]
    fn one_step_matches_tf1s_formula_and_assigns_var_m_and_v() {
        let mut graph = Graph::new();
        let (var, _) = graph.variable(DType::F64, vec![2], Some("w"));
        let (m, _) = graph.variable(DType::F64, vec![2], Some("w/Adam"));
        let (v, _) = graph.variable(DType::F64, vec![2], Some("w/Adam_1"));
        let values = [0.9, 0.999, 0.1, 0.9, 0.999, 1e-8];
        let scalars = values.map(|x| scalar(&mut graph, x));
        let grad = graph.constant(Tensor::from_vec(vec![0.5f64, -2.0], vec![2]).unwrap(), None);
        let vars = AdamVars { var, m, v };
        let node = graph.apply_adam(vars, scalars, grad, false, None).unwrap();
        assert_eq!(graph.nodes[node].kind.type_name(&graph.nodes[node].shape), "ApplyAdam");
        let plan = compile(&graph, &[node], &[]).unwrap();
        let variables = vec![
            Some(Tensor::from_vec(vec![1.0f64, 1.0], vec![2]).unwrap()),
            Some(Tensor::from_vec(vec![0.0f64, 0.0], vec![2]).unwrap()),
            Some(Tensor::from_vec(vec![0.0f64, 0.0], vec![2]).unwrap()),
        ];
        let result = execute_with(&plan, vec![], &variables).unwrap();
        let assigned: Vec<VarId> = result.assigns.iter().map(|(var, _)| *var).collect();
        assert_eq!(assigned, vec![var, m, v]);
        let lr_t = 0.1 * (1.0f64 - 0.999).sqrt() / (1.0 - 0.9);
        for (i, g) in [0.5f64, -2.0].into_iter().enumerate() {
            let (m1, v1) = (0.1 * g, 0.001 * g * g);
            let expected = 1.0 - lr_t * m1 / (v1.sqrt() + 1e-8);
            assert!((result.assigns[0].1.to_f64_vec()[i] - expected).abs() < 1e-12);
            assert!((result.assigns[1].1.to_f64_vec()[i] - m1).abs() < 1e-15);
            assert!((result.assigns[2].1.to_f64_vec()[i] - v1).abs() < 1e-15);
        }
        assert_eq!(variables[0].as_ref().unwrap().to_f64_vec(), vec![1.0, 1.0], "the run's inputs are left alone");
    }

    #[test]
    fn slots_of_another_shape_or_a_vector_lr_are_refused() {
        let mut graph = Graph::new();
        let (var, _) = graph.variable(DType::F64, vec![2], Some("w"));
        let (m, _) = graph.variable(DType::F64, vec![3], Some("m"));
        let (v, _) = graph.variable(DType::F64, vec![2], Some("v"));
        let scalars = [0.9, 0.999, 0.1, 0.9, 0.999, 1e-8].map(|x| scalar(&mut graph, x));
        let grad = graph.constant(Tensor::from_vec(vec![0.5f64, -2.0], vec![2]).unwrap(), None);
        let err = graph.apply_adam(AdamVars { var, m, v }, scalars, grad, false, None).unwrap_err();
        assert!(err.to_string().contains("the slot 'm'"), "{err}");
        let (m2, _) = graph.variable(DType::F64, vec![2], Some("m2"));
        let mut bad = scalars;
        bad[2] = grad;
        let err = graph.apply_adam(AdamVars { var, m: m2, v }, bad, grad, false, None).unwrap_err();
        assert!(err.to_string().contains("lr must be a float64 scalar"), "{err}");
    }
}
