//! The plan's commit phase: fused SGD updates that may write into their variable's
//! memory run after every other step, with their assigns (see `Run::commit`).

use super::fusion::EnabledFusions;
use super::plan::{Step, StepKind};
use super::{AssignMode, VarId};
use crate::error::Result;
use std::collections::HashMap;

/// Marks the fused updates `v.assign(v - lr·a·b)` that may write into v's memory,
/// and returns their steps with their assigns'. That needs the update's only reader
/// to be the assign, nothing but groups to read the assign, and no other assign of
/// v in the plan (whose order against this one would then change).
pub(super) fn mark_in_place_updates(steps: &mut [Step]) -> Vec<usize> {
    let mut readers: Vec<Vec<usize>> = vec![vec![]; steps.len()];
    let mut assigns_of: HashMap<VarId, usize> = HashMap::new();
    for (s, step) in steps.iter().enumerate() {
        for &i in &step.inputs {
            readers[i].push(s);
        }
        let assigned = match step.kind {
            StepKind::Assign { var, .. } => vec![var],
            StepKind::ApplyAdam { vars } => vars.all().to_vec(),
            _ => vec![],
        };
        for var in assigned {
            *assigns_of.entry(var).or_insert(0) += 1;
        }
    }
    let mut deferred = vec![];
    for assign in 0..steps.len() {
        let (StepKind::Assign { var, mode: AssignMode::Set }, &[update]) =
            (&steps[assign].kind, &steps[assign].inputs[..])
        else {
            continue;
        };
        let var = *var;
        let reads_var = |s: usize| matches!(steps[s].kind, StepKind::ReadVar(v) if v == var);
        let is_update_of_var =
            matches!(steps[update].kind, StepKind::MatMulUpdate { .. }) && reads_var(steps[update].inputs[0]);
        let only_groups_read_assign = readers[assign].iter().all(|&r| matches!(steps[r].kind, StepKind::NoValue));
        if is_update_of_var && readers[update] == [assign] && only_groups_read_assign && assigns_of[&var] == 1 {
            if let StepKind::MatMulUpdate { in_place_of, .. } = &mut steps[update].kind {
                *in_place_of = Some(var);
            }
            deferred.extend([update, assign]);
        }
    }
    deferred.sort_unstable();
    deferred
}

/// Reorders the steps so that `deferred` (sorted) come last, in their order, and
/// renumbers every reference to a step.
pub(super) fn move_to_end(
    steps: Vec<Step>,
    deferred: &[usize],
    fetch_steps: &mut [(usize, bool)],
) -> Result<Vec<Step>> {
    if deferred.is_empty() {
        return Ok(steps);
    }
    let is_deferred = |s: usize| deferred.binary_search(&s).is_ok();
    let order: Vec<usize> = (0..steps.len()).filter(|&s| !is_deferred(s)).chain(deferred.iter().copied()).collect();
    let mut new_index = vec![0; steps.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    for (s, _) in fetch_steps.iter_mut() {
        *s = new_index[*s];
    }
    let mut slots: Vec<Option<Step>> = steps.into_iter().map(Some).collect();
    order
        .iter()
        .filter_map(|&old| slots[old].take())
        .map(|mut step| {
            step.inputs.iter_mut().for_each(|i| *i = new_index[*i]);
            step.kind.renumber_slots(|slot| new_index[slot])?;
            Ok(step)
        })
        .collect()
}

/// A fetched assign of a fused update's value would copy that value for the
/// caller after the run; instead the update stores the copy as it computes.
pub(super) fn mark_fetched_updates(steps: &mut [Step], fetch_steps: &[(usize, bool)], enabled: &EnabledFusions) {
    if !enabled.allows("fetch_copy") {
        return;
    }
    for &(fetched, _) in fetch_steps {
        let Some(update) = steps[fetched].assigned_value() else { continue };
        if let StepKind::MatMulUpdate { copy_for_fetch, .. } = &mut steps[update].kind {
            *copy_for_fetch = true;
        }
    }
}
