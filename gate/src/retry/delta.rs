//! Delta re-verification: a retry re-runs exactly (a) the items that failed
//! or were not decided last time, (b) the items whose input fingerprint
//! changed, (c) the items that name, through `after`, an item re-run for (a)
//! or (b), and (d) the checks that an item re-run for any reason names
//! through `after`, transitively: their outputs (a build's, a started
//! service) are not in the fingerprint, so a fresh checkout must make them
//! again. An item whose inputs match no file is never carried: nothing
//! shows it still holds. Everything else carries its earlier result
//! forward, citing the bundle that verified it. A page the change touches
//! is captured on every attempt (its design review is asked afresh each
//! time); one it does not touch stays skipped.

use std::collections::{BTreeMap, BTreeSet};

use gate_harness::{Action, ItemKind};
use gate_specs::{CheckGraph, Spec};

use crate::observed::{Observed, Tree};
use crate::plan::{Decision, Plan};
use crate::record::{ItemStatus, RunRecord};

/// The earlier attempt a retry builds on.
#[derive(Debug, Clone)]
pub(crate) struct Previous {
    /// Its record, read from its verified bundle.
    pub record: RunRecord,
    /// sha256 of its bundle's bytes.
    pub bundle_sha256: String,
    /// Its bundle's subjects: file → blake3 when that run looked at it.
    pub subjects: std::collections::BTreeMap<String, String>,
}

/// What an earlier attempt knew of one item.
struct Known<'a> {
    status: ItemStatus,
    digest: &'a str,
    /// What its processes were seen to read.
    observed: Option<&'a Observed>,
    /// Where a passed result came from: that run and its bundle.
    origin: (String, String),
}

fn known(prev: &Previous) -> BTreeMap<&str, Known<'_>> {
    let here = (prev.record.run_id.clone(), prev.bundle_sha256.clone());
    let origin = |from: &Option<String>, bundle: &Option<String>| match (from, bundle) {
        (Some(run), Some(b)) => (run.clone(), b.clone()),
        _ => here.clone(),
    };
    let checks = prev.record.checks.iter().map(|c| {
        (
            c.id.as_str(),
            Known {
                status: c.status,
                digest: c.inputs_digest.as_str(),
                observed: c.observed.as_ref(),
                origin: origin(&c.carried_from, &c.carried_bundle),
            },
        )
    });
    let criteria = prev.record.criteria.iter().map(|c| {
        (
            c.id.as_str(),
            Known {
                status: c.status,
                digest: c.inputs_digest.as_str(),
                observed: c.observed.as_ref(),
                origin: origin(&c.carried_from, &c.carried_bundle),
            },
        )
    });
    checks.chain(criteria).collect()
}

/// Decides, for every item of `plan`, whether this attempt runs it or
/// carries it, against the workspace as `tree` holds it. `full` re-runs
/// everything.
pub(crate) fn apply(
    plan: &mut Plan,
    spec: &Spec,
    tree: Tree<'_>,
    prev: Option<&Previous>,
    full: bool,
    toolchain: Option<&str>,
) {
    // What the plan skips (a page the change does not touch) stays skipped.
    let skipped = |d: &Decision| matches!(d, Decision::Skip { .. });
    // Results earned under another host toolchain (or one not recorded)
    // say nothing of this one.
    let other_toolchain =
        prev.is_some_and(|p| p.record.isolation.toolchain.as_deref() != toolchain);
    let why = if full {
        Some("--full")
    } else if prev.is_none() {
        Some("first attempt")
    } else if other_toolchain {
        Some("the host toolchain changed since the last attempt")
    } else {
        None
    };
    let (Some(prev), None) = (prev, why) else {
        let why = why.unwrap_or_default();
        for item in plan.items.iter_mut().filter(|i| !skipped(&i.decision)) {
            item.decision = Decision::Run {
                why: why.to_owned(),
            };
        }
        return;
    };
    let known = known(prev);
    for item in plan.items.iter_mut().filter(|i| !skipped(&i.decision)) {
        item.decision = match known.get(item.id.as_str()) {
            None => run("new in this attempt"),
            Some(k) if k.status == ItemStatus::Failed => run("failed last time"),
            Some(k) if matches!(k.status, ItemStatus::Skipped | ItemStatus::Unverified) => {
                run("not decided last time")
            }
            Some(k) if k.digest != item.inputs_digest.to_hex() => run("inputs changed"),
            // Nothing shows it still holds.
            Some(_) if !item.unmatched.is_empty() => run(&format!(
                "its input glob `{}` matches no file",
                item.unmatched[0]
            )),
            // Its screenshots are what the design rules are asked about, and
            // they are asked on every attempt.
            Some(_) if item.kind == ItemKind::Page => run("a page is looked at on every attempt"),
            Some(k) => match unobserved(item, k, tree) {
                Some(why) => run(&why),
                None => Decision::Carry {
                    from_run: k.origin.0.clone(),
                    from_bundle: k.origin.1.clone(),
                },
            },
        };
    }
    let fed_by = fed_by(plan, &known);
    rerun_dependents(plan, spec, &fed_by);
    rerun_needed_checks(plan);
}

/// Who wrote what each item read, as its earlier run saw it.
fn fed_by(plan: &Plan, known: &BTreeMap<&str, Known<'_>>) -> BTreeMap<String, Vec<String>> {
    plan.items
        .iter()
        .filter_map(|i| {
            let observed = known.get(i.id.as_str())?.observed?;
            Some((i.id.clone(), observed.fed_by.clone()))
        })
        .collect()
}

/// After the items ran: the carried items whose reads the run changed (an
/// ignored file a re-run item wrote, a file one probed for that a re-run
/// item made), valued again against `after`, are run after all, with what
/// they need and what depends on them as (c) and (d) say. Returns the ids
/// to run now: those newly set to run, and the services they need up
/// again (every service stopped when the items before had run).
pub(crate) fn recheck(
    plan: &mut Plan,
    spec: &Spec,
    prev: &Previous,
    after: Tree<'_>,
) -> BTreeSet<String> {
    let known = known(prev);
    let ran: BTreeSet<String> = plan
        .items
        .iter()
        .filter(|i| i.decision.runs())
        .map(|i| i.id.clone())
        .collect();
    let mut any = false;
    for item in plan.items.iter_mut().filter(|i| i.decision.carries()) {
        let Some(observed) = known.get(item.id.as_str()).and_then(|k| k.observed) else {
            continue;
        };
        if let Some(key) = observed.changed(after).first() {
            item.decision = run(&format!(
                "`{key}`, which it read, was changed by the items this run ran"
            ));
            any = true;
        }
    }
    if !any {
        return BTreeSet::new();
    }
    let fed_by = fed_by(plan, &known);
    rerun_dependents(plan, spec, &fed_by);
    rerun_needed_checks(plan);
    let services = services(plan);
    let mut now: BTreeSet<String> = plan
        .items
        .iter()
        .filter(|i| i.decision.runs() && !ran.contains(&i.id))
        .map(|i| i.id.clone())
        .collect();
    loop {
        let needed: Vec<String> = plan
            .items
            .iter()
            .filter(|i| now.contains(&i.id))
            .filter_map(|i| i.work.as_ref())
            .flat_map(|w| w.after.iter())
            .filter(|dep| services.contains(*dep) && !now.contains(*dep))
            .cloned()
            .collect();
        if needed.is_empty() {
            break;
        }
        now.extend(needed);
    }
    now
}

/// The items that start a service.
fn services(plan: &Plan) -> BTreeSet<String> {
    plan.items
        .iter()
        .filter(|i| {
            i.work.as_ref().is_some_and(|w| {
                matches!(
                    &w.action,
                    Action::Command {
                        starts: Some(_),
                        ..
                    }
                )
            })
        })
        .map(|i| i.id.clone())
        .collect()
}

/// (c): whatever names a re-run item through `after`, transitively, and
/// whatever read files a re-run item wrote, until nothing more changes.
fn rerun_dependents(plan: &mut Plan, spec: &Spec, fed_by: &BTreeMap<String, Vec<String>>) {
    let graph = CheckGraph::new(spec).ok();
    loop {
        let rerun: BTreeSet<String> = plan
            .items
            .iter()
            .filter(|i| i.decision.runs())
            .map(|i| i.id.clone())
            .collect();
        let dependents: BTreeMap<String, String> = graph
            .iter()
            .flat_map(|graph| {
                rerun.iter().flat_map(move |id| {
                    graph
                        .transitive_dependents([id.as_str()])
                        .into_iter()
                        .map(move |d| (d.to_owned(), id.clone()))
                })
            })
            .collect();
        let mut changed = false;
        for item in plan.items.iter_mut().filter(|i| i.decision.carries()) {
            if let Some(cause) = dependents.get(&item.id) {
                item.decision = run(&format!("depends on `{cause}`, which re-runs"));
                changed = true;
            } else if let Some(writer) = fed_by
                .get(&item.id)
                .and_then(|from| from.iter().find(|w| rerun.contains(*w)))
            {
                item.decision = run(&format!("it read what `{writer}` wrote, which re-runs"));
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// (d): the checks a re-run item needs first, transitively. A carried
/// service it needs up is started again; a carried build is built again,
/// since what it made (ignored output, say) is not in the fingerprint.
fn rerun_needed_checks(plan: &mut Plan) {
    let services = services(plan);
    loop {
        let needed: BTreeMap<String, String> = plan
            .items
            .iter()
            .filter(|i| i.decision.runs())
            .filter_map(|i| i.work.as_ref().map(|w| (i.id.clone(), w.after.clone())))
            .flat_map(|(id, after)| after.into_iter().map(move |dep| (dep, id.clone())))
            .collect();
        let mut changed = false;
        for item in plan
            .items
            .iter_mut()
            .filter(|i| i.kind == ItemKind::Check && i.decision.carries())
        {
            if let Some(user) = needed.get(&item.id) {
                item.decision = if services.contains(&item.id) {
                    run(&format!("started for `{user}`"))
                } else {
                    run(&format!(
                        "needed by `{user}`, which re-runs (what it makes is not in the fingerprint)"
                    ))
                };
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// Why an item that would otherwise carry must run: a command whose
/// reads were not traced, or whose trace was incomplete, or that read
/// something that has changed since. Declared inputs alone never carry a
/// command: a test that compiles a crate reads all of it.
fn unobserved(item: &crate::plan::PlannedItem, k: &Known<'_>, tree: Tree<'_>) -> Option<String> {
    let command = item
        .work
        .as_ref()
        .is_some_and(|w| matches!(w.action, Action::Command { .. }));
    if !command {
        return None;
    }
    match k.observed {
        None => Some("what it read was not traced, so nothing shows it still holds".to_owned()),
        Some(o) => match (&o.incomplete, o.changed(tree).as_slice()) {
            (Some(why), _) => Some(format!("its trace is incomplete ({why})")),
            (None, []) => None,
            (None, changed) => {
                let named: Vec<String> = changed.iter().take(3).map(|k| format!("`{k}`")).collect();
                let more = match changed.len().saturating_sub(3) {
                    0 => String::new(),
                    n => format!(" and {n} more"),
                };
                Some(format!(
                    "{}{more}, which it read, changed",
                    named.join(", ")
                ))
            }
        },
    }
}

fn run(why: &str) -> Decision {
    Decision::Run {
        why: why.to_owned(),
    }
}
