//! `gate report` for a terminal: the headline rates, then each breakdown.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::scorecard::{Group, OutcomeRate, Scorecard};

/// Most groups of one breakdown printed (the largest by runs); weeks print
/// the latest ones. `--format json` has them all.
const MAX_ROWS: usize = 12;

/// A share as a percentage, `—` when unknown.
pub fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "—".to_owned(), |r| format!("{:.1}%", r * 100.0))
}

/// An integer with thousands separators.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Dollars, with more places for small amounts.
pub fn dollars(v: Option<f64>) -> String {
    match v {
        None => "—".to_owned(),
        Some(v) if v.abs() < 1.0 => format!("${v:.4}"),
        Some(v) => format!("${v:.2}"),
    }
}

fn interval(r: &OutcomeRate) -> String {
    r.interval().map_or_else(String::new, |i| {
        format!("[{} – {}]", percent(Some(i.low)), percent(Some(i.high)))
    })
}

/// Width of the headline labels.
const LABEL: usize = 22;

fn rate_line(out: &mut String, label: &str, r: &OutcomeRate, hit: &str, of: &str) {
    let _ = writeln!(
        out,
        "{label:<LABEL$}{:>7}  {:<17}  {} {hit} of {} {of} with an outcome; {} without one",
        percent(r.rate()),
        interval(r),
        thousands(r.hits),
        thousands(r.with_outcome),
        thousands(r.unknown),
    );
}

fn breakdown(out: &mut String, name: &str, groups: &BTreeMap<String, Group>, latest: bool) {
    if groups.is_empty() {
        return;
    }
    let mut rows: Vec<(&String, &Group)> = groups.iter().collect();
    if latest {
        rows.reverse();
    } else {
        rows.sort_by(|a, b| b.1.runs.cmp(&a.1.runs).then(a.0.cmp(b.0)));
    }
    let hidden = rows.len().saturating_sub(MAX_ROWS);
    rows.truncate(MAX_ROWS);
    let width = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .chain([name.len() + 1])
        .max()
        .unwrap_or(0)
        .min(48);
    let _ = writeln!(
        out,
        "\nby {name:<width$}{:>10}  {:>10}  {:<17}  {:>9}  {:>9}",
        "runs", "false pass", "95% CI", "unknown", "fail→pass"
    );
    for (key, g) in rows {
        let fp = g.false_pass();
        let _ = writeln!(
            out,
            "   {key:<width$}{:>10}  {:>10}  {:<17}  {:>9}  {:>9}",
            thousands(g.runs),
            percent(fp.rate()),
            interval(&fp),
            thousands(fp.unknown),
            // A model or a role shares its run's criteria with the others.
            if matches!(name, "model" | "role") {
                String::new()
            } else {
                percent(g.fail_to_pass_share())
            },
        );
    }
    if hidden > 0 {
        let _ = writeln!(
            out,
            "   … and {hidden} more (all of them with --format json)"
        );
    }
}

/// The rates by where the outcomes came from.
fn sources(out: &mut String, groups: &BTreeMap<String, Group>) {
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nby outcome source {:>10}  {:>20}  {:>20}",
        "runs", "false pass", "false fail"
    );
    for (key, g) in groups {
        let (fp, ff) = (g.false_pass(), g.false_fail());
        let cell = |r: &OutcomeRate| {
            format!(
                "{} ({}/{})",
                percent(r.rate()),
                thousands(r.hits),
                thousands(r.with_outcome)
            )
        };
        let _ = writeln!(
            out,
            "   {key:<15}{:>10}  {:>20}  {:>20}",
            thousands(g.approved + g.failed),
            cell(&fp),
            cell(&ff),
        );
    }
}

/// The report as text.
pub fn render(card: &Scorecard) -> String {
    let t = &card.total;
    let mut out = String::new();
    let mut scope = Vec::new();
    if let Some(since) = card.scope.since {
        scope.push(format!("since {}", since.format("%Y-%m-%d %H:%M UTC")));
    }
    if let Some(spec) = &card.scope.spec_id {
        scope.push(format!("spec {spec}"));
    }
    let scope = if scope.is_empty() {
        String::new()
    } else {
        format!(" ({})", scope.join(", "))
    };
    let _ = writeln!(out, "gate report: {} runs{scope}\n", thousands(t.runs));
    rate_line(
        &mut out,
        "false-pass rate",
        &t.false_pass(),
        "broken",
        "approved",
    );
    rate_line(
        &mut out,
        "false-fail rate",
        &t.false_fail(),
        "fine",
        "failed",
    );
    let (without, decided) = card.without_outcome();
    let _ = write!(
        out,
        "{:<LABEL$}{:>7}  {} of {} decided runs; {} not integrated yet (as the last harvest found)",
        "without an outcome",
        percent(super::stats::ratio(without, decided)),
        thousands(without),
        thousands(decided),
        thousands(card.not_integrated),
    );
    if card.min_confidence > 0 {
        let _ = write!(
            out,
            "; outcomes below confidence {:.2} not counted",
            f64::from(card.min_confidence) / 100.0
        );
    }
    out.push('\n');
    if !card.left_out.is_empty() {
        let _ = writeln!(out, "{:<LABEL$}{:>7}  {}", "left out", "", left_out(card));
    }
    for (label, rate) in [
        ("override rate", t.override_rate()),
        ("escalation rate", t.escalation_rate()),
        ("review did not run", t.did_not_run_rate()),
        ("ran unisolated", t.unisolated_rate()),
    ] {
        let _ = writeln!(out, "{label:<LABEL$}{:>7}", percent(rate));
    }
    let _ = writeln!(
        out,
        "{:<LABEL$}{:>7}  {} of {} passed criteria failed on the base",
        "fail-to-pass evidence",
        percent(t.fail_to_pass_share()),
        thousands(t.fail_to_pass),
        thousands(t.criteria_passed),
    );
    let f = &card.findings;
    let _ = writeln!(
        out,
        "{:<LABEL$}{:>7}  {} resolved, {} dismissed ({} superseded, not counted); {} still open",
        "finding acceptance",
        percent(f.acceptance_rate()),
        thousands(f.resolved),
        thousands(f.dismissed),
        thousands(f.superseded),
        thousands(f.open),
    );
    let _ = writeln!(
        out,
        "{:<LABEL$}{:>7}  {} dismissed and {} duplicates of {} published",
        "finding noise",
        percent(f.noise_rate()),
        thousands(f.dismissed),
        thousands(f.duplicates),
        thousands(f.published),
    );
    let c = &card.cost_usd;
    let _ = writeln!(
        out,
        "{:<LABEL$}median {}, p90 {}, total {}",
        "cost per run",
        dollars(c.median),
        dollars(c.p90),
        dollars(Some(c.total)),
    );
    let i = &card.input_tokens;
    let num = |v: Option<u64>| v.map_or_else(|| "—".to_owned(), thousands);
    let _ = writeln!(
        out,
        "{:<LABEL$}median {}, p90 {}, total {}; {} cached",
        "input tokens per run",
        num(i.median),
        num(i.p90),
        thousands(i.total),
        percent(t.cached_input_share()),
    );
    sources(&mut out, &card.by.source);
    breakdown(&mut out, "tier", &card.by.tier, false);
    breakdown(&mut out, "model", &card.by.model, false);
    breakdown(&mut out, "role", &card.by.role, false);
    breakdown(&mut out, "spec", &card.by.spec, false);
    breakdown(&mut out, "agent", &card.by.agent, false);
    breakdown(&mut out, "week", &card.by.week, true);
    replays(&mut out, &card.replays);
    out
}

/// A replay's recall or noise: `1/1 = 100% [21%, 100%]`, or why there is no rate.
pub fn replay_rate(r: &crate::replays::Rate) -> String {
    match (r.rate, r.low, r.high) {
        _ if r.below_minimum => format!("{}/{} (below the minimum sample)", r.hits, r.of),
        (Some(rate), Some(low), Some(high)) => format!(
            "{}/{} = {} [{}, {}]",
            r.hits,
            r.of,
            percent(Some(rate)),
            percent(Some(low)),
            percent(Some(high))
        ),
        _ => format!("{}/{}", r.hits, r.of),
    }
}

/// The newest replay of each candidate routing table.
fn replays(out: &mut String, replays: &[crate::replays::ReplaySeen]) {
    if replays.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nreplays (the newest per candidate routing table)");
    for r in replays {
        let s = &r.summary;
        let _ = writeln!(
            out,
            "  {} {} ({} runs, {} skipped, {})",
            r.recorded_at, r.routing, s.runs, s.skipped, r.replay_id
        );
        for (name, side) in [("baseline", &s.baseline), ("candidate", &s.candidate)] {
            let _ = writeln!(
                out,
                "    {name:<9} recall {}  noise {}  {}",
                replay_rate(&side.recall.into()),
                replay_rate(&side.noise),
                dollars(Some(side.cost_usd)),
            );
        }
    }
}

/// What the report left out for not being as the gate signed it, in words.
pub fn left_out(card: &Scorecard) -> String {
    let l = &card.left_out;
    format!(
        "not as the gate signed them, so in no figure: {} runs (a column edited, or no bundle \
         that verifies), {} outcomes (unsigned or edited), {} overrides (no bundle that \
         verifies, or edited), {} replays (no bundle that verifies, or edited); `gate ledger \
         verify` names each run, outcome and override",
        thousands(l.runs),
        thousands(l.outcomes),
        thousands(l.overrides),
        thousands(l.replays)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(percent(None), "—");
        assert_eq!(percent(Some(0.04167)), "4.2%");
        assert_eq!(dollars(Some(0.012)), "$0.0120");
        assert_eq!(dollars(Some(14.8)), "$14.80");
    }
}
