//! Many runners, one ledger: concurrent `gate verify` processes on one
//! SQLite file and on one PostgreSQL database, SIGKILL during concurrent
//! runs, a server that stops mid-run, an unreachable ledger, and
//! `gate ledger migrate`. The PostgreSQL cases need `GATE_TEST_POSTGRES`
//! (scripts/test starts a private server) and fail without it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use gate_tests::postgres::{self, Database, Proxy};
use gate_tests::private_postgres::TlsServer;
use gate_tests::{RunOutput, TestEnv, gate_command};
use serde_json::{Value, json};
use sha2::Digest as _;

/// A spec whose one check passes.
fn passing_spec(id: &str) -> String {
    format!("[spec]\nid = \"{id}\"\n[[check]]\nid = \"build\"\nrun = \"true\"\n")
}

/// A spec whose one check fails the same way every time: the third
/// attempt escalates (a repeated failure).
fn looping_spec(id: &str, pause: &str) -> String {
    format!(
        "[spec]\nid = \"{id}\"\n[[check]]\nid = \"build\"\nrun = \"sleep {pause}; echo broken build; exit 1\"\n"
    )
}

/// One shared signing key, so every runner's bundles verify with one key.
struct Fleet {
    key_home: TestEnv,
    ledger: String,
    /// The PostgreSQL database, dropped with the fleet.
    db: Option<Database>,
    _sqlite: Option<tempfile::TempDir>,
}

impl Fleet {
    fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ledger = dir.path().join("shared/ledger.db").display().to_string();
        Self::with(ledger, None, Some(dir))
    }

    fn postgres() -> Self {
        let db = Database::fresh();
        Self::with(db.url.clone(), Some(db), None)
    }

    fn with(ledger: String, db: Option<Database>, dir: Option<tempfile::TempDir>) -> Self {
        let key_home = TestEnv::new();
        key_home.gate(&["keys", "generate"]).run().assert_exit(0);
        Self {
            key_home,
            ledger,
            db,
            _sqlite: dir,
        }
    }

    fn key(&self) -> PathBuf {
        self.key_home.path().join(".gate/keys/signing.key")
    }

    /// `gate ARGS` in `ws`, as a runner of this fleet.
    fn gate(&self, ws: &TestEnv, args: &[&str]) -> gate_tests::GateCommand {
        ws.gate(args)
            .env("GATE_SIGNING_KEY", self.key())
            .env("GATE_LEDGER", &self.ledger)
    }

    /// Every row, oldest first.
    fn rows(&self, ws: &TestEnv) -> Vec<Value> {
        let out = self
            .gate(ws, &["runs", "--format", "json", "--limit", "100000"])
            .run();
        out.assert_exit(0);
        let mut rows = out.json()["runs"].as_array().unwrap().clone();
        rows.reverse();
        rows
    }
}

/// Waits for a spawned run and collects what it printed.
fn finish(child: Child, what: &str) -> RunOutput {
    RunOutput::wait(child, what)
}

/// 4 runners × 5 processes at once: 12 runs of 12 passing specs, and 8
/// runs of one failing spec that all runners share.
fn twenty_concurrent_runs(fleet: &Fleet) {
    let runners: Vec<TestEnv> = (0..4)
        .map(|r| {
            let ws = TestEnv::new();
            for i in 0..3 {
                ws.write(
                    &format!("p{i}.toml"),
                    &passing_spec(&format!("pass-{r}-{i}")),
                );
            }
            ws.write("loop.toml", &looping_spec("loop", "0"));
            ws
        })
        .collect();
    let mut children = Vec::new();
    for ws in &runners {
        // The looping spec first: its runs race for a ledger that is not
        // there yet.
        for spec in ["loop.toml", "loop.toml", "p0.toml", "p1.toml", "p2.toml"] {
            let child = fleet
                .gate(ws, &["verify", "--spec", spec, "--format", "json"])
                .spawn();
            children.push((spec, child));
        }
    }
    let outs: Vec<(&str, RunOutput)> = children
        .into_iter()
        .map(|(spec, child)| (spec, finish(child, spec)))
        .collect();

    let mut recorded = BTreeSet::new();
    let mut loop_exits = Vec::new();
    for (spec, out) in &outs {
        let doc = out.json();
        if *spec == "loop.toml" {
            loop_exits.push(out.code.unwrap());
        } else {
            out.assert_exit(0);
        }
        if doc["recorded"] == true {
            assert!(recorded.insert(doc["run_id"].as_str().unwrap().to_owned()));
        }
    }
    // Runs of one spec took their attempts one after another: attempts 1
    // and 2 failed, 3 escalated, and the rest found the series escalated.
    loop_exits.sort_unstable();
    assert_eq!(loop_exits, [1, 1, 3, 3, 3, 3, 3, 3]);

    let rows = fleet.rows(&runners[0]);
    let seqs: Vec<u64> = rows.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=15).collect::<Vec<_>>(), "contiguous from 1");
    let ids: BTreeSet<String> = rows
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, recorded, "every recorded run has exactly one row");
    let series: Vec<(u64, &str)> = rows
        .iter()
        .filter(|r| r["spec_id"] == "loop")
        .map(|r| {
            (
                r["attempt"].as_u64().unwrap(),
                r["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(series, [(1, "fail"), (2, "fail"), (3, "escalate")]);
    fleet
        .gate(&runners[0], &["ledger", "verify"])
        .run()
        .assert_exit(0)
        .stdout_has("ok: 15 runs");
}

#[test]
fn twenty_concurrent_runs_share_one_sqlite_ledger() {
    twenty_concurrent_runs(&Fleet::sqlite());
}

#[test]
fn twenty_concurrent_runs_share_one_postgres_ledger() {
    twenty_concurrent_runs(&Fleet::postgres());
}

#[test]
fn sigkill_during_concurrent_runs_on_postgres_leaves_a_ledger_that_verifies() {
    let fleet = Fleet::postgres();
    let runners: Vec<TestEnv> = (0..2)
        .map(|r| {
            let ws = TestEnv::new();
            for i in 0..3 {
                ws.write(&format!("p{i}.toml"), &passing_spec(&format!("k-{r}-{i}")));
            }
            // One spec every runner shares, so kills also land on holders
            // of its series lock.
            ws.write("shared.toml", &passing_spec("k-shared"));
            ws
        })
        .collect();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for trial in 0..6 {
        let mut children = Vec::new();
        for ws in &runners {
            for spec in ["p0.toml", "p1.toml", "p2.toml", "shared.toml"] {
                let child = gate_command()
                    .args(["verify", "-q", "--spec", spec])
                    .current_dir(ws.path())
                    .env("GATE_SIGNING_KEY", fleet.key())
                    .env("GATE_LEDGER", &fleet.ledger)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                children.push(child);
            }
        }
        // Half of them are killed at "random" points in their first 600 ms.
        let started = Instant::now();
        let mut kills: Vec<(Duration, usize)> = Vec::new();
        for i in 0..children.len() {
            let r = next();
            if r % 2 == 0 {
                kills.push((Duration::from_millis((r >> 8) % 600), i));
            }
        }
        kills.sort_unstable();
        for (at, i) in kills {
            if let Some(left) = at.checked_sub(started.elapsed()) {
                std::thread::sleep(left);
            }
            let _ = children[i].kill();
        }
        for mut child in children {
            let _ = child.wait();
        }
        let out = fleet.gate(&runners[0], &["ledger", "verify"]).run();
        assert_eq!(
            out.code,
            Some(0),
            "trial {trial}: {}{}",
            out.stdout,
            out.stderr
        );
    }
    // The ledger keeps the bundles; a run killed before its row left its
    // envelope in the spool, and an import records it: nothing is lost.
    let mut spooled = BTreeSet::new();
    for ws in &runners {
        assert_eq!(envelopes(&ws.path().join(".gate/bundles")), BTreeSet::new());
        spooled.extend(envelopes(&ws.path().join(".gate/spool")));
        fleet.gate(ws, &["ledger", "import"]).run().assert_exit(0);
        assert_eq!(envelopes(&ws.path().join(".gate/spool")), BTreeSet::new());
    }
    let recorded: BTreeSet<String> = fleet
        .rows(&runners[0])
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        spooled.is_subset(&recorded),
        "spooled runs missing from the ledger: {:?}",
        spooled.difference(&recorded).collect::<Vec<_>>()
    );
    fleet
        .gate(&runners[0], &["ledger", "verify"])
        .run()
        .assert_exit(0);
}

/// The run ids of the envelopes (`<run-id>.dsse.json`) in `dir`.
fn envelopes(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".dsse.json").map(str::to_owned)
        })
        .collect()
}

/// With a PostgreSQL ledger and no `GATE_BUNDLE_STORE`, the ledger keeps
/// every bundle with its row: ten concurrent runs, then every bundle is
/// shown, verified and fetched by run id from a machine that has nothing
/// but the ledger URL and the public key; an altered or deleted bundle is
/// bad evidence there.
#[test]
fn postgres_keeps_every_bundle_and_any_machine_audits_by_run_id() {
    let fleet = Fleet::postgres();
    let runners: Vec<TestEnv> = (0..2)
        .map(|r| {
            let ws = TestEnv::new();
            for i in 0..4 {
                ws.write(&format!("p{i}.toml"), &passing_spec(&format!("b-{r}-{i}")));
            }
            ws.write("fail.toml", &looping_spec(&format!("bf-{r}"), "0"));
            ws
        })
        .collect();
    let children: Vec<(&str, Child)> = runners
        .iter()
        .flat_map(|ws| {
            ["p0.toml", "p1.toml", "p2.toml", "p3.toml", "fail.toml"]
                .into_iter()
                .map(|spec| {
                    let child = fleet
                        .gate(ws, &["verify", "--spec", spec, "--format", "json"])
                        .spawn();
                    (spec, child)
                })
        })
        .collect();
    let mut runs = Vec::new();
    for (spec, child) in children {
        let out = finish(child, spec);
        out.assert_exit(i32::from(spec == "fail.toml"));
        let doc = out.json();
        assert_eq!(doc["recorded"], true, "{doc}");
        let at = doc["bundle"].as_str().unwrap().to_owned();
        assert!(at.starts_with("ledger:sha256:"), "{at}");
        runs.push((doc["run_id"].as_str().unwrap().to_owned(), at));
    }
    assert_eq!(runs.len(), 10);
    // Nothing stays on the runners.
    for ws in &runners {
        for dir in [".gate/bundles", ".gate/spool"] {
            assert_eq!(envelopes(&ws.path().join(dir)), BTreeSet::new(), "{dir}");
        }
    }
    assert_eq!(
        fleet
            .db
            .as_ref()
            .unwrap()
            .column("SELECT count(*) FROM bundles"),
        ["10"]
    );

    // Another machine: the ledger URL and the public key, nothing else.
    let laptop = TestEnv::new();
    let key = laptop.path().join("signer.pub");
    std::fs::copy(fleet.key_home.path().join(".gate/keys/signing.pub"), &key).unwrap();
    let key = key.to_str().unwrap();
    let on_laptop = |args: &[&str]| {
        laptop
            .gate(args)
            .env("GATE_LEDGER", &fleet.ledger)
            .env_remove("GATE_SIGNING_KEY")
            .run()
    };
    for (run, at) in &runs {
        on_laptop(&["evidence", "verify", run, "--key", key])
            .assert_exit(0)
            .stdout_has("signature: ok")
            .stdout_has(at);
        let out = on_laptop(&["evidence", "show", run, "--key", key, "--format", "json"]);
        out.assert_exit(0);
        assert_eq!(out.json()["run_id"], run.as_str());
        assert_eq!(out.json()["recorded"], true, "the ledger's word");
        let file = laptop.path().join(format!("{run}.dsse.json"));
        on_laptop(&["evidence", "fetch", run, "-o", file.to_str().unwrap()]).assert_exit(0);
        let sha = hex::encode(sha2::Sha256::digest(std::fs::read(&file).unwrap()));
        assert_eq!(format!("ledger:sha256:{sha}"), *at);
    }
    on_laptop(&["ledger", "verify", "--key", key])
        .assert_exit(0)
        .stdout_has("ok: 10 runs");
    assert!(!laptop.path().join(".gate/ledger.db").exists());

    // Altered in the database, then gone: bad evidence (exit 1) either way.
    let db = fleet.db.as_ref().unwrap();
    let (run, at) = &runs[3];
    let sha = at.strip_prefix("ledger:sha256:").unwrap();
    postgres::execute(
        &db.url,
        &format!("UPDATE bundles SET envelope = envelope || '\\x0a'::bytea WHERE sha256 = '{sha}'"),
    );
    on_laptop(&["evidence", "verify", run, "--key", key])
        .assert_exit(1)
        .stderr_has("was altered");
    on_laptop(&["ledger", "verify", "--key", key]).assert_exit(1);
    postgres::execute(
        &db.url,
        &format!("DELETE FROM bundles WHERE sha256 = '{sha}'"),
    );
    on_laptop(&["evidence", "verify", run, "--key", key])
        .assert_exit(1)
        .stderr_has("is missing");
    on_laptop(&["ledger", "verify", "--key", key])
        .assert_exit(1)
        .stdout_has(run);
}

/// Series locks held in this test's database right now (one per run
/// between reading its history and recording).
fn series_locks_held(db: &Database) -> usize {
    db.column(&format!(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = {} AND granted \
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        0x6761_7465 + 2
    ))[0]
        .parse()
        .unwrap()
}

#[test]
fn postgres_stopped_mid_run_keeps_verdicts_and_loses_nothing() {
    let db = Database::fresh();
    let mut proxy = Proxy::start(postgres::port_of(&db.url), 0);
    let url = format!(
        "{}?connect_timeout=2",
        postgres::with_port(&db.url, proxy.port)
    );
    let fleet = Fleet::with(url, None, None);
    // Three workspaces, one state folder: runs on one workspace take turns
    // (as root each hands it to a uid of its own), and the spool the
    // import reads is the state folder's.
    let state = tempfile::tempdir().unwrap();
    let spaces: Vec<(&str, TestEnv)> = ["pass.toml", "fail.toml", "loop.toml"]
        .into_iter()
        .map(|spec| (spec, TestEnv::new()))
        .collect();
    let at = |spec: &str| &spaces.iter().find(|(s, _)| *s == spec).unwrap().1;
    let gate = |spec: &str, args: &[&str]| {
        fleet
            .gate(at(spec), args)
            .env("GATE_STATE_DIR", state.path())
    };
    let ws = at("loop.toml");
    // Each check says when it starts (the run has read its series by then)
    // in a folder outside the workspace, one per run: a run hands its
    // `writable` paths to a uid of its own while it runs.
    let marks = tempfile::tempdir().unwrap();
    for id in ["p", "f", "l"] {
        std::fs::create_dir(marks.path().join(id)).unwrap();
    }
    let slow = |id: &str, fails: bool| {
        let mark = marks.path().join(id).join("started");
        let tail = if fails {
            "; echo broken build; exit 1"
        } else {
            ""
        };
        format!(
            "[spec]\nid = \"{id}\"\n[sandbox]\nwritable = [\"{}\"]\n[[check]]\nid = \"build\"\nrun = \"touch {}; sleep 2{tail}\"\n",
            marks.path().join(id).display(),
            mark.display()
        )
    };
    at("pass.toml").write("pass.toml", &slow("p", false));
    at("fail.toml").write("fail.toml", &slow("f", true));
    ws.write("loop.toml", &looping_spec("l", "0"));
    for _ in 0..2 {
        gate("loop.toml", &["verify", "--spec", "loop.toml"])
            .run()
            .assert_exit(1);
    }
    // The third attempt will escalate (the same failure again); slow it down
    // like the others.
    ws.write("loop.toml", &slow("l", true));
    let children: Vec<(&str, Child)> = ["pass.toml", "fail.toml", "loop.toml"]
        .into_iter()
        .map(|spec| {
            let child = gate(spec, &["verify", "--spec", spec, "--format", "json"]).spawn();
            (spec, child)
        })
        .collect();
    // Cut the server off once all three are running their checks.
    let deadline = Instant::now() + Duration::from_secs(30);
    while ["p", "f", "l"]
        .iter()
        .any(|id| !marks.path().join(id).join("started").exists())
    {
        assert!(Instant::now() < deadline, "the runs never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Each still holds its series lock, which the cut will break.
    assert_eq!(series_locks_held(&db), 3);
    proxy.cut();
    for (spec, child) in children {
        let out = finish(child, spec);
        let (code, verdict) = match spec {
            "pass.toml" => (4, "pass"),
            "fail.toml" => (1, "fail"),
            _ => (3, "escalate"),
        };
        out.assert_exit(code);
        let doc = out.json();
        assert_eq!(doc["verdict"], verdict, "{spec}");
        assert_eq!(doc["recorded"], false, "{spec}");
        out.stderr_has("this run was not recorded")
            .stderr_has("gate ledger import");
        assert!(!out.stderr.contains("ledger verify"), "{}", out.stderr);
        assert!(
            at(spec)
                .path()
                .join(doc["bundle"].as_str().unwrap())
                .is_file()
        );
    }
    // The server is back: the spooled bundles go in, and nothing is lost.
    let _proxy = Proxy::start(postgres::port_of(&db.url), proxy.port);
    gate("loop.toml", &["ledger", "import"])
        .run()
        .assert_exit(0)
        .stdout_has("3 bundle(s) imported");
    let rows = fleet.rows(ws);
    let got: Vec<(&str, u64, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["spec_id"].as_str().unwrap(),
                r["attempt"].as_u64().unwrap(),
                r["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(got.len(), 5);
    for want in [
        ("l", 1, "fail"),
        ("l", 2, "fail"),
        ("l", 3, "escalate"),
        ("p", 1, "pass"),
        ("f", 1, "fail"),
    ] {
        assert!(got.contains(&want), "{want:?} not in {got:?}");
    }
    gate("loop.toml", &["ledger", "verify"])
        .run()
        .assert_exit(0);
    // The imported escalation holds: the series stays escalated.
    gate("loop.toml", &["verify", "--spec", "loop.toml"])
        .run()
        .assert_exit(3);
}

#[test]
fn an_unreachable_ledger_is_exit_4_never_1() {
    let port = gate_tests::free_port();
    let url = format!("postgres://gate:hunter2@127.0.0.1:{port}/gate");
    let ws = TestEnv::new();
    ws.write("gate.toml", &passing_spec("u"));
    ws.write("fail.toml", &looping_spec("uf", "0"));
    let with = |args: &[&str]| ws.gate(args).env("GATE_LEDGER", &url).run();
    // A decision is still made and printed; a pass without its record is 4.
    let out = with(&["verify", "--format", "json"]);
    out.assert_exit(4);
    assert_eq!(out.json()["verdict"], "pass");
    assert_eq!(out.json()["recorded"], false);
    out.stderr_has("cannot reach ledger postgres://gate:***@127.0.0.1");
    assert!(!out.stderr.contains("hunter2"), "{}", out.stderr);
    let out = with(&["verify", "--spec", "fail.toml", "--format", "json"]);
    out.assert_exit(1);
    assert_eq!(out.json()["recorded"], false);
    // Commands that only read say they could not check.
    for args in [
        &["runs"][..],
        &["ledger", "verify"],
        &["ledger", "checkpoint"],
        &["ledger", "import"],
    ] {
        let out = with(args);
        out.assert_exit(4);
        out.stderr_has("cannot reach ledger");
    }
    // A location that is no ledger at all is a configuration error.
    let out = ws
        .gate(&["runs"])
        .env("GATE_LEDGER", "mysql://db/gate")
        .run();
    out.assert_exit(2);
    out.stderr_has("env GATE_LEDGER");
}

#[test]
fn migrate_copies_a_sqlite_ledger_into_postgres_and_the_spec_can_name_it() {
    let db = Database::fresh();
    let ws = TestEnv::new();
    ws.write("gate.toml", &passing_spec("m"));
    ws.write("fail.toml", &looping_spec("mf", "0"));
    for _ in 0..2 {
        ws.gate(&["verify", "-q"]).run().assert_exit(0);
    }
    let out = ws
        .gate(&["verify", "--spec", "fail.toml", "--format", "json"])
        .run();
    out.assert_exit(1);
    let failed = out.json()["run_id"].as_str().unwrap().to_owned();
    ws.gate(&[
        "override",
        &failed,
        "--reason",
        "known flake",
        "--by",
        "ana",
    ])
    .run()
    .assert_exit(0);
    let before_runs = ws.gate(&["runs", "--format", "json"]).run();
    let before_head = ws.gate(&["ledger", "checkpoint"]).run();

    let out = ws
        .gate(&[
            "ledger",
            "migrate",
            "--from",
            "sqlite://.gate/ledger.db",
            "--to",
            &db.url,
        ])
        .run();
    out.assert_exit(0);
    out.stdout_has("copied 3 runs, 0 outcomes, 0 dismissals, 1 overrides");
    // Same rows, same signed tree head, and it verifies on its own.
    let pg = |args: &[&str]| ws.gate(args).env("GATE_LEDGER", &db.url).run();
    assert_eq!(pg(&["runs", "--format", "json"]).stdout, before_runs.stdout);
    assert_eq!(pg(&["ledger", "checkpoint"]).stdout, before_head.stdout);
    pg(&["ledger", "verify"])
        .assert_exit(0)
        .stdout_has("ok: 3 runs");
    assert_eq!(
        db.column("SELECT count(*) FROM overrides"),
        ["1"],
        "the side tables came along"
    );
    // Copying again is refused: the target is not empty.
    ws.gate(&[
        "ledger",
        "migrate",
        "--from",
        ".gate/ledger.db",
        "--to",
        &db.url,
    ])
    .run()
    .assert_exit(2)
    .stderr_has("not empty");

    // `[ledger] url` in gate.toml points every command at PostgreSQL...
    ws.write(
        "gate.toml",
        &format!("{}[ledger]\nurl = \"{}\"\n", passing_spec("m"), db.url),
    );
    ws.gate(&["verify", "-q"]).run().assert_exit(0);
    let rows = ws.gate(&["runs", "--format", "json"]).run().json()["runs"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(rows, 4);
    // ...and GATE_LEDGER wins over it.
    let local = ws
        .gate(&["runs", "--format", "json"])
        .env("GATE_LEDGER", ws.path().join(".gate/ledger.db"))
        .run();
    assert_eq!(local.json()["runs"].as_array().unwrap().len(), 3);
}

/// A spec given with --spec may name its own ledger.
#[test]
fn a_spec_elsewhere_names_its_own_ledger() {
    let ws = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let ledger: &Path = &dir.path().join("team.db");
    ws.write(
        "ci/spec.toml",
        &format!(
            "{}[ledger]\nurl = \"sqlite://{}\"\n",
            passing_spec("elsewhere"),
            ledger.display()
        ),
    );
    ws.gate(&["verify", "-q", "--spec", "ci/spec.toml"])
        .run()
        .assert_exit(0);
    assert!(ledger.is_file());
    assert!(!ws.path().join(".gate/ledger.db").exists());
}

#[test]
fn a_ledger_over_tls_records_and_a_server_it_cannot_trust_is_named() {
    let tls = TlsServer::start();
    let url = |root: &Path| {
        format!(
            "{}?sslmode=verify-full&sslrootcert={}",
            tls.server.url_as("ledger", "localhost", "ledger"),
            root.display()
        )
    };
    let ws = TestEnv::new();
    ws.write("gate.toml", &passing_spec("t"));
    // The server takes no plain-text client: a run recorded went over TLS.
    let fleet = Fleet::with(url(&tls.file("ca.pem")), None, None);
    let out = fleet.gate(&ws, &["verify", "--format", "json"]).run();
    out.assert_exit(0);
    assert_eq!(out.json()["recorded"], true);
    fleet.gate(&ws, &["ledger", "verify"]).run().assert_exit(0);
    assert_eq!(fleet.rows(&ws).len(), 1);
    // A spec's URL names its CA file relative to the workspace, wherever
    // the gate is started.
    let ca = std::fs::read_to_string(tls.file("ca.pem")).unwrap();
    ws.write("certs/db-ca.pem", &ca);
    let spec = ws.write(
        "remote.toml",
        &format!(
            "{}[ledger]\nurl = \"{}?sslmode=verify-full&sslrootcert=certs/db-ca.pem\"\n",
            passing_spec("t2"),
            tls.server.url_as("ledger", "localhost", "ledger")
        ),
    );
    let elsewhere = TestEnv::new();
    let workspace = ws.path().display().to_string();
    let spec = spec.display().to_string();
    let out = elsewhere
        .gate(&[
            "verify",
            "--workspace",
            &workspace,
            "--spec",
            &spec,
            "--format",
            "json",
        ])
        .run();
    out.assert_exit(0);
    assert_eq!(out.json()["recorded"], true);
    // A server whose certificate no trusted CA issued is never used.
    let fleet = Fleet::with(url(&tls.file("other-ca.pem")), None, None);
    let out = fleet.gate(&ws, &["verify", "--format", "json"]).run();
    out.assert_exit(4);
    assert_eq!(out.json()["recorded"], false);
    out.stderr_has("invalid peer certificate");
    // A root file that is not there is a configuration error.
    let fleet = Fleet::with(url(Path::new("/nowhere/ca.pem")), None, None);
    let out = fleet.gate(&ws, &["runs"]).run();
    out.assert_exit(2);
    out.stderr_has("sslrootcert /nowhere/ca.pem");
}

/// Runs `sql` on the fleet's ledger database, whichever it is.
fn tamper(fleet: &Fleet, sql: &str) {
    if let Some(db) = &fleet.db {
        gate_tests::postgres::execute(&db.url, sql);
    } else {
        let conn = rusqlite::Connection::open(&fleet.ledger).unwrap();
        conn.execute_batch(sql).unwrap();
    }
}

/// Someone who can write the ledger's database edits it into a decision:
/// a failed run flipped to a pass at a lower tier, and outcomes planted.
/// `gate ledger verify` names each edit, the series goes on as the signed
/// rows say, and the report counts no planted outcome.
#[test]
fn an_edited_ledger_is_named_by_verify_and_decides_nothing() {
    let mut fleets = vec![("sqlite", Fleet::sqlite())];
    if std::env::var_os("GATE_TEST_POSTGRES").is_some() {
        fleets.push(("postgres", Fleet::postgres()));
    }
    for (kind, fleet) in fleets {
        let ws = TestEnv::new();
        ws.write("fail.toml", &looping_spec("t", "0"));
        ws.write("pass.toml", &passing_spec("ok"));
        fleet
            .gate(&ws, &["verify", "--spec", "fail.toml"])
            .run()
            .assert_exit(1);
        fleet
            .gate(&ws, &["verify", "--spec", "pass.toml"])
            .run()
            .assert_exit(0);
        let before = fleet.gate(&ws, &["report", "--format", "json"]).run();
        before.assert_exit(0);
        tamper(
            &fleet,
            "UPDATE runs SET verdict = 'pass', tier = 'full' WHERE seq = 1;\n\
             INSERT INTO outcomes (run_id, broken, reason, source, recorded_at) \
             SELECT run_id, TRUE, 'planted', 'ci', '2026-12-01T00:00:00Z' FROM runs WHERE seq = 2;",
        );
        let out = fleet
            .gate(&ws, &["ledger", "verify", "--format", "json"])
            .run();
        out.assert_exit(1);
        let problems = out.json()["problems"].as_array().unwrap().clone();
        // (the column edited, what the row says now, what was signed)
        for (column, stored, signed) in [("verdict", "pass", "fail"), ("tier", "full", "trivial")] {
            let p = problems
                .iter()
                .find(|p| p["column"] == column)
                .unwrap_or_else(|| panic!("{kind}: the {column} edit is not named: {problems:#?}"));
            assert_eq!(
                (&p["seq"], &p["kind"]),
                (&json!(1), &json!("column_edited")),
                "{kind}: {p}"
            );
            assert!(
                p["stored"].as_str().unwrap().contains(stored)
                    && p["signed"].as_str().unwrap().contains(signed),
                "{kind}: {p}"
            );
        }
        assert!(
            problems.iter().any(|p| p["kind"] == "event_not_signed"
                && p["table"] == "outcome"
                && p["seq"] == 2),
            "{kind}: the planted outcome is not named: {problems:#?}"
        );
        // The series goes on as signed: the flipped run did not end it.
        let next = fleet
            .gate(&ws, &["verify", "--spec", "fail.toml", "--format", "json"])
            .run();
        next.assert_exit(1);
        assert_eq!(next.json()["attempt"], 2, "{kind}");
        // The planted outcome is not counted.
        let after = fleet.gate(&ws, &["report", "--format", "json"]).run();
        after.assert_exit(0);
        assert_eq!(
            after.json()["false_pass"]["with_outcome"],
            before.json()["false_pass"]["with_outcome"],
            "{kind}: a planted outcome was counted"
        );
    }
}
