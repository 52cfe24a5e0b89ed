//! Scheduling with real processes, sockets and files.

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gate_specs::Starts;
use tokio::sync::mpsc;

use super::run;
use crate::testutil::{
    LIMIT, ago, bounded, fake, free_port, gone, options, pids_in, wait_for_file, write_file,
};
use crate::{Action, Builtin, Event, HarnessError, Item, ItemKind, ItemResult, RunOptions, Status};

fn check(id: &str, run: &str, after: &[&str]) -> Item {
    Item {
        id: id.to_owned(),
        kind: ItemKind::Check,
        action: Action::Command {
            run: run.to_owned(),
            starts: None,
        },
        after: after.iter().map(|s| (*s).to_owned()).collect(),
        timeout: Duration::from_secs(30),
    }
}

fn service(id: &str, run: &str, starts: Starts) -> Item {
    Item {
        action: Action::Command {
            run: run.to_owned(),
            starts: Some(starts),
        },
        ..check(id, "", &[])
    }
}

fn starts(within_s: u64) -> Starts {
    Starts {
        within_s: Some(within_s),
        ..Starts::default()
    }
}

/// Runs `items`, returning results by id and every event in order.
async fn run_all(items: Vec<Item>, opts: RunOptions) -> (HashMap<String, ItemResult>, Vec<Event>) {
    run_cancelled(items, opts, std::future::pending()).await
}

async fn run_cancelled(
    items: Vec<Item>,
    opts: RunOptions,
    cancel: impl Future<Output = ()> + Send,
) -> (HashMap<String, ItemResult>, Vec<Event>) {
    let ids: Vec<String> = items.iter().map(|i| i.id.clone()).collect();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let results = bounded(run(items, opts, Some(tx), cancel)).await.unwrap();
    let got: Vec<&str> = results.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(got, ids, "results in the order of the items");
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    let by_id = results.into_iter().map(|r| (r.id.clone(), r)).collect();
    (by_id, events)
}

/// Position of the first event matching `what` ("started:x", "ready:x",
/// "finished:x", "stopped:x").
fn at(events: &[Event], what: &str) -> usize {
    events
        .iter()
        .position(|e| {
            let name = match e {
                Event::Started { id } => format!("started:{id}"),
                Event::Ready { id } => format!("ready:{id}"),
                Event::Stopped { id } => format!("stopped:{id}"),
                Event::Finished(r) => format!("finished:{}", r.id),
            };
            name == what
        })
        .unwrap_or_else(|| panic!("no event {what}"))
}

/// A TCP server: writes its pid, answers `hi` to each connection.
const TCP_SERVER: &str = r#"
import os, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
while True:
    c, _ = s.accept()
    c.sendall(b"hi\n")
    c.close()
"#;

/// Connects to the server, expects `hi`.
const TCP_CLIENT: &str = r#"
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
assert c.recv(16) == b"hi\n"
print("talked to the server")
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    dir.join(name).display().to_string()
}

#[tokio::test]
async fn service_that_dies_at_once_fails_and_its_dependent_is_skipped() {
    let ws = tempfile::tempdir().unwrap();
    let items = vec![
        service("svc", "echo crashing >&2; exit 3", starts(10)),
        check("uses", "true", &["svc"]),
    ];
    let started = Instant::now();
    let (r, events) = run_all(items, options(ws.path(), 2)).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(r["svc"].status, Status::Failed);
    assert_eq!(
        r["svc"].reason.as_deref(),
        Some("exited with status 3 before becoming ready")
    );
    assert_eq!(r["svc"].exit_code, Some(3));
    assert_eq!(r["svc"].output.tail, "crashing\n");
    assert_eq!(r["uses"].status, Status::Skipped);
    assert_eq!(r["uses"].reason.as_deref(), Some("dependency `svc` failed"));
    assert!(at(&events, "stopped:svc") < at(&events, "finished:svc"));
}

#[tokio::test]
async fn service_that_never_becomes_ready_fails_and_is_stopped() {
    let ws = tempfile::tempdir().unwrap();
    let port = free_port();
    let pid = ws.path().join("pid");
    let items = vec![service(
        "svc",
        &format!("echo $$ > {}; exec sleep 300", pid.display()),
        Starts {
            ready_tcp: Some(format!("127.0.0.1:{port}")),
            ..starts(1)
        },
    )];
    let (r, _) = run_all(items, options(ws.path(), 1)).await;
    assert_eq!(r["svc"].status, Status::Failed);
    assert_eq!(
        r["svc"].reason.as_deref(),
        Some(format!("not ready within 1 s: 127.0.0.1:{port} refused connection").as_str())
    );
    assert_eq!(r["svc"].exit_code, None);
    for pid in pids_in(&pid) {
        assert!(gone(pid));
    }
}

#[tokio::test]
async fn readiness_probes() {
    let ws = tempfile::tempdir().unwrap();
    let server = write(ws.path(), "server.py", TCP_SERVER);
    let (tcp_port, http_port, missing_port) = (free_port(), free_port(), free_port());
    let pid = ws.path().join("tcp.pid");
    let http_server = format!(
        "exec python3 -m http.server {{}} --bind 127.0.0.1 --directory {}",
        ws.path().display()
    );
    let items = vec![
        service(
            "tcp",
            &format!("exec python3 {server} {tcp_port} {}", pid.display()),
            Starts {
                ready_tcp: Some(format!("127.0.0.1:{tcp_port}")),
                ..starts(20)
            },
        ),
        service(
            "http",
            &http_server.replace("{}", &http_port.to_string()),
            Starts {
                ready_http: Some(format!("http://127.0.0.1:{http_port}/")),
                ..starts(20)
            },
        ),
        service(
            "http-404",
            &http_server.replace("{}", &missing_port.to_string()),
            Starts {
                ready_http: Some(format!("http://127.0.0.1:{missing_port}/missing")),
                // As long as the other servers get: Python behind a version
                // manager's shim can take seconds to start on a loaded
                // two-core machine, and the probe must meet its 404.
                ..starts(20)
            },
        ),
        service(
            "log",
            // Split across writes: the text is found across chunks.
            "echo starting; sleep 0.3; printf 'now listen'; sleep 0.1; echo 'ing on 80'; exec sleep 300",
            Starts {
                ready_log: Some("listening on".to_owned()),
                ..starts(20)
            },
        ),
        service(
            "log-never",
            "echo starting; exec sleep 300",
            Starts {
                ready_log: Some("listening".to_owned()),
                ..starts(1)
            },
        ),
        service("still-running", "exec sleep 300", starts(1)),
        service(
            "https",
            "exec sleep 300",
            Starts {
                ready_http: Some("https://127.0.0.1:1/".to_owned()),
                ..starts(20)
            },
        ),
    ];
    let (r, events) = run_all(items, options(ws.path(), 8)).await;
    for id in ["tcp", "http", "log", "still-running"] {
        assert_eq!(r[id].status, Status::Passed, "{id}: {:?}", r[id].reason);
        assert!(at(&events, &format!("ready:{id}")) < at(&events, &format!("stopped:{id}")));
    }
    let reasons = [
        (
            "http-404",
            format!("not ready within 20 s: http://127.0.0.1:{missing_port}/missing answered 404"),
        ),
        (
            "log-never",
            "not ready within 1 s: `listening` has not appeared on its output".to_owned(),
        ),
        (
            "https",
            "https readiness probes are not supported: https://127.0.0.1:1/".to_owned(),
        ),
    ];
    for (id, reason) in reasons {
        assert_eq!(r[id].status, Status::Failed, "{id}");
        assert_eq!(r[id].reason.as_deref(), Some(reason.as_str()), "{id}");
    }
    assert!(r["still-running"].duration >= Duration::from_secs(1));
    for pid in pids_in(&pid) {
        assert!(gone(pid), "tcp server {pid} still running");
    }
}

#[tokio::test]
async fn service_stays_up_while_its_dependent_runs_and_is_stopped_after() {
    let ws = tempfile::tempdir().unwrap();
    let server = write(ws.path(), "server.py", TCP_SERVER);
    let client = write(ws.path(), "client.py", TCP_CLIENT);
    let port = free_port();
    let pid = ws.path().join("pid");
    let items = vec![
        service(
            "svc",
            &format!("exec python3 {server} {port} {}", pid.display()),
            Starts {
                ready_tcp: Some(format!("127.0.0.1:{port}")),
                ..starts(20)
            },
        ),
        // Gives the server time to go away if it were stopped too early.
        check(
            "talks",
            &format!("sleep 0.5; python3 {client} {port}"),
            &["svc"],
        ),
        check("unrelated", "sleep 2", &[]),
    ];
    // Concurrency 1: the service must give its permit back once ready.
    let (r, events) = run_all(items, options(ws.path(), 1)).await;
    assert_eq!(r["svc"].status, Status::Passed);
    assert_eq!(r["talks"].status, Status::Passed, "{:?}", r["talks"]);
    assert_eq!(r["talks"].output.tail, "talked to the server\n");
    assert!(at(&events, "ready:svc") < at(&events, "started:talks"));
    assert!(at(&events, "finished:talks") < at(&events, "stopped:svc"));
    assert!(at(&events, "stopped:svc") < at(&events, "finished:svc"));
    let pids = pids_in(&pid);
    assert_eq!(pids.len(), 1);
    assert!(gone(pids[0]), "server still running after the run");
}

#[tokio::test]
async fn service_is_stopped_as_soon_as_its_dependents_are_done() {
    let ws = tempfile::tempdir().unwrap();
    let items = vec![
        service("alone", "exec sleep 300", starts(0)),
        service("used", "exec sleep 300", starts(0)),
        check("user", "true", &["used"]),
        check("long", "sleep 2", &[]),
    ];
    let (r, events) = run_all(items, options(ws.path(), 4)).await;
    assert!(r.values().all(|r| r.status == Status::Passed), "{r:?}");
    // Neither service waits for the unrelated long check.
    assert!(at(&events, "stopped:alone") < at(&events, "finished:long"));
    assert!(at(&events, "stopped:used") < at(&events, "finished:long"));
}

#[tokio::test]
async fn failure_skips_dependents_transitively() {
    let ws = tempfile::tempdir().unwrap();
    let mut opts = options(ws.path(), 2);
    opts.satisfied.insert("earlier".to_owned());
    let items = vec![
        check("c", "true", &["b"]),
        check("a", "exit 1", &[]),
        check("b", "true", &["a"]),
        check("d", "true", &["earlier"]),
        check("e", "true", &["d", "c"]),
    ];
    let (r, _) = run_all(items, opts).await;
    let want = [
        ("a", Status::Failed, Some("exited with status 1")),
        ("b", Status::Skipped, Some("dependency `a` failed")),
        (
            "c",
            Status::Skipped,
            Some("dependency `a` failed (via `b`)"),
        ),
        ("d", Status::Passed, None),
        (
            "e",
            Status::Skipped,
            Some("dependency `a` failed (via `c`)"),
        ),
    ];
    for (id, status, reason) in want {
        assert_eq!(
            (r[id].status, r[id].reason.as_deref()),
            (status, reason),
            "{id}"
        );
    }
    assert_eq!(r["a"].exit_code, Some(1));
}

#[tokio::test]
async fn plan_errors() {
    let ws = tempfile::tempdir().unwrap();
    let cases = [
        (
            vec![check("a", "true", &[]), check("a", "true", &[])],
            "two items have the id `a`",
        ),
        (
            vec![check("a", "true", &["nope"])],
            "`a` is after `nope`, which is not an item of this run",
        ),
        (
            vec![
                check("a", "true", &["c"]),
                check("b", "true", &["a"]),
                check("c", "true", &["b"]),
                check("d", "true", &[]),
            ],
            "`after` forms a cycle among a, b, c",
        ),
    ];
    for (items, want) in cases {
        let err = run(items, options(ws.path(), 1), None, std::future::pending())
            .await
            .unwrap_err();
        assert!(matches!(&err, HarnessError::Plan(m) if m == want), "{err}");
    }
}

#[tokio::test]
async fn concurrency_bound_is_honoured() {
    let ws = tempfile::tempdir().unwrap();
    let log = ws.path().join("spans");
    std::fs::create_dir(&log).unwrap();
    let items: Vec<Item> = (0..8)
        .map(|i| {
            check(
                &format!("i{i}"),
                &format!(
                    "s=$(date +%s%N); sleep 0.3; e=$(date +%s%N); echo $s $e > {}/{i}",
                    log.display()
                ),
                &[],
            )
        })
        .collect();
    let (r, _) = run_all(items, options(ws.path(), 3)).await;
    assert!(r.values().all(|r| r.status == Status::Passed));
    let spans: Vec<(u128, u128)> = (0..8)
        .map(|i| {
            let text = std::fs::read_to_string(log.join(i.to_string())).unwrap();
            let mut it = text.split_whitespace().map(|t| t.parse().unwrap());
            (it.next().unwrap(), it.next().unwrap())
        })
        .collect();
    let most = spans
        .iter()
        .map(|&(start, _)| {
            spans
                .iter()
                .filter(|&&(s, e)| s <= start && start < e)
                .count()
        })
        .max()
        .unwrap();
    assert!(most <= 3, "{most} items overlapped");
    assert!(most >= 2, "items did not run concurrently at all");
}

#[tokio::test]
async fn cancellation_kills_and_skips() {
    let ws = tempfile::tempdir().unwrap();
    let long_pid = ws.path().join("long.pid");
    let svc_pid = ws.path().join("svc.pid");
    let items = vec![
        service(
            "svc",
            &format!("echo $$ > {}; exec sleep 300", svc_pid.display()),
            starts(0),
        ),
        check(
            "long",
            &format!("echo $$ > {}; sleep 300", long_pid.display()),
            &["svc"],
        ),
        check("later", "true", &["long"]),
    ];
    let pid_file = long_pid.clone();
    let cancel = async move {
        let seen = tokio::task::spawn_blocking(move || wait_for_file(&pid_file, LIMIT))
            .await
            .unwrap();
        assert!(seen, "long never started");
    };
    let started = Instant::now();
    let (r, events) = run_cancelled(items, options(ws.path(), 2), cancel).await;
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(r["svc"].status, Status::Passed);
    for id in ["long", "later"] {
        assert_eq!(r[id].status, Status::Skipped, "{id}");
        assert_eq!(r[id].reason.as_deref(), Some("cancelled"), "{id}");
    }
    at(&events, "stopped:svc");
    for pid in pids_in(&long_pid).into_iter().chain(pids_in(&svc_pid)) {
        assert!(gone(pid), "{pid} survived cancellation");
    }
}

#[tokio::test]
async fn command_timeout_and_redacted_output() {
    let ws = tempfile::tempdir().unwrap();
    let aws = fake("AKIA", "IOSFODNN7EXAMPLE");
    let secret = "s3cr3t-value-from-env";
    let printed = format!("key {aws}\npassword {secret}\nshort abc\n");
    let mut opts = options(ws.path(), 2);
    opts.redact = Arc::new(vec![secret.to_owned(), "abc".to_owned()]);
    let mut slow = check("slow", "sleep 300", &[]);
    slow.timeout = Duration::from_millis(500);
    let items = vec![check("talks", &format!("printf '{printed}'"), &[]), slow];
    let (r, _) = run_all(items, opts).await;
    assert_eq!(
        r["talks"].output.tail,
        "key [REDACTED]\npassword [REDACTED]\nshort abc\n"
    );
    assert_eq!(
        r["talks"].output.digest,
        blake3::hash(printed.as_bytes()).to_hex().to_string(),
        "the digest is over what was written, before redaction"
    );
    assert_eq!(r["slow"].status, Status::Failed);
    assert_eq!(r["slow"].reason.as_deref(), Some("timed out after 0.5 s"));
    assert_eq!(r["slow"].exit_code, None);
}

#[tokio::test]
async fn in_process_checks() {
    let ws = tempfile::tempdir().unwrap();
    let xml = r#"<testsuite><testcase name="t"/></testsuite>"#;
    write_file(ws.path(), "src/orders/a.rs", b"fn a() {}\n", ago(100));
    write_file(ws.path(), "reports/orders.xml", xml.as_bytes(), ago(10));
    write_file(ws.path(), "reports/stale.xml", xml.as_bytes(), ago(200));
    write_file(ws.path(), "conf/bad.json", b"{\"a\": }\n", ago(0));
    write_file(ws.path(), "notes.md", b"<<<<<<< HEAD\n", ago(0));
    let mut opts = options(ws.path(), 2);
    opts.files = Arc::new(
        [
            "src/orders/a.rs",
            "reports/orders.xml",
            "reports/stale.xml",
            "conf/bad.json",
            "notes.md",
        ]
        .map(str::to_owned)
        .to_vec(),
    );
    let report = |id: &str, report: &str, stale: Option<&str>| Item {
        kind: ItemKind::TaskTests,
        action: Action::JunitReport {
            report: report.to_owned(),
            stale: stale.map(str::to_owned),
            refused: Vec::new(),
        },
        ..check(id, "", &[])
    };
    let builtin = |b: Builtin| Item {
        kind: ItemKind::Builtin,
        action: Action::Builtin {
            check: b,
            exclude: None,
        },
        ..check(b.id(), "", &[])
    };
    let items = vec![
        report("orders.tests", "reports/orders.xml", None),
        report(
            "stale.tests",
            "reports/stale.xml",
            Some("report reports/stale.xml is stale"),
        ),
        builtin(Builtin::Conflicts),
        builtin(Builtin::Secrets),
        builtin(Builtin::Parse),
    ];
    let (r, _) = run_all(items, opts).await;
    let want = [
        ("orders.tests", Status::Passed, None),
        (
            "stale.tests",
            Status::Failed,
            Some("report reports/stale.xml is stale"),
        ),
        (
            "builtin.conflicts",
            Status::Failed,
            Some(
                "1 merge conflict marker in 1 file (exempt a deliberate fixture with \
                 [policy] builtin_exclude = { conflicts = [\"<glob>\"] })",
            ),
        ),
        ("builtin.secrets", Status::Passed, None),
        (
            "builtin.parse",
            Status::Failed,
            Some(
                "1 file that does not parse (exempt a deliberate fixture with \
                 [policy] builtin_exclude = { parse = [\"<glob>\"] })",
            ),
        ),
    ];
    for (id, status, reason) in want {
        assert_eq!(
            (r[id].status, r[id].reason.as_deref()),
            (status, reason),
            "{id}"
        );
    }
    assert_eq!(r["builtin.parse"].locations[0].file, "conf/bad.json");
    assert!(
        r["builtin.conflicts"]
            .output
            .tail
            .contains("notes.md:1: merge conflict marker")
    );
}

#[tokio::test]
async fn a_builtin_exclusion_leaves_its_files_unread() {
    let ws = tempfile::tempdir().unwrap();
    write_file(ws.path(), "tests/fixtures/bad.json", b"{\"a\": }\n", ago(0));
    write_file(ws.path(), "conf/bad.toml", b"a = \n", ago(0));
    let mut opts = options(ws.path(), 2);
    opts.files = Arc::new(
        ["tests/fixtures/bad.json", "conf/bad.toml"]
            .map(str::to_owned)
            .to_vec(),
    );
    let parse = |id: &str, exclude: &[&str]| Item {
        kind: ItemKind::Builtin,
        action: Action::Builtin {
            check: Builtin::Parse,
            exclude: Some(gate_specs::InputGlobs::new(exclude).unwrap()),
        },
        ..check(id, "", &[])
    };
    let items = vec![
        parse("fixtures", &["tests/fixtures/**"]),
        parse("both", &["tests/fixtures/**", "conf/*.toml"]),
    ];
    let (r, _) = run_all(items, opts).await;
    let files: Vec<&str> = r["fixtures"]
        .locations
        .iter()
        .map(|l| l.file.as_str())
        .collect();
    assert_eq!(files, ["conf/bad.toml"], "the exempt fixture is not read");
    assert!(
        r["fixtures"]
            .output
            .tail
            .contains("1 file exempt by [policy] builtin_exclude")
    );
    assert_eq!(r["both"].status, Status::Passed);
    assert!(
        r["both"]
            .output
            .tail
            .contains("2 files exempt by [policy] builtin_exclude")
    );
}

/// An item named in `launchers` starts through its own launcher (its
/// group's private folders); every other through the run's.
#[tokio::test]
async fn an_item_starts_through_its_own_launcher_when_it_has_one() {
    let ws = tempfile::tempdir().unwrap();
    let mut opts = options(ws.path(), 2);
    let with = |group: &str| {
        let mut env = opts.launcher.env().to_vec();
        env.push(("GROUP".into(), group.into()));
        Arc::new(crate::Launcher::new(env))
    };
    opts.launchers = Arc::new(HashMap::from([
        ("a".to_owned(), with("one")),
        ("b".to_owned(), with("two")),
    ]));
    let said = |id: &str| check(id, &format!("echo \"${{GROUP:-run}}\" > {id}.txt"), &[]);
    let (r, _) = run_all(vec![said("a"), said("b"), said("c")], opts).await;
    // (item, the launcher it started through)
    for (id, want) in [("a", "one"), ("b", "two"), ("c", "run")] {
        assert_eq!(r[id].status, Status::Passed, "{id}");
        let got = std::fs::read_to_string(ws.path().join(format!("{id}.txt"))).unwrap();
        assert_eq!(got.trim(), want, "{id}");
    }
}
