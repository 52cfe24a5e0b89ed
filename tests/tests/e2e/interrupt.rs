//! Stopping a run: Ctrl-C, and the SIGTERM or SIGHUP a CI runner, a
//! container stop or a closed terminal sends. The run stops the processes
//! it started, stops waiting for a model, and still prints and records an
//! interrupted (incomplete) run; a second signal ends it at once.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use gate_tests::model_server::{Matcher, ModelServer, Reply, routes_to};
use gate_tests::{RunOutput, TestEnv, gate_bin, hermetic, item, pid_with, unique_token};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// A spec whose one check runs a script for five minutes, trapping
/// SIGTERM when `stubborn`; the script's name is the token its process is
/// found by.
fn long_check(stubborn: bool) -> (TestEnv, String) {
    let env = TestEnv::new();
    let token = unique_token("long");
    let trap = if stubborn { "trap '' TERM\n" } else { "" };
    // The marker says the trap is set.
    env.script(
        &format!("{token}.sh"),
        &format!("#!/bin/sh\n{trap}: > started\nsleep 300\n"),
    );
    env.write(
        "gate.toml",
        &format!("[spec]\nid = \"stop\"\n[[check]]\nid = \"long\"\nrun = \"./{token}.sh\"\n"),
    );
    (env, token)
}

/// The check's process, once it runs and has set its trap.
fn pid_in(env: &TestEnv, token: &str) -> Pid {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !env.path().join("started").exists() {
        assert!(Instant::now() < deadline, "the check never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    Pid::from_raw(i32::try_from(pid_with(token)).unwrap())
}

/// The run's output, failing the test (and killing the gate) when it has
/// not ended within `within`.
fn ended_within(child: Child, within: Duration) -> RunOutput {
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(RunOutput::wait(child, "gate verify"));
    });
    rx.recv_timeout(within).unwrap_or_else(|_| {
        let _ = kill(pid, Signal::SIGKILL);
        panic!("the gate did not end within {within:?} of the signal");
    })
}

fn alive(pid: Pid) -> bool {
    // A zombie still answers kill(0); its state in /proc says it is gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !stat.rsplit(") ").next().unwrap_or("").starts_with('Z'))
}

fn gone_soon(pid: Pid) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        if Instant::now() > deadline {
            let _ = kill(pid, Signal::SIGKILL);
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

fn ledger_runs(env: &TestEnv) -> usize {
    env.gate(&["runs", "--format", "json"]).run().json()["runs"]
        .as_array()
        .map_or(0, Vec::len)
}

#[test]
fn a_signal_stops_the_run_and_its_processes_and_the_run_is_recorded_interrupted() {
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        let (env, token) = long_check(false);
        let child = env.gate(&["verify", "--format", "json"]).spawn();
        let gate = Pid::from_raw(i32::try_from(child.id()).unwrap());
        let check = pid_in(&env, &token);
        kill(gate, signal).unwrap();
        let out = ended_within(child, Duration::from_secs(20));
        out.assert_exit(4);
        let doc = out.json();
        assert_eq!(doc["verdict"], "incomplete", "{signal}: {doc:#}");
        assert_eq!(doc["recorded"], true, "{signal}");
        let long = item(&doc, "long").unwrap();
        assert_eq!(long["status"], "unverified", "{signal}");
        assert_eq!(long["reason"], "the run was interrupted", "{signal}");
        assert!(
            gone_soon(check),
            "{signal}: the check's process was left running"
        );
        assert_eq!(ledger_runs(&env), 1, "{signal}: the run is in the ledger");
    }
}

#[test]
fn a_signal_the_gate_was_started_ignoring_stays_ignored() {
    // As `nohup gate verify` starts it: SIGHUP ignored.
    let (env, token) = long_check(false);
    #[allow(clippy::disallowed_methods)] // a real shell that ignores SIGHUP
    let child = hermetic(&mut Command::new("bash"))
        .args(["-c", "trap '' HUP; exec \"$GATE\" verify --format json"])
        .env("GATE", gate_bin())
        .current_dir(env.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let gate = Pid::from_raw(i32::try_from(child.id()).unwrap());
    let check = pid_in(&env, &token);
    kill(gate, Signal::SIGHUP).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        alive(gate) && alive(check),
        "SIGHUP stopped a run started under nohup"
    );
    kill(gate, Signal::SIGTERM).unwrap();
    ended_within(child, Duration::from_secs(20)).assert_exit(4);
    assert!(gone_soon(check), "the check's process was left running");
}

#[test]
fn a_second_signal_ends_the_gate_at_once() {
    // The check ignores SIGTERM, so stopping it takes the grace period.
    // Unisolated: in a sandbox the check dies with its sandbox at once.
    let (env, token) = long_check(true);
    let child = env
        .gate(&["verify", "--format", "json", "--sandbox", "off"])
        .spawn();
    let gate = Pid::from_raw(i32::try_from(child.id()).unwrap());
    let check = pid_in(&env, &token);
    kill(gate, Signal::SIGTERM).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    kill(gate, Signal::SIGTERM).unwrap();
    let out = ended_within(child, Duration::from_secs(20));
    out.assert_exit(128 + 15);
    // What the first signal began still ends the check's group.
    assert!(gone_soon(check), "the check's process was left running");
}

#[test]
fn a_signal_during_review_stops_waiting_for_the_model() {
    let server = ModelServer::start();
    server.script(Matcher::any(), vec![Reply::hang()]);
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"rev\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n[[task.criterion]]\nid = \"c\"\ntext = \"exists\"\nrun = \"test -f src/a.py\"\n",
    );
    env.write("src/a.py", "x = 1\n");
    env.write(
        "routing.toml",
        &format!(
            "[provider.local]\napi = \"openai\"\nbase_url = \"{}/v1\"\n\n\
             [model.m]\nprovider = \"local\"\nname = \"test-model\"\n\n{}",
            server.url(),
            routes_to("m")
        ),
    );
    let child = env.gate(&["verify", "--format", "json"]).spawn();
    let gate = Pid::from_raw(i32::try_from(child.id()).unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.requests().is_empty() {
        assert!(Instant::now() < deadline, "no reviewer was asked");
        std::thread::sleep(Duration::from_millis(20));
    }
    let signalled = Instant::now();
    kill(gate, Signal::SIGTERM).unwrap();
    let out = ended_within(child, Duration::from_secs(20));
    assert!(
        signalled.elapsed() < Duration::from_secs(10),
        "{:?}",
        signalled.elapsed()
    );
    out.assert_exit(4);
    let doc = out.json();
    assert_eq!(doc["verdict"], "incomplete", "{doc:#}");
    assert_eq!(doc["review"]["status"], "did_not_run", "{doc:#}");
    assert_eq!(
        doc["review"]["reason"],
        "the run was interrupted during review"
    );
    assert!(Path::new(&env.path().join(".gate/ledger.db")).exists());
    assert_eq!(ledger_runs(&env), 1, "the run is in the ledger");
}
