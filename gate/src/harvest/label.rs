//! Harvested labels: their sources, in order of strength, their
//! confidence, and which of them may be recorded over what a run has.

use gate_evidence::ledger::{
    EvidenceCommit, HARVESTED_SOURCE_PREFIX, OutcomeEntry, OutcomeEvidence,
};

use gate_history::commits::Commit;

/// Where a harvested label came from, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Source {
    /// The change lived through the window and the later commits.
    Survived,
    /// A later fix's removed lines blame to a landed commit.
    Szz,
    /// A later commit's message names a landed commit as what it fixes.
    Fixes,
    /// A later commit reverts a landed commit.
    Revert,
}

impl Source {
    /// Every source, strongest first.
    pub(crate) const ALL: [Self; 4] = [Self::Revert, Self::Fixes, Self::Szz, Self::Survived];

    /// As recorded: `git:revert`, `git:fixes`, `git:szz`, `git:survived`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Revert => "git:revert",
            Self::Fixes => "git:fixes",
            Self::Szz => "git:szz",
            Self::Survived => "git:survived",
        }
    }

    /// The source a recorded outcome names, when it is a harvested one.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether the label says broken.
    pub(crate) fn broken(self) -> bool {
        !matches!(self, Self::Survived)
    }
}

/// Confidence, in hundredths, of a revert its message names.
pub(crate) const REVERT_NAMED: u8 = 95;
/// Of a revert found by its diff being the exact inverse.
pub(crate) const REVERT_INVERSE: u8 = 90;
/// Of a commit naming a landed commit as what it fixes.
pub(crate) const FIXES: u8 = 85;
/// Of SZZ: about half of keyword-found fixes fix bugs (Herbold et al.).
pub(crate) const SZZ: u8 = 50;
/// Of a survival: no news is weaker news than a revert.
pub(crate) const SURVIVED: u8 = 70;

/// A label the harvester would record for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Label {
    /// Its source.
    pub source: Source,
    /// Its one-line reason.
    pub reason: String,
    /// What it rests on.
    pub evidence: OutcomeEvidence,
}

/// A later commit as evidence.
pub(crate) fn evidence_commit(c: &Commit) -> EvidenceCommit {
    EvidenceCommit {
        commit: c.id.clone(),
        summary: c.summary().to_owned(),
        date: c.date,
    }
}

/// What becomes of a label, given the outcomes a run already has (those
/// the gate vouches for, oldest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Recorded: the run had no outcome.
    New,
    /// Recorded over a weaker harvested one, which stays as history.
    Stronger(Source),
    /// Not recorded: a person's outcome stands.
    PersonKept,
    /// Not recorded: the run already has this label or a stronger one.
    Already,
}

/// Whether `outcome` is the harvester's (its source is reserved to it).
pub(crate) fn harvested(outcome: &OutcomeEntry) -> bool {
    outcome
        .source
        .as_deref()
        .is_some_and(|s| s.trim().starts_with(HARVESTED_SOURCE_PREFIX))
}

/// The fate of a label from `source` over a run's `existing` outcomes.
pub(crate) fn fate(source: Source, existing: &[OutcomeEntry]) -> Fate {
    if existing.iter().any(|o| !harvested(o)) {
        return Fate::PersonKept;
    }
    let strongest = existing
        .iter()
        .filter_map(|o| o.source.as_deref().and_then(Source::parse))
        .max();
    match strongest {
        None => Fate::New,
        Some(had) if had >= source => Fate::Already,
        Some(had) => Fate::Stronger(had),
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    fn outcome(source: Option<&str>) -> OutcomeEntry {
        OutcomeEntry {
            run_id: "r".into(),
            broken: true,
            reason: None,
            source: source.map(str::to_owned),
            recorded_at: Utc::now(),
            evidence: None,
            envelope: None,
        }
    }

    #[test]
    fn a_person_wins_and_only_a_stronger_source_replaces() {
        use Source::{Fixes, Revert, Survived, Szz};
        // (the label, the sources already recorded, its fate)
        let cases: Vec<(Source, Vec<Option<&str>>, Fate)> = vec![
            (Szz, vec![], Fate::New),
            (Revert, vec![Some("ci")], Fate::PersonKept),
            (Revert, vec![None], Fate::PersonKept),
            (
                Revert,
                vec![Some("git:survived"), Some("oncall")],
                Fate::PersonKept,
            ),
            (Szz, vec![Some("git:szz")], Fate::Already),
            (Szz, vec![Some("git:fixes")], Fate::Already),
            (Fixes, vec![Some("git:szz")], Fate::Stronger(Szz)),
            (
                Revert,
                vec![Some("git:survived"), Some("git:szz")],
                Fate::Stronger(Szz),
            ),
            (Survived, vec![Some("git:survived")], Fate::Already),
        ];
        for (source, had, want) in cases {
            let had: Vec<OutcomeEntry> = had.into_iter().map(outcome).collect();
            assert_eq!(fate(source, &had), want, "{source:?} over {had:?}");
        }
        assert!(Revert > Fixes && Fixes > Szz && Szz > Survived);
        assert_eq!(Source::parse("git:fixes"), Some(Fixes));
        assert!(!Survived.broken() && Szz.broken());
    }
}
