//! Scores: of the mutants a criterion (or a task's criteria) ran against,
//! the share it noticed.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::mutant::Status;

/// What running one mutant gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// What became of it.
    pub status: Status,
    /// The criteria that ran against it.
    pub ran: BTreeSet<String>,
    /// The criteria that failed against it (a subset of `ran`).
    pub killed_by: BTreeSet<String>,
}

/// Killed and survived mutants, and the score they make.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tally {
    /// Mutants noticed.
    pub killed: u32,
    /// Mutants not noticed.
    pub survived: u32,
    /// `killed / (killed + survived)`, 0.0 to 1.0; `null` when nothing was scored.
    pub score: Option<f64>,
}

impl Tally {
    fn count(&mut self, killed: bool) {
        if killed {
            self.killed += 1;
        } else {
            self.survived += 1;
        }
        self.score = Some(f64::from(self.killed) / f64::from(self.killed + self.survived));
    }
}

/// Each criterion's tally: of the scored mutants it ran against, those it
/// failed on are killed, those it passed are survived (even when another
/// criterion killed the mutant: this one did not notice it).
pub fn by_criterion<'a>(
    outcomes: impl IntoIterator<Item = &'a Outcome>,
) -> BTreeMap<String, Tally> {
    let mut out: BTreeMap<String, Tally> = BTreeMap::new();
    for o in outcomes.into_iter().filter(|o| o.status.scored()) {
        for id in &o.ran {
            out.entry(id.clone())
                .or_default()
                .count(o.killed_by.contains(id));
        }
    }
    out
}

/// Each group's tally (a task's criteria): of the scored mutants any of
/// its criteria ran against, killed when one of them failed on it.
pub fn by_group<'a, 'g>(
    outcomes: impl IntoIterator<Item = &'a Outcome>,
    group_of: impl Fn(&str) -> Option<&'g str>,
) -> BTreeMap<String, Tally> {
    let mut out: BTreeMap<String, Tally> = BTreeMap::new();
    for o in outcomes.into_iter().filter(|o| o.status.scored()) {
        let groups: BTreeSet<&str> = o.ran.iter().filter_map(|id| group_of(id)).collect();
        for group in groups {
            let killed = o.killed_by.iter().any(|id| group_of(id) == Some(group));
            out.entry(group.to_owned()).or_default().count(killed);
        }
    }
    out
}

/// The whole run's tally: every scored mutant, killed or survived.
pub fn overall<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Tally {
    let mut tally = Tally::default();
    for o in outcomes.into_iter().filter(|o| o.status.scored()) {
        tally.count(o.status == Status::Killed);
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: Status, ran: &[&str], killed_by: &[&str]) -> Outcome {
        Outcome {
            status,
            ran: ran.iter().map(|s| (*s).to_owned()).collect(),
            killed_by: killed_by.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn a_mutant_another_criterion_killed_is_a_survivor_against_the_weak_one() {
        let outcomes = [
            outcome(Status::Killed, &["weak", "boundary"], &["boundary"]),
            outcome(Status::Killed, &["weak", "boundary"], &["weak", "boundary"]),
            outcome(Status::Unviable, &["weak"], &[]),
            outcome(Status::Timeout, &["weak"], &[]),
        ];
        let by = by_criterion(&outcomes);
        assert_eq!(by["weak"].killed, 1);
        assert_eq!(by["weak"].survived, 1);
        assert_eq!(by["weak"].score, Some(0.5));
        assert_eq!(by["boundary"].score, Some(1.0));
        assert_eq!(overall(&outcomes).score, Some(1.0));
    }

    #[test]
    fn a_task_kills_what_any_of_its_criteria_kill() {
        let outcomes = [
            outcome(Status::Killed, &["weak", "boundary"], &["boundary"]),
            outcome(Status::Survived, &["weak", "other"], &[]),
        ];
        let task = |id: &str| Some(if id == "other" { "t2" } else { "t1" });
        let by = by_group(&outcomes, task);
        assert_eq!((by["t1"].killed, by["t1"].survived), (1, 1));
        assert_eq!((by["t2"].killed, by["t2"].survived), (0, 1));
        assert_eq!(by["t2"].score, Some(0.0));
    }

    #[test]
    fn nothing_scored_has_no_score() {
        let outcomes = [outcome(Status::NotRun, &[], &[])];
        assert_eq!(overall(&outcomes).score, None);
        assert!(by_criterion(&outcomes).is_empty());
    }
}
