//! Retries: the attempt series of a spec and what a retry re-runs. Finding
//! memory across attempts is [`crate::memory`], the doom-loop detector
//! [`crate::doom`]: both pure, so the record can hold their values without
//! importing a stage that reads it.
//!
//! # Layout
//! - [`delta`]: which items a retry runs and which it carries forward.
//! - [`series`]: which series a run belongs to (its key).
//!
//! The series is read from the ledger: a run after a failing (or
//! undecided) run of the same spec and series key is the next attempt; a
//! pass closes the series. An escalation is the spec's on its base, not
//! the series': it holds for every series until `--new-series` or an
//! override.

pub(crate) mod delta;
pub(crate) mod series;

use gate_evidence::ledger::{self, OverrideEntry, RunFilter, SeriesFilter};
use gate_evidence::store::BundleStore;
use gate_evidence::{Ledger, LedgerRow, PublicKey, bundle};

use crate::doom::{self, DoomLoop, FailingAttempt, Failure};
use crate::errors::GateError;
use crate::memory::{self, Dismissed};
use crate::predicate::Predicate;
use crate::record::{RunRecord, Series, Verdict};
use crate::retry::delta::Previous;
use crate::row::RowExtra;
use crate::vouch;

/// What the ledger says about a spec's series, for the next attempt.
#[derive(Debug, Clone, Default)]
pub(crate) struct History {
    /// The series this attempt belongs to (`None`: the spec's own).
    pub series: Option<Series>,
    /// This attempt's number.
    pub attempt: u32,
    /// The attempt before, when this is a retry (read from its verified bundle).
    pub previous: Option<Previous>,
    /// The failing attempts of the series so far, oldest first.
    pub failing: Vec<FailingAttempt>,
    /// Set when the spec is escalated on this base, in whatever series, and
    /// nothing lifted it: the run that escalated, and its hand-off.
    pub escalated: Option<(String, Option<DoomLoop>)>,
    /// Dismissed findings of the spec.
    pub dismissed: Vec<Dismissed>,
    /// Overrides of the spec's runs, newest first.
    pub overrides: Vec<OverrideEntry>,
    /// Why the previous attempt could not be used (its bundle unreadable or
    /// not verifying): the retry then re-runs everything.
    pub previous_unusable: Option<String>,
    /// The tasks' JUnit reports accepted for the spec on this base, in any
    /// series: what a report is judged stale by (read beside the series).
    pub accepted_reports: Vec<crate::record::AcceptedReport>,
}

/// How many of a spec's newest runs, of any series, are looked through for
/// the newest one on the run's base (whether the spec is escalated there).
pub(crate) const ESCALATION_LOOKBACK: u32 = 200;

/// How many of the ledger's last rows a run looks through for rows of its
/// series whose columns were edited away.
const MOVED_WINDOW: u64 = 2_000;

/// Which series a run reads: its spec, its key and its base.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scope<'a> {
    /// The spec's id.
    pub spec_id: &'a str,
    /// The series (`None`: the spec's own).
    pub series: Option<&'a Series>,
    /// The base as given (`--base` or the spec's), which an escalation holds for.
    pub base: Option<&'a str>,
}

/// Reads the series of `scope` from `ledger`. `new_series` starts over.
/// The previous attempt's bundle is fetched from `store` and verified
/// against `trusted` before a retry carries anything from it.
pub(crate) fn history(
    ledger: &Ledger,
    store: &BundleStore,
    scope: Scope<'_>,
    new_series: bool,
    max_attempts: u32,
    trusted: &[PublicKey],
) -> Result<History, GateError> {
    let spec_id = scope.spec_id;
    let mut h = History {
        series: scope.series.cloned(),
        attempt: 1,
        ..History::default()
    };
    // Only what the gate signed decides: an unsigned or edited dismissal
    // suppresses nothing, a planted override lifts nothing.
    h.dismissed = ledger
        .dismissals(Some(spec_id))?
        .into_iter()
        .filter_map(|d| match ledger::vouch(&d, trusted) {
            Ok(d) => Some(d),
            Err(why) => {
                tracing::warn!(run = %d.run_id, finding = %d.finding_id, %why, "dismissal ignored");
                None
            }
        })
        .map(|d| Dismissed {
            id: d.finding_id,
            code_digest: d.code_digest,
            by_agent: d.by.as_deref() == Some(memory::AGENT),
            run_id: d.run_id,
            reason: d.reason,
        })
        .collect();
    h.overrides = ledger
        .overrides(Some(spec_id))?
        .into_iter()
        .filter(|o| match vouch::override_vouched(o, store, trusted) {
            Ok(()) => true,
            Err(why) => {
                tracing::warn!(run = %o.run_id, %why, "override ignored");
                false
            }
        })
        .collect();
    h.overrides.reverse();
    if new_series {
        return Ok(h);
    }
    h.escalated = escalation(ledger, store, scope, &h.overrides, trusted)?;
    // The series is at most the attempt budget long, and one more that
    // escalated for it.
    let limit = max_attempts.saturating_add(2);
    let mut rows = ledger.list(&RunFilter {
        spec_id: Some(spec_id.to_owned()),
        series: Some(SeriesFilter::of(scope.series.map(|s| s.key.as_str()))),
        limit: Some(limit),
        ..RunFilter::default()
    })?;
    // A row whose spec or series column was edited away still belongs
    // where its bundle says: found among the rows since the oldest one
    // listed, and no further back than the ledger's last MOVED_WINDOW rows
    // (what one run reads is bounded).
    let floor = ledger
        .tip()?
        .map_or(0, |(seq, _)| seq.saturating_sub(MOVED_WINDOW));
    let since = rows.last().map_or(floor, |r| r.seq.max(floor));
    let series = scope.series.map(|s| s.key.as_str());
    rows.extend(vouch::moved_away(
        ledger, store, trusted, spec_id, series, since,
    )?);
    rows.sort_by_key(|r| std::cmp::Reverse(r.seq));
    rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    // Each row as its bundle signed it, not as its columns say; a row whose
    // bundle signed another spec is not of this series.
    let (rows, signed): (Vec<&LedgerRow>, Vec<Attempt>) = rows
        .iter()
        .filter_map(|row| Attempt::of(row, store, trusted, spec_id, series).map(|a| (row, a)))
        .unzip();
    let signed = Attempt::numbered(signed);
    let Some((&last_row, last)) = rows.first().zip(signed.first()) else {
        return Ok(h);
    };
    if last.verdict == "pass" {
        return Ok(h);
    }
    if last.verdict == "escalate" && h.escalated.is_none() {
        // The series ended in an escalation that a human lifted since (an
        // override, or a new series started on this base), or that holds
        // on another base: start over.
        return Ok(h);
    }
    h.attempt = last.number + 1;
    if h.escalated.is_some() {
        // Nothing runs: nothing to carry.
        return Ok(h);
    }
    let series: Vec<&Attempt> = {
        let mut s = Vec::new();
        for a in &signed {
            if a.verdict == "pass" {
                break;
            }
            s.push(a);
            if a.number <= 1 {
                break;
            }
        }
        s.reverse();
        s
    };
    h.failing = series
        .iter()
        .filter(|a| a.verdict == "fail")
        .map(|a| FailingAttempt {
            attempt: a.number,
            failures: a.extra.failures.iter().cloned().collect(),
        })
        .collect();
    let last = last_row;
    match read_previous(last, store, trusted) {
        Ok(p) => h.previous = Some(p),
        Err(why) => h.previous_unusable = Some(why),
    }
    Ok(h)
}

/// Whether the spec is escalated on the scope's base, in any series: its
/// newest run on that base (of its newest [`ESCALATION_LOOKBACK`] runs)
/// escalated, and no override lifted it. Runs of an escalated spec are not
/// recorded, so any later run on the base is one a human let through
/// (`--new-series`, an override). A run the gate cannot vouch for neither
/// escalates nor lifts anything.
fn escalation(
    ledger: &Ledger,
    store: &BundleStore,
    scope: Scope<'_>,
    overrides: &[OverrideEntry],
    trusted: &[PublicKey],
) -> Result<Option<(String, Option<DoomLoop>)>, GateError> {
    let rows = ledger.list(&RunFilter {
        spec_id: Some(scope.spec_id.to_owned()),
        limit: Some(ESCALATION_LOOKBACK),
        ..RunFilter::default()
    })?;
    for row in &rows {
        let record = match vouch::row_run(row, store, trusted) {
            Ok(record) => record,
            Err(why) => {
                tracing::warn!(seq = row.seq, run = %row.entry.run_id, %why,
                    "a run of the spec is not as signed: it escalates nothing and lifts nothing");
                continue;
            }
        };
        if record.base.as_deref() != scope.base {
            continue;
        }
        let lifted = overrides.iter().any(|o| o.run_id == row.entry.run_id);
        if record.verdict != Verdict::Escalate || lifted {
            return Ok(None);
        }
        return Ok(Some((row.entry.run_id.clone(), record.doom_loop)));
    }
    Ok(None)
}

/// One earlier attempt as the series reads it: from its verified bundle.
struct Attempt {
    verdict: String,
    number: u32,
    extra: RowExtra,
    /// False when its row is not as signed: its number is then never lower
    /// than the attempt before it.
    vouched: bool,
}

impl Attempt {
    /// `row` as its bundle signed it; `None` when that bundle signed a run of
    /// another spec or series (the row was moved here). A row the gate cannot vouch
    /// for (its bundle unreadable or not verifying, or a column edited)
    /// keeps its place in the series as a failed attempt (or escalated,
    /// when its bundle says so): never a pass, never a reason to start over.
    fn of(
        row: &LedgerRow,
        store: &BundleStore,
        trusted: &[PublicKey],
        spec_id: &str,
        series: Option<&str>,
    ) -> Option<Self> {
        let why = match vouch::row_run(row, store, trusted) {
            Ok(record) => {
                return Some(Self {
                    verdict: record.verdict.as_str().to_owned(),
                    number: record.attempt,
                    extra: RowExtra::of(&record),
                    vouched: true,
                });
            }
            Err(why) => why,
        };
        let signed = vouch::signed_run_of(row, store, trusted);
        if let Some(record) = &signed
            && (record.spec_id != spec_id
                || record.series.as_ref().map(|s| s.key.as_str()) != series)
        {
            tracing::warn!(seq = row.seq, run = %row.entry.run_id, signed_spec = %record.spec_id,
                "a run moved into the series is not of it");
            return None;
        }
        tracing::warn!(seq = row.seq, run = %row.entry.run_id, %why,
            "a run of the series is not as signed: counted as a failed attempt");
        // What its bundle signed, when that is this very run.
        let own = signed.filter(|r| r.run_id == row.entry.run_id);
        let escalated = own
            .as_ref()
            .is_some_and(|r| r.verdict.as_str() == "escalate");
        Some(Self {
            verdict: if escalated { "escalate" } else { "fail" }.to_owned(),
            number: own
                .as_ref()
                .map_or(row.entry.attempt, |r| r.attempt.max(row.entry.attempt)),
            extra: own.as_ref().map(RowExtra::of).unwrap_or_default(),
            vouched: false,
        })
    }

    /// The attempts, newest first, with each unvouched one numbered at
    /// least one more than the attempt before it: an edited row cannot
    /// restart the count.
    fn numbered(mut attempts: Vec<Self>) -> Vec<Self> {
        let mut older: Option<u32> = None;
        for a in attempts.iter_mut().rev() {
            if !a.vouched
                && let Some(before) = older
            {
                a.number = a.number.max(before.saturating_add(1));
            }
            older = (a.verdict != "pass").then_some(a.number);
        }
        attempts
    }
}

/// Reads and verifies a run's bundle and the run inside it.
fn read_previous(
    row: &LedgerRow,
    store: &BundleStore,
    trusted: &[PublicKey],
) -> Result<Previous, String> {
    let at = &row.entry.bundle_path;
    let bytes = crate::attest::row_bundle(store, row).map_err(|e| e.to_string())?;
    let opened = bundle::open(&bytes, trusted).map_err(|e| e.to_string())?;
    let record = Predicate::read(&opened.statement.predicate)
        .map_err(|e| format!("{at} holds no readable run: {e}"))?
        .run;
    let subjects = opened
        .statement
        .subject
        .iter()
        .map(|s| (s.name.clone(), s.digest.blake3.clone()))
        .collect();
    Ok(Previous {
        record,
        bundle_sha256: opened.sha256,
        subjects,
    })
}

/// The failures of a run for the doom-loop detector: every failed check and
/// criterion (not skipped, not unverified) and every critical finding.
pub(crate) fn failures(record: &RunRecord) -> Vec<Failure> {
    use crate::record::ItemStatus;
    let tail = |text: &str| {
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    };
    let mut out: Vec<Failure> = Vec::new();
    for c in &record.checks {
        if c.status == ItemStatus::Failed {
            let text = format!(
                "{}\n{}",
                c.reason.as_deref().unwrap_or(""),
                tail(&c.output.tail)
            );
            out.push(Failure {
                item: c.id.clone(),
                fingerprint: doom::fingerprint(&c.id, &text),
            });
        }
    }
    for c in &record.criteria {
        if c.status == ItemStatus::Failed {
            // A judge words its reason anew every time: a judged criterion's
            // failure is the fact that it was not met.
            let text = if c.decided_by == crate::record::DecidedBy::Model {
                "not met".to_owned()
            } else {
                format!(
                    "{}\n{}",
                    c.reason.as_deref().unwrap_or(""),
                    tail(&c.output.tail)
                )
            };
            out.push(Failure {
                item: c.id.clone(),
                fingerprint: doom::fingerprint(&c.id, &text),
            });
        }
    }
    for f in record.findings.iter().filter(|f| f.severity == "critical") {
        out.push(Failure {
            item: format!("finding {} ({})", f.id, f.file),
            fingerprint: doom::fingerprint(&f.id, ""),
        });
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An attempt as (verdict, number, vouched).
    type Row = (&'static str, u32, bool);

    /// Attempts newest first; the numbers the series counts with.
    fn numbers(series: &[Row]) -> Vec<u32> {
        let attempts = series
            .iter()
            .map(|(verdict, number, vouched)| Attempt {
                verdict: (*verdict).to_owned(),
                number: *number,
                extra: RowExtra::default(),
                vouched: *vouched,
            })
            .collect();
        Attempt::numbered(attempts)
            .iter()
            .map(|a| a.number)
            .collect()
    }

    #[test]
    fn an_edited_row_cannot_restart_the_count() {
        // (what, the series newest first, the numbers counted)
        let cases: [(&str, &[Row], &[u32]); 5] = [
            (
                "all as signed",
                &[("fail", 3, true), ("fail", 2, true), ("fail", 1, true)],
                &[3, 2, 1],
            ),
            (
                "the latest's attempt edited to 1",
                &[("fail", 1, false), ("fail", 2, true), ("fail", 1, true)],
                &[3, 2, 1],
            ),
            (
                "two edited rows in a row",
                &[("fail", 1, false), ("fail", 1, false), ("fail", 4, true)],
                &[6, 5, 4],
            ),
            (
                "a new series after a pass stays new",
                &[("fail", 1, false), ("pass", 3, true), ("fail", 2, true)],
                &[1, 3, 2],
            ),
            (
                "a signed restart (--new-series) is believed",
                &[("fail", 1, true), ("fail", 5, true)],
                &[1, 5],
            ),
        ];
        for (what, series, want) in cases {
            assert_eq!(numbers(series), want, "{what}");
        }
    }
}
