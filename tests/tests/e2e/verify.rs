//! `gate verify` over small fixture workspaces: exit codes, the item named
//! in the output, and the JSON document field by field.

use gate_tests::{TestEnv, free_port, pids_with, unique_token};

/// One fixture: files to write, then the expected exit code and texts.
struct Case {
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
    exit: i32,
    stdout: &'static [&'static str],
    stderr: &'static [&'static str],
}

const PASSING: &str = r#"
[spec]
id = "pass"
[[check]]
id = "build"
run = "true"
[[task]]
id = "t"
paths = ["src/**"]
[[task.criterion]]
id = "c"
text = "holds"
run = "test -f src/main.txt"
after = ["build"]
"#;

#[test]
fn verify_cases() {
    let cases = [
        Case {
            name: "pass",
            files: &[("gate.toml", PASSING), ("src/main.txt", "hello\n")],
            exit: 0,
            stdout: &[
                "✓ build",
                "✓ c",
                "verdict: PASS",
                "tier: trivial (1 task × 1 criterion)",
            ],
            stderr: &[],
        },
        Case {
            name: "a failing check is named with its output",
            files: &[(
                "gate.toml",
                "[spec]\nid = \"f\"\n[[check]]\nid = \"build\"\nrun = \"echo compiler says boom; exit 3\"\n[[check]]\nid = \"after-build\"\nrun = \"true\"\nafter = [\"build\"]\n",
            )],
            exit: 1,
            stdout: &[
                "✗ build",
                "exited with status 3",
                "compiler says boom",
                "after-build",
                "skipped: dependency `build` failed",
                "verdict: FAIL",
            ],
            stderr: &[],
        },
        Case {
            name: "a service that dies at once",
            files: &[(
                "gate.toml",
                "[spec]\nid = \"s\"\n[[check]]\nid = \"server\"\nrun = \"echo cannot bind; exit 1\"\nstarts = { within_s = 5, ready_tcp = \"127.0.0.1:9\" }\n",
            )],
            exit: 1,
            stdout: &["✗ server", "cannot bind", "verdict: FAIL"],
            stderr: &[],
        },
        Case {
            name: "malformed TOML",
            files: &[("gate.toml", "[spec]\nid = \"x\"\n[[check]\nid = \"b\"\n")],
            exit: 2,
            stdout: &[],
            stderr: &["gate.toml:3:"],
        },
        Case {
            name: "unknown key",
            files: &[(
                "gate.toml",
                "[spec]\nid = \"x\"\n[[check]]\nid = \"b\"\nrun = \"true\"\ncolour = \"red\"\n",
            )],
            exit: 2,
            stdout: &[],
            stderr: &["gate.toml:6:1: unknown key `colour`"],
        },
        Case {
            name: "a cycle in the task graph",
            files: &[(
                "gate.toml",
                "[spec]\nid = \"x\"\n[[task]]\nid = \"cart\"\nafter = [\"prices\"]\n[[task]]\nid = \"prices\"\nafter = [\"cart\"]\n",
            )],
            exit: 2,
            stdout: &[],
            stderr: &["cart -> prices -> cart"],
        },
        Case {
            name: "a path escaping the workspace",
            files: &[(
                "gate.toml",
                "[spec]\nid = \"x\"\n[[task]]\nid = \"t\"\npaths = [\"../secrets/**\"]\n",
            )],
            exit: 2,
            stdout: &[],
            stderr: &["gate.toml:5:", "reaches outside the workspace"],
        },
        Case {
            name: "a model-judged criterion with no provider",
            files: &[(
                "gate.toml",
                "[spec]\nid = \"j\"\n[[task]]\nid = \"t\"\n[[task.criterion]]\nid = \"no-pii\"\ntext = \"No handler logs an email\"\njudge = \"model\"\n",
            )],
            exit: 4,
            stdout: &[
                "? no-pii",
                "unverified: review did not run (no provider configured)",
                "review: did not run — no provider configured",
                "verdict: INCOMPLETE",
            ],
            stderr: &[],
        },
    ];
    for case in cases {
        let env = TestEnv::new();
        for (path, body) in case.files {
            env.write(path, body);
        }
        let out = env.gate(&["verify"]).run();
        assert_eq!(
            out.code,
            Some(case.exit),
            "case {:?}\n--- stdout\n{}\n--- stderr\n{}",
            case.name,
            out.stdout,
            out.stderr
        );
        for needle in case.stdout {
            assert!(
                out.stdout.contains(needle),
                "case {:?}: stdout lacks {needle:?}\n{}",
                case.name,
                out.stdout
            );
        }
        for needle in case.stderr {
            assert!(
                out.stderr.contains(needle),
                "case {:?}: stderr lacks {needle:?}\n{}",
                case.name,
                out.stderr
            );
        }
    }
}

#[test]
fn a_spec_that_is_missing_or_no_file_is_a_usage_error() {
    let env = TestEnv::new();
    std::fs::create_dir(env.path().join("specs")).unwrap();
    // (--spec, what stderr says)
    let cases: [(Option<&str>, &str); 3] = [
        (None, "no spec: no gate.toml in"),
        (Some("specs"), "is a directory, not a file"),
        (Some("/dev/null"), "is a device, pipe or socket, not a file"),
    ];
    for (spec, says) in cases {
        let mut args = vec!["verify"];
        args.extend(spec.map(|s| ["--spec", s]).into_iter().flatten());
        let out = env.gate(&args).run();
        out.assert_exit(2).stderr_has(says);
        if spec.is_none() {
            out.stderr_has("gate init");
        }
    }
}

/// A TOML file of the gate's in Latin-1 is refused at its first byte that
/// is not UTF-8, by every command that reads it (for the spec, also those
/// that only read its `[ledger] url`), instead of being read with the byte
/// replaced.
#[test]
fn toml_files_that_are_not_utf8_are_refused_at_their_first_bad_byte() {
    const SPEC: &str = "[spec]\nid = \"caf\"\n[[check]]\nid = \"b\"\nrun = \"true\"\n";
    struct Latin1 {
        file: &'static str,
        bytes: &'static [u8],
        commands: &'static [&'static [&'static str]],
        place: &'static str,
    }
    let cases = [
        Latin1 {
            file: "gate.toml",
            bytes: b"[spec]\nid = \"caf\"\nsummary = \"caf\xe9\"\n",
            commands: &[&["verify"], &["report"], &["runs"], &["ledger", "verify"]],
            place: "gate.toml:3:15",
        },
        Latin1 {
            file: "routing.toml",
            bytes: b"# tiers\n[routes.caf\xe9]\n",
            commands: &[&["verify"]],
            place: "routing.toml:2:12",
        },
        Latin1 {
            file: "docs/review/rules.toml",
            bytes: b"[[rule]]\nid = \"caf\xe9\"\n",
            commands: &[&["verify"], &["rules", "test"]],
            place: "docs/review/rules.toml:2:10",
        },
    ];
    for Latin1 {
        file,
        bytes,
        commands,
        place,
    } in cases
    {
        let env = TestEnv::new();
        env.write("gate.toml", SPEC);
        env.write(file, "");
        std::fs::write(env.path().join(file), bytes).expect("write the file");
        for command in commands {
            env.gate(command).run().assert_exit(2).stderr_has(&format!(
                "{place}: not UTF-8 (byte 0xE9): TOML and JSON files must be UTF-8 text"
            ));
        }
        assert!(
            !env.path().join(".gate/bundles").exists(),
            "{file}: nothing ran, so nothing was recorded"
        );
    }
}

/// A configuration file grown past its bound (here sparse, so the test
/// writes nothing) is refused from its size, by every command that reads
/// it, before a byte of it is read: the gate stays small and says which
/// file and how big.
#[test]
fn configuration_files_over_their_bound_are_refused_unread() {
    const SPEC: &str = "[spec]\nid = \"big\"\n[[check]]\nid = \"b\"\nrun = \"true\"\n";
    const PROMPTED: &str = "[prompts]\nquality = \"prompts/quality.md\"\n";
    const DESIGN_RULE: &str = r#"[[rule]]
id = "one-primary"
applies = ["web/**"]
mistake = "More than one primary button"
fix = "Keep one"
[[rule.cases.violating]]
images = ["docs/review/cases/big.png"]
[[rule.cases.compliant]]
images = ["docs/review/cases/small.png"]
"#;
    struct Big {
        file: &'static str,
        len: u64,
        also: &'static [(&'static str, &'static str)],
        commands: &'static [&'static [&'static str]],
        says: &'static str,
    }
    let mib = 1024 * 1024;
    let cases = [
        Big {
            file: "gate.toml",
            len: 2 << 30,
            also: &[],
            commands: &[&["verify"], &["report"], &["runs"], &["ledger", "verify"]],
            says: "gate.toml: cannot read the spec: it is 2 GiB, over the 16 MiB",
        },
        Big {
            file: "routing.toml",
            len: 17 * mib,
            also: &[("gate.toml", SPEC)],
            commands: &[&["verify"]],
            says: "routing.toml: it is 17 MiB, over the 16 MiB",
        },
        Big {
            file: "prompts/quality.md",
            len: 17 * mib,
            also: &[("gate.toml", SPEC), ("routing.toml", PROMPTED)],
            commands: &[&["verify"]],
            says: "prompts/quality.md: it is 17 MiB, over the 16 MiB",
        },
        Big {
            file: "docs/review/rules.toml",
            len: 17 * mib,
            also: &[("gate.toml", SPEC)],
            commands: &[&["verify"], &["rules", "test"]],
            says: "rules.toml: it is 17 MiB, over the 16 MiB",
        },
        Big {
            file: "docs/review/cases/big.png",
            len: 65 * mib,
            also: &[
                ("gate.toml", SPEC),
                ("docs/review/rules.toml", DESIGN_RULE),
                ("docs/review/cases/small.png", ""),
            ],
            commands: &[&["verify"], &["rules", "test"]],
            says: "`docs/review/cases/big.png` cannot be read: it is 65 MiB, over the 64 MiB",
        },
    ];
    for Big {
        file,
        len,
        also,
        commands,
        says,
    } in cases
    {
        let env = TestEnv::new();
        for (path, text) in also {
            env.write(path, text);
            if std::path::Path::new(path)
                .extension()
                .is_some_and(|ext| ext == "png")
            {
                // A PNG's signature, which is not UTF-8 text.
                std::fs::write(env.path().join(path), b"\x89PNG\r\n\x1a\n").expect("write a PNG");
            }
        }
        env.write(file, "");
        let big = std::fs::OpenOptions::new()
            .write(true)
            .open(env.path().join(file))
            .expect("open the file");
        big.set_len(len).expect("grow the file");
        for command in commands {
            env.gate(command).run().assert_exit(2).stderr_has(says);
        }
        assert!(
            !env.path().join(".gate/bundles").exists(),
            "{file}: nothing ran, so nothing was recorded"
        );
    }
}

#[test]
fn json_is_the_documented_object() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        r#"
[spec]
id = "shop-checkout"
[[check]]
id = "build"
run = "true"
[[task]]
id = "orders"
paths = ["src/**"]
[[task.criterion]]
id = "orders-201"
text = "POST /orders returns 201"
run = "exit 1"
[[task.criterion]]
id = "orders-no-pii"
text = "no PII in logs"
judge = "model"
"#,
    );
    env.write("src/a.rs", "fn main() {}\n");
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(1);
    let doc = out.json();
    let keys: Vec<&str> = doc
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "format_version",
            "run_id",
            "spec_id",
            "attempt",
            "series",
            "verdict",
            "verdict_line",
            "qualifier",
            "overridden",
            "advisory",
            "recorded",
            "tier",
            "tier_reason",
            "changed_files",
            "base",
            "base_commit",
            "verified",
            "isolation",
            "base_runs",
            "self_guard",
            "verdict_reasons",
            "checks",
            "criteria",
            "review",
            "findings",
            "dropped_findings",
            "doom_loop",
            "bundle"
        ]
    );
    assert_eq!(doc["format_version"], 1);
    assert_eq!(doc["spec_id"], "shop-checkout");
    assert_eq!(doc["attempt"], 1);
    assert_eq!(doc["verdict"], "fail");
    assert_eq!(doc["overridden"], false);
    assert_eq!(doc["tier"], "trivial");
    assert_eq!(doc["tier_reason"], "1 task × 2 criteria");
    assert!(doc["run_id"].as_str().is_some_and(|s| s.len() >= 16));

    let checks = doc["checks"].as_array().unwrap();
    let build = &checks[0];
    assert_eq!(build["id"], "build");
    assert_eq!(build["status"], "passed");
    assert_eq!(build["exit_code"], 0);
    assert!(build["duration_ms"].is_u64());
    assert_eq!(build["inputs_digest"].as_str().unwrap().len(), 64);
    assert_eq!(build["carried_from"], serde_json::Value::Null);
    let builtin_ids: Vec<&str> = checks[1..]
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        builtin_ids,
        ["builtin.conflicts", "builtin.secrets", "builtin.parse"]
    );

    let criteria = doc["criteria"].as_array().unwrap();
    assert_eq!(criteria[0]["id"], "orders-201");
    assert_eq!(criteria[0]["decided_by"], "code");
    assert_eq!(criteria[0]["status"], "failed");
    assert_eq!(criteria[0]["met"], serde_json::Value::Null);
    assert_eq!(criteria[1]["id"], "orders-no-pii");
    assert_eq!(criteria[1]["decided_by"], "model");
    assert_eq!(criteria[1]["status"], "unverified");
    // Two digests of different definitions differ.
    assert_ne!(criteria[0]["inputs_digest"], criteria[1]["inputs_digest"]);

    assert_eq!(doc["review"]["status"], "did_not_run");
    assert!(doc["review"]["specialists"].as_array().unwrap().is_empty());
    // The one finding: criteria whose command runs no file of the workspace.
    let titles: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        ["criterion `orders-201` runs no file of the workspace: nothing protects what decides it"]
    );
    assert_eq!(doc["doom_loop"], serde_json::Value::Null);
    // Progress goes to stderr: stdout is the JSON document alone.
    assert!(out.stdout.trim_start().starts_with('{'));
}

#[test]
fn a_symlink_out_of_the_workspace_is_never_read() {
    let outside = tempfile::tempdir().unwrap();
    // Opening a FIFO for reading blocks until a writer comes: a gate that
    // followed the link would hang here and hit the timeout.
    let fifo = outside.path().join("secret");
    #[allow(clippy::disallowed_methods)]
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let env = TestEnv::new();
    std::os::unix::fs::symlink(&fifo, env.path().join("src-link")).unwrap();
    env.write(
        "gate.toml",
        "[spec]\nid = \"l\"\n[[check]]\nid = \"c\"\nrun = \"true\"\ninputs = [\"src-link\", \"**\"]\n",
    );
    env.gate(&["verify"])
        .timeout(std::time::Duration::from_secs(30))
        .run()
        .assert_exit(0)
        .stdout_has("✓ c");
}

#[test]
fn a_service_is_stopped_after_its_dependents() {
    let env = TestEnv::new();
    let port = free_port();
    // The script's name is the token its process is found by.
    let token = unique_token("serve");
    env.script(
        &format!("{token}.sh"),
        "#!/bin/sh\npython3 -m http.server --bind 127.0.0.1 \"$1\" &\nwait\n",
    );
    env.write(
        "gate.toml",
        &format!(
            r#"
[spec]
id = "svc"
[[check]]
id = "server"
run = "./{token}.sh {port}"
starts = {{ within_s = 15, ready_http = "http://127.0.0.1:{port}/" }}
[[task]]
id = "t"
[[task.criterion]]
id = "answers"
text = "the server answers"
run = "python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:{port}/\", timeout=5)'"
after = ["server"]
"#
        ),
    );
    env.gate(&["verify"])
        .run()
        .assert_exit(0)
        .stdout_has("✓ answers");
    let left = pids_with(&token);
    assert!(
        left.is_empty(),
        "the service (pids {left:?}) outlived the run"
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "port {port} still answers after the run"
    );
}

#[test]
fn init_writes_a_spec_a_routing_table_and_a_key_once() {
    let env = TestEnv::new();
    let out = env.gate(&["init"]).run();
    out.assert_exit(0);
    out.stdout_has("gate.toml")
        .stdout_has("routing.toml")
        .stdout_has("key id");
    assert!(env.path().join(".gate/keys/signing.key").is_file());
    // The state is kept out of git, and it says why.
    out.stdout_has("added /.gate/ to .gitignore");
    assert!(env.read(".gitignore").lines().any(|l| l == "/.gate/"));
    // The files it wrote are valid as written.
    env.gate(&["routing", "check"]).run().assert_exit(0);
    env.gate(&["verify", "--print-config"]).run().assert_exit(0);
    // A second init overwrites nothing.
    let before = env.read("gate.toml");
    env.gate(&["init"])
        .run()
        .assert_exit(2)
        .stderr_has("already exists");
    assert_eq!(env.read("gate.toml"), before);
}

/// A signing key, ledger or state directory that git tracks is one the
/// change could have planted: refused before anything runs, with `CI` set
/// too, while a state directory the CI keeps untracked inside the project
/// folder is fine.
#[test]
fn state_that_git_tracks_is_refused() {
    // (where the state is, what is committed, the exit code)
    let cases = [
        (None, Some(".gate/keys/signing.key"), 2),
        (None, Some(".gate/gate.db"), 2),
        (Some(".ci-state"), None, 0),
        (Some(".ci-state"), Some(".ci-state/keys/signing.key"), 2),
    ];
    for (state, committed, code) in cases {
        let env = TestEnv::new();
        env.write(
            "gate.toml",
            "[spec]\nid = \"planted\"\n[[check]]\nid = \"ok\"\nrun = \"true\"\n",
        );
        let state_dir = env.path().join(state.unwrap_or(".gate"));
        env.gate(&["keys", "generate"])
            .env("GATE_STATE_DIR", &state_dir)
            .run()
            .assert_exit(0);
        env.git(&["init", "-q", "-b", "main"]);
        env.git(&["add", "gate.toml"]);
        if let Some(file) = committed {
            if !env.path().join(file).exists() {
                env.write(file, "planted\n");
            }
            env.git(&["add", "-f", file]);
        }
        env.git(&["commit", "-q", "-m", "work"]);
        let mut cmd = env.gate(&["verify"]).env("CI", "true");
        if state.is_some() {
            cmd = cmd.env("GATE_STATE_DIR", &state_dir);
        }
        let out = cmd.run();
        out.assert_exit(code);
        if let Some(file) = committed {
            out.stderr_has(&format!(
                "git tracks a file of the gate's own state ({file})"
            ));
        }
    }
}

#[test]
fn a_base_git_cannot_reach_says_why_and_what_to_fetch() {
    // origin: main (two commits), a branch from the first, an orphan branch.
    let origin = TestEnv::new();
    origin.write(
        "gate.toml",
        "[spec]\nid = \"b\"\n[[check]]\nid = \"ok\"\nrun = \"true\"\n",
    );
    origin.git(&["init", "-q", "-b", "main"]);
    origin.git(&["add", "."]);
    origin.git(&["commit", "-q", "-m", "one"]);
    origin.write("a.txt", "a\n");
    origin.git(&["add", "."]);
    origin.git(&["commit", "-q", "-m", "two"]);
    origin.git(&["checkout", "-q", "-b", "feature", "HEAD~1"]);
    origin.write("b.txt", "b\n");
    origin.git(&["add", "."]);
    origin.git(&["commit", "-q", "-m", "three"]);
    origin.git(&["checkout", "-q", "--orphan", "lonely"]);
    origin.git(&["commit", "-q", "-m", "orphan"]);
    let url = format!("file://{}", origin.path().display());
    const SHALLOW: &str = "this clone is shallow, so fetch the history";
    // (clone depth, refs fetched after, --base, what stderr says, shallow hint)
    let cases = [
        (
            Some("1"),
            None,
            "HEAD~1",
            "`HEAD~1` does not name a commit in this clone",
            true,
        ),
        (
            Some("1"),
            Some("main"),
            "origin/main",
            "HEAD and `origin/main` have no common ancestor",
            true,
        ),
        (
            None,
            None,
            "origin/lonely",
            "HEAD and `origin/lonely` have no common ancestor",
            false,
        ),
        (None, None, "origin/main", "", false),
    ];
    for (depth, fetch, base, says, shallow) in cases {
        let ws = TestEnv::new();
        let mut clone = vec!["clone", "-q", "--branch", "feature"];
        if let Some(depth) = depth {
            clone.extend(["--depth", depth]);
        }
        clone.extend([url.as_str(), "."]);
        ws.git(&clone);
        if let Some(branch) = fetch {
            let refspec = format!("{branch}:refs/remotes/origin/{branch}");
            ws.git(&["fetch", "-q", "--depth", "1", "origin", &refspec]);
        }
        let out = ws.gate(&["verify", "--base", base]).run();
        if says.is_empty() {
            out.assert_exit(0);
            continue;
        }
        out.assert_exit(2);
        out.stderr_has(&format!("base `{base}`: "));
        out.stderr_has(says);
        assert_eq!(
            out.stderr.contains(SHALLOW),
            shallow,
            "{base}: {}",
            out.stderr
        );
    }
}

/// Every output names what was verified: the commit, the branch (HEAD's,
/// else the CI's name on a detached checkout) and how many files differed
/// from the commit, which also comes as a note and in `gate runs`.
#[test]
fn what_was_verified_is_recorded() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"verified\"\n[[check]]\nid = \"ok\"\nrun = \"true\"\n",
    );
    env.write(".gitignore", ".gate/\n");
    env.git(&["init", "-q", "-b", "feature/ttl"]);
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "base"]);
    let head = env.git(&["rev-parse", "HEAD"]).trim().to_owned();

    // Exactly the commit, on its branch.
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["verified"]["commit"], head.as_str(), "{doc:#}");
    assert_eq!(doc["verified"]["branch"], "feature/ttl");
    assert_eq!(doc["verified"]["uncommitted"], 0);

    // A detached checkout with one edited file and one new: the CI's branch
    // name, two files uncommitted, said as a note and in every format.
    env.git(&["checkout", "-q", "--detach"]);
    env.write(
        "gate.toml",
        "[spec]\nid = \"verified\"\n[[check]]\nid = \"ok\"\nrun = \"true\"\n\n",
    );
    env.write("notes.txt", "draft\n");
    let out = env
        .gate(&["verify", "--format", "jsonl"])
        .env("GITHUB_HEAD_REF", "feature/from-ci")
        .run();
    out.assert_exit(0);
    let note = out
        .stdout
        .lines()
        .find(|l| l.contains("\"note\":\"uncommitted\""))
        .unwrap_or_else(|| panic!("no uncommitted note: {}", out.stdout));
    assert!(note.contains("\"files\":2"), "{note}");
    assert!(note.contains(&head), "{note}");
    let human = env
        .gate(&["verify"])
        .env("GITHUB_HEAD_REF", "feature/from-ci")
        .run();
    let short = &head[..12];
    assert!(
        human.stdout.contains(&format!(
            "verified: commit {short} on feature/from-ci, with 2 uncommitted files"
        )),
        "{}",
        human.stdout
    );
    assert!(
        human
            .stderr
            .contains("2 files of the workspace differ from commit"),
        "{}",
        human.stderr
    );
    let runs = env.gate(&["runs"]).run();
    runs.assert_exit(0);
    assert!(
        runs.stdout.contains(&format!("{}+", &head[..11])),
        "{}",
        runs.stdout
    );
    assert!(runs.stdout.contains("feature/from-ci"), "{}", runs.stdout);
    assert!(runs.stdout.contains("feature/ttl"), "{}", runs.stdout);
}

/// A task's tests can wait for the checks they need: here for a dependency
/// install that empties its folder first and fills it a moment later, so
/// tests that started beside it would find nothing and fail falsely.
#[test]
fn task_tests_run_after_the_checks_they_name() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"ordered\"\n[[check]]\nid = \"install\"\n\
         run = \"rm -rf deps && sleep 1 && mkdir deps && touch deps/ok\"\n\
         [[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
         tests = { run = \"test -f deps/ok\", after = [\"install\"] }\n",
    );
    env.write("src/a.txt", "a\n");
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(gate_tests::status_of(&doc, "t.tests"), "passed", "{doc:#}");
}
