//! Whether a task's JUnit report is the one for the task's files as they
//! are, judged by content, and the pipeline's at all.
//!
//! A report comes from the pipeline's own test step, outside the gate's
//! sight; file times cannot tie it to the code (a checkout gives every file
//! a new time, `touch` gives any file one). What can: each run records, for
//! every report it accepted, the report's digest beside the fingerprint of
//! the task's files, and the next run of the spec on its base starts from
//! that list, whatever its series ([`remembered`]): a pass closes a series
//! and a new branch starts another, and neither makes a report seen before
//! new again. A report whose digest was accepted against other files, and
//! never against these, is stale: the task's code changed and the report
//! did not. A report with the same content over the same files (a fresh
//! checkout) stays valid; a report never seen is the pipeline's word.
//!
//! The pipeline's test step writes its report after checkout, where git
//! leaves it untracked or ignored. A report the change committed is the
//! change's word about itself ([`committed`]): a critical finding, and the
//! task's report check fails.

use std::collections::HashMap;
use std::path::Path;

use gate_evidence::ledger::RunFilter;
use gate_evidence::snapshot::item_digest;
use gate_evidence::store::BundleStore;
use gate_evidence::{Ledger, PublicKey, Snapshot};
use gate_review::findings::Finding;
use gate_specs::{InputGlobs, Spec};

use crate::change;
use crate::errors::GateError;
use crate::git::Git;
use crate::guard::GUARD_ROLE;
use crate::record::AcceptedReport;
use crate::retry::{ESCALATION_LOOKBACK, delta::Previous};
use crate::vouch;

/// The most reports the memory keeps (the newest): far more than attempts
/// a series runs, and a bound on what each bundle carries.
const KEPT: usize = 200;

/// The reports accepted for the spec `spec_id` on `base`, in any series:
/// what the newest run of the spec on that base recorded (of the spec's
/// newest [`ESCALATION_LOOKBACK`] runs, each read from the bundle that
/// signed it; a run the gate cannot vouch for is passed over), and before
/// them any of the series' `previous` attempt (on another base) that list
/// lacks. Every run records the memory it was given with what it accepted
/// itself, so the newest run on the base holds it all: one bundle is read,
/// the same one the escalation check reads first.
pub(crate) fn remembered(
    ledger: &Ledger,
    store: &BundleStore,
    (spec_id, base): (&str, Option<&str>),
    trusted: &[PublicKey],
    previous: Option<&Previous>,
) -> Result<Vec<AcceptedReport>, GateError> {
    let rows = ledger.list(&RunFilter {
        spec_id: Some(spec_id.to_owned()),
        limit: Some(ESCALATION_LOOKBACK),
        ..RunFilter::default()
    })?;
    let newest = rows
        .iter()
        .filter_map(|row| match vouch::row_run(row, store, trusted) {
            Ok(record) => Some(record),
            Err(why) => {
                tracing::debug!(seq = row.seq, run = %row.entry.run_id, %why,
                    "a run not as signed: its accepted reports are not remembered");
                None
            }
        })
        .find(|record| record.spec_id == spec_id && record.base.as_deref() == base)
        .map(|record| record.accepted_reports)
        .unwrap_or_default();
    let series = previous
        .map(|p| p.record.accepted_reports.as_slice())
        .unwrap_or_default();
    Ok(merged(series, newest))
}

/// `newer` with, before it, those of `older` it does not hold; the newest
/// [`KEPT`].
fn merged(older: &[AcceptedReport], newer: Vec<AcceptedReport>) -> Vec<AcceptedReport> {
    let mut out: Vec<AcceptedReport> = older
        .iter()
        .filter(|a| !newer.contains(a))
        .cloned()
        .collect();
    out.extend(newer);
    let extra = out.len().saturating_sub(KEPT);
    out.drain(..extra);
    out
}

/// The report of each task with one, as this run finds it: the task's id,
/// the report's path, its digest (`None` when missing) and the
/// fingerprint of the task's files.
fn current(spec: &Spec, snapshot: &Snapshot) -> Vec<(String, String, Option<String>, String)> {
    spec.tasks
        .iter()
        .filter_map(|task| {
            let report = task.tests.as_ref()?.report.clone()?;
            let digest = snapshot.get(&report).map(|e| e.digest.to_hex());
            let globs = if task.paths.is_empty() {
                None
            } else {
                InputGlobs::new(&task.paths).ok()
            };
            // The report itself is not one of the task's files.
            let covers_report = globs.as_ref().is_none_or(|g| g.is_match(&report));
            let files = if covers_report {
                item_digest(
                    task.id.as_bytes(),
                    globs.as_ref(),
                    &without(snapshot, &report),
                )
            } else {
                item_digest(task.id.as_bytes(), globs.as_ref(), snapshot)
            }
            .to_hex();
            Some((task.id.clone(), report, digest, files))
        })
        .collect()
}

/// `snapshot` without `path`.
fn without(snapshot: &Snapshot, path: &str) -> Snapshot {
    if snapshot.get(path).is_none() {
        return snapshot.clone();
    }
    Snapshot::from_entries(
        snapshot
            .entries()
            .filter(|(p, _)| *p != path)
            .map(|(p, e)| (p.to_owned(), *e))
            .collect(),
    )
}

/// A task's report that is the change's own word: the change committed it,
/// or the gate could not tell whether it did.
#[derive(Debug, Clone)]
pub(crate) struct Committed {
    /// The task's id.
    pub task: String,
    /// Why it is not accepted: what the report item fails with.
    pub why: String,
    /// The critical finding naming the report.
    pub finding: Finding,
}

/// The tasks' reports the change committed (see [`change::committed`]):
/// `head` is the commit the run verifies (none outside a repository, where
/// nothing is committed), `base` the base's commit when there is one. A
/// report the pipeline's own test step wrote after checkout is untracked
/// or ignored; one in the change's commits is what the change says of
/// itself, never the tests' result.
pub(crate) async fn committed(
    spec: &Spec,
    spec_file: &str,
    git: &Git,
    workspace: &Path,
    head: Option<&str>,
    base: Option<&str>,
) -> Vec<Committed> {
    let Some(head) = head else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in &spec.tasks {
        let Some(report) = task.tests.as_ref().and_then(|t| t.report.as_deref()) else {
            continue;
        };
        let since = if base.is_some() {
            "by the change, since the base"
        } else {
            "(without a base, every commit is the change's)"
        };
        let found = change::committed(git, workspace, report, head, base).await;
        let (why, title, detail) = match found {
            Ok(false) => continue,
            Ok(true) => (
                format!(
                    "report {report} is committed in git {since}: the change's word about \
                     itself, not what the pipeline's tests wrote"
                ),
                format!(
                    "the change commits `{}`'s test report {report}: its own word, not the \
                     tests'",
                    task.id
                ),
                format!(
                    "This report is in git {since}. A task's report is taken as what the \
                     pipeline's own test step wrote after checkout, which git leaves \
                     untracked or ignored; a committed one says only what the change says \
                     of itself, so it is not accepted and the task's report check in \
                     `{spec_file}` fails. Remove it from git (`git rm --cached {report}`), \
                     ignore it, and let the pipeline's test step write it."
                ),
            ),
            Err(e) => (
                format!("cannot tell whether the change committed report {report}: {e}"),
                format!(
                    "cannot tell whether the change commits `{}`'s test report {report}",
                    task.id
                ),
                format!(
                    "Git's trees could not be read to tell whether the change committed \
                     this report ({e}); a report that may be the change's own word is not \
                     accepted, and the task's report check in `{spec_file}` fails."
                ),
            ),
        };
        out.push(Committed {
            task: task.id.clone(),
            finding: Finding::raised(
                GUARD_ROLE,
                "critical",
                report.to_owned(),
                None,
                title,
                detail,
                1.0,
            ),
            why,
        });
    }
    out
}

/// Why each task's report is stale, by task id: its content was accepted
/// against other task files than these, and never against these.
pub(crate) fn stale(
    spec: &Spec,
    snapshot: &Snapshot,
    accepted: &[AcceptedReport],
) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for (task, report, digest, files) in current(spec, snapshot) {
        let Some(digest) = digest else { continue };
        let seen: Vec<&AcceptedReport> = accepted
            .iter()
            .filter(|a| a.task == task && a.report == digest)
            .collect();
        if !seen.is_empty() && seen.iter().all(|a| a.files != files) {
            out.insert(
                task,
                format!(
                    "report {report} is the one accepted for an earlier version of the task's \
                     files, which have changed since: run the task's tests again"
                ),
            );
        }
    }
    out
}

/// What this run records: the accepted reports remembered so far and each
/// report this run accepted (`passed` says whether a task's report item
/// passed), the newest [`KEPT`].
pub(crate) fn accepted(
    spec: &Spec,
    snapshot: &Snapshot,
    earlier: &[AcceptedReport],
    passed: &dyn Fn(&str) -> bool,
) -> Vec<AcceptedReport> {
    let mut out: Vec<AcceptedReport> = earlier.to_vec();
    for (task, _, digest, files) in current(spec, snapshot) {
        let Some(report) = digest else { continue };
        if !passed(&task) {
            continue;
        }
        let entry = AcceptedReport {
            task,
            report,
            files,
        };
        out.retain(|a| a != &entry);
        out.push(entry);
    }
    let extra = out.len().saturating_sub(KEPT);
    out.drain(..extra);
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::plan::tests::snapshot;

    /// A report's content over the task's files across attempts: a fresh
    /// checkout of the same content stays valid, the same report over
    /// changed code is stale, a new report is taken.
    #[test]
    fn a_report_is_stale_when_its_content_was_accepted_for_other_files() {
        let spec = gate_specs::parse_str(
            "[spec]\nid = \"s\"\n[[task]]\nid = \"orders\"\npaths = [\"src/**\"]\n\
             tests = { report = \"reports/orders.xml\" }\n",
            Path::new("gate.toml"),
            gate_specs::Format::Toml,
        )
        .unwrap();
        let v1 = snapshot(&[("src/a.rs", "one"), ("reports/orders.xml", "report 1")]);
        assert!(stale(&spec, &v1, &[]).is_empty(), "a first report is taken");
        let series = accepted(&spec, &v1, &[], &|_| true);
        assert_eq!(series.len(), 1);
        // (what the next attempt finds, stale)
        let cases = [
            (v1.clone(), false),
            (
                snapshot(&[("src/a.rs", "two"), ("reports/orders.xml", "report 1")]),
                true,
            ),
            (
                snapshot(&[("src/a.rs", "two"), ("reports/orders.xml", "report 2")]),
                false,
            ),
            (snapshot(&[("src/a.rs", "two")]), false),
        ];
        for (i, (next, want)) in cases.iter().enumerate() {
            assert_eq!(
                stale(&spec, next, &series).contains_key("orders"),
                *want,
                "case {i}"
            );
        }
        // A report that failed is not recorded as accepted; one accepted
        // again is not listed twice.
        let v2 = snapshot(&[("src/a.rs", "two"), ("reports/orders.xml", "report 2")]);
        assert_eq!(accepted(&spec, &v2, &series, &|_| false), series);
        let again = accepted(&spec, &v1, &series, &|_| true);
        assert_eq!(again, series);
        // The same content accepted over both versions is stale for neither.
        let both = accepted(
            &spec,
            &snapshot(&[("src/a.rs", "two"), ("reports/orders.xml", "report 1")]),
            &series,
            &|_| true,
        );
        assert!(stale(&spec, &v1, &both).is_empty());
    }

    /// What a run is given to judge by: the newest run's memory on the
    /// base, before it what only the series' previous attempt holds; the
    /// newest [`KEPT`].
    #[test]
    fn the_memory_is_the_newest_run_s_and_the_previous_attempt_s() {
        let entry = |n: usize| AcceptedReport {
            task: "orders".to_owned(),
            report: format!("r{n}"),
            files: format!("f{n}"),
        };
        let newest = vec![entry(1), entry(2)];
        assert_eq!(
            merged(&[entry(2), entry(3)], newest.clone()),
            [entry(3), entry(1), entry(2)]
        );
        assert_eq!(merged(&[], newest.clone()), newest);
        let many: Vec<AcceptedReport> = (0..KEPT).map(entry).collect();
        let kept = merged(&[entry(KEPT)], many.clone());
        assert_eq!(kept, many);
    }
}
