//! A session: the values of a graph's variables, its cached plans, and runs.
//! A run reads a snapshot of the variables taken when it starts; it stores its
//! assignments only when it has succeeded, and applies in-place updates (the
//! plan's commit phase) with the variables locked, so no other run sees them
//! half done.

use super::executor::{start, RunContext};
use super::plan::{compile, Plan};
use super::{fmt_partial, Graph, NodeId, VarId};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::Arc;

struct SessionState {
    /// Shared with running steps as a snapshot. Stores (by runs, restores, close)
    /// copy it first only while another run still reads the old values.
    variables: Arc<Vec<Option<Tensor>>>,
    random_draws: HashMap<NodeId, u64>,
    closed: bool,
}

fn store_variable(variables: &mut Arc<Vec<Option<Tensor>>>, var: VarId, value: Tensor) {
    let variables = Arc::make_mut(variables);
    if variables.len() <= var {
        variables.resize(var + 1, None);
    }
    variables[var] = Some(value);
}

type PlanKey = (Vec<NodeId>, Vec<NodeId>);

pub struct Session {
    graph: Arc<RwLock<Graph>>,
    state: Mutex<SessionState>,
    plans: Mutex<HashMap<PlanKey, Arc<Plan>>>,
}

/// What a run calls back into: between steps, and for each step's timing.
pub struct RunHooks<'a> {
    /// Called between steps (outside the commit phase); an error stops the run.
    pub between_steps: &'a mut dyn FnMut() -> Result<()>,
    /// When set, receives (step name, op type, seconds) for every step run.
    pub trace: Option<&'a mut Vec<(String, String, f64)>>,
}

fn check_feed_shape(graph: &Graph, node: NodeId, value: &Tensor) -> Result<()> {
    let n = graph.node(node)?;
    let fits = match &n.shape {
        None => true,
        Some(dims) => {
            dims.len() == value.rank() && dims.iter().zip(value.shape()).all(|(d, &v)| d.is_none_or(|d| d == v))
        }
    };
    if !fits {
        let got: Vec<String> = value.shape().iter().map(|d| d.to_string()).collect();
        let got = if got.len() == 1 { format!("({},)", got[0]) } else { format!("({})", got.join(", ")) };
        return Err(Error::InvalidArgument(format!(
            "Cannot feed value of shape {got} for Tensor '{}:0', which has shape '{}'",
            n.name,
            fmt_partial(&n.shape)
        )));
    }
    Ok(())
}

impl Session {
    pub fn new(graph: Arc<RwLock<Graph>>) -> Session {
        Session {
            graph,
            state: Mutex::new(SessionState {
                variables: Arc::new(vec![]),
                random_draws: HashMap::new(),
                closed: false,
            }),
            plans: Mutex::new(HashMap::new()),
        }
    }

    fn plan(&self, fetches: &[NodeId], feeds: &[NodeId]) -> Result<Arc<Plan>> {
        let key = (fetches.to_vec(), feeds.to_vec());
        if let Some(plan) = self.plans.lock().get(&key) {
            return Ok(plan.clone());
        }
        let plan = Arc::new(compile(&self.graph.read(), fetches, feeds)?);
        self.plans.lock().insert(key, plan.clone());
        Ok(plan)
    }

    pub fn check_open(&self) -> Result<()> {
        if self.state.lock().closed {
            return Err(Error::FailedPrecondition("Attempted to use a closed Session.".into()));
        }
        Ok(())
    }

    /// Runs the fetches with `feed_values` (already of each placeholder's dtype)
    /// for the `feeds`. Returns one value (or None, for ops without one) per fetch.
    pub fn run(
        &self,
        fetches: &[NodeId],
        feeds: &[NodeId],
        feed_values: Vec<Tensor>,
        hooks: RunHooks<'_>,
    ) -> Result<Vec<Option<Tensor>>> {
        self.check_open()?;
        {
            let graph = self.graph.read();
            for (&node, value) in feeds.iter().zip(&feed_values) {
                check_feed_shape(&graph, node, value)?;
            }
            for &f in fetches {
                graph.node(f)?;
            }
        }
        let plan = self.plan(fetches, feeds)?;
        let (snapshot, mut draws) = {
            let state = self.state.lock();
            // Draw counts are copied only for plans that draw seeded random numbers.
            let draws = if plan.draws_random { state.random_draws.clone() } else { HashMap::new() };
            (state.variables.clone(), draws)
        };
        let RunHooks { between_steps, mut trace } = hooks;
        let run = {
            let mut ctx = RunContext {
                feeds: feed_values,
                variables: &snapshot,
                random_draws: &mut draws,
                between_steps,
                trace: trace.as_deref_mut(),
            };
            start(&plan, &mut ctx)?
        };
        // This run's snapshot must not count as a reader of the values it may update in place.
        drop(snapshot);
        let mut state = self.state.lock();
        if state.closed {
            return Err(Error::FailedPrecondition("the Session was closed while running".into()));
        }
        let result = run.commit(Some(&mut state.variables), trace)?;
        for (var, value) in result.assigns {
            store_variable(&mut state.variables, var, value);
        }
        if plan.draws_random {
            state.random_draws = draws;
        }
        Ok(result.fetched)
    }

    pub fn close(&self) {
        let mut state = self.state.lock();
        state.closed = true;
        state.variables = Arc::new(vec![]);
        self.plans.lock().clear();
    }

    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// The variable's current value (None before its initializer ran).
    pub fn variable_value(&self, var: VarId) -> Result<Option<Tensor>> {
        self.check_open()?;
        Ok(self.state.lock().variables.get(var).cloned().flatten())
    }

    /// Replaces the variable's value (a restore); the value must match its dtype and shape.
    pub fn set_variable_value(&self, var: VarId, value: Tensor) -> Result<()> {
        self.check_open()?;
        let (dtype, shape) = {
            let g = self.graph.read();
            let v = g.variables.get(var).ok_or_else(|| Error::InvalidArgument(format!("no variable {var}")))?;
            (v.dtype, v.shape.clone())
        };
        if value.dtype() != dtype || value.shape() != shape.as_slice() {
            return Err(Error::InvalidArgument(format!(
                "cannot restore a {} value of shape {:?} into a {} variable of shape {:?}",
                value.dtype().name(),
                value.shape(),
                dtype.name(),
                shape
            )));
        }
        store_variable(&mut self.state.lock().variables, var, value);
        Ok(())
    }
}
