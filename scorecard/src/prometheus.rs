//! `gate metrics`: the scorecard in the Prometheus text exposition format
//! (version 0.0.4), for node_exporter's textfile collector or a scrape.
//!
//! Counters (`_total`) only grow as runs are added; figures that a later
//! outcome can change (outcome counts, rates) are gauges. Labels are tier,
//! verdict, model, role, spec, agent and outcome — never a run id, whose
//! every value would be a new series. A rate with nothing to count is left
//! out rather than written as 0 or NaN.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::scorecard::{Group, OutcomeRate, Scorecard};
use super::stats::Spread;

/// The exposition being written: one family at a time, samples together.
#[derive(Default)]
struct Exposition {
    out: String,
}

/// A label value, escaped as the format requires.
fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A HELP text, escaped as the format requires.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value: integers without a fraction, others in Rust's shortest
/// round-trip form (never NaN: callers leave unknown values out).
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape_label(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", number(value));
    }

    /// A family with one sample per group, labelled by the group's key.
    fn per_group(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        label: &str,
        groups: &BTreeMap<String, Group>,
        value: impl Fn(&Group) -> Option<f64>,
    ) {
        self.family(name, kind, help);
        for (key, g) in groups {
            if let Some(v) = value(g) {
                self.sample(name, &[(label, key)], v);
            }
        }
    }

    /// Approved or failed runs of each group by outcome.
    fn outcomes(
        &mut self,
        name: &str,
        help: &str,
        label: &str,
        groups: &BTreeMap<String, Group>,
        rate: impl Fn(&Group) -> (u64, u64, OutcomeRate),
    ) {
        self.family(name, "gauge", help);
        for (key, g) in groups {
            let (broken, fine, r) = rate(g);
            for (outcome, n) in [("broken", broken), ("fine", fine), ("unknown", r.unknown)] {
                self.sample(name, &[(label, key), ("outcome", outcome)], n as f64);
            }
        }
    }

    /// A rate and its Wilson interval as three gauges (left out when unknown).
    fn rate_with_interval(&mut self, name: &str, help: &str, r: &OutcomeRate) {
        self.family(name, "gauge", help);
        if let Some(v) = r.rate() {
            self.sample(name, &[], v);
        }
        let i = r.interval();
        for (suffix, bound, v) in [
            ("low", "lower", i.map(|i| i.low)),
            ("high", "upper", i.map(|i| i.high)),
        ] {
            let n = format!("{name}_{suffix}");
            self.family(
                &n,
                "gauge",
                &format!("The {bound} bound of its Wilson 95% interval."),
            );
            if let Some(v) = v {
                self.sample(&n, &[], v);
            }
        }
    }

    fn ratio(&mut self, name: &str, help: &str, v: Option<f64>) {
        self.family(name, "gauge", help);
        if let Some(v) = v {
            self.sample(name, &[], v);
        }
    }

    fn summary(&mut self, name: &str, help: &str, s: &Spread<f64>) {
        self.family(name, "summary", help);
        for (q, v) in [("0.5", s.median), ("0.9", s.p90)] {
            if let Some(v) = v {
                self.sample(name, &[("quantile", q)], v);
            }
        }
        self.sample(&format!("{name}_sum"), &[], s.total);
        self.sample(&format!("{name}_count"), &[], s.count as f64);
    }
}

/// Runs of a group by verdict (`other` for a verdict this build does not know).
fn verdicts(g: &Group) -> [(&'static str, u64); 5] {
    let known = g.approved + g.failed + g.escalated + g.incomplete;
    [
        ("pass", g.approved),
        ("fail", g.failed),
        ("escalate", g.escalated),
        ("incomplete", g.incomplete),
        ("other", g.runs - known),
    ]
}

/// The scorecard as a Prometheus text exposition.
pub fn render(card: &Scorecard) -> String {
    let mut e = Exposition::default();
    runs(&mut e, card);
    usage(&mut e, card);
    seats(&mut e, card);
    findings(&mut e, card);
    rates(&mut e, card);
    sources(&mut e, card);
    spreads(&mut e, card);
    e.out
}

/// Runs by tier, spec, agent and model, and the overridden ones.
fn runs(e: &mut Exposition, card: &Scorecard) {
    e.family(
        "gate_runs_total",
        "counter",
        "Runs in the ledger, by tier and verdict.",
    );
    for (tier, g) in &card.by.tier {
        for (verdict, n) in verdicts(g) {
            if n > 0 {
                e.sample(
                    "gate_runs_total",
                    &[("tier", tier), ("verdict", verdict)],
                    n as f64,
                );
            }
        }
    }
    e.family(
        "gate_spec_runs_total",
        "counter",
        "Runs in the ledger, by spec and verdict.",
    );
    for (spec, g) in &card.by.spec {
        for (verdict, n) in verdicts(g) {
            if n > 0 {
                e.sample(
                    "gate_spec_runs_total",
                    &[("spec", spec), ("verdict", verdict)],
                    n as f64,
                );
            }
        }
    }
    e.per_group(
        "gate_agent_runs_total",
        "counter",
        "Runs by the coding agent their spec names.",
        "agent",
        &card.by.agent,
        |g| Some(g.runs as f64),
    );
    e.per_group(
        "gate_model_runs_total",
        "counter",
        "Runs that used a model (a run counts for every model it used).",
        "model",
        &card.by.model,
        |g| Some(g.runs as f64),
    );
    e.per_group(
        "gate_overridden_runs_total",
        "counter",
        "Runs a human overrode, by tier.",
        "tier",
        &card.by.tier,
        |g| Some(g.overridden as f64),
    );
}

/// Tokens and cost by tier.
fn usage(e: &mut Exposition, card: &Scorecard) {
    for (name, help, value) in [
        (
            "gate_input_tokens_total",
            "Model input tokens, by tier.",
            (|g: &Group| g.input_tokens as f64) as fn(&Group) -> f64,
        ),
        (
            "gate_cached_input_tokens_total",
            "Model input tokens served from a prompt cache, by tier.",
            |g: &Group| g.cached_input_tokens as f64,
        ),
        (
            "gate_output_tokens_total",
            "Model output tokens, by tier.",
            |g: &Group| g.output_tokens as f64,
        ),
        (
            "gate_cost_usd_total",
            "Model cost in US dollars (runs with a known price), by tier.",
            |g: &Group| g.cost_usd,
        ),
    ] {
        e.per_group(name, "counter", help, "tier", &card.by.tier, |g| {
            Some(value(g))
        });
    }
}

/// Specialist seats by role, model and status, and what each used.
fn seats(e: &mut Exposition, card: &Scorecard) {
    e.family(
        "gate_role_runs_total",
        "counter",
        "Specialist seats filled, by role, model and status (ok, did_not_run).",
    );
    for ((role, model), seat) in &card.seats {
        for (status, n) in &seat.statuses {
            e.sample(
                "gate_role_runs_total",
                &[("role", role), ("model", model), ("status", status)],
                *n as f64,
            );
        }
    }
    for (name, help, value) in [
        (
            "gate_role_input_tokens_total",
            "Input tokens, by role and model.",
            (|s: &super::scorecard::RoleUsage| s.input_tokens as f64)
                as fn(&super::scorecard::RoleUsage) -> f64,
        ),
        (
            "gate_role_cached_input_tokens_total",
            "Input tokens served from a prompt cache, by role and model.",
            |s| s.cached_input_tokens as f64,
        ),
        (
            "gate_role_output_tokens_total",
            "Output tokens, by role and model.",
            |s| s.output_tokens as f64,
        ),
        (
            "gate_role_cost_usd_total",
            "Cost in US dollars, by role and model.",
            |s| s.cost_usd,
        ),
    ] {
        e.family(name, "counter", help);
        for ((role, model), seat) in &card.seats {
            e.sample(name, &[("role", role), ("model", model)], value(seat));
        }
    }
}

/// Findings by how they ended, published and open.
fn findings(e: &mut Exposition, card: &Scorecard) {
    let f = &card.findings;
    e.family(
        "gate_findings_total",
        "counter",
        "Findings by how they ended: resolved, superseded, dismissed, or merged away as a duplicate.",
    );
    for (disposition, n) in [
        ("resolved", f.resolved),
        ("superseded", f.superseded),
        ("dismissed", f.dismissed),
        ("duplicate", f.duplicates),
    ] {
        e.sample(
            "gate_findings_total",
            &[("disposition", disposition)],
            n as f64,
        );
    }
    e.family(
        "gate_findings_published_total",
        "counter",
        "Findings reviewers raised (reported plus merged away as duplicates).",
    );
    e.sample("gate_findings_published_total", &[], f.published as f64);
    e.family(
        "gate_findings_open",
        "gauge",
        "Findings each spec's latest run still raises (not dismissed).",
    );
    e.sample("gate_findings_open", &[], f.open as f64);
}

/// The rates by where outcomes came from, the runs without one and those
/// not integrated yet.
fn sources(e: &mut Exposition, card: &Scorecard) {
    e.per_group(
        "gate_source_false_pass_ratio",
        "gauge",
        "The false-pass rate of the approved runs whose outcome came from each source \
         (person, override, git:revert, git:fixes, git:szz, git:survived).",
        "source",
        &card.by.source,
        |g| g.false_pass().rate(),
    );
    e.per_group(
        "gate_source_false_fail_ratio",
        "gauge",
        "The false-fail rate of the failed runs whose outcome came from each source.",
        "source",
        &card.by.source,
        |g| g.false_fail().rate(),
    );
    e.per_group(
        "gate_source_runs",
        "gauge",
        "Decided runs whose outcome came from each source.",
        "source",
        &card.by.source,
        |g| Some((g.approved + g.failed) as f64),
    );
    let (without, decided) = card.without_outcome();
    e.ratio(
        "gate_without_outcome_ratio",
        "Decided runs (approved or failed) still without an outcome, of all decided runs.",
        super::stats::ratio(without, decided),
    );
    e.family(
        "gate_not_integrated_runs",
        "gauge",
        "Decided runs whose change the last `gate outcome harvest` found not integrated yet.",
    );
    e.sample("gate_not_integrated_runs", &[], card.not_integrated as f64);
    e.family(
        "gate_left_out",
        "gauge",
        "Records left out of every figure for not being as the gate signed them, by kind (run, outcome, override).",
    );
    for (kind, n) in [
        ("run", card.left_out.runs),
        ("outcome", card.left_out.outcomes),
        ("override", card.left_out.overrides),
    ] {
        e.sample("gate_left_out", &[("kind", kind)], n as f64);
    }
}

/// What approved and failed runs later turned out to be, and the rates
/// an operator watches.
fn rates(e: &mut Exposition, card: &Scorecard) {
    let (t, f) = (&card.total, &card.findings);
    e.outcomes(
        "gate_approved_runs",
        "Approved runs (verdict pass) by tier and by what was later recorded.",
        "tier",
        &card.by.tier,
        |g| (g.approved_broken, g.approved_fine, g.false_pass()),
    );
    e.outcomes(
        "gate_model_approved_runs",
        "Approved runs by model used and by what was later recorded.",
        "model",
        &card.by.model,
        |g| (g.approved_broken, g.approved_fine, g.false_pass()),
    );
    e.outcomes(
        "gate_failed_runs",
        "Failed runs by tier and by what was later recorded (an override reads as fine).",
        "tier",
        &card.by.tier,
        |g| (g.failed_broken, g.failed_fine, g.false_fail()),
    );
    e.rate_with_interval(
        "gate_false_pass_ratio",
        "Approved runs later recorded broken, of approved runs with an outcome.",
        &t.false_pass(),
    );
    e.rate_with_interval(
        "gate_false_fail_ratio",
        "Failed runs later recorded fine, of failed runs with an outcome.",
        &t.false_fail(),
    );
    e.per_group(
        "gate_tier_false_pass_ratio",
        "gauge",
        "The false-pass rate of each tier.",
        "tier",
        &card.by.tier,
        |g| g.false_pass().rate(),
    );
    e.per_group(
        "gate_model_false_pass_ratio",
        "gauge",
        "The false-pass rate of the runs that used each model.",
        "model",
        &card.by.model,
        |g| g.false_pass().rate(),
    );
    e.ratio(
        "gate_override_ratio",
        "Overridden runs of all runs.",
        t.override_rate(),
    );
    e.ratio(
        "gate_escalation_ratio",
        "Escalated runs of all runs.",
        t.escalation_rate(),
    );
    e.ratio(
        "gate_review_did_not_run_ratio",
        "Runs whose model review did not run, of all runs.",
        t.did_not_run_rate(),
    );
    e.ratio(
        "gate_unisolated_ratio",
        "Runs whose processes ran without a sandbox, of all runs.",
        t.unisolated_rate(),
    );
    e.ratio(
        "gate_fail_to_pass_ratio",
        "Passed code-decided criteria that failed on the base, of all passed ones.",
        t.fail_to_pass_share(),
    );
    e.ratio(
        "gate_finding_acceptance_ratio",
        "Resolved findings of resolved and dismissed ones (superseded excluded).",
        f.acceptance_rate(),
    );
    e.ratio(
        "gate_finding_noise_ratio",
        "Dismissed and duplicate findings of those published.",
        f.noise_rate(),
    );
    e.ratio(
        "gate_cached_input_ratio",
        "Cached input tokens of all input tokens.",
        t.cached_input_share(),
    );
}

/// Cost and input tokens per run, as summaries.
fn spreads(e: &mut Exposition, card: &Scorecard) {
    e.summary(
        "gate_run_cost_usd",
        "Cost per run in US dollars (runs with a known price; nearest-rank quantiles).",
        &card.cost_usd,
    );
    let tokens = Spread {
        median: card.input_tokens.median.map(|v| v as f64),
        p90: card.input_tokens.p90.map(|v| v as f64),
        total: card.input_tokens.total as f64,
        count: card.input_tokens.count,
    };
    e.summary(
        "gate_run_input_tokens",
        "Model input tokens per run (nearest-rank quantiles).",
        &tokens,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_numbers() {
        assert_eq!(escape_label(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape_label("x\ny"), "x\\ny");
        assert_eq!(escape_help("a\\b\nc"), "a\\\\b\\nc");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(1e20), "100000000000000000000");
    }
}
