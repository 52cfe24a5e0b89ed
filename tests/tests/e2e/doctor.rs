//! `gate doctor`: the real binary diagnosing real set-ups — provider
//! endpoints served over loopback HTTP by the scripted model server, a
//! SQLite and a PostgreSQL ledger, keys on disk, the sandbox — and
//! changing nothing while it does.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use gate_tests::model_server::{Matcher, ModelServer, Reply, routes_to};
use gate_tests::postgres::Database;
use gate_tests::{RunOutput, TestEnv, free_port};
use serde_json::{Value, json};

const GOOD_KEY: &str = "sk-doctor-good-0123456789";

const SPEC: &str = r#"
[spec]
id = "doctor"
[[task]]
id = "t"
paths = ["src/**"]
[[task.criterion]]
id = "c"
text = "holds"
run = "true"
"#;

/// A routing table with one provider per case: an OpenAI-compatible and an
/// Anthropic endpoint on the scripted servers, one nobody listens on, and
/// one whose key variable is never set.
fn routing(openai: &str, anthropic: &str, dead_port: u16) -> String {
    format!(
        r#"
[provider.compatible]
api = "openai"
base_url = "{openai}/v1"
api_key_env = "DOCTOR_OPENAI_KEY"

[provider.messages]
api = "anthropic"
base_url = "{anthropic}"
api_key_env = "DOCTOR_ANTHROPIC_KEY"

[provider.gone]
api = "openai"
base_url = "http://127.0.0.1:{dead_port}/v1"

[provider.unset]
api = "openai"
base_url = "https://api.example.invalid/v1"
api_key_env = "DOCTOR_NEVER_SET_KEY"

[model.main]
provider = "compatible"
name = "m"
fallback = ["second", "third", "fourth"]

[model.second]
provider = "messages"
name = "m2"

[model.third]
provider = "gone"
name = "m3"

[model.fourth]
provider = "unset"
name = "m4"

{}"#,
        routes_to("main")
    )
}

/// The model list an OpenAI-compatible server answers with the right
/// bearer token, else OpenAI's 401.
fn openai_models() -> Reply {
    Reply::computed(|req| {
        if req.header("authorization") == Some(&format!("Bearer {GOOD_KEY}")) {
            Reply::json(
                200,
                json!({"object": "list", "data": [
                    {"id": "m", "object": "model", "created": 0, "owned_by": "test"},
                    {"id": "m-mini", "object": "model", "created": 0, "owned_by": "test"}
                ]}),
            )
        } else {
            Reply::openai_error(
                401,
                "invalid_request_error",
                "invalid_api_key",
                "Incorrect API key provided",
            )
        }
    })
}

/// Anthropic's model list for the right `x-api-key` and a version header,
/// else its 401 (or 400 without the version).
fn anthropic_models() -> Reply {
    Reply::computed(|req| {
        if req.header("anthropic-version").is_none() {
            Reply::anthropic_error(
                400,
                "invalid_request_error",
                "anthropic-version: header is required",
            )
        } else if req.header("x-api-key") == Some(GOOD_KEY) {
            Reply::json(
                200,
                json!({"data": [{"id": "m2", "type": "model", "display_name": "M2", "created_at": "2025-01-01T00:00:00Z"}],
                       "has_more": false, "first_id": "m2", "last_id": "m2"}),
            )
        } else {
            Reply::anthropic_error(401, "authentication_error", "invalid x-api-key")
        }
    })
}

/// The checks of a `--format json` diagnosis, by name.
fn checks(out: &RunOutput) -> Vec<Value> {
    let doc = out.json();
    doc["checks"].as_array().cloned().unwrap_or_default()
}

fn check<'a>(checks: &'a [Value], name: &str) -> &'a Value {
    checks
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no `{name}` check in {checks:#?}"))
}

/// Every file under `dir`, relative, with its size, mode and (for files)
/// time: what a diagnosis must leave as it found.
fn listing(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            let rel = entry
                .path()
                .strip_prefix(dir)
                .unwrap()
                .display()
                .to_string();
            if rel == ".git" {
                continue;
            }
            if meta.is_dir() {
                stack.push(entry.path());
            }
            // A folder's own time changes when a file comes and goes in it
            // (the store's write test, SQLite's -wal and -shm): only what
            // is left counts.
            let modified = (!meta.is_dir()).then(|| meta.modified().ok());
            out.insert(format!(
                "{rel} {} {:o} {modified:?}",
                if meta.is_dir() { 0 } else { meta.len() },
                meta.permissions().mode()
            ));
        }
    }
    out
}

#[test]
fn each_provider_is_asked_for_its_model_list_and_an_auth_failure_is_named() {
    let openai = ModelServer::start();
    openai.script(Matcher::any().path("/v1/models"), vec![openai_models()]);
    let anthropic = ModelServer::start();
    anthropic.script(Matcher::any().path("/v1/models"), vec![anthropic_models()]);
    let dead = free_port();
    let ws = TestEnv::new();
    ws.write("gate.toml", SPEC);
    ws.write(
        "routing.toml",
        &routing(&openai.url(), &anthropic.url(), dead),
    );

    // (OpenAI key, Anthropic key, what each endpoint check says)
    let cases = [
        (
            GOOD_KEY,
            GOOD_KEY,
            ("ok", "2 model(s) listed"),
            ("ok", "1 model(s) listed"),
        ),
        (
            "sk-wrong-key-000000000",
            "sk-wrong-key-000000000",
            ("error", "authentication failed"),
            ("error", "authentication failed"),
        ),
    ];
    for (openai_key, anthropic_key, (o_level, o_says), (a_level, a_says)) in cases {
        let out = ws
            .gate(&["doctor", "--format", "json"])
            .env("DOCTOR_OPENAI_KEY", openai_key)
            .env("DOCTOR_ANTHROPIC_KEY", anthropic_key)
            .run();
        let all = checks(&out);
        let o = check(&all, "provider.compatible");
        assert_eq!(o["level"], o_level, "{o}");
        assert!(o["message"].as_str().unwrap().contains(o_says), "{o}");
        let a = check(&all, "provider.messages");
        assert_eq!(a["level"], a_level, "{a}");
        assert!(a["message"].as_str().unwrap().contains(a_says), "{a}");
        if a_level == "error" {
            // The provider's own words, and which variable to fix.
            assert!(
                a["message"].as_str().unwrap().contains("invalid x-api-key"),
                "{a}"
            );
            assert!(a["message"].as_str().unwrap().contains("HTTP 401"), "{a}");
            assert!(
                a["fix"].as_str().unwrap().contains("DOCTOR_ANTHROPIC_KEY"),
                "{a}"
            );
            assert!(
                o["message"]
                    .as_str()
                    .unwrap()
                    .contains("Incorrect API key provided"),
                "{o}"
            );
        }
        // Nobody listens: unreachable, said as such.
        let gone = check(&all, "provider.gone");
        assert_eq!(gone["level"], "error", "{gone}");
        assert!(
            gone["message"].as_str().unwrap().contains("unreachable"),
            "{gone}"
        );
        // A key never set: a warning, review will not use it, never an error.
        let unset = check(&all, "provider.unset");
        assert_eq!(unset["level"], "warning", "{unset}");
        assert!(
            unset["message"]
                .as_str()
                .unwrap()
                .contains("DOCTOR_NEVER_SET_KEY is not set")
        );
        // An unreachable endpoint is an error: exit 1.
        out.assert_exit(1);
        assert_eq!(out.json()["ok"], false);
    }

    // What went over the wire: the list endpoints, with each API's headers.
    let sent = openai.requests();
    assert_eq!(sent.len(), 2, "one model-list request per run");
    assert!(
        sent.iter()
            .all(|r| r.method == "GET" && r.path == "/v1/models")
    );
    assert_eq!(
        sent[0].header("authorization"),
        Some(format!("Bearer {GOOD_KEY}").as_str())
    );
    let sent = anthropic.requests();
    assert_eq!(sent.len(), 2);
    assert!(
        sent.iter()
            .all(|r| r.method == "GET" && r.path == "/v1/models")
    );
    assert_eq!(sent[0].header("x-api-key"), Some(GOOD_KEY));
    assert_eq!(sent[0].header("anthropic-version"), Some("2023-06-01"));

    // --offline reaches nothing: the keys are still looked at.
    let out = ws
        .gate(&["doctor", "--offline", "--format", "json"])
        .env("DOCTOR_OPENAI_KEY", GOOD_KEY)
        .env("DOCTOR_ANTHROPIC_KEY", GOOD_KEY)
        .run();
    let all = checks(&out);
    for name in ["provider.compatible", "provider.messages", "provider.gone"] {
        let c = check(&all, name);
        assert_eq!(c["level"], "ok", "{c}");
        assert!(c["message"].as_str().unwrap().contains("--offline"), "{c}");
    }
    assert_eq!(check(&all, "provider.unset")["level"], "warning");
    assert_eq!(openai.requests().len(), 2, "--offline sent a request");
    assert_eq!(anthropic.requests().len(), 2, "--offline sent a request");
    assert_eq!(out.json()["offline"], true);
}

#[test]
fn a_fresh_workspace_is_diagnosed_without_creating_anything() {
    let ws = TestEnv::new();
    ws.write("gate.toml", SPEC);
    ws.git(&["init", "-q"]);
    let before = listing(ws.path());

    let out = ws.gate(&["doctor"]).run();
    out.assert_exit(0)
        .stdout_has("ok       spec: gate.toml parses")
        .stdout_has("created on first verify")
        .stdout_has(
            "bundle-store: .gate/bundles does not exist yet: created on first verify \
             (the workspace is writable)",
        )
        .stdout_has("ANTHROPIC_API_KEY is not set: review will not use this provider");
    assert_eq!(listing(ws.path()), before, "doctor changed the workspace");
    assert!(
        !ws.path().join(".gate").exists(),
        "doctor created the state directory"
    );

    // The same in CI: no key to sign with is an error, with the fix.
    let out = ws
        .gate(&["doctor", "--format", "json"])
        .env("CI", "true")
        .run();
    out.assert_exit(1);
    let all = checks(&out);
    let key = check(&all, "signing-key");
    assert_eq!(key["level"], "error", "{key}");
    assert!(
        key["fix"].as_str().unwrap().contains("GATE_SIGNING_KEY"),
        "{key}"
    );
    assert_eq!(listing(ws.path()), before, "doctor changed the workspace");

    // No spec at all: the one error says how to write one.
    let empty = TestEnv::new();
    empty.git(&["init", "-q"]);
    empty
        .gate(&["doctor"])
        .run()
        .assert_exit(1)
        .stdout_has("error    spec:")
        .stdout_has("gate init");
}

#[test]
fn the_ledger_tip_the_key_and_a_pending_migration_are_checked_as_they_are() {
    let ws = TestEnv::new();
    ws.write("gate.toml", SPEC);
    ws.write("src/a.txt", "a\n");
    ws.gate(&["verify", "--offline"]).run().assert_exit(0);
    ws.gate(&["verify", "--offline", "--full"])
        .run()
        .assert_exit(0);

    let out = ws.gate(&["doctor", "--format", "json"]).run();
    let all = checks(&out);
    let ledger = check(&all, "ledger");
    assert_eq!(ledger["level"], "ok", "{ledger}");
    assert!(
        ledger["message"]
            .as_str()
            .unwrap()
            .contains("the tip (row 2) verifies"),
        "{ledger}"
    );
    assert_eq!(check(&all, "signing-key")["level"], "ok");
    assert_eq!(check(&all, "bundle-store")["level"], "ok");
    let before = listing(ws.path());
    ws.gate(&["doctor"]).run();
    assert_eq!(
        listing(ws.path()),
        before,
        "doctor changed the state directory"
    );

    // (what is done to the state directory, the check, what it then says)
    type Tamper = fn(&Path);
    let cases: [(&str, Tamper, &str, &str, &str); 3] = [
        (
            "a public key that is not the signing key's",
            |state| {
                let other = TestEnv::new();
                other.gate(&["keys", "generate"]).run().assert_exit(0);
                std::fs::copy(
                    other.path().join(".gate/keys/signing.pub"),
                    state.join("keys/signing.pub"),
                )
                .unwrap();
            },
            "signing-key",
            "error",
            "does not match",
        ),
        (
            "a signing key others can read",
            |state| {
                std::fs::set_permissions(
                    state.join("keys/signing.key"),
                    std::fs::Permissions::from_mode(0o644),
                )
                .unwrap();
            },
            "signing-key",
            "error",
            "chmod 600",
        ),
        (
            "the tip's bundle rewritten",
            |state| {
                let dir = state.join("bundles");
                let mut bundles: Vec<_> = std::fs::read_dir(&dir)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .collect();
                bundles.sort_by_key(|p| std::fs::metadata(p).unwrap().modified().unwrap());
                let tip = bundles.last().unwrap();
                let mut bytes = std::fs::read(tip).unwrap();
                bytes.extend_from_slice(b" ");
                std::fs::write(tip, bytes).unwrap();
            },
            "ledger",
            "error",
            "the bundle was altered",
        ),
    ];
    for (what, tamper, name, level, says) in cases {
        let copy = ran_once();
        tamper(&copy.path().join(".gate"));
        let out = copy.gate(&["doctor", "--format", "json"]).run();
        let all = checks(&out);
        let c = check(&all, name);
        assert_eq!(c["level"], level, "{what}: {c}");
        let text = format!("{} {}", c["message"], c["fix"]);
        assert!(text.contains(says), "{what}: {c}");
        out.assert_exit(1);
    }

    // A ledger one schema version behind: a warning naming the command,
    // and the ledger left behind as it was.
    let old = ran_once();
    let db = old.path().join(".gate/ledger.db");
    sqlite(
        &db,
        "DELETE FROM schema_version WHERE version = (SELECT MAX(version) FROM schema_version)",
    );
    let version_before = sqlite(&db, "SELECT MAX(version) FROM schema_version");
    let out = old.gate(&["doctor", "--format", "json"]).run();
    let all = checks(&out);
    let ledger = check(&all, "ledger");
    assert_eq!(ledger["level"], "warning", "{ledger}");
    assert!(
        ledger["fix"]
            .as_str()
            .unwrap()
            .contains("gate ledger verify"),
        "{ledger}"
    );
    out.assert_exit(0);
    assert_eq!(
        sqlite(&db, "SELECT MAX(version) FROM schema_version"),
        version_before,
        "doctor migrated the ledger"
    );
}

#[test]
fn a_postgres_ledger_is_checked_where_it_is() {
    let db = Database::fresh();
    let ws = TestEnv::new();
    ws.write("gate.toml", SPEC);
    ws.write("src/a.txt", "a\n");
    let doctor = |ledger: &str| {
        ws.gate(&["doctor", "--format", "json"])
            .env("GATE_LEDGER", ledger)
            .run()
    };

    // An empty database: nothing there yet, and doctor creates nothing.
    let out = doctor(&db.url);
    let ledger = check(&checks(&out), "ledger").clone();
    assert_eq!(ledger["level"], "ok", "{ledger}");
    assert!(
        ledger["message"]
            .as_str()
            .unwrap()
            .contains("created on first verify")
    );
    assert!(
        db.column("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
            .is_empty(),
        "doctor created tables"
    );
    let bundles = check(&checks(&out), "bundle-store").clone();
    assert!(
        bundles["message"]
            .as_str()
            .unwrap()
            .contains("kept in the ledger"),
        "{bundles}"
    );

    // After a run: its tip verifies, its bundle read from the ledger.
    ws.gate(&["verify", "--offline"])
        .env("GATE_LEDGER", &db.url)
        .run()
        .assert_exit(0);
    let out = doctor(&db.url);
    let ledger = check(&checks(&out), "ledger").clone();
    assert_eq!(ledger["level"], "ok", "{ledger}");
    assert!(
        ledger["message"]
            .as_str()
            .unwrap()
            .contains("the tip (row 1) verifies"),
        "{ledger}"
    );

    // Nobody listening: an error, with what to check.
    let dead = gate_tests::postgres::with_port(&db.url, free_port());
    let out = doctor(&dead);
    let ledger = check(&checks(&out), "ledger").clone();
    assert_eq!(ledger["level"], "error", "{ledger}");
    out.assert_exit(1);
}

#[test]
fn the_sandbox_is_started_as_a_run_would_start_it() {
    let ws = TestEnv::new();
    ws.write("gate.toml", SPEC);
    // This machine isolates (the suite's sandbox tests need it to).
    let out = ws.gate(&["doctor", "--format", "json"]).run();
    let sandbox = check(&checks(&out), "sandbox").clone();
    assert_eq!(sandbox["level"], "ok", "{sandbox}");

    // Off by the operator's floor: a warning saying runs are not isolated.
    let out = ws
        .gate(&["doctor", "--format", "json"])
        .env("GATE_SANDBOX", "off")
        .run();
    let sandbox = check(&checks(&out), "sandbox").clone();
    assert_eq!(sandbox["level"], "warning", "{sandbox}");
    assert!(
        sandbox["message"]
            .as_str()
            .unwrap()
            .contains("not isolated")
    );

    // Required, with no bubblewrap to be found: an error, with the fix.
    let out = ws
        .gate(&["doctor", "--format", "json"])
        .env("GATE_SANDBOX", "required")
        .env("PATH", "/nonexistent")
        .run();
    let sandbox = check(&checks(&out), "sandbox").clone();
    assert_eq!(sandbox["level"], "error", "{sandbox}");
    assert!(
        sandbox["fix"].as_str().unwrap().contains("bubblewrap"),
        "{sandbox}"
    );
    out.assert_exit(1);
}

/// Runs one SQL statement on a SQLite file with the peer venv's Python,
/// returning what it prints.
fn sqlite(db: &Path, sql: &str) -> String {
    #[allow(clippy::disallowed_methods)] // the test edits a ledger as an old gate left it
    let out = std::process::Command::new(gate_tests::peers::python())
        .args([
            "-c",
            "import sqlite3, sys\n\
             c = sqlite3.connect(sys.argv[1])\n\
             rows = c.execute(sys.argv[2]).fetchall()\n\
             c.commit()\n\
             print(rows)",
        ])
        .arg(db)
        .arg(sql)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A workspace with one run recorded in its own state directory.
fn ran_once() -> TestEnv {
    let ws = TestEnv::new();
    ws.write("gate.toml", SPEC);
    ws.write("src/a.txt", "a\n");
    ws.gate(&["verify", "--offline"]).run().assert_exit(0);
    ws
}

#[test]
fn the_browser_and_the_runs_network_are_checked_where_the_spec_needs_them() {
    let ws = TestEnv::new();
    ws.write(
        "gate.toml",
        &format!(
            "{SPEC}\n[[check]]\nid = \"serve\"\nrun = \"true\"\n\
             [[page]]\nid = \"home\"\nurl = \"http://127.0.0.1:8080/\"\nfiles = [\"src/**\"]\n\
             after = [\"serve\"]\n[sandbox]\nnetwork = \"loopback\"\n"
        ),
    );
    let axe = crate::pages::axe();
    let chromium = Path::new("/usr/bin/chromium");
    // (GATE_CHROMIUM, GATE_AXE_CORE, browser level, axe-core level)
    let cases = [
        (chromium, axe.as_path(), "ok", "ok"),
        (
            Path::new("/nonexistent/chromium"),
            axe.as_path(),
            "error",
            "ok",
        ),
        (
            chromium,
            Path::new("/nonexistent/axe.min.js"),
            "ok",
            "error",
        ),
    ];
    for (browser, axe_core, browser_level, axe_level) in cases {
        let out = ws
            .gate(&["doctor", "--offline", "--format", "json"])
            .env("GATE_CHROMIUM", browser)
            .env("GATE_AXE_CORE", axe_core)
            .run();
        let all = checks(&out);
        let b = check(&all, "browser");
        assert_eq!(b["level"], browser_level, "{b}");
        let a = check(&all, "axe-core");
        assert_eq!(a["level"], axe_level, "{a}");
        // The suite's machine gives a run its own network (the sandbox tests need it).
        let net = check(&all, "sandbox.network");
        assert_eq!(net["level"], "ok", "{net}");
        let healthy = browser_level == "ok" && axe_level == "ok";
        out.assert_exit(i32::from(!healthy));
    }

    // Without pages neither is needed, whatever is installed.
    let plain = TestEnv::new();
    plain.write("gate.toml", SPEC);
    let out = plain
        .gate(&["doctor", "--offline", "--format", "json"])
        .env("GATE_CHROMIUM", "/nonexistent/chromium")
        .run();
    let all = checks(&out);
    assert_eq!(check(&all, "browser")["level"], "ok");
    assert!(
        all.iter()
            .all(|c| c["check"] != "axe-core" && c["check"] != "sandbox.network")
    );
}

/// The tracing check says which tracer a run would use: `strace` for
/// `on`; the eBPF tracer when it can run (root, `clang`, BTF) and
/// `GATE_TRACE` is unset or `ebpf`; a warning with the reason when `ebpf`
/// asks and it cannot, none when off.
#[test]
fn the_tracing_check_names_the_tracer_a_run_would_use() {
    let ws = TestEnv::new();
    ws.write("gate.toml", SPEC);
    ws.git(&["init", "-q"]);
    let ebpf_runs = nix::unistd::geteuid().is_root()
        && Path::new("/usr/bin/clang").is_file()
        && Path::new("/sys/kernel/btf/vmlinux").is_file();
    if !ebpf_runs {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root with clang: scripts/test installs it"
        );
    }
    // (GATE_TRACE, `default` for unset, the level, words of the message)
    let cases = [
        (
            "default",
            "ok",
            if ebpf_runs {
                "the eBPF tracer traces"
            } else {
                "strace traces"
            },
        ),
        ("on", "ok", "strace traces"),
        ("off", "warning", "GATE_TRACE=off"),
        (
            "ebpf",
            if ebpf_runs { "ok" } else { "warning" },
            if ebpf_runs {
                "the eBPF tracer traces"
            } else {
                "the eBPF tracer does not run"
            },
        ),
    ];
    for (mode, level, words) in cases {
        let out = ws.gate(&["doctor", "--format", "json"]).trace(mode).run();
        let all = checks(&out);
        let tracing = check(&all, "tracing");
        assert_eq!(tracing["level"], level, "{mode}: {tracing}");
        assert!(
            tracing["message"]
                .as_str()
                .unwrap_or_default()
                .contains(words),
            "{mode}: {tracing}"
        );
    }
}
