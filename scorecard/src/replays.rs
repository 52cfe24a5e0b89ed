//! A replay's figures (`gate replay`): each side's recall, noise, cost,
//! tokens, latency and failures, overall and per stratum, as the replay
//! reports them and the ledger keeps their summary; the report shows the
//! latest replays from them. The replay that computes them is
//! `gate_review::replay::score`.

use serde::{Deserialize, Serialize};

use crate::stats;

/// Attempts that failed, by kind.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Failures {
    /// Attempts cut at their deadline or timed out.
    pub timeouts: u64,
    /// Attempts the provider refused (a fatal error: auth, quota, an unsupported request).
    pub refusals: u64,
    /// Models skipped because their circuit breaker was open.
    pub breaker_skips: u64,
    /// Other failures: invalid replies after their repair, retryable
    /// errors, requests over the budget.
    pub other: u64,
}

impl Failures {
    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: Self) {
        self.timeouts += o.timeouts;
        self.refusals += o.refusals;
        self.breaker_skips += o.breaker_skips;
        self.other += o.other;
    }
}

/// A proportion with its 95% Wilson interval; `rate`, `low` and `high` are
/// `null` with nothing to count, or below the minimum sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Rate {
    /// Runs (or findings) that counted.
    pub hits: u64,
    /// Out of.
    pub of: u64,
    /// `hits ÷ of`.
    pub rate: Option<f64>,
    /// The interval's lower bound.
    pub low: Option<f64>,
    /// The interval's upper bound.
    pub high: Option<f64>,
    /// True when `of` is under the minimum sample: no rate is given.
    pub below_minimum: bool,
}

impl Rate {
    /// `hits` of `of`, with no rate below `minimum`.
    pub fn of(hits: u64, of: u64, minimum: u64) -> Self {
        let below = of < minimum;
        let interval = (!below).then(|| stats::wilson(hits, of)).flatten();
        Self {
            hits,
            of,
            rate: (!below).then(|| stats::ratio(hits, of)).flatten(),
            low: interval.map(|i| i.low),
            high: interval.map(|i| i.high),
            below_minimum: below,
        }
    }
}

/// Recall: broken runs on which a critical or warning named a file the fix
/// or revert touched.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Recall {
    /// Broken runs caught.
    pub caught: u64,
    /// Broken runs.
    pub of: u64,
    /// `caught ÷ of`.
    pub rate: Option<f64>,
    /// Lower bound.
    pub low: Option<f64>,
    /// Upper bound.
    pub high: Option<f64>,
    /// True when `of` is under the minimum sample.
    pub below_minimum: bool,
}

impl From<Recall> for Rate {
    fn from(r: Recall) -> Self {
        Self {
            hits: r.caught,
            of: r.of,
            rate: r.rate,
            low: r.low,
            high: r.high,
            below_minimum: r.below_minimum,
        }
    }
}

impl From<Rate> for Recall {
    fn from(r: Rate) -> Self {
        Self {
            caught: r.hits,
            of: r.of,
            rate: r.rate,
            low: r.low,
            high: r.high,
            below_minimum: r.below_minimum,
        }
    }
}

/// Input and output tokens.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Tokens {
    /// Input tokens, cached included.
    pub input: u64,
    /// Cached input tokens.
    pub cached_input: u64,
    /// Output tokens.
    pub output: u64,
}

/// One side's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Side {
    /// Recall on runs labelled broken.
    pub recall: Recall,
    /// Runs labelled fine on which a critical was raised.
    pub noise: Rate,
    /// Findings that stood, per run.
    pub findings_per_run: Option<f64>,
    /// US dollars, all runs.
    pub cost_usd: f64,
    /// Tokens, all runs.
    pub tokens: Tokens,
    /// The slowest reviewer's wall time, summed over runs.
    pub latency_ms: u64,
    /// Failed attempts by kind.
    pub failures: Failures,
}

/// Both sides over one set of runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Scored {
    /// Runs replayed.
    pub runs: u64,
    /// The recorded review.
    pub baseline: Side,
    /// The candidate.
    pub candidate: Side,
    /// Findings both raised (same file, overlapping line) out of the
    /// distinct findings either raised.
    pub agreement: Rate,
}

/// One stratum: a dimension's value and the runs in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stratum {
    /// `tier`, `language`, `tasks` or `area`.
    pub by: String,
    /// The value (`light`, `py`, `2-4`, `src`).
    pub value: String,
    /// Its figures; rates below the minimum sample are left out.
    #[serde(flatten)]
    pub scored: Scored,
}

/// One run's figures on one side, for the report's list of runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunFigures {
    /// Findings that stood.
    pub findings: u64,
    /// Of those, criticals.
    pub critical: u64,
    /// Of those, warnings.
    pub warning: u64,
    /// On a run labelled broken: whether a critical or warning named a file
    /// the fix touched (any changed file when none is named); else `null`.
    pub caught: Option<bool>,
    /// US dollars.
    pub cost_usd: f64,
    /// Tokens.
    pub tokens: Tokens,
    /// The slowest reviewer's wall time.
    pub latency_ms: u64,
    /// Failed attempts by kind.
    pub failures: Failures,
}

/// What the ledger keeps of a replay's scores, for the report: written by
/// `gate replay`, read here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplaySummary {
    /// Runs replayed.
    pub runs: u64,
    /// Runs selected and skipped.
    pub skipped: u64,
    /// The recorded reviews' figures.
    pub baseline: Side,
    /// The candidate's.
    pub candidate: Side,
    /// Findings both raised.
    pub agreement: Rate,
    /// Per stratum.
    pub strata: Vec<Stratum>,
    /// The plan it executed, if any.
    #[serde(default)]
    pub plan_sha256: Option<String>,
}

/// A replay as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplaySeen {
    /// Its id.
    pub replay_id: String,
    /// When it was recorded (RFC 3339).
    pub recorded_at: String,
    /// The candidate routing table's file.
    pub routing: String,
    /// Its blake3.
    pub routing_blake3: String,
    /// Where the replay's bundle is.
    pub bundle: String,
    /// Its scores.
    #[serde(flatten)]
    pub summary: ReplaySummary,
}

/// The newest replay of each candidate routing table (by digest), newest
/// first; a replay whose summary does not read is left out.
pub fn latest_per_routing(entries: &[gate_evidence::ledger::ReplayEntry]) -> Vec<ReplaySeen> {
    let mut seen: Vec<ReplaySeen> = Vec::new();
    let mut newest: Vec<&gate_evidence::ledger::ReplayEntry> = entries.iter().collect();
    newest.sort_by_key(|e| std::cmp::Reverse(e.recorded_at));
    for e in newest {
        if seen.iter().any(|s| s.routing_blake3 == e.routing_blake3) {
            continue;
        }
        let Ok(summary) = ReplaySummary::deserialize(&e.summary) else {
            continue;
        };
        seen.push(ReplaySeen {
            replay_id: e.replay_id.clone(),
            recorded_at: e.recorded_at.to_rfc3339(),
            routing: e.routing.clone(),
            routing_blake3: e.routing_blake3.clone(),
            bundle: e.bundle_path.clone(),
            summary,
        });
    }
    seen
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn side(caught: u64) -> Side {
        Side {
            recall: Rate::of(caught, 1, 1).into(),
            noise: Rate::of(0, 2, 1),
            findings_per_run: Some(1.0),
            cost_usd: 0.25,
            tokens: Tokens::default(),
            latency_ms: 10,
            failures: Failures::default(),
        }
    }

    fn entry(
        id: &str,
        table: &str,
        hour: u32,
        summary: serde_json::Value,
    ) -> gate_evidence::ledger::ReplayEntry {
        gate_evidence::ledger::ReplayEntry {
            replay_id: id.into(),
            recorded_at: chrono::Utc
                .with_ymd_and_hms(2026, 12, 1, hour, 0, 0)
                .unwrap(),
            routing: format!("/w/{table}.toml"),
            routing_blake3: table.repeat(8),
            bundle_path: format!("/w/.gate/bundles/{id}.dsse.json"),
            envelope_sha256: "e".repeat(64),
            summary,
        }
    }

    #[test]
    fn the_newest_replay_of_each_table_is_shown_and_a_broken_summary_is_not() {
        let summary = serde_json::to_value(ReplaySummary {
            runs: 3,
            skipped: 1,
            baseline: side(0),
            candidate: side(1),
            agreement: Rate::of(0, 1, 1),
            strata: Vec::new(),
            plan_sha256: None,
        })
        .unwrap();
        let entries = [
            entry("old", "a", 1, summary.clone()),
            entry("new", "a", 2, summary.clone()),
            entry("other", "b", 3, summary),
            entry("broken", "c", 4, serde_json::json!({"runs": "many"})),
        ];
        let seen = latest_per_routing(&entries);
        let ids: Vec<&str> = seen.iter().map(|s| s.replay_id.as_str()).collect();
        assert_eq!(ids, ["other", "new"]);
        assert_eq!(seen[1].summary.candidate.recall.caught, 1);
        assert!(Rate::of(1, 2, 3).below_minimum);
        assert_eq!(Rate::of(1, 2, 3).rate, None);
        assert_eq!(Rate::of(0, 0, 0).rate, None);
    }
}
