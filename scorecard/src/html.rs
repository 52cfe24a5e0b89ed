//! `gate report --html FILE`: one self-contained page — inline CSS and
//! inline SVG drawn here, no script, nothing fetched when it is opened —
//! that reads on a laptop and on a phone.

use std::collections::BTreeMap;
use std::fmt::Write;

use chrono::{DateTime, Days, NaiveDate, Utc, Weekday};

use super::scorecard::{Group, OutcomeRate, Scorecard};
use super::svg::{Chart, Series, escape};
use super::text::{dollars, percent, thousands};

/// The weeks charted: at most the latest this many.
const MAX_WEEKS: usize = 104;
/// Models charted one by one (the most used); the table has them all.
const MAX_MODEL_CHARTS: usize = 8;
/// Specs in the spec table (the most run).
const MAX_SPEC_ROWS: usize = 25;

const STYLE: &str = "
:root{--fg:#1d232b;--muted:#5b6470;--bg:#f5f6f8;--card:#fff;--line:#d9dde3;
--c0:#c2410c;--c1:#1d4ed8;--c2:#047857;--c3:#7c3aed}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1120px;margin:0 auto;padding:16px}
h1{font-size:24px;margin:8px 0 2px}
h2{font-size:18px;margin:28px 0 10px}
h3{font-size:15px;margin:0 0 4px}
p{margin:4px 0}
.muted,.scope,.note{color:var(--muted)}
.scope{overflow-wrap:anywhere}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(210px,1fr));gap:12px;margin-top:16px}
.card,figure{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px;margin:0}
.big{font-size:28px;font-weight:650;margin:2px 0}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(290px,1fr));gap:12px}
svg.chart{width:100%;height:auto;display:block;max-width:780px;margin:0 auto}
svg .grid{stroke:var(--line);stroke-width:1}
svg .axis-line{stroke:var(--muted);stroke-width:1}
svg .axis{font-size:12px;fill:var(--muted)}
svg .empty{font-size:14px;fill:var(--muted)}
svg .line{fill:none;stroke-width:1.8;stroke-linejoin:round}
svg .band{opacity:.18;stroke:none}
.line.s0{stroke:var(--c0)}.band.s0,.dot.s0,.key.s0{fill:var(--c0);background:var(--c0)}
.line.s1{stroke:var(--c1)}.band.s1,.dot.s1,.key.s1{fill:var(--c1);background:var(--c1)}
.line.s2{stroke:var(--c2)}.band.s2,.dot.s2,.key.s2{fill:var(--c2);background:var(--c2)}
.line.s3{stroke:var(--c3)}.band.s3,.dot.s3,.key.s3{fill:var(--c3);background:var(--c3)}
.legend{font-size:13px;color:var(--muted)}
.key{display:inline-block;width:12px;height:12px;border-radius:2px;margin:0 4px 0 10px;vertical-align:-1px}
.table-wrap{overflow-x:auto;background:var(--card);border:1px solid var(--line);border-radius:8px}
table{border-collapse:collapse;width:100%}
th,td{padding:6px 10px;border-bottom:1px solid var(--line);text-align:left;white-space:nowrap}
th{font-weight:600;background:#eef0f3}
tr:last-child td{border-bottom:none}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.wrap{white-space:normal;min-width:14em}
#false-passes td{white-space:normal;overflow-wrap:anywhere}
#false-passes td.wrap{min-width:8em}
#false-passes td.evidence{min-width:18em}
a{color:var(--c1)}
footer{margin:32px 0 8px;font-size:13px;color:var(--muted)}
@media (max-width:600px){body{font-size:14px}main{padding:10px}h1{font-size:20px}.big{font-size:23px}}
";

/// Percent-encodes a path for a link (unreserved characters and `/` stay).
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A link target for a bundle path: an object's `s3://` URL as it is, a
/// `file://` URL when absolute, else the path relative to where the page is
/// kept.
fn bundle_href(path: &str) -> String {
    if let Some(object) = path.strip_prefix("s3://") {
        format!("s3://{}", encode_path(object))
    } else if path.starts_with('/') {
        format!("file://{}", encode_path(path))
    } else {
        encode_path(path)
    }
}

/// The Monday of an ISO week key (`2025-W09`).
fn week_start(key: &str) -> Option<NaiveDate> {
    let (year, week) = key.split_once("-W")?;
    NaiveDate::from_isoywd_opt(year.parse().ok()?, week.parse().ok()?, Weekday::Mon)
}

/// Every week from the first to the last with runs (gaps included), the
/// latest [`MAX_WEEKS`] of them.
fn week_axis(weeks: &BTreeMap<String, Group>) -> Vec<String> {
    let (Some(first), Some(last)) = (
        weeks.keys().next().and_then(|k| week_start(k)),
        weeks.keys().next_back().and_then(|k| week_start(k)),
    ) else {
        return weeks.keys().cloned().collect();
    };
    let mut axis = Vec::new();
    let mut day = first;
    while day <= last {
        axis.push(super::scorecard::iso_week(day));
        match day.checked_add_days(Days::new(7)) {
            Some(next) => day = next,
            None => break,
        }
    }
    let skip = axis.len().saturating_sub(MAX_WEEKS);
    axis.split_off(skip)
}

fn rate_tip(week: &str, r: &OutcomeRate) -> String {
    match (r.rate(), r.interval()) {
        (Some(rate), Some(i)) => format!(
            "{week}: {} (95% CI {}–{}), {} broken of {} approved with an outcome",
            percent(Some(rate)),
            percent(Some(i.low)),
            percent(Some(i.high)),
            r.hits,
            r.with_outcome
        ),
        _ => format!("{week}: no outcome recorded"),
    }
}

/// The false-pass rate and its band, week by week.
fn rate_series(name: &str, axis: &[String], weeks: Option<&BTreeMap<String, Group>>) -> Series {
    let rates: Vec<OutcomeRate> = axis
        .iter()
        .map(|w| {
            weeks
                .and_then(|m| m.get(w))
                .map_or_else(|| Group::default().false_pass(), Group::false_pass)
        })
        .collect();
    Series {
        name: name.to_owned(),
        values: rates.iter().map(OutcomeRate::rate).collect(),
        band: Some(
            rates
                .iter()
                .map(|r| r.interval().map(|i| (i.low, i.high)))
                .collect(),
        ),
        tips: axis
            .iter()
            .zip(&rates)
            .map(|(w, r)| rate_tip(w, r))
            .collect(),
    }
}

fn rate_chart(title: &str, axis: &[String], series: Series) -> String {
    Chart {
        title,
        weeks: axis,
        series: vec![series],
        format: |v| format!("{:.0}%", v * 100.0),
        cap: Some(1.0),
        empty: "no approved run has an outcome yet",
    }
    .render()
}

fn card(out: &mut String, title: &str, big: &str, detail: &str) {
    let _ = write!(
        out,
        r#"<div class="card"><h3>{}</h3><p class="big">{}</p><p class="muted">{}</p></div>"#,
        escape(title),
        escape(big),
        escape(detail)
    );
}

fn ci(r: &OutcomeRate) -> String {
    r.interval().map_or_else(
        || "—".to_owned(),
        |i| format!("{} – {}", percent(Some(i.low)), percent(Some(i.high))),
    )
}

/// One group's figure: its false-pass rate and runs, over its weekly chart.
fn group_figure(
    out: &mut String,
    kind: &str,
    name: &str,
    g: &Group,
    axis: &[String],
    weeks: Option<&BTreeMap<String, Group>>,
) {
    let title = format!(
        "{name}: {} ({} runs)",
        percent(g.false_pass().rate()),
        thousands(g.runs)
    );
    let _ = write!(
        out,
        r"<figure><h3>{}</h3>{}</figure>",
        escape(&title),
        rate_chart(
            &format!("False-pass rate by week, {kind} {name}"),
            axis,
            rate_series(name, axis, weeks)
        )
    );
}

fn breakdown_table(out: &mut String, id: &str, label: &str, rows: &[(&String, &Group)]) {
    let _ = write!(
        out,
        r#"<div class="table-wrap"><table id="{id}"><thead><tr><th>{label}</th><th class="num">runs</th><th class="num">false pass</th><th class="num">95% CI</th><th class="num">with outcome</th><th class="num">unknown</th></tr></thead><tbody>"#
    );
    for (key, g) in rows {
        let fp = g.false_pass();
        let _ = write!(
            out,
            r#"<tr><td>{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td></tr>"#,
            escape(key),
            thousands(g.runs),
            percent(fp.rate()),
            ci(&fp),
            thousands(fp.with_outcome),
            thousands(fp.unknown)
        );
    }
    out.push_str("</tbody></table></div>");
}

fn by_runs(groups: &BTreeMap<String, Group>) -> Vec<(&String, &Group)> {
    let mut rows: Vec<(&String, &Group)> = groups.iter().collect();
    rows.sort_by(|a, b| b.1.runs.cmp(&a.1.runs).then(a.0.cmp(b.0)));
    rows
}

/// The page.
pub fn render(card_: &Scorecard, generated_at: DateTime<Utc>) -> String {
    let t = &card_.total;
    let axis = week_axis(&card_.by.week);
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>gate · false-pass report</title><style>{STYLE}</style></head><body><main>"#
    );
    let mut scope = vec![format!("{} runs", thousands(t.runs))];
    if let Some(since) = card_.scope.since {
        scope.push(format!("since {}", since.format("%Y-%m-%d %H:%M UTC")));
    }
    if let Some(spec) = &card_.scope.spec_id {
        scope.push(format!("spec {spec}"));
    }
    let _ = write!(
        out,
        r#"<header><h1>False-pass report</h1><p class="scope">{}</p></header>"#,
        escape(&scope.join(" · "))
    );

    cards(&mut out, card_);
    trend_sections(&mut out, card_, &axis);
    cost_section(&mut out, card_, &axis);
    recent_section(&mut out, card_);
    sources_section(&mut out, card_);
    breakdowns_section(&mut out, card_);
    replays_section(&mut out, card_);
    let _ = write!(
        out,
        r"<footer>Generated by gate {} at {} from the ledger alone.</footer></main></body></html>",
        env!("CARGO_PKG_VERSION"),
        generated_at.format("%Y-%m-%d %H:%M UTC")
    );
    out.push('\n');
    out
}

/// The headline cards: the two rates, overrides, findings, cost, tokens.
fn cards(out: &mut String, card_: &Scorecard) {
    let t = &card_.total;
    let (fp, ff) = (t.false_pass(), t.false_fail());
    out.push_str(r#"<section class="cards">"#);
    card(
        out,
        "False-pass rate",
        &percent(fp.rate()),
        &format!(
            "95% CI {} · {} broken of {} approved with an outcome · {} approved without one",
            ci(&fp),
            thousands(fp.hits),
            thousands(fp.with_outcome),
            thousands(fp.unknown)
        ),
    );
    card(
        out,
        "False-fail rate",
        &percent(ff.rate()),
        &format!(
            "95% CI {} · {} fine of {} failed with an outcome · {} without one",
            ci(&ff),
            thousands(ff.hits),
            thousands(ff.with_outcome),
            thousands(ff.unknown)
        ),
    );
    let (without, decided) = card_.without_outcome();
    card(
        out,
        "Without an outcome",
        &percent(super::stats::ratio(without, decided)),
        &format!(
            "{} of {} decided runs · {} not integrated yet (as the last harvest found){}",
            thousands(without),
            thousands(decided),
            thousands(card_.not_integrated),
            if card_.min_confidence > 0 {
                format!(
                    " · outcomes below confidence {:.2} not counted",
                    f64::from(card_.min_confidence) / 100.0
                )
            } else {
                String::new()
            }
        ),
    );
    if !card_.left_out.is_empty() {
        card(
            out,
            "Left out",
            &thousands(card_.left_out.runs + card_.left_out.outcomes + card_.left_out.overrides),
            &super::text::left_out(card_),
        );
    }
    card(
        out,
        "Overrides · escalations",
        &format!(
            "{} · {}",
            percent(t.override_rate()),
            percent(t.escalation_rate())
        ),
        &format!(
            "review did not run in {} of runs; {} ran unisolated; {} of passed criteria \
             have fail-to-pass evidence",
            percent(t.did_not_run_rate()),
            percent(t.unisolated_rate()),
            percent(t.fail_to_pass_share())
        ),
    );
    let f = &card_.findings;
    card(
        out,
        "Finding acceptance",
        &percent(f.acceptance_rate()),
        &format!(
            "noise {} · {} resolved, {} dismissed, {} superseded, {} open",
            percent(f.noise_rate()),
            thousands(f.resolved),
            thousands(f.dismissed),
            thousands(f.superseded),
            thousands(f.open)
        ),
    );
    card(
        out,
        "Cost per run",
        &dollars(card_.cost_usd.median),
        &format!(
            "median · p90 {} · total {}",
            dollars(card_.cost_usd.p90),
            dollars(Some(card_.cost_usd.total))
        ),
    );
    let tokens = &card_.input_tokens;
    card(
        out,
        "Input tokens per run",
        &tokens.median.map_or_else(|| "—".to_owned(), thousands),
        &format!(
            "median · p90 {} · {} cached",
            tokens.p90.map_or_else(|| "—".to_owned(), thousands),
            percent(t.cached_input_share())
        ),
    );
    out.push_str("</section>");
}

/// The false-pass rate by week, then by tier and by model.
fn trend_sections(out: &mut String, card_: &Scorecard, axis: &[String]) {
    let _ = write!(
        out,
        r#"<section id="over-time"><h2>False-pass rate by week</h2><figure>{}<p class="note">Approved runs later recorded broken, of approved runs with an outcome; the band is the Wilson 95% interval.</p></figure></section>"#,
        rate_chart(
            "False-pass rate by week",
            axis,
            rate_series("all runs", axis, Some(&card_.by.week))
        )
    );

    out.push_str(r#"<section id="by-tier"><h2>By tier</h2><div class="grid">"#);
    for (tier, g) in &card_.by.tier {
        group_figure(out, "tier", tier, g, axis, card_.tier_weeks.get(tier));
    }
    out.push_str("</div>");
    breakdown_table(out, "tier-table", "tier", &by_runs(&card_.by.tier));
    out.push_str("</section>");

    out.push_str(r#"<section id="by-model"><h2>By model</h2>"#);
    if card_.by.model.is_empty() {
        out.push_str(r#"<p class="note">No run used a model.</p>"#);
    } else {
        out.push_str(r#"<div class="grid">"#);
        for (model, g) in by_runs(&card_.by.model).into_iter().take(MAX_MODEL_CHARTS) {
            group_figure(out, "model", model, g, axis, card_.model_weeks.get(model));
        }
        out.push_str("</div>");
        breakdown_table(out, "model-table", "model", &by_runs(&card_.by.model));
        out.push_str(r#"<p class="note">A run counts for every model it used.</p>"#);
    }
    out.push_str("</section>");
}

/// The cost per run by week, median and p90.
fn cost_section(out: &mut String, card_: &Scorecard, axis: &[String]) {
    let median: Vec<Option<f64>> = axis
        .iter()
        .map(|w| card_.week_cost.get(w).and_then(|s| s.median))
        .collect();
    let p90: Vec<Option<f64>> = axis
        .iter()
        .map(|w| card_.week_cost.get(w).and_then(|s| s.p90))
        .collect();
    let tip = |name: &str, values: &[Option<f64>]| -> Vec<String> {
        axis.iter()
            .zip(values)
            .map(|(w, v)| format!("{w}: {name} {}", dollars(*v)))
            .collect()
    };
    let cost_chart = Chart {
        title: "Cost per run by week",
        weeks: axis,
        series: vec![
            Series {
                name: "median".into(),
                tips: tip("median", &median),
                values: median,
                band: None,
            },
            Series {
                name: "p90".into(),
                tips: tip("p90", &p90),
                values: p90,
                band: None,
            },
        ],
        format: |v| {
            if v >= 1.0 {
                format!("${v:.2}")
            } else {
                format!("${v:.3}")
            }
        },
        cap: None,
        empty: "no run with a known cost",
    }
    .render();
    let _ = write!(
        out,
        r#"<section id="cost"><h2>Cost per run by week</h2><figure>{cost_chart}</figure></section>"#
    );
}

/// The most recent false passes, each linked to its bundle.
fn recent_section(out: &mut String, card_: &Scorecard) {
    let _ = write!(
        out,
        r#"<section id="recent"><h2>Most recent false passes</h2><p class="note">{} in scope; the latest {} shown, each linked to its evidence bundle.</p>"#,
        thousands(card_.false_pass_count),
        card_.recent_false_passes.len()
    );
    if card_.recent_false_passes.is_empty() {
        out.push_str(r#"<p class="note">None recorded.</p>"#);
    } else {
        out.push_str(r#"<div class="table-wrap"><table id="false-passes"><thead><tr><th>run</th><th>spec</th><th>tier</th><th>started</th><th>models</th><th>why broken</th><th>source</th><th>evidence</th><th>bundle</th></tr></thead><tbody>"#);
        for p in &card_.recent_false_passes {
            let _ = write!(
                out,
                r#"<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class="wrap">{}</td><td class="wrap">{}</td><td>{}</td><td class="wrap evidence">{}</td><td><a href="{}">{}</a></td></tr>"#,
                escape(&p.run_id),
                escape(&p.spec_id),
                escape(&p.tier),
                p.started_at.format("%Y-%m-%d %H:%M"),
                escape(&p.models.join(", ")),
                escape(p.reason.as_deref().unwrap_or("—")),
                escape(p.source.as_deref().unwrap_or("—")),
                evidence_cell(p.evidence.as_ref()),
                escape(&bundle_href(&p.bundle_path)),
                escape(&p.bundle_path)
            );
        }
        out.push_str("</tbody></table></div>");
    }
    out.push_str("</section>");
}

/// A harvested outcome's evidence, escaped: the commits it rests on with
/// their messages' first lines, then the blamed lines.
fn evidence_cell(evidence: Option<&gate_evidence::ledger::OutcomeEvidence>) -> String {
    let Some(e) = evidence else {
        return "—".to_owned();
    };
    let short = |id: &str| id.get(..12).unwrap_or(id).to_owned();
    let mut parts: Vec<String> = e
        .commits
        .iter()
        .map(|c| {
            format!(
                "<code>{}</code> {} ({})",
                escape(&short(&c.commit)),
                escape(&c.summary),
                c.date.format("%Y-%m-%d")
            )
        })
        .collect();
    if !e.blamed.is_empty() {
        let lines: Vec<String> = e
            .blamed
            .iter()
            .map(|b| {
                format!(
                    "{}:{} ← <code>{}</code>",
                    escape(&b.file),
                    b.line,
                    escape(&short(&b.commit))
                )
            })
            .collect();
        parts.push(format!("blamed: {}", lines.join(", ")));
    }
    let landed: Vec<String> = e.landed.iter().map(|c| escape(&short(c))).collect();
    parts.push(format!(
        "landed ({}) as {} · confidence {:.2}",
        escape(&e.landed_by),
        landed.join(", "),
        f64::from(e.confidence) / 100.0
    ));
    parts.join("<br>")
}

/// The rates by where the outcomes came from.
fn sources_section(out: &mut String, card_: &Scorecard) {
    out.push_str(r#"<section id="by-source"><h2>By outcome source</h2><p class="note">Who or what said how each decided run turned out: a person, an override, or the history of the branch (gate outcome harvest).</p>"#);
    if card_.by.source.is_empty() {
        out.push_str(r#"<p class="note">No outcome recorded.</p></section>"#);
        return;
    }
    out.push_str(r#"<div class="table-wrap"><table id="source-table"><thead><tr><th>source</th><th class="num">runs</th><th class="num">false pass</th><th class="num">broken / approved</th><th class="num">false fail</th><th class="num">fine / failed</th></tr></thead><tbody>"#);
    for (key, g) in &card_.by.source {
        let (fp, ff) = (g.false_pass(), g.false_fail());
        let _ = write!(
            out,
            r#"<tr><td>{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{} / {}</td><td class="num">{}</td><td class="num">{} / {}</td></tr>"#,
            escape(key),
            thousands(g.approved + g.failed),
            percent(fp.rate()),
            thousands(fp.hits),
            thousands(fp.with_outcome),
            percent(ff.rate()),
            thousands(ff.hits),
            thousands(ff.with_outcome),
        );
    }
    out.push_str("</tbody></table></div></section>");
}

/// The newest replay of each candidate routing table: a table per replay,
/// a row overall and one per stratum.
fn replays_section(out: &mut String, card_: &Scorecard) {
    if card_.replays.is_empty() {
        return;
    }
    out.push_str(r#"<section id="replays"><h2>Replays</h2><p class="note">The newest replay of each candidate routing table (gate replay): the recorded review (baseline) and the candidate on the same runs, against their outcomes. A stratum below the minimum sample shows no rate.</p>"#);
    for (i, r) in card_.replays.iter().enumerate() {
        let s = &r.summary;
        let _ = write!(
            out,
            r#"<h3>{} <span class="note">{} · {} runs, {} skipped</span></h3><div class="table-wrap"><table id="replay-{i}"><thead><tr><th>stratum</th><th class="num">runs</th><th class="num">recall, baseline</th><th class="num">recall, candidate</th><th class="num">noise, baseline</th><th class="num">noise, candidate</th><th class="num">cost, baseline</th><th class="num">cost, candidate</th></tr></thead><tbody>"#,
            escape(&r.routing),
            escape(&r.recorded_at),
            s.runs,
            s.skipped,
        );
        let overall = std::iter::once(("all".to_owned(), s.runs, &s.baseline, &s.candidate));
        let strata = s.strata.iter().map(|st| {
            (
                format!("{} = {}", st.by, st.value),
                st.scored.runs,
                &st.scored.baseline,
                &st.scored.candidate,
            )
        });
        for (label, runs, b, c) in overall.chain(strata) {
            let _ = write!(
                out,
                r#"<tr><td>{}</td><td class="num">{runs}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td></tr>"#,
                escape(&label),
                escape(&super::text::replay_rate(&b.recall.into())),
                escape(&super::text::replay_rate(&c.recall.into())),
                escape(&super::text::replay_rate(&b.noise)),
                escape(&super::text::replay_rate(&c.noise)),
                dollars(Some(b.cost_usd)),
                dollars(Some(c.cost_usd)),
            );
        }
        out.push_str("</tbody></table></div>");
    }
    out.push_str("</section>");
}

/// The tables by role, coding agent and spec.
fn breakdowns_section(out: &mut String, card_: &Scorecard) {
    out.push_str(r#"<section id="breakdowns"><h2>By role, coding agent and spec</h2>"#);
    for (id, label, groups, limit) in [
        ("role-table", "role", &card_.by.role, usize::MAX),
        ("agent-table", "coding agent", &card_.by.agent, usize::MAX),
        ("spec-table", "spec", &card_.by.spec, MAX_SPEC_ROWS),
    ] {
        if groups.is_empty() {
            continue;
        }
        let mut rows = by_runs(groups);
        let hidden = rows.len().saturating_sub(limit);
        rows.truncate(limit);
        let _ = write!(out, "<h3>{}</h3>", escape(label));
        breakdown_table(out, id, label, &rows);
        if hidden > 0 {
            let _ = write!(
                out,
                r#"<p class="note">… and {hidden} more (gate report --format json has them all).</p>"#
            );
        }
    }
    out.push_str("</section>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_weeks() {
        assert_eq!(
            bundle_href("/tmp/a b/.gate/bundles/x.dsse.json"),
            "file:///tmp/a%20b/.gate/bundles/x.dsse.json"
        );
        assert_eq!(bundle_href("bundles/é.json"), "bundles/%C3%A9.json");
        assert_eq!(
            bundle_href("s3://bkt/fleet ci/ab.dsse.json"),
            "s3://bkt/fleet%20ci/ab.dsse.json"
        );
        let weeks: BTreeMap<String, Group> = ["2024-W52", "2025-W02"]
            .iter()
            .map(|w| ((*w).to_owned(), Group::default()))
            .collect();
        // 2024 has 52 ISO weeks; the gap week is on the axis.
        assert_eq!(week_axis(&weeks), ["2024-W52", "2025-W01", "2025-W02"]);
        assert_eq!(
            week_start("2025-W01"),
            NaiveDate::from_ymd_opt(2024, 12, 30)
        );
        assert_eq!(week_start("junk"), None);
    }
}
