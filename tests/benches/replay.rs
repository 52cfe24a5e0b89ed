//! Replay benchmark against the scripted model server, every figure
//! measured in this run: twenty recorded runs replayed with a candidate
//! whose every reply takes a fixed latency. A run of the trivial tier asks
//! one model once, so the model calls' own time is the latency times the
//! waves the runs go in (`--jobs`, or a provider's `concurrency` when it is
//! lower); the replay's wall time (its `elapsed_ms`: reading the ledger,
//! verifying each bundle, reading each kept request, scoring, sealing) must
//! stay within 5% of that.
//!
//! Run with `bench/replay.sh` (it builds the release binary first).
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::cast_precision_loss)]

use std::time::{Duration, Instant};

use gate_tests::TestEnv;
use gate_tests::model_server::{Matcher, ModelServer, Reply, routes_to};
use serde_json::json;

const RUNS: usize = 20;
const LATENCY: Duration = Duration::from_secs(1);

fn routing(server: &ModelServer, model: &str, concurrency: Option<u32>) -> String {
    let limit = concurrency.map_or(String::new(), |n| format!("concurrency = {n}\n"));
    format!(
        "[provider.local]\napi = \"openai\"\nbase_url = \"{}/v1\"\n{limit}\n\
         [model.m]\nprovider = \"local\"\nname = \"{model}\"\n\
         price = {{ input = 1.0, output = 2.0 }}\n\n{}",
        server.url(),
        routes_to("m")
    )
}

fn main() {
    let server = ModelServer::start();
    let answer = || Reply::openai(&json!({"findings": [], "criteria": [], "rules": []}));
    server
        .script(
            Matcher::any().model("candidate"),
            vec![answer().after(LATENCY)],
        )
        .script(Matcher::any(), vec![answer()]);
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"bench-replay\"\n[[task]]\nid = \"t\"\ntitle = \"T\"\npaths = [\"src/**\"]\n\
         [[task.criterion]]\nid = \"c\"\ntext = \"exists\"\nrun = \"true\"\n",
    );
    env.write("routing.toml", &routing(&server, "baseline", None));
    let recording = Instant::now();
    for i in 0..RUNS {
        env.write(
            "src/app.py",
            &format!("def handler_{i}(request):\n    return request.body[{i}:]\n"),
        );
        let series = format!("pr:{i}");
        env.gate(&["verify", "--series", &series, "--format", "json"])
            .run()
            .assert_exit(0);
    }
    println!(
        "recorded {RUNS} runs in {:.1} s",
        recording.elapsed().as_secs_f64()
    );
    println!("model latency per reply: {} ms", LATENCY.as_millis());
    println!(
        "{:<34} {:>10} {:>12} {:>10} {:>8}",
        "replay", "calls (ms)", "replay (ms)", "wall (ms)", "ratio"
    );
    let mut worst: f64 = 0.0;
    for (jobs, concurrency) in [(4, None), (10, None), (8, Some(2))] {
        let table = format!("candidate-{jobs}-{concurrency:?}.toml");
        env.write(&table, &routing(&server, "candidate", concurrency));
        let jobs_text = jobs.to_string();
        let started = Instant::now();
        let out = env
            .gate(&[
                "replay",
                "--routing",
                &table,
                "--jobs",
                &jobs_text,
                "--format",
                "json",
            ])
            .timeout(Duration::from_secs(600))
            .run();
        let wall = started.elapsed();
        out.assert_exit(0);
        let doc = out.json();
        assert_eq!(doc["runs"].as_array().unwrap().len(), RUNS, "{doc}");
        let at_once = concurrency.map_or(jobs, |c| jobs.min(c as usize));
        let waves = RUNS.div_ceil(at_once) as u32;
        let calls = LATENCY * waves;
        let replay_ms = doc["elapsed_ms"].as_u64().unwrap();
        let ratio = replay_ms as f64 / calls.as_millis() as f64;
        worst = worst.max(ratio);
        println!(
            "{:<34} {:>10} {:>12} {:>10} {:>8.3}",
            format!("--jobs {jobs}, concurrency {concurrency:?}"),
            calls.as_millis(),
            replay_ms,
            wall.as_millis(),
            ratio
        );
    }
    println!("worst replay / calls: {worst:.3} (bound 1.05)");
    assert!(
        worst <= 1.05,
        "a replay took more than its model calls plus 5%"
    );
}
