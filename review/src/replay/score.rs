//! A replay scored against outcomes: for each side (the recorded baseline
//! and the candidate), recall on runs later labelled broken, noise on runs
//! labelled fine, findings per run, agreement with the baseline, cost,
//! tokens, latency and failures; overall and per stratum, each rate with
//! its Wilson interval, a stratum below the minimum sample without one.

use std::collections::BTreeMap;

use gate_scorecard::replays::{Failures, Rate, RunFigures, Scored, Side, Stratum, Tokens};
use gate_scorecard::stats;

use crate::findings::{Finding, lines_overlap};
use crate::record::{AttemptOutcome, ReviewRecord};
use crate::role::Role;

/// What became of a run later, as harvested or recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Label {
    /// It later broke; the files the fix or revert touched (empty: none named).
    Broken {
        /// The files.
        files: Vec<String>,
    },
    /// It held.
    Fine,
}

/// One side's review of one run, as scored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reviewed {
    /// The findings that stood.
    pub findings: Vec<Finding>,
    /// US dollars spent (unpriced calls count 0).
    pub cost_usd: f64,
    /// Input tokens, cached included.
    pub input_tokens: u64,
    /// Cached input tokens.
    pub cached_input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// The slowest reviewer's wall time (the panel runs at once).
    pub latency_ms: u64,
    /// Failures by kind.
    pub failures: Failures,
}

impl Reviewed {
    /// The figures of a review's record and the findings that stood; only
    /// the reviewers' findings count (a run's record also holds the gate's
    /// own, which no model raised).
    pub fn of(record: &ReviewRecord, findings: &[Finding]) -> Self {
        let mut out = Self {
            findings: findings
                .iter()
                .filter(|f| f.role.parse::<Role>().is_ok())
                .cloned()
                .collect(),
            ..Self::default()
        };
        for s in &record.specialists {
            out.cost_usd += s.cost_usd.unwrap_or(0.0);
            out.input_tokens += s.input_tokens.unwrap_or(0);
            out.cached_input_tokens += s.cached_input_tokens.unwrap_or(0);
            out.output_tokens += s.output_tokens.unwrap_or(0);
            out.latency_ms = out.latency_ms.max(s.latency_ms);
            for a in &s.attempts {
                count_failure(&mut out.failures, a.outcome, a.error.as_deref());
            }
        }
        out
    }

    /// Whether it raised a critical or a warning on one of `files`.
    fn caught(&self, files: &[String]) -> bool {
        self.findings.iter().any(|f| {
            matches!(f.severity.as_str(), "critical" | "warning") && files.contains(&f.file)
        })
    }

    fn raised_critical(&self) -> bool {
        self.findings.iter().any(|f| f.severity == "critical")
    }
}

/// Counts one attempt's failure, by kind.
fn count_failure(f: &mut Failures, outcome: AttemptOutcome, error: Option<&str>) {
    let timed_out = error.is_some_and(|e| {
        let e = e.to_lowercase();
        e.contains("timed out") || e.contains("timeout") || e.contains("deadline")
    });
    match outcome {
        AttemptOutcome::Ok => {}
        AttemptOutcome::BreakerOpen => f.breaker_skips += 1,
        _ if timed_out => f.timeouts += 1,
        AttemptOutcome::Fatal => f.refusals += 1,
        AttemptOutcome::Retryable | AttemptOutcome::Malformed | AttemptOutcome::OverBudget => {
            f.other += 1;
        }
    }
}

/// One replayed run, both sides.
#[derive(Debug, Clone)]
pub struct Case {
    /// The run.
    pub run_id: String,
    /// Its outcome, when one is recorded.
    pub label: Option<Label>,
    /// The files its change held.
    pub changed: Vec<String>,
    /// Its tier (`trivial`, `light`, `full`).
    pub tier: String,
    /// Tasks in its spec.
    pub tasks: usize,
    /// The recorded review.
    pub baseline: Reviewed,
    /// The candidate's review of the same request.
    pub candidate: Reviewed,
}

impl Case {
    /// The figures of one side of this run.
    pub fn figures(&self, pick: fn(&Self) -> &Reviewed) -> RunFigures {
        let r = pick(self);
        let count = |sev: &str| r.findings.iter().filter(|f| f.severity == sev).count() as u64;
        RunFigures {
            findings: r.findings.len() as u64,
            critical: count("critical"),
            warning: count("warning"),
            caught: match &self.label {
                Some(Label::Broken { files }) => Some(r.caught(if files.is_empty() {
                    &self.changed
                } else {
                    files
                })),
                _ => None,
            },
            cost_usd: r.cost_usd,
            tokens: Tokens {
                input: r.input_tokens,
                cached_input: r.cached_input_tokens,
                output: r.output_tokens,
            },
            latency_ms: r.latency_ms,
            failures: r.failures,
        }
    }
}

/// Scores `cases`: overall (rates given from one counted run) and per
/// stratum (rates given from `minimum` counted runs).
pub fn score(cases: &[Case], minimum: u64) -> (Scored, Vec<Stratum>) {
    let all: Vec<&Case> = cases.iter().collect();
    let overall = scored(&all, 1);
    let mut groups: BTreeMap<(String, String), Vec<&Case>> = BTreeMap::new();
    for c in cases {
        for key in strata_of(c) {
            groups.entry(key).or_default().push(c);
        }
    }
    let strata = groups
        .into_iter()
        .map(|((by, value), members)| Stratum {
            by,
            value,
            scored: scored(&members, minimum),
        })
        .collect();
    (overall, strata)
}

/// The strata a run is in: its tier, each language (file extension) and
/// area (first folder) its change touches, its task count's bucket.
pub fn strata_of(c: &Case) -> Vec<(String, String)> {
    let mut out = vec![
        ("tier".to_owned(), c.tier.clone()),
        ("tasks".to_owned(), task_bucket(c.tasks).to_owned()),
    ];
    let mut languages: Vec<String> = c.changed.iter().map(|p| language(p)).collect();
    languages.sort();
    languages.dedup();
    out.extend(languages.into_iter().map(|l| ("language".to_owned(), l)));
    let mut areas: Vec<String> = c.changed.iter().map(|p| area(p)).collect();
    areas.sort();
    areas.dedup();
    out.extend(areas.into_iter().map(|a| ("area".to_owned(), a)));
    out
}

fn task_bucket(n: usize) -> &'static str {
    match n {
        0 | 1 => "1",
        2..=4 => "2-4",
        _ => "5+",
    }
}

/// A file's language: its extension, lower-cased (`none` without one).
fn language(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => ext.to_lowercase(),
        _ => "none".to_owned(),
    }
}

/// A file's area: its first folder (`.` for a file at the root).
fn area(path: &str) -> String {
    match path.split_once('/') {
        Some((first, _)) => first.to_owned(),
        None => ".".to_owned(),
    }
}

fn scored(cases: &[&Case], minimum: u64) -> Scored {
    let side = |pick: fn(&Case) -> &Reviewed| side(cases, pick, minimum);
    let (mut agreed, mut distinct) = (0, 0);
    for c in cases {
        let (a, d) = agreement(&c.baseline.findings, &c.candidate.findings);
        agreed += a;
        distinct += d;
    }
    Scored {
        runs: cases.len() as u64,
        baseline: side(|c| &c.baseline),
        candidate: side(|c| &c.candidate),
        agreement: Rate::of(agreed, distinct, minimum),
    }
}

fn side(cases: &[&Case], pick: fn(&Case) -> &Reviewed, minimum: u64) -> Side {
    let (mut caught, mut broken, mut noisy, mut fine) = (0, 0, 0, 0);
    let mut findings = 0;
    let mut out = Side {
        recall: Rate::of(0, 0, 0).into(),
        noise: Rate::of(0, 0, 0),
        findings_per_run: None,
        cost_usd: 0.0,
        tokens: Tokens::default(),
        latency_ms: 0,
        failures: Failures::default(),
    };
    for c in cases {
        let r = pick(c);
        findings += r.findings.len() as u64;
        out.cost_usd += r.cost_usd;
        out.tokens.input += r.input_tokens;
        out.tokens.cached_input += r.cached_input_tokens;
        out.tokens.output += r.output_tokens;
        out.latency_ms += r.latency_ms;
        out.failures.add(r.failures);
        match &c.label {
            Some(Label::Broken { files }) => {
                broken += 1;
                let files = if files.is_empty() { &c.changed } else { files };
                caught += u64::from(r.caught(files));
            }
            Some(Label::Fine) => {
                fine += 1;
                noisy += u64::from(r.raised_critical());
            }
            None => {}
        }
    }
    out.recall = Rate::of(caught, broken, minimum).into();
    out.noise = Rate::of(noisy, fine, minimum);
    out.findings_per_run = stats::ratio(findings, cases.len() as u64);
    out
}

/// Findings both raised (same file, overlapping line), and the distinct
/// findings either raised.
fn agreement(baseline: &[Finding], candidate: &[Finding]) -> (u64, u64) {
    let mut taken = vec![false; candidate.len()];
    let mut agreed = 0;
    for b in baseline {
        let hit = candidate
            .iter()
            .enumerate()
            .find(|(i, c)| !taken[*i] && c.file == b.file && lines_overlap(c.line, b.line));
        if let Some((i, _)) = hit {
            taken[i] = true;
            agreed += 1;
        }
    }
    let distinct = (baseline.len() + candidate.len()) as u64 - agreed;
    (agreed, distinct)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(severity: &str, file: &str, line: u32) -> Finding {
        Finding::raised(
            "security",
            severity,
            file.to_owned(),
            Some(line),
            "title".to_owned(),
            "detail".to_owned(),
            0.9,
        )
    }

    fn case(
        id: &str,
        label: Option<Label>,
        baseline: Vec<Finding>,
        candidate: Vec<Finding>,
    ) -> Case {
        Case {
            run_id: id.to_owned(),
            label,
            changed: vec!["src/auth.py".to_owned(), "docs/a.md".to_owned()],
            tier: "light".to_owned(),
            tasks: 2,
            baseline: Reviewed {
                findings: baseline,
                ..Reviewed::default()
            },
            candidate: Reviewed {
                findings: candidate,
                cost_usd: 0.5,
                ..Reviewed::default()
            },
        }
    }

    #[test]
    fn recall_counts_a_warning_on_a_fixed_file_and_noise_a_critical_on_a_fine_run() {
        let cases = vec![
            case(
                "broken",
                Some(Label::Broken {
                    files: vec!["src/auth.py".into()],
                }),
                vec![finding("suggestion", "src/auth.py", 3)],
                vec![finding("warning", "src/auth.py", 3)],
            ),
            // No file named: any changed file counts.
            case(
                "broken-unnamed",
                Some(Label::Broken { files: vec![] }),
                vec![],
                vec![finding("critical", "docs/a.md", 1)],
            ),
            case(
                "fine",
                Some(Label::Fine),
                vec![],
                vec![finding("critical", "src/auth.py", 9)],
            ),
            case("unlabelled", None, vec![], vec![]),
        ];
        let (overall, strata) = score(&cases, 5);
        assert_eq!(overall.runs, 4);
        assert_eq!(
            (overall.candidate.recall.caught, overall.candidate.recall.of),
            (2, 2)
        );
        assert_eq!(
            (overall.baseline.recall.caught, overall.baseline.recall.of),
            (0, 2)
        );
        assert_eq!(overall.baseline.recall.rate, Some(0.0));
        assert_eq!(overall.candidate.recall.high, Some(1.0));
        assert_eq!(
            (overall.candidate.noise.hits, overall.candidate.noise.of),
            (1, 1)
        );
        assert!((overall.candidate.cost_usd - 2.0).abs() < 1e-9);
        assert_eq!(overall.candidate.findings_per_run, Some(0.75));
        // The suggestion and the warning are the same place: one agreed of three distinct.
        assert_eq!((overall.agreement.hits, overall.agreement.of), (1, 3));
        let tier = strata.iter().find(|s| s.by == "tier").unwrap();
        assert_eq!(tier.value, "light");
        assert!(tier.scored.candidate.recall.below_minimum);
        assert_eq!(tier.scored.candidate.recall.rate, None);
        let values: Vec<(&str, &str)> = strata
            .iter()
            .map(|s| (s.by.as_str(), s.value.as_str()))
            .collect();
        assert_eq!(
            values,
            [
                ("area", "docs"),
                ("area", "src"),
                ("language", "md"),
                ("language", "py"),
                ("tasks", "2-4"),
                ("tier", "light")
            ]
        );
    }

    #[test]
    fn a_stratum_at_the_minimum_gives_its_rate() {
        let cases: Vec<Case> = (0..3)
            .map(|i| {
                case(
                    &format!("r{i}"),
                    Some(Label::Broken {
                        files: vec!["src/auth.py".into()],
                    }),
                    vec![],
                    vec![finding("warning", "src/auth.py", 1)],
                )
            })
            .collect();
        let (_, strata) = score(&cases, 3);
        let s = &strata[0].scored.candidate.recall;
        assert!(!s.below_minimum);
        assert_eq!(s.rate, Some(1.0));
        assert!(s.low.unwrap() > 0.4);
    }

    #[test]
    fn failures_are_told_apart() {
        let mut f = Failures::default();
        count_failure(&mut f, AttemptOutcome::BreakerOpen, None);
        count_failure(
            &mut f,
            AttemptOutcome::Retryable,
            Some("request timed out after 30s"),
        );
        count_failure(&mut f, AttemptOutcome::Fatal, Some("401 unauthorised"));
        count_failure(&mut f, AttemptOutcome::Malformed, None);
        count_failure(&mut f, AttemptOutcome::Ok, None);
        assert_eq!(
            f,
            Failures {
                timeouts: 1,
                refusals: 1,
                breaker_skips: 1,
                other: 1
            }
        );
    }
}
