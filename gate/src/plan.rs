//! The plan: every check and criterion of the spec, its input fingerprint,
//! and whether this attempt runs it.

use std::time::Duration;

use gate_evidence::snapshot::item_digest;
use gate_evidence::{Digest, Snapshot};
use gate_harness::{Action, Builtin, Item, ItemKind};
use gate_specs::{Decider, InputGlobs, Spec};
use serde::{Deserialize, Serialize};

/// What this attempt does with an item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub(crate) enum Decision {
    /// Run it; `why` says what made it due.
    Run {
        /// "first attempt", "failed last time", "inputs changed", …
        why: String,
    },
    /// Carry its earlier result forward: verified before, inputs unchanged.
    Carry {
        /// The run that verified it.
        from_run: String,
        /// That run's bundle (sha256 of its bytes).
        from_bundle: String,
    },
    /// Not looked at in this run, and why (a page the change did not touch).
    Skip {
        /// "no changed file matches its `files`", …
        why: String,
    },
}

impl Decision {
    /// Whether the item runs in this attempt.
    pub(crate) fn runs(&self) -> bool {
        matches!(self, Self::Run { .. })
    }

    /// Whether an earlier result stands for the item in this attempt.
    pub(crate) fn carries(&self) -> bool {
        matches!(self, Self::Carry { .. })
    }
}

/// One check or criterion, planned.
#[derive(Debug, Clone)]
pub(crate) struct PlannedItem {
    /// Its id.
    pub id: String,
    /// What it stands for; criteria are [`ItemKind::Criterion`].
    pub kind: ItemKind,
    /// The command, or what a built-in or report check looks at.
    pub command: String,
    /// Fingerprint of the definition and the input files.
    pub inputs_digest: Digest,
    /// The globs of its inputs (or its task's `paths`) that match no file:
    /// an item with any is never carried.
    pub unmatched: Vec<String>,
    /// What this attempt does with it.
    pub decision: Decision,
    /// What the harness runs; `None` for a model-judged criterion.
    pub work: Option<Item>,
}

/// Every item of a spec, in record order: checks, task tests, built-ins,
/// then criteria.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    /// The items.
    pub items: Vec<PlannedItem>,
}

impl Plan {
    /// What each item the harness runs names in its `after`, by item id.
    pub(crate) fn after(&self) -> std::collections::HashMap<&str, &[String]> {
        self.items
            .iter()
            .filter_map(|i| i.work.as_ref())
            .map(|w| (w.id.as_str(), w.after.as_slice()))
            .collect()
    }
}

/// Globs of every item's `inputs` and every task's test report: hashed even
/// when `.gitignore` ignores them (a report under an ignored `reports/` is
/// still its `tests` item's evidence) — `None` when there are none. A task's
/// `paths` are not among them: what they own is what git tracks, and a
/// build's ignored output there would make every report look stale.
pub(crate) fn forced_inputs(spec: &Spec) -> Option<InputGlobs> {
    let globs: Vec<&str> = spec
        .checks
        .iter()
        .flat_map(|c| c.inputs.iter())
        .chain(spec.criteria().flat_map(|(_, c)| c.inputs.iter()))
        .chain(
            spec.tasks
                .iter()
                .filter_map(|t| t.tests.as_ref()?.report.as_ref()),
        )
        .map(String::as_str)
        .collect();
    if globs.is_empty() {
        return None;
    }
    InputGlobs::new(&globs).ok()
}

/// Builds the first-attempt plan: everything runs.
pub(crate) fn first_attempt(spec: &Spec, snapshot: &Snapshot) -> Plan {
    let policy = &spec.policy;
    let default_timeout = Duration::from_secs(policy.check_timeout_s);
    let timeout = |t: Option<u64>| t.map_or(default_timeout, Duration::from_secs);
    let mut items = Vec::new();

    for check in &spec.checks {
        // A check that names no inputs depends on what it is seen to read:
        // a command is carried only on its trace, never on a fingerprint
        // alone (retry::delta), so its fingerprint is its definition.
        let inputs = if check.inputs.is_empty() {
            InputGlobs::new::<&str>(&[]).ok()
        } else {
            globs(&check.inputs)
        };
        items.push(PlannedItem {
            id: check.id.clone(),
            kind: ItemKind::Check,
            command: check.run.clone(),
            inputs_digest: item_digest(&canonical(check), inputs.as_ref(), snapshot),
            unmatched: unmatched(&check.inputs, snapshot),
            decision: first_run(),
            work: Some(Item {
                id: check.id.clone(),
                kind: ItemKind::Check,
                action: Action::Command {
                    run: check.run.clone(),
                    starts: check.starts.clone(),
                },
                after: check.after.clone(),
                timeout: timeout(check.timeout_s),
            }),
        });
    }

    items.extend(task_tests(spec, snapshot, default_timeout));
    items.extend(builtins(spec, snapshot, default_timeout));

    for (task, criterion) in spec.criteria() {
        // A criterion without inputs depends on its task's files.
        let patterns = if criterion.inputs.is_empty() {
            &task.paths
        } else {
            &criterion.inputs
        };
        let inputs = globs(patterns);
        let definition = canonical(&(task.id.as_str(), criterion));
        let (command, work) = match criterion.decider() {
            Decider::Code(run) => (
                run.to_owned(),
                Some(Item {
                    id: criterion.id.clone(),
                    kind: ItemKind::Criterion,
                    action: Action::Command {
                        run: run.to_owned(),
                        starts: None,
                    },
                    after: criterion.after.clone(),
                    timeout: timeout(criterion.timeout_s),
                }),
            ),
            Decider::Model => (String::new(), None),
        };
        items.push(PlannedItem {
            id: criterion.id.clone(),
            kind: ItemKind::Criterion,
            command,
            inputs_digest: item_digest(&definition, inputs.as_ref(), snapshot),
            unmatched: unmatched(patterns, snapshot),
            decision: first_run(),
            work,
        });
    }
    Plan { items }
}

/// Each task's unit-test precondition: a command, or a JUnit report (always
/// an input, ignored by git or not).
fn task_tests(spec: &Spec, snapshot: &Snapshot, default_timeout: Duration) -> Vec<PlannedItem> {
    let mut items = Vec::new();
    for task in &spec.tasks {
        let Some(tests) = &task.tests else { continue };
        let id = Spec::tests_check_id(task);
        let (action, command, mut input_globs) = match (&tests.report, &tests.run) {
            (Some(report), _) => (
                Action::JunitReport {
                    report: report.clone(),
                    stale: None,
                    refused: Vec::new(),
                },
                format!("JUnit report {report}"),
                vec![report.clone()],
            ),
            (None, Some(run)) => (
                Action::Command {
                    run: run.clone(),
                    starts: None,
                },
                run.clone(),
                Vec::new(),
            ),
            // Validation guarantees exactly one of the two.
            (None, None) => continue,
        };
        input_globs.extend(task.paths.iter().cloned());
        let inputs = if task.paths.is_empty() {
            None
        } else {
            globs(&input_globs)
        };
        let definition = canonical(&(task.id.as_str(), &task.paths, tests));
        items.push(PlannedItem {
            id: id.clone(),
            kind: ItemKind::TaskTests,
            command,
            inputs_digest: item_digest(&definition, inputs.as_ref(), snapshot),
            unmatched: unmatched(&input_globs, snapshot),
            decision: first_run(),
            work: Some(Item {
                id,
                kind: ItemKind::TaskTests,
                action,
                after: tests.after.clone(),
                timeout: tests.timeout_s.map_or(default_timeout, Duration::from_secs),
            }),
        });
    }
    items
}

/// The built-in checks the policy leaves on, each with what it excludes.
fn builtins(spec: &Spec, snapshot: &Snapshot, default_timeout: Duration) -> Vec<PlannedItem> {
    let policy = &spec.policy;
    let mut items = Vec::new();
    for (enabled, check, what) in [
        (
            policy.builtin_conflicts,
            Builtin::Conflicts,
            "unresolved merge-conflict markers",
        ),
        (
            policy.builtin_secrets,
            Builtin::Secrets,
            "committed private keys and API tokens",
        ),
        (
            policy.builtin_parse,
            Builtin::Parse,
            "JSON, JSON Lines, TOML and YAML files that do not parse",
        ),
    ] {
        if !enabled {
            continue;
        }
        let exclude = policy.builtin_exclude.for_check(check.name());
        let definition = canonical(&(check.id(), &exclude));
        items.push(PlannedItem {
            id: check.id().to_owned(),
            kind: ItemKind::Builtin,
            command: format!("built-in: {what}"),
            inputs_digest: item_digest(&definition, None, snapshot),
            unmatched: Vec::new(),
            decision: first_run(),
            work: Some(Item {
                id: check.id().to_owned(),
                kind: ItemKind::Builtin,
                action: Action::Builtin {
                    check,
                    exclude: globs(&exclude),
                },
                after: Vec::new(),
                timeout: default_timeout,
            }),
        });
    }
    items
}

/// Why an item runs on a first attempt.
fn first_run() -> Decision {
    Decision::Run {
        why: "first attempt".to_owned(),
    }
}

/// `None` for an empty list (the whole workspace), else the compiled globs.
/// Validation has compiled every glob already, so this cannot fail there.
fn globs(patterns: &[String]) -> Option<InputGlobs> {
    if patterns.is_empty() {
        None
    } else {
        InputGlobs::new(patterns).ok()
    }
}

/// The patterns that match no entry of `snapshot`, each on its own.
pub(crate) fn unmatched(patterns: &[String], snapshot: &Snapshot) -> Vec<String> {
    patterns
        .iter()
        .filter(|p| {
            InputGlobs::new(std::slice::from_ref(*p))
                .is_ok_and(|g| snapshot.matching(&g).next().is_none())
        })
        .cloned()
        .collect()
}

/// The canonical bytes of a definition: its JSON in field order.
fn canonical<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use gate_evidence::snapshot::{EntryKind, FileEntry};

    use super::*;

    /// A snapshot of `files` (path, content), for tests.
    pub(crate) fn snapshot(files: &[(&str, &str)]) -> Snapshot {
        let map: BTreeMap<String, FileEntry> = files
            .iter()
            .map(|(p, body)| {
                (
                    (*p).to_owned(),
                    FileEntry {
                        digest: Digest::of(body.as_bytes()),
                        size: body.len() as u64,
                        kind: EntryKind::File,
                    },
                )
            })
            .collect();
        Snapshot::from_entries(map)
    }

    const SPEC: &str = r#"
[spec]
id = "s"
[[check]]
id = "build"
run = "make"
[[check]]
id = "lint"
run = "make lint"
inputs = ["src/**"]
[[task]]
id = "orders"
paths = ["src/orders/**"]
tests = { run = "make test-orders" }
[[task.criterion]]
id = "c1"
text = "t"
run = "./check.sh"
[[task.criterion]]
id = "c2"
text = "t"
judge = "model"
inputs = ["docs/**"]
[policy]
builtin_parse = false
"#;

    fn digests(files: &[(&str, &str)]) -> BTreeMap<String, Digest> {
        let spec =
            gate_specs::parse_str(SPEC, Path::new("gate.toml"), gate_specs::Format::Toml).unwrap();
        first_attempt(&spec, &snapshot(files))
            .items
            .into_iter()
            .map(|i| (i.id, i.inputs_digest))
            .collect()
    }

    #[test]
    fn items_in_record_order() {
        let spec =
            gate_specs::parse_str(SPEC, Path::new("gate.toml"), gate_specs::Format::Toml).unwrap();
        let plan = first_attempt(&spec, &snapshot(&[]));
        let ids: Vec<&str> = plan.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "build",
                "lint",
                "orders.tests",
                "builtin.conflicts",
                "builtin.secrets",
                "c1",
                "c2"
            ]
        );
        assert!(
            plan.items[6].work.is_none(),
            "a judged criterion runs no command"
        );
    }

    #[test]
    fn digests_follow_inputs() {
        let base = [
            ("src/orders/a.rs", "1"),
            ("src/cart.rs", "2"),
            ("docs/x.md", "3"),
            ("README.md", "4"),
        ];
        let before = digests(&base);
        // (file changed, items whose digest must change). `build` names no
        // inputs: its fingerprint is its definition, and what it reads is
        // followed by its trace instead.
        let cases: &[(&str, &[&str])] = &[
            (
                "src/orders/a.rs",
                &[
                    "lint",
                    "orders.tests",
                    "builtin.conflicts",
                    "builtin.secrets",
                    "c1",
                ],
            ),
            (
                "src/cart.rs",
                &["lint", "builtin.conflicts", "builtin.secrets"],
            ),
            ("docs/x.md", &["builtin.conflicts", "builtin.secrets", "c2"]),
            ("README.md", &["builtin.conflicts", "builtin.secrets"]),
        ];
        for (changed, want) in cases {
            let files: Vec<(&str, &str)> = base
                .iter()
                .map(|(p, b)| {
                    if p == changed {
                        (*p, "changed")
                    } else {
                        (*p, *b)
                    }
                })
                .collect();
            let after = digests(&files);
            let moved: Vec<&str> = before
                .iter()
                .filter(|(id, d)| after[*id] != **d)
                .map(|(id, _)| id.as_str())
                .collect();
            let mut want = want.to_vec();
            want.sort_unstable();
            assert_eq!(moved, want, "changing {changed}");
        }
    }
}
