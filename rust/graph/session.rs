//! A session: the values of a graph's variables, its cached plans, and runs.
//! A run reads a snapshot of the variables taken when it starts; it stores its
//! assignments only when it has succeeded, and applies in-place updates (the
//! plan's commit phase) with the variables locked, so no other run sees them
//! half done. Runs of plans that assign a variable with `use_locking` hold that
//! variable's lock from before they read the variables until they have stored
//! their assignments, so such updates of one variable happen one at a time.

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

/// How many compiled plans a session keeps, one per set of fetches and feeds; when
/// a new one is compiled beyond this, the least recently used is dropped (with the
/// buffers it keeps between runs). Running a dropped plan's fetches again compiles it again.
pub const PLAN_CACHE_CAPACITY: usize = 64;

/// The compiled plans, each with the tick of its last use.
#[derive(Default)]
struct PlanCache {
    plans: HashMap<PlanKey, (Arc<Plan>, u64)>,
    clock: u64,
    /// The graph's count of undone edits when the plans were compiled.
    undone_edits: u64,
}

impl PlanCache {
    /// Drops every plan when the graph has undone an edit since they were compiled
    /// (their node ids may name other nodes now).
    fn forget_if_undone(&mut self, undone_edits: u64) {
        if undone_edits != self.undone_edits {
            self.plans.clear();
            self.undone_edits = undone_edits;
        }
    }

    fn get(&mut self, key: &PlanKey) -> Option<Arc<Plan>> {
        self.clock += 1;
        let (plan, last_used) = self.plans.get_mut(key)?;
        *last_used = self.clock;
        Some(plan.clone())
    }

    fn insert(&mut self, key: PlanKey, plan: Arc<Plan>) {
        if self.plans.len() >= PLAN_CACHE_CAPACITY && !self.plans.contains_key(&key) {
            let oldest = self.plans.iter().min_by_key(|(_, (_, last_used))| *last_used).map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                self.plans.remove(&oldest);
            }
        }
        self.clock += 1;
        self.plans.insert(key, (plan, self.clock));
    }
}

pub struct Session {
    graph: Arc<RwLock<Graph>>,
    state: Mutex<SessionState>,
    plans: Mutex<PlanCache>,
    /// One lock per variable, for the runs that assign it with `use_locking`.
    variable_locks: Mutex<Vec<Arc<Mutex<()>>>>,
    /// How many times each `Print` with a `first_n` ran in this session.
    pub(super) print_counts: super::debug_ops::PrintCounts,
}

/// How long a run waits for a variable's lock before it checks for Ctrl-C again.
const LOCK_WAIT_SLICE: std::time::Duration = std::time::Duration::from_millis(20);

/// Takes every lock, in order (plans list their variables in increasing order, so
/// two runs never wait for each other's locks); `between_waits` may stop the wait.
fn lock_all<'l>(
    locks: &'l [Arc<Mutex<()>>],
    between_waits: &mut dyn FnMut() -> Result<()>,
) -> Result<Vec<parking_lot::MutexGuard<'l, ()>>> {
    let mut held = Vec::with_capacity(locks.len());
    for lock in locks {
        loop {
            if let Some(guard) = lock.try_lock_for(LOCK_WAIT_SLICE) {
                held.push(guard);
                break;
            }
            between_waits()?;
        }
    }
    Ok(held)
}

fn check_feeds_distinct(graph: &Graph, feeds: &[NodeId]) -> Result<()> {
    for (i, node) in feeds.iter().enumerate() {
        if feeds[..i].contains(node) {
            return Err(Error::InvalidArgument(format!(
                "placeholder '{}:0' is fed twice in one run; feed each placeholder once",
                graph.node(*node)?.name
            )));
        }
    }
    Ok(())
}

/// What a run calls back into: between steps, and for each step's timing.
pub struct RunHooks<'a> {
    /// Called between steps (outside the commit phase); an error stops the run.
    pub between_steps: &'a mut dyn FnMut() -> Result<()>,
    /// When set, receives a record of every step run (its time and the memory it stores).
    pub trace: Option<&'a mut Vec<super::executor::StepRecord>>,
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
            plans: Mutex::new(PlanCache::default()),
            variable_locks: Mutex::new(vec![]),
            print_counts: Mutex::new(HashMap::new()),
        }
    }

    fn plan(&self, fetches: &[NodeId], feeds: &[NodeId], undone_edits: u64) -> Result<Arc<Plan>> {
        let key = (fetches.to_vec(), feeds.to_vec());
        {
            let mut plans = self.plans.lock();
            plans.forget_if_undone(undone_edits);
            if let Some(plan) = plans.get(&key) {
                return Ok(plan);
            }
        }
        let (plan, compiled_at) = {
            let graph = self.graph.read();
            (Arc::new(compile(&graph, fetches, feeds)?), graph.undone_edits())
        };
        let mut plans = self.plans.lock();
        plans.forget_if_undone(compiled_at);
        plans.insert(key, plan.clone());
        Ok(plan)
    }

    /// How many compiled plans the session holds (at most `PLAN_CACHE_CAPACITY`).
    pub fn cached_plans(&self) -> usize {
        self.plans.lock().plans.len()
    }

    /// The locks of these variables, created on first use.
    fn variable_locks(&self, vars: &[VarId]) -> Vec<Arc<Mutex<()>>> {
        if vars.is_empty() {
            return Vec::new();
        }
        let mut locks = self.variable_locks.lock();
        if let Some(&last) = vars.last() {
            if locks.len() <= last {
                locks.resize_with(last + 1, Default::default);
            }
        }
        vars.iter().map(|&v| locks[v].clone()).collect()
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
        let undone_edits = {
            let graph = self.graph.read();
            check_feeds_distinct(&graph, feeds)?;
            for (&node, value) in feeds.iter().zip(&feed_values) {
                check_feed_shape(&graph, node, value)?;
            }
            for &f in fetches {
                graph.node(f)?;
            }
            graph.undone_edits()
        };
        let plan = self.plan(fetches, feeds, undone_edits)?;
        let RunHooks { between_steps, mut trace } = hooks;
        // Held until this run's assignments are stored.
        let locks = self.variable_locks(&plan.locked_variables);
        let _held = lock_all(&locks, between_steps)?;
        let (snapshot, mut draws) = {
            let state = self.state.lock();
            // Draw counts are copied only for plans that draw seeded random numbers.
            let draws = if plan.draws_random { state.random_draws.clone() } else { HashMap::new() };
            (state.variables.clone(), draws)
        };
        let run = {
            let mut ctx = RunContext {
                feeds: feed_values,
                variables: &snapshot,
                random_draws: &mut draws,
                between_steps,
                trace: trace.as_deref_mut(),
                print_counts: Some(&self.print_counts),
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
        self.plans.lock().plans.clear();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::{DType, Scalar};
    use crate::graph::AssignMode;
    use crate::kernels::elementwise::{ScalarOp, UnaryOp};
    use crate::op::Op;

    fn run(
        session: &Session,
        fetches: &[NodeId],
        feeds: &[NodeId],
        values: Vec<Tensor>,
    ) -> Result<Vec<Option<Tensor>>> {
        let mut no_check = || Ok(());
        session.run(fetches, feeds, values, RunHooks { between_steps: &mut no_check, trace: None })
    }

    /// A graph of `n` nodes `x * i`, each a fetch set of its own.
    fn scaled_copies(n: usize) -> (Arc<RwLock<Graph>>, NodeId, Vec<NodeId>) {
        let mut graph = Graph::new();
        let x = graph.placeholder(DType::F64, Some(vec![Some(2)]), Some("x"));
        let nodes = (0..n)
            .map(|i| graph.op(Op::Scalar(ScalarOp::Mul, Scalar::Float(i as f64)), vec![x], None).unwrap())
            .collect();
        (Arc::new(RwLock::new(graph)), x, nodes)
    }

    #[test]
    fn the_plan_cache_drops_the_least_recently_used_plan() {
        let (graph, x, nodes) = scaled_copies(PLAN_CACHE_CAPACITY + 1);
        let mut cache = PlanCache::default();
        let key = |n: NodeId| (vec![n], vec![x]);
        for &n in &nodes[..PLAN_CACHE_CAPACITY] {
            cache.insert(key(n), Arc::new(compile(&graph.read(), &[n], &[x]).unwrap()));
        }
        assert!(cache.get(&key(nodes[0])).is_some(), "the first plan is now the most recently used");
        let last = nodes[PLAN_CACHE_CAPACITY];
        cache.insert(key(last), Arc::new(compile(&graph.read(), &[last], &[x]).unwrap()));
        assert_eq!(cache.plans.len(), PLAN_CACHE_CAPACITY);
        assert!(cache.get(&key(nodes[0])).is_some());
        assert!(cache.get(&key(nodes[1])).is_none(), "the least recently used plan must go");
        assert!(cache.get(&key(last)).is_some());
    }

    #[test]
    fn plans_compiled_before_an_undone_edit_of_the_graph_are_dropped() {
        let (graph, x, nodes) = scaled_copies(1);
        let session = Session::new(graph.clone());
        let feed = || vec![Tensor::from_vec(vec![1.0f64, 2.0], vec![2]).unwrap()];
        assert!(graph.write().begin_edit());
        let doomed = graph.write().op(Op::Scalar(ScalarOp::Mul, Scalar::Float(5.0)), vec![x], None).unwrap();
        assert_eq!(run(&session, &[doomed], &[x], feed()).unwrap()[0].as_ref().unwrap().to_f64_vec(), [5.0, 10.0]);
        graph.write().end_edit(true).unwrap();
        // A new node takes the undone node's id: it must not run the old plan.
        let reused = graph.write().op(Op::Scalar(ScalarOp::Mul, Scalar::Float(-1.0)), vec![x], None).unwrap();
        assert_eq!(reused, doomed);
        assert_eq!(run(&session, &[reused], &[x], feed()).unwrap()[0].as_ref().unwrap().to_f64_vec(), [-1.0, -2.0]);
        assert_eq!(run(&session, &nodes, &[x], feed()).unwrap()[0].as_ref().unwrap().to_f64_vec(), [0.0, 0.0]);
    }

    #[test]
    fn a_session_holds_at_most_the_capacity_of_plans_and_still_runs_dropped_ones() {
        let (graph, x, nodes) = scaled_copies(PLAN_CACHE_CAPACITY * 2);
        let session = Session::new(graph);
        let feed = || vec![Tensor::from_vec(vec![1.0f64, 2.0], vec![2]).unwrap()];
        for (i, &n) in nodes.iter().enumerate() {
            let value = run(&session, &[n], &[x], feed()).unwrap()[0].clone().unwrap();
            assert_eq!(value.to_f64_vec(), vec![i as f64, 2.0 * i as f64]);
            assert!(session.cached_plans() <= PLAN_CACHE_CAPACITY);
        }
        let again = run(&session, &[nodes[1]], &[x], feed()).unwrap()[0].clone().unwrap();
        assert_eq!(again.to_f64_vec(), vec![1.0, 2.0]);
    }

    #[test]
    fn a_locking_assign_add_from_several_threads_loses_no_update() {
        let mut graph = Graph::new();
        let (var, read) = graph.variable(DType::F64, vec![], Some("v"));
        let zero = graph.constant(Tensor::scalar(0.0, DType::F64), None);
        let init = graph.assign(var, AssignMode::Set, false, zero, None).unwrap();
        let big = graph.constant(Tensor::from_vec(vec![0.5f64; 200_000], vec![200_000]).unwrap(), None);
        let slow = graph.op(Op::Unary(UnaryOp::Tanh), vec![big], None).unwrap();
        let sum = graph.op(Op::Sum { dims: None, keepdim: false }, vec![slow], None).unwrap();
        let nothing = graph.op(Op::Scalar(ScalarOp::Mul, Scalar::Float(0.0)), vec![sum], None).unwrap();
        let one = graph.op(Op::Scalar(ScalarOp::Add, Scalar::Float(1.0)), vec![nothing], None).unwrap();
        let add = graph.assign(var, AssignMode::Add, true, one, None).unwrap();
        let session = Session::new(Arc::new(RwLock::new(graph)));
        run(&session, &[init], &[], vec![]).unwrap();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..25 {
                        run(&session, &[add], &[], vec![]).unwrap();
                    }
                });
            }
        });
        let value = run(&session, &[read], &[], vec![]).unwrap()[0].clone().unwrap();
        assert_eq!(value.to_f64_vec(), vec![100.0]);
    }

    #[test]
    fn a_placeholder_fed_twice_is_refused() {
        let (graph, x, nodes) = scaled_copies(1);
        let session = Session::new(graph);
        let value = || Tensor::from_vec(vec![1.0f64, 2.0], vec![2]).unwrap();
        let err = run(&session, &nodes, &[x, x], vec![value(), value()]).unwrap_err().to_string();
        assert!(err.contains("'x:0' is fed twice"), "{err}");
    }
}
