//! How a run's notes read to people: the one place they are worded.

use crate::events::Note;

/// The note as one line.
pub(crate) fn words(note: &Note) -> String {
    match note {
        Note::SelfGuardOff { reason } => format!("gate: the self-guard is off: {reason}"),
        Note::Unisolated { reason } => {
            format!("gate: what this run starts for the workspace runs unisolated: {reason}")
        }
        Note::IsolationCaveat { reason } => format!("gate: {reason}"),
        Note::Unprotected { criteria } => {
            let one = criteria.len() == 1;
            let names: Vec<String> = criteria.iter().map(|i| format!("`{i}`")).collect();
            format!(
                "gate: {} {} run{} no file of the workspace, so nothing protects what decides \
                 {}: name the files in `[spec] protected`",
                if one { "criterion" } else { "criteria" },
                names.join(", "),
                if one { "s" } else { "" },
                if one { "it" } else { "them" },
            )
        }
        Note::NotRecorded { reason } => format!(
            "gate: this run was not recorded ({reason}); the bundle is kept for `gate ledger import`"
        ),
        Note::RoutingOverrideFailed { url, error } => format!(
            "gate: routing override from {url} not applied ({error}); using the local table"
        ),
        Note::RoutingOverrideApplied { url, changed } => format!(
            "gate: routing override from {url} applied ({})",
            if changed.is_empty() {
                "no change".to_owned()
            } else {
                changed.join(", ")
            }
        ),
        Note::KeyCreated { path } => format!("gate: created a signing key at {path}"),
        Note::BaseRuns { criteria, commit } => {
            let one = *criteria == 1;
            format!(
                "gate: running {} on the base {} (with the checks {} after)",
                if one {
                    "1 criterion".to_owned()
                } else {
                    format!("{criteria} criteria")
                },
                commit.get(..12).unwrap_or(commit),
                if one { "it runs" } else { "they run" },
            )
        }
        Note::Attempt { attempt } => format!("gate: attempt {attempt} of the series"),
        Note::PreviousUnusable { reason } => {
            format!("gate: the previous attempt cannot be used ({reason}); re-running everything")
        }
        Note::HistoryUnreadable { reason } => format!(
            "gate: cannot read the attempt history ({reason}); treating this as a first attempt"
        ),
        Note::SeriesUnlocked { reason } => {
            format!("gate: cannot lock the attempt series ({reason})")
        }
        Note::SeriesBusy { spec_id } => format!(
            "gate: another run of `{spec_id}` is in progress; waiting for it to be recorded"
        ),
        Note::Uncommitted { files, commit } => format!(
            "gate: {files} file{} of the workspace differ{} from commit {}: this run verifies \
             the working tree, not that commit",
            if *files == 1 { "" } else { "s" },
            if *files == 1 { "s" } else { "" },
            commit.get(..12).unwrap_or(commit)
        ),
        Note::Rerunning { rerun, carried } => format!(
            "gate: re-running {rerun} of {} items; carrying {carried} forward",
            rerun + carried
        ),
        Note::Rechecking { items } => format!(
            "gate: running {} after all: what a carried item read was changed by this run's items",
            items
                .iter()
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One of each note.
    fn every_note() -> Vec<Note> {
        let reason = || "why".to_owned();
        let all = vec![
            Note::SelfGuardOff { reason: reason() },
            Note::Unisolated { reason: reason() },
            Note::IsolationCaveat { reason: reason() },
            Note::Unprotected {
                criteria: vec!["c".into()],
            },
            Note::NotRecorded { reason: reason() },
            Note::RoutingOverrideFailed {
                url: "u".into(),
                error: reason(),
            },
            Note::RoutingOverrideApplied {
                url: "u".into(),
                changed: vec!["route".into()],
            },
            Note::KeyCreated { path: "p".into() },
            Note::BaseRuns {
                criteria: 2,
                commit: "c".into(),
            },
            Note::Attempt { attempt: 2 },
            Note::PreviousUnusable { reason: reason() },
            Note::HistoryUnreadable { reason: reason() },
            Note::SeriesUnlocked { reason: reason() },
            Note::SeriesBusy {
                spec_id: "s".into(),
            },
            Note::Uncommitted {
                files: 2,
                commit: "c".into(),
            },
            Note::Rerunning {
                rerun: 1,
                carried: 1,
            },
            Note::Rechecking {
                items: vec!["c".into()],
            },
        ];
        for note in &all {
            // A new note fails to compile here: add it to the list above.
            match note {
                Note::SelfGuardOff { .. }
                | Note::Unisolated { .. }
                | Note::IsolationCaveat { .. }
                | Note::Unprotected { .. }
                | Note::NotRecorded { .. }
                | Note::RoutingOverrideFailed { .. }
                | Note::RoutingOverrideApplied { .. }
                | Note::KeyCreated { .. }
                | Note::BaseRuns { .. }
                | Note::Attempt { .. }
                | Note::PreviousUnusable { .. }
                | Note::HistoryUnreadable { .. }
                | Note::SeriesUnlocked { .. }
                | Note::SeriesBusy { .. }
                | Note::Uncommitted { .. }
                | Note::Rerunning { .. }
                | Note::Rechecking { .. } => {}
            }
        }
        all
    }

    /// `docs/output-formats.md` has a row for each note: its name, the
    /// event it comes as, and each of its fields.
    #[test]
    fn every_note_is_documented() {
        let page = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/output-formats.md"),
        )
        .unwrap();
        let from = page.find("The notes, by `note`").expect("the notes' table");
        let table = &page[from..];
        let mut problems = Vec::new();
        for note in every_note() {
            let value = serde_json::to_value(&note).unwrap();
            let name = value["note"].as_str().unwrap().to_owned();
            let event = if note.is_warning() {
                "warning"
            } else {
                "notice"
            };
            let Some(row) = table
                .lines()
                .find(|l| l.starts_with(&format!("| `{name}` |")))
            else {
                problems.push(format!("no row for `{name}`"));
                continue;
            };
            if !row.contains(&format!("| `{event}` |")) {
                problems.push(format!("`{name}` comes as a {event}"));
            }
            for field in value.as_object().unwrap().keys().filter(|k| *k != "note") {
                if !row.contains(&format!("`{field}`")) {
                    problems.push(format!("`{name}`: `{field}`"));
                }
            }
        }
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn notes_read_as_sentences() {
        let cases = [
            (
                Note::Unprotected {
                    criteria: vec!["a".into()],
                },
                "gate: criterion `a` runs no file of the workspace, so nothing protects what \
                 decides it: name the files in `[spec] protected`",
            ),
            (
                Note::Unprotected {
                    criteria: vec!["a".into(), "b".into()],
                },
                "gate: criteria `a`, `b` run no file of the workspace, so nothing protects what \
                 decides them: name the files in `[spec] protected`",
            ),
            (
                Note::BaseRuns {
                    criteria: 1,
                    commit: "0123456789abcdef".into(),
                },
                "gate: running 1 criterion on the base 0123456789ab (with the checks it runs after)",
            ),
            (
                Note::RoutingOverrideApplied {
                    url: "http://x".into(),
                    changed: vec![],
                },
                "gate: routing override from http://x applied (no change)",
            ),
            (
                Note::Rerunning {
                    rerun: 2,
                    carried: 3,
                },
                "gate: re-running 2 of 5 items; carrying 3 forward",
            ),
            (
                Note::Rechecking {
                    items: vec!["probe".into(), "build".into()],
                },
                "gate: running `probe`, `build` after all: what a carried item read was changed \
                 by this run's items",
            ),
        ];
        for (note, want) in cases {
            assert_eq!(words(&note), want, "{note:?}");
        }
    }
}
