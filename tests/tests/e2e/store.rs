//! Bundles in S3-compatible object storage, through the real binary and
//! real HTTP to moto's S3 API on loopback: a run's bundle lands in the
//! bucket named by its sha256; every audit works by run id from another
//! machine that has only the ledger, the bucket and the public key; a
//! missing or altered object is reported as bad evidence (exit 1), a store
//! that is down as not checked (exit 4); a run during an outage keeps its
//! bundle in the spool and `gate ledger import` (or the next run) records it.

use std::path::{Path, PathBuf};

use gate_tests::s3::{self, BUCKET, Moto, PREFIX};
use gate_tests::{TestEnv, free_port};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// A lint check carried across attempts, and a criterion that needs `src/a.txt`.
fn workspace() -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"fleet\"\n[[check]]\nid = \"lint\"\nrun = \"true\"\ninputs = [\"lint/**\"]\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n[[task.criterion]]\nid = \"has-a\"\ntext = \"a exists\"\nrun = \"test -f src/a.txt\"\n",
    );
    env.write("lint/rules.txt", "strict\n");
    env.write("src/b.txt", "beta\n");
    env
}

/// `gate verify --format json` against the store on `port`.
fn verify(env: &TestEnv, port: u16, want: i32) -> Value {
    let out = s3::with_store(env.gate(&["verify", "--format", "json"]), port).run();
    out.assert_exit(want);
    out.json()
}

/// The object key of a bundle URL `s3://gate-bundles/<key>`.
fn key_of(url: &str) -> String {
    url.strip_prefix(&format!("s3://{BUCKET}/"))
        .unwrap_or_else(|| panic!("{url} is not in s3://{BUCKET}/"))
        .to_owned()
}

/// Another machine: an empty workspace holding only a copy of the ledger
/// and the signer's public key.
fn laptop(from: &TestEnv) -> (TestEnv, PathBuf) {
    let laptop = TestEnv::new();
    let state = laptop.path().join(".gate");
    std::fs::create_dir_all(&state).unwrap();
    for name in ["ledger.db", "ledger.db-wal", "ledger.db-shm"] {
        let src = from.path().join(".gate").join(name);
        if src.exists() {
            std::fs::copy(&src, state.join(name)).unwrap();
        }
    }
    let key = laptop.path().join("signer.pub");
    std::fs::copy(from.path().join(".gate/keys/signing.pub"), &key).unwrap();
    (laptop, key)
}

fn files_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).map_or_else(
        |_| Vec::new(),
        |entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        },
    )
}

#[test]
fn bundles_live_in_the_bucket_and_every_audit_works_by_run_id_from_another_machine() {
    let moto = Moto::start();
    let env = workspace();

    // Attempt 1 fails; attempt 2 reads attempt 1's bundle back from the
    // bucket and carries the lint check forward.
    let first = verify(&env, moto.port(), 1);
    assert_eq!(first["recorded"], true, "{first}");
    env.write("src/a.txt", "alpha\n");
    let second = verify(&env, moto.port(), 0);
    assert_eq!(second["recorded"], true, "{second}");
    assert_eq!(second["attempt"], 2, "{second}");
    assert_eq!(second["checks"][0]["status"], "carried", "{second}");

    let mut keys = moto.keys();
    keys.sort();
    let mut want: Vec<String> = [&first, &second]
        .iter()
        .map(|doc| key_of(doc["bundle"].as_str().unwrap()))
        .collect();
    want.sort();
    assert_eq!(keys, want, "one object per run, nothing else");
    for doc in [&first, &second] {
        // Named by the sha256 of its bytes.
        let key = key_of(doc["bundle"].as_str().unwrap());
        let bytes = moto.get(&key);
        let sha = hex::encode(Sha256::digest(&bytes));
        assert_eq!(key, format!("{PREFIX}/{sha}.dsse.json"));
    }
    // Nothing kept on the runner once recorded.
    assert!(files_in(&env.path().join(".gate/bundles")).is_empty());
    assert!(files_in(&env.path().join(".gate/spool")).is_empty());

    // The operator's laptop: the ledger, the bucket, the public key.
    let (laptop, key) = laptop(&env);
    let key = key.to_str().unwrap();
    let run = second["run_id"].as_str().unwrap();
    let on_laptop = |args: &[&str]| s3::with_store(laptop.gate(args), moto.port()).run();

    let out = on_laptop(&["evidence", "verify", run, "--key", key]);
    out.assert_exit(0).stdout_has("signature: ok");
    out.stdout_has(second["bundle"].as_str().unwrap());
    let out = on_laptop(&["evidence", "show", run, "--key", key]);
    out.assert_exit(0).stdout_has("carried");
    let out = on_laptop(&["evidence", "show", run, "--key", key, "--format", "json"]);
    out.assert_exit(0);
    assert_eq!(out.json()["run_id"], run);
    assert_eq!(out.json()["recorded"], true, "the ledger's word");
    let fetched = laptop.path().join("fetched.dsse.json");
    on_laptop(&["evidence", "fetch", run, "-o", fetched.to_str().unwrap()]).assert_exit(0);
    assert_eq!(
        std::fs::read(&fetched).unwrap(),
        moto.get(&key_of(second["bundle"].as_str().unwrap()))
    );
    on_laptop(&["ledger", "verify", "--key", key])
        .assert_exit(0)
        .stdout_has("ok: 2 runs");
    // Off a terminal the progress bar draws nothing.
    let out = on_laptop(&["ledger", "verify", "--key", key]);
    assert!(!out.stderr.contains('['), "{}", out.stderr);

    // The laptop pointed at a store that is down: not checked (4), never
    // "bad" (1).
    let out = laptop
        .gate(&["evidence", "verify", run, "--key", key])
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", s3::endpoint(free_port()))
        .env("AWS_ALLOW_HTTP", "true")
        .run();
    out.assert_exit(4);
}

#[test]
fn a_missing_or_altered_object_is_bad_evidence_and_a_dead_store_is_not() {
    let moto = Moto::start();
    let env = workspace();
    env.write("src/a.txt", "alpha\n");
    let a = verify(&env, moto.port(), 0);
    env.write("src/a.txt", "alpha 2\n");
    let b = verify(&env, moto.port(), 0);
    let gate = |args: &[&str]| s3::with_store(env.gate(args), moto.port()).run();
    gate(&["ledger", "verify"]).assert_exit(0);

    // Run a's object overwritten in the bucket with other bytes (b's, a
    // valid bundle signed by the same key).
    let key_a = key_of(a["bundle"].as_str().unwrap());
    let key_b = key_of(b["bundle"].as_str().unwrap());
    let other = env.path().join("other.dsse.json");
    std::fs::write(&other, moto.get(&key_b)).unwrap();
    moto.overwrite(&key_a, &other);
    let run_a = a["run_id"].as_str().unwrap();
    for args in [
        vec!["evidence", "verify", run_a],
        vec!["evidence", "show", run_a],
        vec!["evidence", "fetch", run_a, "-o", "x.json"],
    ] {
        let out = gate(&args);
        out.assert_exit(1).stderr_has("altered");
    }
    let out = gate(&["ledger", "verify"]);
    out.assert_exit(1).stdout_has("altered");
    out.stdout_has(&format!("run {run_a}"));

    // Deleted: missing, said so.
    moto.delete(&key_a);
    let out = gate(&["evidence", "verify", run_a]);
    out.assert_exit(1).stderr_has("missing");
    out.stderr_has(&key_a);
    let out = gate(&["ledger", "verify"]);
    out.assert_exit(1).stdout_has("missing");

    // The store unreachable: could not check, exit 4 (never 1).
    let dead = free_port();
    let out = s3::with_store(
        env.gate(&["evidence", "verify", b["run_id"].as_str().unwrap()]),
        dead,
    )
    .run();
    out.assert_exit(4);
    let out = s3::with_store(env.gate(&["ledger", "verify"]), dead).run();
    // Row a is missing in the bucket too, but from here nothing could be
    // read, so nothing is called missing.
    out.assert_exit(4).stdout_has("could not be read");
}

#[test]
fn a_store_outage_spools_the_bundle_and_nothing_is_lost() {
    // The store is down: nothing listens on its port yet.
    let port = free_port();
    let env = workspace();
    env.write("src/a.txt", "alpha\n");

    // A pass without its record is not a pass: 4.
    let passed = verify(&env, port, 4);
    assert_eq!(passed["verdict"], "pass");
    assert_eq!(passed["recorded"], false);
    let spooled = env.path().join(passed["bundle"].as_str().unwrap());
    assert!(
        spooled.starts_with(env.path().join(".gate/spool")) && spooled.is_file(),
        "{passed}"
    );
    // A fail is still a fail: 1.
    std::fs::remove_file(env.path().join("src/a.txt")).unwrap();
    let failed = verify(&env, port, 1);
    assert_eq!(failed["verdict"], "fail");
    assert_eq!(failed["recorded"], false);
    let out = s3::with_store(env.gate(&["verify"]), port).run();
    out.assert_exit(1).stderr_has("not recorded");

    // The store comes back; `gate ledger import` uploads the spool.
    let moto = Moto::start_on(port);
    let out = s3::with_store(env.gate(&["ledger", "import"]), port).run();
    out.assert_exit(0).stdout_has("3 bundle(s) imported");
    let leftovers = files_in(&env.path().join(".gate/spool"));
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert_eq!(moto.keys().len(), 3);
    s3::with_store(env.gate(&["ledger", "verify"]), port)
        .run()
        .assert_exit(0)
        .stdout_has("ok: 3 runs");
    let run = passed["run_id"].as_str().unwrap();
    s3::with_store(env.gate(&["evidence", "verify", run]), port)
        .run()
        .assert_exit(0)
        .stdout_has("signature: ok");
    drop(moto);

    // Down again (a new, empty store on another port): the next run on
    // this machine, with the store back, records the spooled one first.
    let down = free_port();
    env.write("src/a.txt", "alpha 3\n");
    let during = verify(&env, down, 4);
    assert_eq!(during["recorded"], false);
    let moto = Moto::start_on(down);
    env.write("src/a.txt", "alpha 4\n");
    let after = verify(&env, down, 0);
    assert_eq!(after["recorded"], true);
    assert!(files_in(&env.path().join(".gate/spool")).is_empty());
    assert_eq!(
        moto.keys().len(),
        2,
        "the spooled run's bundle and the new one"
    );
    let out = s3::with_store(env.gate(&["runs", "--format", "json"]), down).run();
    out.assert_exit(0);
    let runs = out.stdout.clone();
    assert!(runs.contains(during["run_id"].as_str().unwrap()), "{runs}");
    // Rows 1–3 name objects the first store held; this one holds rows 4–5.
    let out = s3::with_store(
        env.gate(&["evidence", "verify", during["run_id"].as_str().unwrap()]),
        down,
    )
    .run();
    out.assert_exit(0);
}

#[test]
fn the_store_is_configuration_shown_and_checked_before_anything_runs() {
    let env = workspace();
    let out = s3::with_store(env.gate(&["verify", "--print-config"]), free_port()).run();
    out.assert_exit(0);
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("bundle_store"))
        .unwrap_or_else(|| panic!("no bundle_store in\n{}", out.stdout));
    assert!(
        line.contains(&format!("s3://{BUCKET}/{PREFIX}"))
            && line.ends_with("(env GATE_BUNDLE_STORE)"),
        "{line}"
    );
    // A store the gate cannot use: a usage error, and nothing ran.
    let out = env
        .gate(&["verify"])
        .env("GATE_BUNDLE_STORE", "gs://bucket/prefix")
        .run();
    out.assert_exit(2).stderr_has("GATE_BUNDLE_STORE");
    assert!(!env.path().join(".gate").exists());

    // A directory, relative to where the gate starts: files named by run id.
    env.write("src/a.txt", "alpha\n");
    let out = env
        .gate(&["verify", "--format", "json"])
        .env("GATE_BUNDLE_STORE", "archive")
        .run();
    out.assert_exit(0);
    let doc = out.json();
    let run = doc["run_id"].as_str().unwrap();
    assert_eq!(doc["bundle"], format!("archive/{run}.dsse.json"), "{doc}");
    assert!(files_in(&env.path().join(".gate/bundles")).is_empty());
    env.gate(&["evidence", "verify", run])
        .run()
        .assert_exit(0)
        .stdout_has(&format!("archive/{run}.dsse.json"));
}

#[test]
fn an_escalation_during_an_outage_still_exits_3() {
    let moto = Moto::start();
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"budget\"\n[policy]\nmax_attempts = 1\n[[check]]\nid = \"build\"\nrun = \"test -f src/a.txt\"\n",
    );
    let first = verify(&env, moto.port(), 1);
    assert_eq!(first["recorded"], true, "{first}");
    // Over the attempt budget, with the store down: escalated, not recorded.
    let second = verify(&env, free_port(), 3);
    assert_eq!(second["verdict"], "escalate", "{second}");
    assert_eq!(second["recorded"], false, "{second}");
    // The store back: the escalation is recorded by `gate ledger import`.
    s3::with_store(env.gate(&["ledger", "import"]), moto.port())
        .run()
        .assert_exit(0)
        .stdout_has("1 bundle(s) imported");
    s3::with_store(env.gate(&["ledger", "verify"]), moto.port())
        .run()
        .assert_exit(0)
        .stdout_has("ok: 2 runs");
}
