//! Running criteria for `gate mutants`: once on the workspace (traced, to
//! learn what each read), then against each mutant in a copy of the
//! workspace, through the same harness and sandbox `gate verify` uses.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use gate_harness::{ItemKind, ItemResult, RunOptions, Status};
use gate_mutants::Status as MutantStatus;
use gate_mutants::score::Outcome;

use crate::errors::GateError;
use crate::interrupt::Interrupt;
use crate::isolation::Isolation;
use crate::plan::Plan;

/// What the runs share: the plan, the sandbox, the output bound.
pub(super) struct Runner<'a> {
    /// The plan whose items run (every item of the spec).
    pub plan: &'a Plan,
    /// The run's isolation.
    pub isolation: &'a Isolation,
    /// The workspace.
    pub workspace: &'a Path,
    /// Bytes of output kept per item.
    pub output_cap: usize,
    /// Stops the runs.
    pub interrupt: &'a Interrupt,
    /// Each criterion's time limit against a mutant, when the command set one.
    pub timeout: Option<Duration>,
    /// Workspace-relative paths a mutant's copy leaves out: `.git` and the
    /// gate's state directory (its key and ledger are no item's to read).
    pub not_copied: Vec<std::path::PathBuf>,
}

/// `ids` and every item they run after, transitively.
pub(super) fn with_after(plan: &Plan, ids: &BTreeSet<String>) -> BTreeSet<String> {
    let after = plan.after();
    let mut out = BTreeSet::new();
    let mut todo: Vec<&str> = ids.iter().map(String::as_str).collect();
    while let Some(id) = todo.pop() {
        if out.insert(id.to_owned()) {
            todo.extend(
                after
                    .get(id)
                    .into_iter()
                    .flat_map(|a| a.iter().map(String::as_str)),
            );
        }
    }
    out
}

impl Runner<'_> {
    fn items(&self, ids: &BTreeSet<String>, timeout: Option<Duration>) -> Vec<gate_harness::Item> {
        self.plan
            .items
            .iter()
            .filter(|i| ids.contains(&i.id))
            .filter_map(|i| i.work.clone())
            .map(|mut w| {
                if let (Some(t), ItemKind::Criterion | ItemKind::TaskTests) = (timeout, w.kind) {
                    w.timeout = t;
                }
                w
            })
            .collect()
    }

    fn options(
        &self,
        root: &Path,
        launcher: Arc<gate_harness::Launcher>,
        launchers: HashMap<String, Arc<gate_harness::Launcher>>,
    ) -> RunOptions {
        RunOptions {
            workspace: root.to_path_buf(),
            concurrency: std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
            output_cap: self.output_cap,
            files: Arc::new(Vec::new()),
            satisfied: HashSet::new(),
            redact: Arc::new(Vec::new()),
            launcher,
            launchers: Arc::new(launchers),
            requires: Arc::new(HashMap::new()),
        }
    }

    /// Runs `ids` (with what they run after) on the workspace itself, traced
    /// where the run traces, as `gate verify` runs them.
    pub(super) async fn on_workspace(
        &self,
        ids: &BTreeSet<String>,
    ) -> Result<HashMap<String, ItemResult>, GateError> {
        let all = with_after(self.plan, ids);
        let launcher = self.isolation.items(Vec::new(), Vec::new());
        let private =
            crate::isolation::lineage::new_items(self.plan, |id| all.contains(id), |_| false);
        let launchers = self
            .isolation
            .private_folders(&launcher, &private, None, &HashMap::new())
            .map_err(GateError::Usage)?;
        let results = gate_harness::run(
            self.items(&all, None),
            self.options(self.workspace, Arc::new(launcher), launchers),
            None,
            self.interrupt.wait(),
        )
        .await?;
        Ok(results.into_iter().map(|r| (r.id.clone(), r)).collect())
    }

    /// Runs the criteria `ids` (with the checks they run after) against
    /// one mutant: `file` holding `text`, in a copy of the workspace shown
    /// where the workspace is, removed afterwards.
    pub(super) async fn on_mutant(
        &self,
        ids: &BTreeSet<String>,
        file: &str,
        text: &str,
    ) -> Result<Outcome, GateError> {
        let folder = crate::base_runs::folder::BaseFolder::named("gate-mutant-")
            .map_err(GateError::Unavailable)?;
        let root = folder.path().join("tree");
        for sub in ["tmp", "home"] {
            std::fs::create_dir(folder.path().join(sub)).map_err(|e| {
                GateError::Unavailable(format!("cannot make a mutant's folder: {e}"))
            })?;
        }
        let skip: Vec<&Path> = self
            .not_copied
            .iter()
            .map(std::path::PathBuf::as_path)
            .collect();
        super::copy::workspace(self.workspace, &root, &skip, file, text)
            .map_err(GateError::Unavailable)?;
        let launcher = self
            .isolation
            .base_items(&root, self.workspace, folder.path())
            .map_err(GateError::Unavailable)?;
        let all = with_after(self.plan, ids);
        let private =
            crate::isolation::lineage::new_items(self.plan, |id| all.contains(id), |_| false);
        let launchers = self
            .isolation
            .private_folders(&launcher, &private, Some(folder.path()), &HashMap::new())
            .map_err(GateError::Usage)?;
        let results = gate_harness::run(
            self.items(&all, self.timeout),
            self.options(&root, Arc::new(launcher), launchers),
            None,
            self.interrupt.wait(),
        )
        .await?;
        drop(folder);
        Ok(outcome(ids, &results))
    }
}

/// What a mutant's results say: unviable when a check the criteria run
/// after failed (it does not build), killed when a criterion failed on
/// its own exit, timeout when one ran out of time, not run when one did
/// not run at all (the run was interrupted), else survived.
pub(super) fn outcome(ids: &BTreeSet<String>, results: &[ItemResult]) -> Outcome {
    let failed: Vec<&ItemResult> = results
        .iter()
        .filter(|r| r.status == Status::Failed)
        .collect();
    let check_failed = failed
        .iter()
        .any(|r| !matches!(r.kind, ItemKind::Criterion | ItemKind::TaskTests));
    let criteria = || failed.iter().filter(|r| ids.contains(&r.id));
    let killed_by: BTreeSet<String> = criteria()
        .filter(|r| r.exit_code.is_some())
        .map(|r| r.id.clone())
        .collect();
    let timed_out = criteria().any(|r| r.exit_code.is_none());
    let passed = results
        .iter()
        .filter(|r| ids.contains(&r.id) && r.status == Status::Passed)
        .count();
    let status = if check_failed {
        MutantStatus::Unviable
    } else if !killed_by.is_empty() {
        MutantStatus::Killed
    } else if timed_out {
        MutantStatus::Timeout
    } else if passed < ids.len() {
        MutantStatus::NotRun
    } else {
        MutantStatus::Survived
    };
    Outcome {
        status,
        ran: ids.clone(),
        killed_by,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, kind: ItemKind, status: Status, exit_code: Option<i32>) -> ItemResult {
        ItemResult {
            id: id.to_owned(),
            kind,
            status,
            exit_code,
            duration: Duration::ZERO,
            reason: None,
            output: gate_harness::Output::default(),
            locations: Vec::new(),
            spec_error: None,
            observed: None,
        }
    }

    #[test]
    fn a_mutants_status_from_its_criteria_and_checks() {
        use ItemKind::{Check, Criterion};
        let ids: BTreeSet<String> = ["weak", "boundary"].map(str::to_owned).into();
        let pass = |id| result(id, Criterion, Status::Passed, Some(0));
        let fail = |id| result(id, Criterion, Status::Failed, Some(1));
        let cases = [
            (vec![pass("weak"), fail("boundary")], MutantStatus::Killed),
            (vec![pass("weak"), pass("boundary")], MutantStatus::Survived),
            (
                vec![
                    pass("weak"),
                    result("boundary", Criterion, Status::Failed, None),
                ],
                MutantStatus::Timeout,
            ),
            (
                vec![
                    result("build", Check, Status::Failed, Some(101)),
                    result("weak", Criterion, Status::Skipped, None),
                ],
                MutantStatus::Unviable,
            ),
            (
                vec![
                    pass("weak"),
                    result("boundary", Criterion, Status::Skipped, None),
                ],
                MutantStatus::NotRun,
            ),
        ];
        for (results, want) in cases {
            let got = outcome(&ids, &results);
            assert_eq!(got.status, want, "{results:?}");
            if want == MutantStatus::Killed {
                assert_eq!(got.killed_by, BTreeSet::from(["boundary".to_owned()]));
            }
        }
    }
}
