//! Evidence through the real binary: bundles that tools we did not write
//! accept, a tamper matrix on bundles and the ledger, crash safety under
//! SIGKILL, and no secret in anything recorded.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use gate_tests::{TestEnv, gate_command, repo_root};
use serde_json::{Value, json};

fn passing_workspace() -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"ev\"\n[[check]]\nid = \"build\"\nrun = \"true\"\ninputs = [\"src/**\"]\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\nrun = \"test -f src/a.txt\"\n",
    );
    env.write("src/a.txt", "alpha\n");
    env.write("src/b.txt", "beta\n");
    env
}

/// Runs `gate verify` and returns the bundle path and run id.
fn verified(env: &TestEnv) -> (PathBuf, String) {
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(0);
    let doc = out.json();
    (
        env.path().join(doc["bundle"].as_str().unwrap()),
        doc["run_id"].as_str().unwrap().to_owned(),
    )
}

fn python() -> PathBuf {
    PathBuf::from(std::env::var_os("GATE_TEST_PYTHON").unwrap_or_else(|| {
        panic!("GATE_TEST_PYTHON is not set: run scripts/peer-venv.sh target/peer-venv and export it (scripts/test does)")
    }))
}

#[allow(clippy::disallowed_methods)] // tests run the independent verifiers for real
fn run(cmd: &mut Command) -> std::process::Output {
    cmd.output().expect("run a peer tool")
}

#[test]
fn a_bundle_verifies_with_securesystemslib_and_openssl() {
    let env = passing_workspace();
    let (bundle, _) = verified(&env);
    let public = env.path().join(".gate/keys/signing.pub");

    // securesystemslib's DSSE verifier, and sha256 + blake3 of every subject.
    let script = repo_root().join("evidence/tests/evidence/peer_verify.py");
    #[allow(clippy::disallowed_methods)]
    let out = run(Command::new(python())
        .arg(&script)
        .arg(&bundle)
        .arg(&public)
        .arg(env.path()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["accepted"].as_array().unwrap().len(), 1);
    let subjects = report["subjects"].as_array().unwrap();
    assert!(subjects.len() >= 3, "{report}");
    for s in subjects {
        assert_eq!(s["sha256"], true, "{s}");
        assert_eq!(s["blake3"], true, "{s}");
    }
    // Our key id is securesystemslib's.
    let envelope: Value = serde_json::from_slice(&std::fs::read(&bundle).unwrap()).unwrap();
    assert_eq!(envelope["signatures"][0]["keyid"], report["keyid"]);

    // OpenSSL over the PAE bytes.
    let dir = tempfile::tempdir().unwrap();
    let payload = base64::engine::general_purpose::STANDARD
        .decode(envelope["payload"].as_str().unwrap())
        .unwrap();
    let ptype = envelope["payloadType"].as_str().unwrap();
    let mut pae = format!("DSSEv1 {} {ptype} {} ", ptype.len(), payload.len()).into_bytes();
    pae.extend_from_slice(&payload);
    std::fs::write(dir.path().join("pae.bin"), &pae).unwrap();
    let sig = base64::engine::general_purpose::STANDARD
        .decode(envelope["signatures"][0]["sig"].as_str().unwrap())
        .unwrap();
    std::fs::write(dir.path().join("sig.bin"), sig).unwrap();
    #[allow(clippy::disallowed_methods)]
    let out = run(Command::new("openssl")
        .args(["pkeyutl", "-verify", "-pubin", "-inkey"])
        .arg(&public)
        .args(["-rawin", "-in"])
        .arg(dir.path().join("pae.bin"))
        .arg("-sigfile")
        .arg(dir.path().join("sig.bin")));
    assert!(
        out.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Signature Verified Successfully"));

    // sha256sum agrees with the statement's sha256 of a subject.
    let statement: Value = serde_json::from_slice(&payload).unwrap();
    let subject = statement["subject"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "src/a.txt")
        .unwrap();
    #[allow(clippy::disallowed_methods)]
    let out = run(Command::new("sha256sum").arg(env.path().join("src/a.txt")));
    let sum = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        sum.split_whitespace().next(),
        subject["digest"]["sha256"].as_str()
    );
}

/// Rewrites a bundle's envelope JSON with `edit` and returns the new bytes.
fn edited(bundle: &Path, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&std::fs::read(bundle).unwrap()).unwrap();
    edit(&mut v);
    serde_json::to_vec(&v).unwrap()
}

fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

fn enc(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

#[test]
fn the_tamper_matrix_on_bundles() {
    let env = passing_workspace();
    let (bundle, _) = verified(&env);
    let dir = tempfile::tempdir().unwrap();
    // A foreign key pair, to sign with while claiming our key id.
    let foreign = tempfile::tempdir().unwrap();
    env.gate(&[
        "--state",
        foreign.path().to_str().unwrap(),
        "keys",
        "generate",
    ])
    .run()
    .assert_exit(0);
    let foreign_key = foreign.path().join("keys/signing.key");

    type Edit = Box<dyn Fn(&mut Value)>;
    // (case, edit, expected exit, a word of the message)
    let cases: Vec<(&str, Edit, i32, &str)> = vec![
        (
            "payload bit flip",
            Box::new(|v: &mut Value| {
                let mut p = b64(v["payload"].as_str().unwrap());
                p[10] ^= 0x01;
                v["payload"] = json!(enc(&p));
            }),
            1,
            "altered",
        ),
        (
            "signature bit flip",
            Box::new(|v: &mut Value| {
                let mut s = b64(v["signatures"][0]["sig"].as_str().unwrap());
                s[3] ^= 0x80;
                v["signatures"][0]["sig"] = json!(enc(&s));
            }),
            1,
            "altered",
        ),
        (
            "payloadType changed",
            Box::new(|v: &mut Value| v["payloadType"] = json!("application/json")),
            1,
            "payloadType",
        ),
        (
            "signatures removed",
            Box::new(|v: &mut Value| v["signatures"] = json!([])),
            1,
            "signature",
        ),
        (
            "payload re-serialised with the same meaning",
            Box::new(|v: &mut Value| {
                let p: Value =
                    serde_json::from_slice(&b64(v["payload"].as_str().unwrap())).unwrap();
                v["payload"] = json!(enc(serde_json::to_string_pretty(&p).unwrap().as_bytes()));
            }),
            1,
            "altered",
        ),
        (
            "URL-safe base64 (accepted)",
            Box::new(|v: &mut Value| {
                let p = b64(v["payload"].as_str().unwrap());
                v["payload"] = json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(p));
            }),
            0,
            "signature: ok",
        ),
        (
            "unknown top-level field (accepted)",
            Box::new(|v: &mut Value| v["comment"] = json!("added later")),
            0,
            "signature: ok",
        ),
    ];
    for (name, edit, want, word) in cases {
        let path = dir.path().join("t.dsse.json");
        std::fs::write(&path, edited(&bundle, |v| edit(v))).unwrap();
        let out = env
            .gate(&["evidence", "verify", path.to_str().unwrap()])
            .run();
        assert_eq!(out.code, Some(want), "{name}: {}{}", out.stdout, out.stderr);
        let text = format!("{}{}", out.stdout, out.stderr);
        assert!(text.contains(word), "{name}: {word:?} not in {text}");
    }

    // A foreign key claiming our key id: re-sign the same payload with it.
    let ours: Value = serde_json::from_slice(&std::fs::read(&bundle).unwrap()).unwrap();
    let payload = b64(ours["payload"].as_str().unwrap());
    let ptype = ours["payloadType"].as_str().unwrap();
    let mut pae = format!("DSSEv1 {} {ptype} {} ", ptype.len(), payload.len()).into_bytes();
    pae.extend_from_slice(&payload);
    std::fs::write(dir.path().join("pae.bin"), &pae).unwrap();
    #[allow(clippy::disallowed_methods)]
    let out = run(Command::new("openssl")
        .args(["pkeyutl", "-sign", "-inkey"])
        .arg(&foreign_key)
        .args(["-rawin", "-in"])
        .arg(dir.path().join("pae.bin")));
    assert!(out.status.success());
    let forged = edited(&bundle, |v| {
        v["signatures"][0]["sig"] = json!(enc(&out.stdout));
    });
    let path = dir.path().join("forged.dsse.json");
    std::fs::write(&path, forged).unwrap();
    let out = env
        .gate(&["evidence", "verify", path.to_str().unwrap()])
        .run();
    out.assert_exit(1);

    // A subject file edited since, checked with --workspace.
    env.write("src/b.txt", "beta, edited\n");
    let ws = env.path().to_str().unwrap().to_owned();
    let out = env
        .gate(&[
            "--workspace",
            &ws,
            "evidence",
            "verify",
            bundle.to_str().unwrap(),
        ])
        .run();
    out.assert_exit(1);
    out.stdout_has("src/b.txt");
}

/// Runs SQL on the ledger with Python's sqlite3 (an independent writer).
pub(crate) fn sql(env: &TestEnv, statements: &str) {
    let script = format!(
        "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\nc.executescript({statements:?})\nc.commit()\n"
    );
    #[allow(clippy::disallowed_methods)]
    let out = run(Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(env.path().join(".gate/ledger.db")));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_tamper_matrix_on_the_ledger() {
    // (case, SQL run on a ledger of three runs, a word of the report)
    let cases = [
        ("a row deleted", "DELETE FROM runs WHERE seq = 2;", "seq"),
        (
            "two rows swapped",
            "UPDATE runs SET seq = 100 WHERE seq = 2; UPDATE runs SET seq = 2 WHERE seq = 3; UPDATE runs SET seq = 3 WHERE seq = 100;",
            "swapped",
        ),
        (
            "an old bundle replayed",
            "INSERT INTO runs (seq, run_id, spec_id, attempt, verdict, tier, started_at, finished_at, input_tokens, cached_input_tokens, output_tokens, cost_usd, bundle_path, envelope_sha256, prev_sha256, leaf_hash, recorded_at, extra_json) SELECT 4, run_id || '-again', spec_id, attempt, verdict, tier, started_at, finished_at, input_tokens, cached_input_tokens, output_tokens, cost_usd, bundle_path, envelope_sha256 || '', (SELECT envelope_sha256 FROM runs WHERE seq = 3), leaf_hash, recorded_at, extra_json FROM runs WHERE seq = 1;",
            "",
        ),
    ];
    for (name, statements, word) in cases {
        let env = passing_workspace();
        for i in 0..3 {
            env.write("src/a.txt", &format!("alpha {i}\n"));
            verified(&env);
        }
        env.gate(&["ledger", "verify"]).run().assert_exit(0);
        if name == "an old bundle replayed" {
            // The UNIQUE constraint refuses an exact copy; drop it as an attacker would.
            sql(
                &env,
                "CREATE TABLE r2 AS SELECT * FROM runs; DROP TABLE runs; ALTER TABLE r2 RENAME TO runs;",
            );
        }
        sql(&env, statements);
        let out = env.gate(&["ledger", "verify"]).run();
        assert_eq!(out.code, Some(1), "{name}: {}{}", out.stdout, out.stderr);
        assert!(
            out.stdout.contains(word),
            "{name}: {word:?} not in {}",
            out.stdout
        );
    }

    // Truncated after a checkpoint: the checkpoint proves it.
    let env = passing_workspace();
    for i in 0..3 {
        env.write("src/a.txt", &format!("alpha {i}\n"));
        verified(&env);
    }
    let cp = env.gate(&["ledger", "checkpoint"]).run();
    cp.assert_exit(0);
    let cp_path = env.path().join("checkpoint.txt");
    std::fs::write(&cp_path, &cp.stdout).unwrap();
    // Growth after the checkpoint is fine.
    env.write("src/a.txt", "alpha 9\n");
    verified(&env);
    env.gate(&["ledger", "verify", "--since", cp_path.to_str().unwrap()])
        .run()
        .assert_exit(0)
        .stdout_has("append-only extension");
    sql(&env, "DELETE FROM runs WHERE seq >= 3;");
    let out = env
        .gate(&["ledger", "verify", "--since", cp_path.to_str().unwrap()])
        .run();
    out.assert_exit(1);
}

#[test]
fn sigkill_at_random_points_leaves_the_ledger_consistent() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"kill\"\n[[check]]\nid = \"a\"\nrun = \"sleep 0.05\"\n[[check]]\nid = \"b\"\nrun = \"true\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\nrun = \"true\"\n",
    );
    env.write("src/a.txt", "a\n");
    // A first clean run creates the key and the ledger.
    env.gate(&["verify"]).run().assert_exit(0);
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for trial in 0..24 {
        // xorshift: deterministic "random" kill points between 0 and ~400 ms.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_millis(seed % 400);
        env.write("src/a.txt", &format!("a {trial}\n"));
        let mut child = gate_command()
            .arg("verify")
            .current_dir(env.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        // Every bundle under its final name is complete and parses.
        for entry in std::fs::read_dir(env.path().join(".gate/bundles")).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".dsse.json") {
                let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap())
                    .unwrap_or_else(|e| panic!("trial {trial}: partial bundle {name}: {e}"));
                assert!(v["signatures"][0]["sig"].is_string());
            }
        }
        let out = env.gate(&["ledger", "verify"]).run();
        assert_eq!(
            out.code,
            Some(0),
            "trial {trial} ({delay:?}): {}",
            out.stdout
        );
    }
    // Bundles whose rows a kill prevented are imported; the ledger still verifies.
    env.gate(&["ledger", "import"]).run().assert_exit(0);
    env.gate(&["ledger", "verify"]).run().assert_exit(0);
}

#[test]
fn no_secret_reaches_a_bundle_or_the_logs() {
    let env = TestEnv::new();
    let planted = "sk-proj-Plant3dSecretValue0123456789abcdefXYZ";
    let env_secret = "env-secret-value-4242";
    env.write(
        "gate.toml",
        "[spec]\nid = \"sec\"\n[[check]]\nid = \"leaky\"\nrun = \"echo key=sk-proj-Plant3dSecretValue0123456789abcdefXYZ; echo token=$MY_SERVICE_TOKEN; exit 1\"\n",
    );
    let out = env
        .gate(&["verify", "-vv", "--format", "json"])
        .env("MY_SERVICE_TOKEN", env_secret)
        .env("OPENAI_API_KEY", "sk-test-openai-key-value-000")
        .run();
    out.assert_exit(1);
    let doc = out.json();
    let bundle = std::fs::read(env.path().join(doc["bundle"].as_str().unwrap())).unwrap();
    let envelope: Value = serde_json::from_slice(&bundle).unwrap();
    let payload = String::from_utf8(b64(envelope["payload"].as_str().unwrap())).unwrap();
    for secret in [planted, env_secret, "sk-test-openai-key-value-000"] {
        assert!(!payload.contains(secret), "{secret} in the bundle");
        assert!(!out.stdout.contains(secret), "{secret} on stdout");
        assert!(!out.stderr.contains(secret), "{secret} on stderr");
    }
    assert!(payload.contains("[REDACTED]"), "the redaction is recorded");
}

/// A workspace whose one check fails until `src/ok` exists.
fn failing_workspace() -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"ev\"\n[[check]]\nid = \"build\"\nrun = \"test -f src/ok\"\ninputs = [\"src/**\"]\n",
    );
    env.write("src/a.txt", "alpha\n");
    env
}

/// Runs `gate verify`, expecting `code`; returns its JSON.
fn verify_expecting(env: &TestEnv, code: i32) -> Value {
    let out = env.gate(&["verify", "--format", "json"]).run();
    assert_eq!(out.code, Some(code), "{}{}", out.stdout, out.stderr);
    out.json()
}

/// One problem `gate ledger verify` names: run id, kind, column, table.
type Named = (String, String, String, String);

/// `gate ledger verify`'s exit code and problems.
fn ledger_problems(env: &TestEnv) -> (Option<i32>, Vec<Named>) {
    let out = env.gate(&["ledger", "verify", "--format", "json"]).run();
    let doc = out.json();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let problems = doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                text(&p["run_id"]),
                text(&p["kind"]),
                text(&p["column"]),
                text(&p["table"]),
            )
        })
        .collect();
    (out.code, problems)
}

#[test]
fn an_edited_override_or_series_row_is_named_and_an_edited_outcome_moves_no_rate() {
    let env = failing_workspace();
    let first = verify_expecting(&env, 1);
    let run_1 = first["run_id"].as_str().unwrap().to_owned();
    env.write("src/a.txt", "alpha 2\n");
    let second = verify_expecting(&env, 1);
    assert_eq!(second["attempt"], 2);
    let run_2 = second["run_id"].as_str().unwrap().to_owned();
    env.gate(&["override", &run_2, "--reason", "flaky", "--by", "ana"])
        .run()
        .assert_exit(0);
    env.write("src/ok", "\n");
    let passed = verify_expecting(&env, 0);
    let run_3 = passed["run_id"].as_str().unwrap().to_owned();
    for reason in ["CI red", "reverted"] {
        env.gate(&["outcome", &run_3, "--broken", "--reason", reason])
            .run()
            .assert_exit(0);
    }
    assert_eq!(ledger_problems(&env), (Some(0), vec![]));
    let report = || report_json(&env);
    let before = report();
    assert_eq!(before["false_pass"]["rate"], 1.0);
    assert_eq!(
        before["left_out"],
        json!({"runs": 0, "outcomes": 0, "overrides": 0, "replays": 0})
    );

    // The latest outcome edited to say fine: it does not vouch, the one
    // before it still does, and the rate stays where it was.
    sql(
        &env,
        "UPDATE outcomes SET broken = 0 WHERE reason = 'reverted';",
    );
    let after = report();
    assert_eq!(after["false_pass"], before["false_pass"]);
    assert_eq!(after["left_out"]["outcomes"], 1);
    let (code, problems) = ledger_problems(&env);
    assert_eq!(code, Some(1));
    assert!(
        problems.contains(&(
            run_3.clone(),
            "event_not_signed".into(),
            "broken".into(),
            "outcome".into()
        )),
        "{problems:?}"
    );

    // The override recorded later than it was signed (after the outcomes,
    // so it would read as the run's latest word), and another run's row
    // moved to another spec: both named, with their columns.
    sql(
        &env,
        "UPDATE overrides SET recorded_at = '2999-01-01T00:00:00.000000Z';\n\
         UPDATE runs SET spec_id = 'elsewhere' WHERE seq = 1;",
    );
    let (code, problems) = ledger_problems(&env);
    assert_eq!(code, Some(1));
    for want in [
        (
            run_2.as_str(),
            "event_not_signed",
            "recorded_at",
            "override",
        ),
        (run_1.as_str(), "column_edited", "spec_id", ""),
    ] {
        let want = (
            want.0.to_owned(),
            want.1.to_owned(),
            want.2.to_owned(),
            want.3.to_owned(),
        );
        assert!(problems.contains(&want), "{want:?} not in {problems:?}");
    }
    // The report leaves both out and says so; the pass's rate is unmoved.
    let edited = report();
    assert_eq!(edited["false_pass"], before["false_pass"]);
    assert_eq!(
        edited["left_out"],
        json!({"runs": 1, "outcomes": 1, "overrides": 1, "replays": 0})
    );
    assert_eq!(edited["runs"], 2);
    let text = env.gate(&["report"]).run();
    text.assert_exit(0).stdout_has("left out");
}

#[test]
fn a_series_moved_to_another_spec_in_the_ledger_keeps_its_count() {
    let env = failing_workspace();
    for (i, want) in [1, 2].into_iter().enumerate() {
        env.write("src/a.txt", &format!("alpha {i}\n"));
        assert_eq!(verify_expecting(&env, 1)["attempt"], want);
    }
    // Both attempts moved to another spec: the series would start over.
    // Read where their bundles put them, this is attempt 3 of a series
    // failing the same way, and the doom loop escalates.
    sql(&env, "UPDATE runs SET spec_id = 'elsewhere';");
    env.write("src/a.txt", "alpha 9\n");
    let third = verify_expecting(&env, 3);
    assert_eq!(third["attempt"], 3);
    assert_eq!(third["doom_loop"]["attempts"], json!([1, 2, 3]));
    let (code, problems) = ledger_problems(&env);
    assert_eq!(code, Some(1));
    let moved: Vec<&String> = problems
        .iter()
        .filter(|(_, kind, column, _)| kind == "column_edited" && column == "spec_id")
        .map(|(run, ..)| run)
        .collect();
    assert_eq!(moved.len(), 2, "{problems:?}");
}

/// `gate report` checks a row's bundle once: the rows vouched for are kept
/// in the state directory's cache, so a second report reads no bundle (it
/// counts every run with the bundles gone), while a row edited since
/// misses the cache, is checked again and is left out.
#[test]
fn the_report_checks_a_rows_bundle_once_and_still_leaves_out_a_row_edited_since() {
    let env = failing_workspace();
    verify_expecting(&env, 1);
    env.write("src/a.txt", "alpha 2\n");
    verify_expecting(&env, 1);
    let report = || report_json(&env);
    let none = json!({"runs": 0, "outcomes": 0, "overrides": 0, "replays": 0});
    assert_eq!(report()["left_out"], none);
    let cache = env.path().join(".gate/report-cache");
    assert!(cache.is_file(), "the report keeps what it vouched for");
    let bundles = env.path().join(".gate/bundles");
    let away = env.path().join(".gate/bundles-away");
    std::fs::rename(&bundles, &away).unwrap();
    let cached = report();
    assert_eq!(cached["left_out"], none, "no bundle read: {cached:#}");
    assert_eq!(cached["runs"], 2);
    // A cache sealed by someone else is no cache: every bundle is read.
    let mut forged = std::fs::read(&cache).unwrap();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    std::fs::write(&cache, &forged).unwrap();
    assert_eq!(report()["left_out"]["runs"], 2, "the bundles are gone");
    std::fs::rename(&away, &bundles).unwrap();
    assert_eq!(report()["left_out"], none);
    sql(&env, "UPDATE runs SET verdict = 'pass' WHERE seq = 1;");
    let edited = report();
    assert_eq!(edited["left_out"]["runs"], 1, "{edited:#}");
    assert_eq!(edited["runs"], 1);
}

/// A report counts the narrow report rows, not the row a bundle vouches
/// for: one of them edited apart from its row (a failed run made a pass, a
/// model added) leaves the run out, whether or not the cache vouched for
/// it before.
#[test]
fn a_report_row_edited_apart_from_its_run_is_left_out() {
    for edit in [
        "UPDATE run_facts SET verdict = 'pass' WHERE seq = 1;",
        "INSERT INTO run_models (seq, model) VALUES (1, 'cheap/model');",
        "DELETE FROM run_facts WHERE seq = 1;",
    ] {
        let env = failing_workspace();
        verify_expecting(&env, 1);
        env.write("src/a.txt", "alpha 2\n");
        verify_expecting(&env, 1);
        let report = || report_json(&env);
        let before = report();
        assert_eq!(before["left_out"]["runs"], 0, "{edit}: {before:#}");
        assert_eq!(before["runs"], 2, "{edit}");
        sql(&env, edit);
        let after = report();
        assert_eq!(after["left_out"]["runs"], 1, "{edit}: {after:#}");
        assert_eq!(after["runs"], 1, "{edit}: {after:#}");
        // The audit names it too.
        let (code, problems) = ledger_problems(&env);
        assert_eq!(code, Some(1), "{edit}: {problems:?}");
        assert_eq!(
            problems
                .iter()
                .filter(|(_, kind, _, table)| kind == "event_not_signed" && table == "report rows")
                .count(),
            1,
            "{edit}: {problems:?}"
        );
    }
}

/// `gate report --format json`, which must exit 0.
fn report_json(env: &TestEnv) -> Value {
    let out = env.gate(&["report", "--format", "json"]).run();
    out.assert_exit(0);
    out.json()
}
