//! Review benchmark against the scripted model server, every figure measured
//! in this run:
//! - a full-tier review with a fixed 1 s latency per request finishes within
//!   1.2× its critical path (slowest specialist + coordinator);
//! - on a generated full-tier change (40 code files, 5 doc files) the code
//!   roles' requests share a byte-identical prefix of at least 80% of each;
//! - the effective input cost (a repeated prefix at 10% of its price, as
//!   providers bill cached input) is at most 40% of a naive baseline in which
//!   every specialist is sent the whole change with its instructions first.
//!
//! Run with `bench/review.sh` (it builds the release binary first).
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::cast_precision_loss)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use gate_tests::TestEnv;
use gate_tests::model_server::{Matcher, ModelServer, Reply, Request, routes_to};
use serde_json::{Value, json};

const LATENCY: Duration = Duration::from_secs(1);

fn workspace(server: &ModelServer) -> TestEnv {
    let env = TestEnv::new();
    let mut spec = String::from(
        "[spec]\nid = \"bench-review\"\nsummary = \"Five tasks across forty modules\"\n",
    );
    for t in 0..5 {
        let _ = write!(
            spec,
            "[[task]]\nid = \"t{t}\"\ntitle = \"Task {t}\"\npaths = [\"src/t{t}/**\", \"docs/t{t}.md\"]\n"
        );
        for c in 0..5 {
            let _ = write!(
                spec,
                "[[task.criterion]]\nid = \"t{t}-c{c}\"\ntext = \"criterion {c} of task {t}\"\nrun = \"true\"\ninputs = [\"src/t{t}/**\"]\n"
            );
        }
    }
    env.write("gate.toml", &spec);
    for i in 0..40 {
        let mut body = format!("\"\"\"Module {i}.\"\"\"\n\nimport json\n\n");
        for f in 0..12 {
            let _ = write!(
                body,
                "def handler_{i}_{f}(request):\n    \"\"\"Handles request kind {f}.\"\"\"\n    payload = json.loads(request.body or '{{}}')\n    total = sum(line['price'] * line['qty'] for line in payload.get('lines', []))\n    if total > {limit}:\n        return {{'status': 400, 'error': 'over the limit'}}\n    return {{'status': 201, 'total': total, 'id': payload.get('id')}}\n\n",
                limit = 1000 + f * 10
            );
        }
        env.write(&format!("src/t{}/m{i}.py", i % 5), &body);
    }
    for t in 0..5 {
        env.write(
            &format!("docs/t{t}.md"),
            &format!(
                "# Task {t}\n\nPOST /orders/{t} creates an order and answers 201.\n\n{}",
                "Details. ".repeat(200)
            ),
        );
    }
    let routing = format!(
        "[provider.local]\napi = \"openai\"\nbase_url = \"{}/v1\"\n[model.m]\nprovider = \"local\"\nname = \"bench-model\"\nprice = {{ input = 1.0, cached_input = 0.1, output = 2.0 }}\n{}",
        server.url(),
        routes_to("m")
    );
    env.write("routing.toml", &routing);
    env
}

fn answer(findings: &Value) -> Value {
    json!({"findings": findings, "criteria": [], "rules": []})
}

/// The request's whole prompt text, in the order the provider reads it.
fn prompt(r: &Request) -> String {
    let mut out = String::new();
    for m in r.body["messages"].as_array().unwrap() {
        match &m["content"] {
            Value::String(s) => out.push_str(s),
            Value::Array(parts) => {
                for p in parts {
                    out.push_str(p["text"].as_str().unwrap_or(""));
                }
            }
            _ => {}
        }
    }
    out
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

fn timed(env: &TestEnv, args: &[&str]) -> (Duration, Value) {
    let started = Instant::now();
    let out = env.gate(args).run();
    let took = started.elapsed();
    (took, out.json())
}

fn main() {
    let server = ModelServer::start();
    server.default_reply(Reply::openai(&answer(&json!([]))).after(LATENCY));
    // One finding, so the full tier's model coordinator runs after the panel.
    server.script(
        Matcher::any().role("quality"),
        vec![
            Reply::openai(&answer(
                &json!([{"severity": "warning", "file": "src/t0/m0.py", "line": 9,
            "title": "Total ignores a missing quantity", "detail": "KeyError", "confidence": 0.9}]),
            ))
            .after(LATENCY),
        ],
    );
    let env = workspace(&server);

    // Wall time of the review: a reviewed run minus the same run offline,
    // best of three each (a fresh series each time, nothing carried).
    let mut offline = Duration::MAX;
    let mut online = Duration::MAX;
    let mut doc = Value::Null;
    for _ in 0..3 {
        offline =
            offline.min(timed(&env, &["verify", "--format", "json", "--offline", "--full"]).0);
        let (t, d) = timed(&env, &["verify", "--format", "json", "--full"]);
        if t < online {
            online = t;
            doc = d;
        }
    }
    assert_eq!(doc["tier"], "full", "{doc}");
    let review = online.saturating_sub(offline);
    let critical = LATENCY * 2;
    let roles: Vec<&str> = doc["review"]["specialists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["role"].as_str().unwrap())
        .collect();
    println!("full-tier review: {roles:?}");
    println!(
        "review wall time {:.2} s; critical path (slowest specialist + coordinator) {:.2} s; ratio {:.2}  (target <= 1.2)",
        review.as_secs_f64(),
        critical.as_secs_f64(),
        review.as_secs_f64() / critical.as_secs_f64()
    );

    // The last run's requests, from the server's log.
    let run_id = doc["run_id"].as_str().unwrap();
    let requests: Vec<Request> = server
        .requests()
        .into_iter()
        .filter(|r| r.header("x-gate-run") == Some(run_id))
        .collect();
    let code_roles = ["quality", "security", "performance", "integration"];
    let code: Vec<String> = requests
        .iter()
        .filter(|r| code_roles.contains(&r.header("x-gate-role").unwrap_or("")))
        .map(prompt)
        .collect();
    assert_eq!(code.len(), 4, "one request per code role");
    let shared = code
        .iter()
        .skip(1)
        .fold(code[0].len(), |n, t| n.min(common_prefix(&code[0], t)));
    let min_share = code
        .iter()
        .map(|t| shared as f64 / t.len() as f64)
        .fold(f64::INFINITY, f64::min);
    println!(
        "code roles' shared byte-identical prefix: {shared} bytes, at least {:.1}% of each request  (target >= 80%)",
        min_share * 100.0
    );

    // Effective input cost of the panel, cached prefixes at 10%, against
    // every specialist sent the whole change with its instructions first.
    let panel: Vec<String> = requests
        .iter()
        .filter(|r| r.header("x-gate-role") != Some("coordinator"))
        .map(prompt)
        .collect();
    let mut effective = 0.0;
    for (k, text) in panel.iter().enumerate() {
        let cached = panel[..k]
            .iter()
            .map(|earlier| common_prefix(earlier, text))
            .max()
            .unwrap_or(0);
        effective += cached as f64 * 0.1 + (text.len() - cached) as f64;
    }
    let change: usize = walk(env.path()).iter().map(|(_, len)| *len).sum();
    let instructions: usize = panel
        .iter()
        .map(|t| t.len() - common_prefix(t, &panel[0]).min(t.len()))
        .max()
        .unwrap_or(0);
    let naive = panel.len() as f64 * (instructions + change) as f64;
    println!(
        "effective input (cached prefix at 10%): {:.0} bytes; naive baseline: {:.0} bytes; ratio {:.2}  (target <= 0.40)",
        effective,
        naive,
        effective / naive
    );
}

/// Every file of the change (code, docs, spec), with its size.
fn walk(root: &std::path::Path) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name == ".gate" {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if p.starts_with(root.join("src")) || p.starts_with(root.join("docs")) {
                let len = std::fs::metadata(&p).unwrap().len() as usize;
                out.push((p.display().to_string(), len));
            }
        }
    }
    out
}
