//! The recorded runs a replay selects: the ledger's rows filtered by spec,
//! series, verdict, tier, dates and outcome, then sampled with a seed.

use std::collections::BTreeMap;

use gate_evidence::LedgerRow;
use gate_evidence::ledger::{OutcomeEntry, RunFilter, SeriesFilter};
use gate_review::replay::score::Label;

use crate::cli::ReplaySelection;
use crate::config::parse_date;
use crate::errors::GateError;

/// The selection with its flags checked: a seed is drawn when `--sample`
/// asks for one and none was given, so the report can name it.
pub(crate) fn settled(mut selection: ReplaySelection) -> Result<ReplaySelection, GateError> {
    if let Some(v) = &selection.verdict
        && !matches!(v.as_str(), "pass" | "fail" | "escalate" | "incomplete")
    {
        return Err(GateError::Usage(format!(
            "--verdict {v:?}: one of pass, fail, escalate, incomplete"
        )));
    }
    if let Some(t) = &selection.tier
        && !matches!(t.as_str(), "trivial" | "light" | "full")
    {
        return Err(GateError::Usage(format!(
            "--tier {t:?}: one of trivial, light, full"
        )));
    }
    if let Some(date) = &selection.since {
        parse_date("--since", date)?;
    }
    if let Some(date) = &selection.until {
        parse_date("--until", date)?;
    }
    if selection.sample.is_some() && selection.seed.is_none() {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes)
            .map_err(|e| GateError::Usage(format!("cannot draw a seed: {e}")))?;
        selection.seed = Some(u64::from_le_bytes(bytes));
    }
    Ok(selection)
}

/// The rows `selection` keeps, oldest first.
pub(crate) fn rows(
    ledger: &gate_evidence::Ledger,
    selection: &ReplaySelection,
    outcomes: &BTreeMap<String, OutcomeEntry>,
) -> Result<Vec<LedgerRow>, GateError> {
    let filter = RunFilter {
        spec_id: selection.spec.clone(),
        series: selection.series.clone().map(SeriesFilter::Key),
        verdict: selection.verdict.clone(),
        since: selection
            .since
            .as_deref()
            .map(|t| parse_date("--since", t))
            .transpose()?,
        limit: None,
    };
    let until = selection
        .until
        .as_deref()
        .map(|t| parse_date("--until", t))
        .transpose()?;
    let mut rows: Vec<LedgerRow> = ledger
        .list(&filter)?
        .into_iter()
        .filter(|r| until.is_none_or(|u| r.entry.started_at < u))
        .filter(|r| selection.tier.as_ref().is_none_or(|t| *t == r.entry.tier))
        .filter(|r| !selection.labelled || outcomes.contains_key(&r.entry.run_id))
        .collect();
    if let (Some(n), Some(seed)) = (selection.sample, selection.seed) {
        // A draw that depends only on the seed and the runs' ids.
        rows.sort_by_cached_key(|r| draw(seed, &r.entry.run_id));
        rows.truncate(n as usize);
    }
    rows.sort_by_key(|r| r.seq);
    Ok(rows)
}

fn draw(seed: u64, run_id: &str) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(&seed.to_le_bytes());
    h.update(run_id.as_bytes());
    *h.finalize().as_bytes()
}

/// Each run's latest outcome.
pub(crate) fn latest_outcomes(
    ledger: &gate_evidence::Ledger,
) -> Result<BTreeMap<String, OutcomeEntry>, GateError> {
    Ok(ledger
        .latest_outcomes()?
        .into_iter()
        .map(|o| (o.run_id.clone(), o))
        .collect())
}

/// An outcome as replay scores it: broken with the files the harvested
/// evidence blamed (none named for a person's outcome), or fine.
pub(crate) fn label(outcome: &OutcomeEntry) -> Label {
    if !outcome.broken {
        return Label::Fine;
    }
    let mut files: Vec<String> = outcome
        .evidence
        .iter()
        .flat_map(|e| e.blamed.iter().map(|b| b.file.clone()))
        .collect();
    files.sort();
    files.dedup();
    Label::Broken { files }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_draw_depends_on_the_seed_alone() {
        assert_eq!(draw(7, "a"), draw(7, "a"));
        assert_ne!(draw(7, "a"), draw(8, "a"));
    }

    #[test]
    fn a_harvested_outcome_names_the_blamed_files_once() {
        use gate_evidence::ledger::{BlamedLine, OutcomeEvidence};
        let blamed = |file: &str| BlamedLine {
            file: file.into(),
            line: 1,
            commit: "c".into(),
        };
        let outcome = OutcomeEntry {
            run_id: "r".into(),
            broken: true,
            reason: None,
            source: Some("git:szz".into()),
            recorded_at: chrono::Utc::now(),
            evidence: Some(OutcomeEvidence {
                blamed: vec![blamed("b.py"), blamed("a.py"), blamed("b.py")],
                ..OutcomeEvidence::default()
            }),
            envelope: None,
        };
        assert_eq!(
            label(&outcome),
            Label::Broken {
                files: vec!["a.py".into(), "b.py".into()]
            }
        );
        let fine = OutcomeEntry {
            broken: false,
            ..outcome
        };
        assert_eq!(label(&fine), Label::Fine);
    }
}
