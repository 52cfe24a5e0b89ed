//! Failback speed: what a dead primary model costs a full-tier `gate verify`.
//!
//! Three scenarios against the scripted model server on loopback, the real
//! `gate` binary, each run `RUNS` times (default 3; the median counts):
//!
//! - healthy: the primary answers after `LATENCY_MS` (default 300): the
//!   baseline, a whole run including the model's latency;
//! - hanging: the primary accepts and never answers; the fallback answers
//!   after the same latency. Target: the run costs at most the inactivity
//!   bound plus a healthy run (the fallback's latency and the run's own
//!   work), not the sum of the timeouts;
//! - breaker open: the same, in the state directory the hanging run left,
//!   whose ledger holds the primary's open breaker. Target: no timeout paid
//!   at all, about a healthy run.
//!
//! Prints the figures and both ratios; exits 1 when a target is missed.
//! Run it with `bench/failback.sh` (builds the release binaries first).
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use gate_tests::TestEnv;
use gate_tests::model_server::{Matcher, ModelServer, Reply, routes_to};
use serde_json::{Value, json};

const PRIMARY: &str = "m-primary";
const FALLBACK: &str = "m-fallback";
/// The stream inactivity bound the runs use (seconds).
const INACTIVITY_S: u64 = 3;
/// Ratio targets.
const HANG_TARGET: f64 = 1.10;
const OPEN_TARGET: f64 = 1.50;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A full-tier workspace (5 tasks × 21 criteria) routed to `server`: every
/// role on the primary, falling back to the fallback. Default policy but
/// the inactivity and connect bounds (a response head waits for the longer
/// of the two; like the defaults, 60 s and 10 s, the bench keeps the
/// connect bound below the inactivity one).
fn workspace(server: &ModelServer) -> TestEnv {
    let env = TestEnv::new();
    let mut spec = format!(
        "[spec]\nid = \"bench\"\n[policy]\ninactivity_timeout_s = {INACTIVITY_S}\nconnect_timeout_s = 1\n"
    );
    for t in 0..5 {
        let _ = writeln!(spec, "[[task]]\nid = \"t{t}\"\npaths = [\"src/t{t}/**\"]");
        for c in 0..if t == 0 { 5 } else { 4 } {
            let _ = writeln!(
                spec,
                "[[task.criterion]]\nid = \"t{t}-c{c}\"\ntext = \"holds\"\nrun = \"true\""
            );
        }
        env.write(&format!("src/t{t}/mod.py"), "def f():\n    return 1\n");
    }
    env.write("gate.toml", &spec);
    let routing = format!(
        "[provider.local]\napi = \"openai\"\nbase_url = \"{}/v1\"\n\
         [model.primary]\nprovider = \"local\"\nname = \"{PRIMARY}\"\nfallback = [\"fallback\"]\n\
         [model.fallback]\nprovider = \"local\"\nname = \"{FALLBACK}\"\n{}",
        server.url(),
        routes_to("primary")
    );
    env.write("routing.toml", &routing);
    env
}

/// One `gate verify`: its wall time and JSON document.
fn verify(env: &TestEnv) -> (Duration, Value) {
    let started = Instant::now();
    let out = env
        .gate(&["verify", "--format", "json", "-q"])
        .timeout(Duration::from_secs(120))
        .run();
    let took = started.elapsed();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["tier"], "full", "the bench needs a full-tier run");
    (took, doc)
}

fn outcomes(doc: &Value) -> Vec<String> {
    doc["review"]["specialists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let attempts: Vec<String> = s["attempts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    format!(
                        "{}:{}({} ms)",
                        a["model"].as_str().unwrap(),
                        a["outcome"].as_str().unwrap(),
                        a["latency_ms"]
                    )
                })
                .collect();
            format!("{}={}", s["role"].as_str().unwrap(), attempts.join(">"))
        })
        .collect()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

fn requests_to(server: &ModelServer, model: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.body.get("model").and_then(Value::as_str) == Some(model))
        .count()
}

fn main() {
    let runs = env_number("RUNS", 3).max(1);
    let latency = Duration::from_millis(env_number("LATENCY_MS", 300));
    let answer = json!({"findings": [], "criteria": [], "rules": []});
    let server = ModelServer::start();
    server
        .script(
            Matcher::any().path("/healthy/v1/chat/completions"),
            vec![Reply::openai(&answer).after(latency)],
        )
        .script(Matcher::any().model(PRIMARY), vec![Reply::hang()])
        .script(
            Matcher::any().model(FALLBACK),
            vec![Reply::openai(&answer).after(latency)],
        );

    // Healthy: the same table pointed at a path where the primary answers.
    let mut healthy = Vec::new();
    for _ in 0..runs {
        let env = workspace(&server);
        let table = env.read("routing.toml").replace(
            &format!("{}/v1", server.url()),
            &format!("{}/healthy/v1", server.url()),
        );
        env.write("routing.toml", &table);
        let (took, doc) = verify(&env);
        assert!(
            outcomes(&doc)
                .iter()
                .all(|o| o.contains(&format!("={PRIMARY}:ok(")))
        );
        healthy.push(took);
    }

    let mut hanging = Vec::new();
    let mut open = Vec::new();
    let mut sample = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let env = workspace(&server);
        let (took, doc) = verify(&env);
        hanging.push(took);
        sample.0 = outcomes(&doc);
        let before = requests_to(&server, PRIMARY);
        let (took, doc) = verify(&env);
        assert_eq!(
            requests_to(&server, PRIMARY),
            before,
            "a request reached the primary through an open breaker"
        );
        open.push(took);
        sample.1 = outcomes(&doc);
    }

    let (healthy, hanging, open) = (median(healthy), median(hanging), median(open));
    let inactivity = Duration::from_secs(INACTIVITY_S);
    let hang_bound = inactivity + healthy;
    let hang_ratio = hanging.as_secs_f64() / hang_bound.as_secs_f64();
    let open_ratio = open.as_secs_f64() / healthy.as_secs_f64();
    // What paying every timeout in turn would cost: the specialist timeout
    // (default 300 s) for the dead primary before the fallback starts.
    let naive = Duration::from_secs(300) + healthy;

    println!("failback bench: full tier (4 specialists), {runs} runs each, medians");
    println!("model latency:          {}", secs(latency));
    println!("inactivity bound:       {}", secs(inactivity));
    println!("healthy primary:        {}", secs(healthy));
    println!(
        "primary hanging:        {}   bound {} (inactivity + healthy run)",
        secs(hanging),
        secs(hang_bound)
    );
    println!("  attempts: {}", sample.0.join(" "));
    println!("primary breaker open:   {}", secs(open));
    println!("  attempts: {}", sample.1.join(" "));
    println!(
        "ratio hanging / (inactivity + healthy): {hang_ratio:.3} (target <= {HANG_TARGET}); \
         the sum of timeouts would be about {}",
        secs(naive)
    );
    println!("ratio breaker open / healthy:           {open_ratio:.3} (target <= {OPEN_TARGET})");
    let ok = hang_ratio <= HANG_TARGET && open_ratio <= OPEN_TARGET;
    println!("{}", if ok { "PASS" } else { "FAIL" });
    if !ok {
        std::process::exit(1);
    }
}
