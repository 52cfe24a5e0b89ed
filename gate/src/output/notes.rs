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
        Note::Rerunning { rerun, carried } => format!(
            "gate: re-running {rerun} of {} items; carrying {carried} forward",
            rerun + carried
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ];
        for (note, want) in cases {
            assert_eq!(words(&note), want, "{note:?}");
        }
    }
}
