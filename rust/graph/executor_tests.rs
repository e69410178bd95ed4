//! Tests of the executor: value slots, in-place updates, the memory plan, allocations per run.

use super::*;
use crate::dtype::{DType, Scalar};
use crate::graph::plan::compile;
use crate::graph::Graph;
use crate::kernels::elementwise::ScalarOp;

/// Runs a plan that reads no variables on one fed value.
fn run_fed(plan: &Plan, feed: Tensor) -> RunResult {
    execute_with(plan, vec![feed], &[]).unwrap()
}

/// A chain x → x+1 → (x+1)+1 → ... of 50 adds, run twice on the same plan.
#[test]
fn a_cached_plan_reuses_its_value_slots_between_runs() {
    let mut graph = Graph::new();
    let x = graph.placeholder(DType::F64, Some(vec![Some(2)]), Some("x"));
    let one = graph.constant(Tensor::scalar(1.0, DType::F64), None);
    let mut last = x;
    for _ in 0..50 {
        last = graph.op(Op::Binary(BinaryOp::Add), vec![last, one], None).unwrap();
    }
    let plan = compile(&graph, &[last], &[x]).unwrap();
    let run = || {
        let result = run_fed(&plan, Tensor::from_vec(vec![0.5f64, -1.0], vec![2]).unwrap());
        result.fetched[0].as_ref().unwrap().to_f64_vec()
    };
    assert_eq!(run(), vec![50.5, 49.0]);
    let slots = plan.run_state.lock().values.as_ptr();
    assert!(plan.run_state.lock().values.capacity() >= plan.steps.len());
    assert_eq!(run(), vec![50.5, 49.0]);
    assert_eq!(plan.run_state.lock().values.as_ptr(), slots, "the second run allocated new value slots");
    assert!(plan.run_state.lock().values.iter().all(Option::is_none), "values must not outlive their run");
}

/// `v.assign(v - 0.5·a·a)` for a 2×2 variable, compiled with a fed `a`.
fn update_plan() -> (Plan, VarId) {
    let mut graph = Graph::new();
    let (var, read) = graph.variable(DType::F64, vec![2, 2], Some("v"));
    let a = graph.placeholder(DType::F64, Some(vec![Some(2), Some(2)]), Some("a"));
    let product = graph.op(Op::MatMul { transpose_a: false, transpose_b: false }, vec![a, a], None).unwrap();
    let scaled = graph.op(Op::Scalar(ScalarOp::Mul, Scalar::Float(0.5)), vec![product], None).unwrap();
    let new_value = graph.op(Op::Binary(BinaryOp::Sub), vec![read, scaled], None).unwrap();
    let assign = graph.assign(var, AssignMode::Set, false, new_value, None).unwrap();
    let plan = compile(&graph, &[assign], &[a]).unwrap();
    assert_eq!(plan.commit_from, plan.steps.len() - 2, "the update and its assign form the commit phase");
    (plan, var)
}

fn run_update(plan: &Plan, variables: &mut Arc<Vec<Option<Tensor>>>) -> RunResult {
    let snapshot = variables.clone();
    let mut draws = HashMap::new();
    let mut no_check = || Ok(());
    let feeds = vec![Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 1.0], vec![2, 2]).unwrap()];
    let mut ctx = RunContext {
        feeds,
        variables: &snapshot,
        random_draws: &mut draws,
        between_steps: &mut no_check,
        trace: None,
        print_counts: None,
    };
    let run = start(plan, &mut ctx).unwrap();
    drop(snapshot);
    run.commit(Some(variables), None).unwrap()
}

#[test]
fn an_update_writes_into_its_variable_only_when_nothing_else_holds_the_value() {
    let (plan, var) = update_plan();
    let initial = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], vec![2, 2]).unwrap();
    let mut variables = Arc::new(vec![Some(initial.clone())]);
    // `initial` is still held here, so the update must write a new tensor.
    let result = run_update(&plan, &mut variables);
    assert_eq!(initial.to_f64_vec(), vec![1.0, 2.0, 3.0, 4.0]);
    let (_, updated) = &result.assigns[0];
    assert!(!updated.shares_storage(&initial));
    assert_eq!(updated.to_f64_vec(), vec![0.5, 2.0, 3.0, 3.5]);

    Arc::make_mut(&mut variables)[var] = Some(updated.clone());
    drop(result);
    let memory = variables[var].as_ref().unwrap().data_ptr();
    let result = run_update(&plan, &mut variables);
    assert_eq!(result.assigns[0].1.data_ptr(), memory, "the sole holder's memory was not updated in place");
    assert_eq!(result.assigns[0].1.to_f64_vec(), vec![0.0, 2.0, 3.0, 3.0]);
    drop(result);

    // Another run's snapshot still reads the value: it must keep seeing the old one.
    let other_run = variables.clone();
    let result = run_update(&plan, &mut variables);
    assert_ne!(result.assigns[0].1.data_ptr(), memory);
    assert_eq!(other_run[var].as_ref().unwrap().to_f64_vec(), vec![0.0, 2.0, 3.0, 3.0]);
}
/// x → a → b → c → d, each `+ 1`, fed x of `len` elements: a and c share a
/// buffer, and so do b and d.
fn run_chain(plan: &Plan, x: Vec<f64>) -> Vec<f64> {
    let len = x.len();
    let result = run_fed(plan, Tensor::from_vec(x, vec![len]).unwrap());
    result.fetched[0].as_ref().unwrap().to_f64_vec()
}

#[test]
fn the_memory_plan_shares_buffers_between_values_that_do_not_overlap_and_keeps_them() {
    let mut graph = Graph::new();
    let x = graph.placeholder(DType::F64, Some(vec![None]), Some("x"));
    let one = graph.constant(Tensor::scalar(1.0, DType::F64), None);
    let mut last = x;
    for _ in 0..4 {
        last = graph.op(Op::Binary(BinaryOp::Add), vec![last, one], None).unwrap();
    }
    let plan = compile(&graph, &[last], &[x]).unwrap();
    assert_eq!(plan.buffer_count, 2);
    let kept_address = |plan: &Plan| plan.run_state.lock().buffers[0].as_ref().map(Kept::address);
    let taken_by = |x: Vec<f64>, expected: Vec<f64>| {
        let before = buffer_pool::offers_taken();
        assert_eq!(run_chain(&plan, x), expected);
        buffer_pool::offers_taken() - before
    };
    // c takes a's memory and d b's; d leaves with the caller, c's memory stays.
    assert_eq!(taken_by(vec![0.5, -1.0], vec![4.5, 3.0]), 2);
    let first = kept_address(&plan).expect("c's memory is kept for the next run's a");
    // Now a starts in c's memory too.
    assert_eq!(taken_by(vec![1.5, 2.0], vec![5.5, 6.0]), 3);
    assert_eq!(kept_address(&plan), Some(first));
    // Another size: a allocates, and the plan keeps memory of the new size.
    assert_eq!(taken_by(vec![0.0; 5], vec![4.0; 5]), 2);
    // Outputs reuse the headers of released values as well (three per run by now).
    let shells_before = tensor::shells_reused();
    run_chain(&plan, vec![1.0; 5]);
    assert_eq!(tensor::shells_reused() - shells_before, 3);
    let capacity = plan.run_state.lock().buffers[0].as_ref().map(Kept::capacity);
    assert_eq!(capacity, Some(5));
}
/// Counts this thread's allocations, to show what a run of a cached plan makes.
struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn count_allocation() {
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every call goes to the system allocator unchanged; counting allocates nothing.
unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        count_allocation();
        // SAFETY: the caller's contract for `alloc` is passed on to the system allocator unchanged.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        count_allocation();
        // SAFETY: the caller's contract for `alloc_zeroed` is passed on to the system allocator unchanged.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        count_allocation();
        // SAFETY: the caller's contract for `realloc` is passed on to the system allocator unchanged.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on to the system allocator unchanged.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: CountingAllocator = CountingAllocator;

/// Allocations of one run of a cached plan of `links` tanh-then-scale links.
fn allocations_per_run(links: usize) -> usize {
    let mut graph = Graph::new();
    let x = graph.placeholder(DType::F64, Some(vec![Some(300)]), Some("x"));
    let mut last = x;
    for _ in 0..links {
        let t = graph.op(Op::Unary(crate::kernels::elementwise::UnaryOp::Tanh), vec![last], None).unwrap();
        last = graph.op(Op::Scalar(ScalarOp::Mul, Scalar::Float(1.5)), vec![t], None).unwrap();
    }
    let plan = compile(&graph, &[last], &[x]).unwrap();
    let feed = Tensor::from_vec(vec![0.25f64; 300], vec![300]).unwrap();
    let run = || {
        let before = ALLOCATIONS.get();
        let result = run_fed(&plan, feed.clone());
        let made = ALLOCATIONS.get() - before;
        assert!(result.fetched[0].is_some());
        made
    };
    for _ in 0..3 {
        run();
    }
    run()
}

#[test]
fn a_run_of_a_cached_plan_allocates_the_same_whatever_the_number_of_steps() {
    let (short, long) = (allocations_per_run(5), allocations_per_run(40));
    assert_eq!(short, long, "80 steps allocated more than 10 in a run of a cached plan");
    // The feed list, the fetched value (its data and header) and the result's list of fetches.
    assert!(short <= 6, "{short} allocations for a run of a cached plan");
}
