//! The false-pass eval end to end: `gate outcome` on a real run, `gate
//! report` over a ledger of signed bundles imported by the gate, its HTML page
//! in headless Chromium, and `gate metrics` read by Prometheus's own parser.
#![allow(clippy::unwrap_used, reason = "test fixtures panic on a failed setup")]

use std::path::Path;

use chrono::{DateTime, TimeZone, Utc};
use gate_evidence::Ledger;
use gate_evidence::ledger::OutcomeEntry;
use gate_tests::TestEnv;
use gate_tests::chromium::{self, Browser};
use serde_json::{Value, json};

/// A model name that needs escaping in a Prometheus label.
const ODD_MODEL: &str = "local/odd \"model\" \\ v2";

fn day(d: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 3, d, 9, 0, 0).unwrap()
}

struct Run {
    id: &'static str,
    spec: &'static str,
    verdict: &'static str,
    tier: &'static str,
    day: u32,
    models: &'static [&'static str],
    agent: Option<&'static str>,
    cost: Option<f64>,
    input: u64,
    cached: u64,
}

/// Seven runs over three ISO weeks (W10, W11, W12 of 2025).
const RUNS: &[Run] = &[
    Run {
        id: "a1",
        spec: "shop",
        verdict: "pass",
        tier: "light",
        day: 3,
        models: &["m-a"],
        agent: Some("claude"),
        cost: Some(0.02),
        input: 1000,
        cached: 100,
    },
    Run {
        id: "a2",
        spec: "shop",
        verdict: "pass",
        tier: "light",
        day: 4,
        models: &["m-a", ODD_MODEL],
        agent: Some("claude"),
        cost: Some(0.04),
        input: 2000,
        cached: 500,
    },
    Run {
        id: "a3",
        spec: "blog",
        verdict: "pass",
        tier: "trivial",
        day: 10,
        models: &[ODD_MODEL],
        agent: Some("codex"),
        cost: Some(0.01),
        input: 500,
        cached: 0,
    },
    Run {
        id: "a4",
        spec: "blog",
        verdict: "fail",
        tier: "full",
        day: 11,
        models: &["m-a"],
        agent: Some("codex"),
        cost: Some(0.30),
        input: 8000,
        cached: 4000,
    },
    Run {
        id: "a5",
        spec: "api",
        verdict: "pass",
        tier: "light",
        day: 17,
        models: &["m-a"],
        agent: None,
        cost: Some(0.05),
        input: 3000,
        cached: 0,
    },
    Run {
        id: "a6",
        spec: "api",
        verdict: "escalate",
        tier: "light",
        day: 18,
        models: &[],
        agent: None,
        cost: None,
        input: 0,
        cached: 0,
    },
    Run {
        id: "a7",
        spec: "api",
        verdict: "pass",
        tier: "trivial",
        day: 19,
        models: &["m-a"],
        agent: None,
        cost: Some(0.02),
        input: 900,
        cached: 90,
    },
];

fn bundle_path(env: &TestEnv, id: &str) -> String {
    env.path()
        .join(format!(".gate/bundles/{id}.dsse.json"))
        .display()
        .to_string()
}

/// A signed run's statement to shape fixture runs from: one real run's,
/// in a workspace of its own.
fn template_statement() -> gate_evidence::Statement {
    let template = TestEnv::new();
    template.write(
        "gate.toml",
        "[spec]\nid = \"t\"\n[[check]]\nid = \"build\"\nrun = \"true\"\n",
    );
    let out = template.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(0);
    let bytes =
        std::fs::read(template.path().join(out.json()["bundle"].as_str().unwrap())).unwrap();
    let envelope: Value = serde_json::from_slice(&bytes).unwrap();
    let payload = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        envelope["payload"].as_str().unwrap(),
    )
    .unwrap();
    serde_json::from_slice(&payload).unwrap()
}

/// Writes the fixture ledger into the workspace's state directory: each
/// run a bundle signed by the workspace's key, shaped from a real run's and
/// imported with `gate ledger import`, so its row is what the gate writes.
fn fixture_ledger(env: &TestEnv) {
    // Outcomes count only when the gate's own key signed them.
    let (key, _) =
        gate_evidence::SigningKey::load_or_generate(&env.path().join(".gate/keys")).unwrap();
    let template = template_statement();
    let spool = tempfile::tempdir().unwrap();
    for r in RUNS {
        let n = r.models.len().max(1) as u64;
        let specialists: Vec<Value> = r
            .models
            .iter()
            .zip(["quality", "security"])
            .map(|(m, role)| {
                json!({"role": role, "model": m, "status": "ok", "latency_ms": 1,
                       "attempts": [{"model": m, "outcome": "ok", "latency_ms": 1}],
                       "coverage": {"files": [], "bytes_shown": 0, "bytes_total": 0, "cut": []},
                       "input_tokens": r.input / n, "cached_input_tokens": r.cached / n,
                       "output_tokens": 5, "cost_usd": r.cost.map(|c| c / n as f64)})
            })
            .collect();
        let mut statement = template.clone();
        let run = &mut statement.predicate["run"];
        run["run_id"] = json!(r.id);
        run["spec_id"] = json!(r.spec);
        run["attempt"] = json!(1);
        run["verdict"] = json!(r.verdict);
        run["tier"] = json!(r.tier);
        run["started_at"] = json!(day(r.day).to_rfc3339());
        run["duration_ms"] = json!(60_000);
        run["agent"] = json!(r.agent);
        run["findings"] = json!([]);
        run["review"] = if r.models.is_empty() {
            json!({"status": "did_not_run", "reason": "no provider configured", "specialists": []})
        } else {
            json!({"status": "ran", "specialists": specialists})
        };
        let bytes = gate_evidence::bundle::seal(&statement, &key);
        let file = spool.path().join(format!("{}.dsse.json", r.id));
        std::fs::write(&file, bytes).unwrap();
        env.gate(&["ledger", "import", file.to_str().unwrap()])
            .run()
            .assert_exit(0);
    }
    let mut ledger = Ledger::open(env.path().join(".gate/ledger.db")).unwrap();
    let outcome = |run: &str, broken, reason: &str| {
        // The first false pass carries evidence as a harvest writes it: long
        // commit messages and paths, which the page must still fit.
        let evidence = (run == "a1").then(|| {
            let id = |c: char| c.to_string().repeat(40);
            gate_evidence::ledger::OutcomeEvidence {
                confidence: 95,
                landed: vec![id('a'), id('b')],
                landed_by: "patch".into(),
                commits: vec![gate_evidence::ledger::EvidenceCommit {
                    commit: id('c'),
                    summary: "Revert \"checkout: compute the order total from the line items, \
                              taxes and the customer's saved discounts\""
                        .into(),
                    date: day(24),
                }],
                blamed: (1..=6)
                    .map(|line| gate_evidence::ledger::BlamedLine {
                        file: "services/checkout/src/pricing/order_total_calculation.py".into(),
                        line,
                        commit: id('a'),
                    })
                    .collect(),
                survived: None,
            }
        });
        let entry = OutcomeEntry {
            run_id: run.into(),
            broken,
            reason: Some(reason.into()),
            source: Some("ci".into()),
            recorded_at: day(25),
            envelope: None,
            evidence,
        };
        gate_evidence::ledger::seal(&entry, &key)
    };
    ledger
        .add_outcomes(&[
            outcome("a1", true, "reverted"),
            outcome("a2", false, "checked by hand"),
            outcome("a3", true, "incident <42> & more"),
            outcome("a5", true, "CI red on main"),
        ])
        .unwrap();
    drop(ledger);
    env.gate(&["override", "a4", "--reason", "hotfix", "--by", "ana"])
        .run()
        .assert_exit(0);
}

#[test]
fn report_json_over_a_generated_ledger_with_filters() {
    let env = TestEnv::new();
    fixture_ledger(&env);
    let doc = env.gate(&["report", "--format", "json"]).run();
    doc.assert_exit(0);
    let doc = doc.json();
    assert_eq!(doc["runs"], 7);
    assert_eq!(
        doc["false_pass"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "low" | "high"))
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect::<Vec<_>>(),
        [
            ("rate", json!(0.75)),
            ("broken", json!(3)),
            ("with_outcome", json!(4)),
            ("unknown", json!(1))
        ]
    );
    // The override of the failed run counts as an outcome of fine.
    assert_eq!(doc["false_fail"]["fine"], 1);
    assert_eq!(doc["by"]["model"]["m-a"]["runs"], 5);
    assert_eq!(doc["by"]["model"][ODD_MODEL]["runs"], 2);

    let shop = env
        .gate(&["report", "--format", "json", "--spec", "shop"])
        .run();
    shop.assert_exit(0);
    let shop = shop.json();
    assert_eq!(
        (shop["runs"].clone(), shop["false_pass"]["rate"].clone()),
        (json!(2), json!(0.5))
    );
    let late = env
        .gate(&["report", "--format", "json", "--since", "2025-03-17"])
        .run();
    late.assert_exit(0);
    let late = late.json();
    assert_eq!(late["since"], "2025-03-17T00:00:00Z");
    assert_eq!(late["runs"], 3);
    assert_eq!(late["false_pass"]["broken"], 1);
    assert_eq!(late["false_pass"]["unknown"], 1);

    let human = env.gate(&["report"]).run();
    human.assert_exit(0);
    human
        .stdout_has("gate report: 7 runs")
        .stdout_has("false-pass rate")
        .stdout_has("75.0%")
        .stdout_has("by tier");
    env.gate(&["report", "--since", "last week"])
        .run()
        .assert_exit(2)
        .stderr_has("--since");
}

/// The DOM facts the page test reads, as one JSON value.
const PAGE_FACTS: &str = r"JSON.parse(JSON.stringify({
  charts: [...document.querySelectorAll('svg.chart')].map(s => {
    const r = s.getBoundingClientRect();
    return {section: s.closest('section').id, width: r.width, height: r.height,
            children: s.childElementCount,
            lines: [...s.querySelectorAll('path.line')].map(p => p.getAttribute('d')).filter(d => d && d.length > 2).length,
            bands: s.querySelectorAll('path.band').length,
            dots: s.querySelectorAll('circle').length};
  }),
  rows: document.querySelectorAll('#false-passes tbody tr').length,
  runs: [...document.querySelectorAll('#false-passes tbody tr td:first-child')].map(td => td.textContent),
  links: [...document.querySelectorAll('#false-passes a')].map(a => a.getAttribute('href')),
  reasons: [...document.querySelectorAll('#false-passes tbody tr td:nth-child(6)')].map(td => td.textContent),
  scripts: document.scripts.length,
  overflowing: [...document.querySelectorAll('.table-wrap')]
    .filter(w => w.scrollWidth > w.clientWidth + 1).map(w => w.querySelector('table').id),
  evidenceRight: Math.max(0, ...[...document.querySelectorAll('#false-passes th, #false-passes td')]
    .map(c => c.getBoundingClientRect().right)),
  evidenceCells: [...document.querySelectorAll('#false-passes tbody td:nth-child(8)')]
    .filter(td => td.textContent.includes('blamed')).length,
  scrollWidth: document.documentElement.scrollWidth,
  innerWidth: window.innerWidth,
  title: document.title
}))";

#[test]
fn html_report_in_headless_chromium() {
    let env = TestEnv::new();
    fixture_ledger(&env);
    env.gate(&["report", "--html", "out/report.html"])
        .run()
        .assert_exit(0)
        .stderr_has("report.html");
    let page = env.path().join("out/report.html");
    let url = format!("file://{}", page.display());
    let mut browser = Browser::launch().unwrap_or_else(|e| panic!("starting Chromium: {e}"));
    for (viewport, mobile) in [
        ((1366, 768), false),
        ((1280, 800), false),
        ((390, 844), true),
    ] {
        let seen = browser
            .inspect(&url, viewport, mobile, PAGE_FACTS)
            .unwrap_or_else(|e| panic!("{viewport:?}: {e}"));
        let name = format!("{}x{}", viewport.0, viewport.1);
        assert!(
            seen.errors.is_empty(),
            "{name}: errors on the page: {:#?}",
            seen.errors
        );
        assert!(
            seen.requests
                .iter()
                .all(|u| u.starts_with("file://") || u.starts_with("data:") || u == "about:blank"),
            "{name}: the page fetched something: {:?}",
            seen.requests
        );
        assert_eq!(
            chromium::png_size(&seen.screenshot),
            Ok(viewport),
            "{name}: the screenshot is not a whole PNG of the viewport"
        );
        // A blank page compresses to a few KiB; this one has charts and text.
        assert!(
            seen.screenshot.len() > 20_000,
            "{name}: screenshot of {} bytes",
            seen.screenshot.len()
        );
        std::fs::write(env.path().join(format!("out/{name}.png")), &seen.screenshot).unwrap();

        let v = &seen.value;
        if !mobile {
            // Every column, the evidence and the bundle's link included, is
            // on a desktop screen without scrolling a table sideways.
            assert_eq!(v["overflowing"], json!([]), "{name}: {v}");
            assert_eq!(v["evidenceCells"], 1, "{name}: {v}");
            assert!(
                v["evidenceRight"].as_f64() <= v["innerWidth"].as_f64(),
                "{name}: the false passes' table runs off the screen: {v}"
            );
        }
        assert_eq!(v["title"], "gate · false-pass report");
        assert_eq!(v["scripts"], 0, "{name}: the page needs no script");
        assert!(
            v["scrollWidth"].as_f64() <= v["innerWidth"].as_f64(),
            "{name}: the page is wider than the screen: {v}"
        );
        let charts = v["charts"].as_array().unwrap();
        let in_section = |id: &str| {
            charts
                .iter()
                .filter(|c| c["section"] == id)
                .collect::<Vec<_>>()
        };
        // One overall, one per tier, one per model, and cost.
        assert_eq!(in_section("over-time").len(), 1, "{name}: {v}");
        assert_eq!(in_section("by-tier").len(), 3, "{name}: {v}");
        assert_eq!(in_section("by-model").len(), 2, "{name}: {v}");
        assert_eq!(in_section("cost").len(), 1, "{name}: {v}");
        for c in charts {
            assert!(
                c["width"].as_f64() > Some(100.0)
                    && c["height"].as_f64() > Some(40.0)
                    && c["children"].as_u64() > Some(5),
                "{name}: an empty or invisible chart: {c}"
            );
        }
        // Outcomes in weeks 10, 11 and 12: one line through three points, with its band.
        let overall = in_section("over-time")[0];
        assert_eq!(
            (overall["lines"].clone(), overall["dots"].clone()),
            (json!(1), json!(3)),
            "{name}: {overall}"
        );
        assert_eq!(overall["bands"], 1, "{name}: {overall}");
        assert_eq!(in_section("cost")[0]["lines"], 2, "{name}: median and p90");

        assert_eq!(v["rows"], 3, "{name}: one row per false pass: {v}");
        assert_eq!(v["runs"], json!(["a5", "a3", "a1"]), "{name}: newest first");
        let want_links: Vec<String> = ["a5", "a3", "a1"]
            .iter()
            .map(|id| format!("file://{}", bundle_path(&env, id)))
            .collect();
        assert_eq!(v["links"], json!(want_links), "{name}");
        assert_eq!(
            v["reasons"][1], "incident <42> & more",
            "{name}: text is escaped, not markup"
        );
    }
}

fn python() -> String {
    std::env::var("GATE_TEST_PYTHON").unwrap_or_else(|_| {
        panic!(
            "GATE_TEST_PYTHON is not set: run `scripts/peer-venv.sh DIR` from the repository root \
             and export GATE_TEST_PYTHON=DIR/bin/python (a venv with prometheus_client)"
        )
    })
}

/// Parses an exposition with prometheus_client; returns {family: {type, samples}}.
fn parse_exposition(path: &Path) -> Value {
    let script = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = {}
for f in text_string_to_metric_families(open(sys.argv[1], encoding="utf-8").read()):
    out[f.name] = {"type": f.type, "samples": [[s.name, s.labels, s.value] for s in f.samples]}
print(json.dumps(out))
"#;
    #[allow(clippy::disallowed_methods)] // the peer tool is a real subprocess
    let out = std::process::Command::new(python())
        .args(["-c", script])
        .arg(path)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "prometheus_client rejected the exposition:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the parser script prints JSON")
}

/// The value of the sample `name` whose labels are exactly `labels`.
fn sample(families: &Value, family: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let want: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    families[family]["samples"]
        .as_array()?
        .iter()
        .find(|s| s[0] == name && s[1] == Value::Object(want.clone()))
        .and_then(|s| s[2].as_f64())
}

/// A family, a sample name, its labels, and its value.
type Expected = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    f64,
);

#[test]
fn metrics_parse_as_prometheus_text() {
    let env = TestEnv::new();
    fixture_ledger(&env);
    let out = env.gate(&["metrics"]).run();
    out.assert_exit(0);
    let file = env.path().join("metrics.prom");
    std::fs::write(&file, &out.stdout).unwrap();
    let families = parse_exposition(&file);

    let kinds = [
        ("gate_runs", "counter"),
        ("gate_model_runs", "counter"),
        ("gate_role_runs", "counter"),
        ("gate_cost_usd", "counter"),
        ("gate_approved_runs", "gauge"),
        ("gate_false_pass_ratio", "gauge"),
        ("gate_false_pass_ratio_low", "gauge"),
        ("gate_run_cost_usd", "summary"),
    ];
    for (family, kind) in kinds {
        assert_eq!(
            families[family]["type"], kind,
            "{family}: {}",
            families[family]
        );
    }
    let cases: &[Expected] = &[
        (
            "gate_runs",
            "gate_runs_total",
            &[("tier", "light"), ("verdict", "pass")],
            3.0,
        ),
        (
            "gate_runs",
            "gate_runs_total",
            &[("tier", "light"), ("verdict", "escalate")],
            1.0,
        ),
        (
            "gate_runs",
            "gate_runs_total",
            &[("tier", "full"), ("verdict", "fail")],
            1.0,
        ),
        (
            "gate_model_runs",
            "gate_model_runs_total",
            &[("model", "m-a")],
            5.0,
        ),
        (
            "gate_model_runs",
            "gate_model_runs_total",
            &[("model", ODD_MODEL)],
            2.0,
        ),
        (
            "gate_agent_runs",
            "gate_agent_runs_total",
            &[("agent", "claude")],
            2.0,
        ),
        (
            "gate_role_runs",
            "gate_role_runs_total",
            &[("role", "quality"), ("model", "m-a"), ("status", "ok")],
            5.0,
        ),
        (
            "gate_role_runs",
            "gate_role_runs_total",
            &[("role", "security"), ("model", ODD_MODEL), ("status", "ok")],
            1.0,
        ),
        (
            "gate_cost_usd",
            "gate_cost_usd_total",
            &[("tier", "full")],
            0.30,
        ),
        (
            "gate_approved_runs",
            "gate_approved_runs",
            &[("tier", "light"), ("outcome", "broken")],
            2.0,
        ),
        (
            "gate_approved_runs",
            "gate_approved_runs",
            &[("tier", "light"), ("outcome", "fine")],
            1.0,
        ),
        (
            "gate_approved_runs",
            "gate_approved_runs",
            &[("tier", "trivial"), ("outcome", "unknown")],
            1.0,
        ),
        ("gate_false_pass_ratio", "gate_false_pass_ratio", &[], 0.75),
        ("gate_false_fail_ratio", "gate_false_fail_ratio", &[], 1.0),
        (
            "gate_run_cost_usd",
            "gate_run_cost_usd",
            &[("quantile", "0.5")],
            0.02,
        ),
        (
            "gate_run_cost_usd",
            "gate_run_cost_usd",
            &[("quantile", "0.9")],
            0.30,
        ),
        // The escalated run asked no model: as the gate records it, it
        // cost nothing (a known cost), so every run is costed.
        ("gate_run_cost_usd", "gate_run_cost_usd_count", &[], 7.0),
        ("gate_run_cost_usd", "gate_run_cost_usd_sum", &[], 0.44),
    ];
    for (family, name, labels, want) in cases {
        let got = sample(&families, family, name, labels)
            .unwrap_or_else(|| panic!("no {name}{labels:?} in {}", families[family]));
        assert!(
            (got - want).abs() < 1e-9,
            "{name}{labels:?} = {got}, want {want}"
        );
    }
    // Wilson 95% for 3 of 4.
    let low = sample(
        &families,
        "gate_false_pass_ratio_low",
        "gate_false_pass_ratio_low",
        &[],
    )
    .unwrap();
    assert!((low - 0.3006).abs() < 1e-4, "{low}");
    // Never a run id as a label.
    for family in families.as_object().unwrap().values() {
        for s in family["samples"].as_array().unwrap() {
            for (k, v) in s[1].as_object().unwrap() {
                assert!(!k.contains("run"), "label {k} in {s}");
                assert!(RUNS.iter().all(|r| v != r.id), "a run id as a label: {s}");
            }
        }
    }
    // -o writes the same text atomically.
    env.gate(&["metrics", "-o", "m/gate.prom"])
        .run()
        .assert_exit(0);
    assert_eq!(env.read("m/gate.prom"), out.stdout);
}

const PASSING: &str = r#"
[spec]
id = "checkout"
agent = "claude-code"
[[check]]
id = "build"
run = "true"
"#;

#[test]
fn outcome_of_a_real_run_counts_in_the_report() {
    let env = TestEnv::new();
    env.write("gate.toml", PASSING);
    let run = env.gate(&["verify", "--format", "json"]).run();
    run.assert_exit(0);
    let run_id = run.json()["run_id"].as_str().unwrap().to_owned();

    let report = |env: &TestEnv| {
        let out = env.gate(&["report", "--format", "json"]).run();
        out.assert_exit(0);
        out.json()
    };
    let before = report(&env);
    assert_eq!(before["false_pass"]["unknown"], 1);
    assert_eq!(before["false_pass"]["rate"], Value::Null);
    assert_eq!(before["by"]["agent"]["claude-code"]["runs"], 1);

    // A unique prefix names the run.
    env.gate(&[
        "outcome",
        &run_id[..13],
        "--broken",
        "--reason",
        "CI red on main",
        "--source",
        "ci",
    ])
    .run()
    .assert_exit(0)
    .stdout_has(&run_id)
    .stdout_has("broken");
    let broken = report(&env);
    assert_eq!(
        broken["false_pass"],
        json!({"rate": 1.0, "low": broken["false_pass"]["low"], "high": 1.0,
               "broken": 1, "with_outcome": 1, "unknown": 0})
    );
    assert!((broken["false_pass"]["low"].as_f64().unwrap() - 0.2065).abs() < 1e-4);

    // A later outcome wins; the earlier one stays as history.
    env.gate(&[
        "outcome",
        &run_id,
        "--fine",
        "--reason",
        "flaky test, not the change",
    ])
    .run()
    .assert_exit(0)
    .stdout_has("1 earlier outcomes kept");
    let fine = report(&env);
    assert_eq!(fine["false_pass"]["rate"], 0.0);
    assert_eq!(fine["false_pass"]["with_outcome"], 1);
    let ledger = Ledger::open(env.path().join(".gate/ledger.db")).unwrap();
    let history = ledger.outcomes(&run_id).unwrap();
    assert_eq!(
        history.iter().map(|o| o.broken).collect::<Vec<_>>(),
        [true, false]
    );
    assert_eq!(history[0].source.as_deref(), Some("ci"));

    for (args, stderr) in [
        (
            vec!["outcome", "no-such-run", "--broken"],
            "no run no-such-run",
        ),
        (vec!["outcome", &run_id], "--broken"),
        (
            vec!["outcome", &run_id, "--broken", "--fine"],
            "cannot be used with",
        ),
    ] {
        env.gate(&args).run().assert_exit(2).stderr_has(stderr);
    }
}

/// The page checker is not vacuous: it sees a script error, a console
/// error and a fetch from the network.
#[test]
fn chromium_checker_sees_errors_and_fetches() {
    let env = TestEnv::new();
    let page = env.write(
        "bad.html",
        "<!doctype html><title>bad</title><img src=\"http://127.0.0.1:9/x.png\">\
         <script>console.error('boom'); undefinedFunction();</script>",
    );
    let mut browser = Browser::launch().unwrap_or_else(|e| panic!("starting Chromium: {e}"));
    let seen = browser
        .inspect(
            &format!("file://{}", page.display()),
            (800, 600),
            false,
            "document.title",
        )
        .unwrap();
    assert_eq!(seen.value, "bad");
    let errors = seen.errors.join("\n");
    assert!(
        errors.contains("boom") && errors.contains("undefinedFunction"),
        "{errors}"
    );
    assert!(
        seen.requests
            .iter()
            .any(|u| u.starts_with("http://127.0.0.1:9/")),
        "{:?}",
        seen.requests
    );
    assert_eq!(chromium::png_size(&seen.screenshot), Ok((800, 600)));
    assert!(chromium::png_size(&seen.screenshot[..seen.screenshot.len() - 1]).is_err());
}
