//! Retries through the real binary: what a retry re-runs (counted by real
//! executions), the doom loop, overrides, and the gate guarding its own spec.

use std::os::unix::fs::PermissionsExt;

use gate_tests::{TestEnv, findings, item, ran, status_of};

#[test]
fn a_retry_reruns_only_what_the_fix_could_have_changed() {
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("ran.log");
    let env = TestEnv::new();
    let log_s = log.display();
    let outside_s = outside.path().display();
    env.write(
        "gate.toml",
        &format!(
            r#"
[spec]
id = "delta"
[sandbox]
writable = ["{outside_s}"]
[policy]
builtin_parse = false
[[check]]
id = "build"
run = "echo build >> {log_s}"
inputs = ["src/**"]
[[task]]
id = "t"
paths = ["src/**"]
[[task.criterion]]
id = "c1"
text = "a is good"
run = "echo c1 >> {log_s}; grep -qx good src/a.txt"
inputs = ["src/a.txt"]
[[task.criterion]]
id = "c2"
text = "b is ok"
run = "echo c2 >> {log_s}; grep -qx ok src/b.txt"
inputs = ["src/b.txt"]
[[task.criterion]]
id = "c3"
text = "builds on build"
run = "echo c3 >> {log_s}"
inputs = ["src/c.txt"]
after = ["build"]
"#
        ),
    );
    env.write("src/a.txt", "bad\n");
    env.write("src/b.txt", "ok\n");
    env.write("src/c.txt", "c\n");
    env.write("docs/README.md", "v1\n");
    let verify = |args: &[&str]| {
        let mut all = vec!["verify", "--format", "json"];
        all.extend_from_slice(args);
        env.gate(&all).run()
    };

    // Attempt 1: everything runs; c1 fails.
    let out = verify(&[]);
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["attempt"], 1);
    let mut first = ran(&log);
    first.sort();
    assert_eq!(first, ["build", "c1", "c2", "c3"]);

    // Attempt 2 changes only a doc file: the failed item re-runs, nothing else.
    std::fs::remove_file(&log).unwrap();
    env.write("docs/README.md", "v2\n");
    let out = verify(&[]);
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["attempt"], 2);
    assert_eq!(ran(&log), ["c1"]);
    for id in ["build", "c2", "c3"] {
        assert_eq!(status_of(&doc, id), "carried", "{id}");
    }
    let build = item(&doc, "build").unwrap();
    assert!(build["carried_from"].is_string(), "{build}");
    // The bundle's plan says where each carried item's result came from.
    let first_run = build["carried_from"].as_str().unwrap().to_owned();
    let run = doc["run_id"].as_str().unwrap().to_owned();
    let shown = env.gate(&["evidence", "show", &run]).run();
    shown.assert_exit(0);
    assert!(
        shown
            .stdout
            .contains(&format!("  build — carried from run {first_run}")),
        "{}",
        shown.stdout
    );
    assert!(shown.stdout.contains("  c1 — run: "), "{}", shown.stdout);

    // Attempt 3 fixes c1 but breaks c2 through a file its inputs name: caught.
    std::fs::remove_file(&log).unwrap();
    env.write("src/a.txt", "good\n");
    env.write("src/b.txt", "broken\n");
    let out = verify(&[]);
    out.assert_exit(1);
    let doc = out.json();
    let mut third = ran(&log);
    third.sort();
    // build's inputs changed, so it and its dependent c3 re-run too.
    assert_eq!(third, ["build", "c1", "c2", "c3"]);
    assert_eq!(status_of(&doc, "c1"), "passed");
    assert_eq!(status_of(&doc, "c2"), "failed");

    // Attempt 4 fixes c2: c2 re-runs, and build (whose inputs cover it) with
    // its dependent c3; c1 is carried. The pass closes the series.
    // The pull-request comment of that pass lists what it carried.
    std::fs::remove_file(&log).unwrap();
    env.write("src/b.txt", "ok\n");
    let comment = outside.path().join("comment.md");
    let report = format!("markdown={}", comment.display());
    let out = verify(&["--report", &report]);
    out.assert_exit(0);
    let mut fourth = ran(&log);
    fourth.sort();
    assert_eq!(fourth, ["build", "c2", "c3"]);
    assert_eq!(status_of(&out.json(), "c1"), "carried");
    let md = std::fs::read_to_string(&comment).unwrap();
    assert!(md.contains("### Carried\n"), "{md}");
    assert!(md.contains("- ↻ criterion `c1` from run `"), "{md}");

    // After a pass a new series starts: attempt 1 again, everything runs.
    std::fs::remove_file(&log).unwrap();
    let out = verify(&[]);
    out.assert_exit(0);
    assert_eq!(out.json()["attempt"], 1);
    assert_eq!(ran(&log).len(), 4);

    // --full re-runs everything even on a retry.
    env.write("src/a.txt", "bad\n");
    verify(&[]).assert_exit(1);
    std::fs::remove_file(&log).unwrap();
    let out = verify(&["--full"]);
    out.assert_exit(1);
    assert_eq!(ran(&log).len(), 4);
}

#[test]
fn a_doom_loop_escalates_and_stays_escalated() {
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("ran.log");
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        &format!(
            r#"
[spec]
id = "loop"
[sandbox]
writable = ["{}"]
[[check]]
id = "flaky-fix"
run = "echo ran >> {}; echo \"error at $(date +%s%N) in /tmp/tmp.$$ pid $$\"; exit 1"
"#,
            outside.path().display(),
            log.display()
        ),
    );
    let verify = |args: &[&str]| {
        let mut all = vec!["verify", "--format", "json"];
        all.extend_from_slice(args);
        env.gate(&all).run()
    };
    verify(&[]).assert_exit(1);
    verify(&[]).assert_exit(1);
    // The third identical failure (noise in its text aside) escalates.
    let out = verify(&[]);
    out.assert_exit(3);
    let doc = out.json();
    assert_eq!(doc["verdict"], "escalate");
    assert_eq!(doc["doom_loop"]["pattern"], "repeat");
    assert_eq!(doc["doom_loop"]["attempts"], serde_json::json!([1, 2, 3]));
    assert!(out.stdout.contains("flaky-fix"));
    assert_eq!(ran(&log).len(), 3);

    // The series stays escalated: the next call exits 3 at once, running nothing.
    let out = env.gate(&["verify"]).run();
    out.assert_exit(3);
    out.stdout_has("escalated");
    assert_eq!(ran(&log).len(), 3, "an escalated series ran something");
    // What it did not run still has its line, and says why.
    let out = verify(&[]);
    out.assert_exit(3);
    let check = item(&out.json(), "flaky-fix").cloned().unwrap();
    assert_eq!(check["status"], "skipped");
    assert_eq!(
        check["reason"],
        "not run: the series is escalated (start a new series or override)"
    );
    assert_eq!(ran(&log).len(), 3);

    // A human starts a new series.
    let out = verify(&["--new-series"]);
    out.assert_exit(1);
    assert_eq!(out.json()["attempt"], 1);
    assert_eq!(ran(&log).len(), 4);
}

#[test]
fn an_override_lets_the_same_content_pass_and_is_recorded() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"ov\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\nrun = \"grep -q ok src/x.txt\"\n",
    );
    env.write("src/x.txt", "not yet\n");
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(1);
    let run = out.json()["run_id"].as_str().unwrap().to_owned();

    env.gate(&[
        "override",
        &run[..13],
        "--reason",
        "hotfix, checked by hand",
        "--by",
        "ana",
    ])
    .run()
    .assert_exit(0)
    .stdout_has("override of run");

    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["verdict"], "pass");
    assert_eq!(doc["overridden"], true);
    // A pass, overridden or not, has nothing to override: refused, not counted.
    let passed = doc["run_id"].as_str().unwrap();
    env.gate(&["override", passed, "--reason", "again", "--by", "ana"])
        .run()
        .assert_exit(2)
        .stderr_has("already passed by an override: there is nothing to override");
    env.gate(&["verify"])
        .run()
        .assert_exit(0)
        .stdout_has("overridden: ana: hotfix, checked by hand");

    // Other content is not covered by the override.
    env.write("src/x.txt", "still not\n");
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(1);
    assert_eq!(out.json()["overridden"], false);

    // The ledger still verifies, override bundles beside run bundles.
    env.gate(&["ledger", "verify"]).run().assert_exit(0);
}

#[test]
fn deleting_the_failing_criterion_at_base_is_caught() {
    let env = TestEnv::new();
    let spec = "[spec]\nid = \"g\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n[[task.criterion]]\nid = \"keep\"\ntext = \"k\"\nrun = \"true\"\n[[task.criterion]]\nid = \"hard\"\ntext = \"the hard one\"\nrun = \"grep -q done src/x.txt\"\n";
    env.write("gate.toml", spec);
    env.write(".gitignore", ".gate/\n");
    env.write("src/x.txt", "todo\n");
    env.git(&["init", "-q", "-b", "main"]);
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "base"]);
    // The agent deletes the criterion it cannot pass.
    let without = spec.replace(
        "[[task.criterion]]\nid = \"hard\"\ntext = \"the hard one\"\nrun = \"grep -q done src/x.txt\"\n",
        "",
    );
    env.write("gate.toml", &without);
    env.write("src/x.txt", "todo, still\n");
    let out = env
        .gate(&["verify", "--base", "main", "--format", "json"])
        .run();
    out.assert_exit(1);
    let doc = out.json();
    let titles: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["title"].as_str().unwrap())
        .collect();
    assert!(
        titles.contains(&"The change removes acceptance criterion `hard`"),
        "{titles:?}"
    );
    let f = &doc["findings"][0];
    assert_eq!(f["severity"], "critical");
    assert_eq!(f["role"], "gate");
    // Without the deletion the same base is clean.
    env.write("gate.toml", spec);
    env.write("src/x.txt", "done\n");
    env.gate(&["verify", "--base", "main"]).run().assert_exit(0);
}

/// A criterion whose declared `inputs` leave out a file its command reads
/// (as `cargo test --test ttl` reads the whole crate): a retry that changes
/// only that file runs it again and catches the break, while a criterion
/// that never read it is still carried; `gate evidence show` and the JSON
/// say what each read beyond its inputs.
#[test]
fn a_file_read_outside_the_declared_inputs_is_not_carried_over() {
    for mode in tracers() {
        carries_only_what_was_not_read(mode);
    }
}

/// A probe through a symbolic link: one in the workspace (`l -> src`) is
/// followed, `..` after one (`up/../flag` with `up -> src/inner`) goes up
/// from where it led, one a check the probe runs after made in their
/// `/tmp` back into the workspace cannot be followed, so nothing of that
/// run is carried. Either way a retry that creates the file probed for runs
/// the probe again and catches it.
#[test]
fn a_probe_through_a_link_is_not_carried_over() {
    for mode in tracers() {
        for (how, probe, plant, after) in [
            ("in the workspace", "test ! -e l/flag", "true", ""),
            ("backing out of a link", "test ! -e up/../flag", "true", ""),
            (
                "from /tmp",
                "test -L /tmp/back && test ! -e /tmp/back/src/flag",
                "ln -s \"$PWD\" /tmp/back",
                "\"plant\"",
            ),
        ] {
            probes_through_a_link(mode, how, probe, plant, after);
        }
    }
}

/// One link sequence with `GATE_TRACE=mode`: `plant` may make a link,
/// `probe` (`after` what `after` names: only an item after `plant` shares
/// its `/tmp`) looks for a file through one.
fn probes_through_a_link(mode: &str, how: &str, probe: &str, plant: &str, after: &str) {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        &format!(
            r#"
[spec]
id = "links"
[policy]
builtin_parse = false
[[check]]
id = "plant"
run = '{plant}'
[[task]]
id = "t"
paths = ["src/**"]
[[task.criterion]]
id = "probe"
text = "no flag is set"
run = '{probe}'
inputs = ["README.md"]
after = [{after}]
[[task.criterion]]
id = "other"
text = "other holds"
run = "grep -qx yes src/other.txt"
inputs = ["src/other.txt"]
"#
        ),
    );
    env.write("README.md", "links\n");
    env.write("src/other.txt", "no\n");
    env.write("src/inner/keep.txt", "kept\n");
    std::os::unix::fs::symlink("src", env.path().join("l")).unwrap();
    // `up/..` is `src`, not the workspace's root.
    std::os::unix::fs::symlink("src/inner", env.path().join("up")).unwrap();
    let verify = || env.gate(&["verify", "--format", "json"]).trace(mode).run();
    let out = verify();
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(status_of(&doc, "probe"), "passed", "{mode} {how}: {doc:#}");

    // The retry fixes `other` and sets the flag the probe looks for.
    env.write("src/other.txt", "yes\n");
    env.write("src/flag", "set\n");
    let out = verify();
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(status_of(&doc, "probe"), "failed", "{mode} {how}: {doc:#}");
    assert_eq!(status_of(&doc, "other"), "passed", "{mode} {how}");
}

/// The `GATE_TRACE` values to try on this machine: `on` (`strace`), and
/// `default` (unset: the eBPF tracer where it runs, else `strace`); `ebpf`
/// as root with `clang` installed (CI runs as root, and scripts/test
/// installs it).
fn tracers() -> Vec<&'static str> {
    if ebpf_runs() {
        vec!["on", "ebpf", "default"]
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root with clang: scripts/test installs it"
        );
        vec!["on", "default"]
    }
}

/// Whether the eBPF tracer runs here: root, `clang`, a kernel with BTF.
fn ebpf_runs() -> bool {
    nix::unistd::geteuid().is_root()
        && std::path::Path::new("/usr/bin/clang").is_file()
        && std::path::Path::new("/sys/kernel/btf/vmlinux").is_file()
}

/// The observed-inputs sequence with `GATE_TRACE=mode`.
fn carries_only_what_was_not_read(mode: &str) {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        r#"
[spec]
id = "observed"
[policy]
builtin_parse = false
[[task]]
id = "t"
paths = ["src/**", "tests/**"]
[[task.criterion]]
id = "ttl"
text = "the TTL holds"
run = "sh tests/ttl.sh"
inputs = ["tests/ttl.sh"]
[[task.criterion]]
id = "ping"
text = "ping pongs"
run = "grep -qx pong src/ping.txt"
inputs = ["src/ping.txt"]
[[task.criterion]]
id = "other"
text = "other holds"
run = "grep -qx yes src/other.txt"
inputs = ["src/other.txt"]
"#,
    );
    env.write("tests/ttl.sh", "grep -qx seconds src/set.txt\n");
    env.write("src/set.txt", "seconds\n");
    env.write("src/ping.txt", "pong\n");
    env.write("src/other.txt", "no\n");
    let verify = || {
        let out = env.gate(&["verify", "--format", "json"]).trace(mode).run();
        assert!(
            !out.stderr.contains("eBPF tracer does not run"),
            "{mode}: {}",
            out.stderr
        );
        out
    };

    // Attempt 1: `other` fails; `ttl` passes, having read src/set.txt.
    let out = verify();
    out.assert_exit(1);
    let doc = out.json();
    let tracer = match mode {
        "ebpf" => "ebpf",
        "default" if ebpf_runs() => "ebpf",
        _ => "strace",
    };
    assert_eq!(doc["isolation"]["tracer"], tracer, "{mode}");
    assert_eq!(status_of(&doc, "ttl"), "passed");
    assert_eq!(
        item(&doc, "ttl").unwrap()["read_beyond_inputs"],
        1,
        "{doc:#}"
    );
    assert_eq!(
        item(&doc, "ping").unwrap()["read_beyond_inputs"],
        0,
        "{doc:#}"
    );
    let run = doc["run_id"].as_str().unwrap().to_owned();
    let shown = env.gate(&["evidence", "show", &run]).run();
    shown.assert_exit(0);
    assert!(
        shown
            .stdout
            .contains("ttl read beyond its declared inputs:\n  src/set.txt\n"),
        "{}",
        shown.stdout
    );

    // Attempt 2 fixes `other` and breaks what `ttl` reads, outside its inputs.
    env.write("src/other.txt", "yes\n");
    env.write("src/set.txt", "milliseconds\n");
    let out = verify();
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["attempt"], 2);
    assert_eq!(status_of(&doc, "ttl"), "failed", "{doc:#}");
    assert_eq!(status_of(&doc, "ping"), "carried", "{doc:#}");
    assert_eq!(status_of(&doc, "other"), "passed");

    // Attempt 3 undoes the break: `ttl` runs again (a file it read changed)
    // and passes; `ping` is still carried.
    env.write("src/set.txt", "seconds\n");
    let out = verify();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(status_of(&doc, "ttl"), "passed", "{mode}");
    assert_eq!(status_of(&doc, "ping"), "carried", "{mode}");

    // Untraced, the record says so, and nothing is carried.
    let out = env
        .gate(&["verify", "--format", "json"])
        .env("GATE_TRACE", "off")
        .run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["isolation"]["tracer"], "none");
    assert_eq!(status_of(&doc, "ping"), "passed", "{mode}");
    let run = doc["run_id"].as_str().unwrap().to_owned();
    env.gate(&["evidence", "show", &run])
        .run()
        .stdout_has("reads traced by: nothing (a retry runs every command again)\n");
}

/// A task's JUnit report is judged by its content over the task's files,
/// never by file times: after a fresh checkout (every file newer than the
/// report) the same report over the same code is valid; the same report
/// over changed code is stale, however recently it was touched; a new
/// report is taken.
#[test]
fn a_task_report_is_stale_by_content_not_by_its_time() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"reports\"\n[policy]\nbuiltin_parse = false\n\
         [[check]]\nid = \"hold\"\nrun = \"test ! -f hold\"\n\
         [[task]]\nid = \"orders\"\npaths = [\"src/**\"]\n\
         tests = { report = \"reports/orders.xml\" }\n",
    );
    let report =
        |n: u32| format!("<testsuite><testcase name=\"creates\" time=\"0.0{n}\"/></testsuite>\n");
    let set_time = |rel: &str, secs_ago: u64| {
        let when = std::time::SystemTime::now() - std::time::Duration::from_secs(secs_ago);
        std::fs::File::options()
            .write(true)
            .open(env.path().join(rel))
            .unwrap()
            .set_modified(when)
            .unwrap();
    };
    // `hold` keeps the series open from attempt to attempt.
    env.write("hold", "");
    env.write("src/orders.rs", "fn create() {}\n");
    env.write("reports/orders.xml", &report(1));
    let verify = || env.gate(&["verify", "--full", "--format", "json"]).run();
    // (what the attempt finds, the report item's status, its reason)
    type Step<'a> = (&'a dyn Fn(), &'a str, Option<&'a str>);
    let steps: [Step<'_>; 4] = [
        (&|| {}, "passed", None),
        // A fresh checkout: the code is newer than the report; same content.
        (
            &|| {
                set_time("reports/orders.xml", 600);
                set_time("src/orders.rs", 0);
            },
            "passed",
            None,
        ),
        // The code changed and the report did not, though it was touched.
        (
            &|| {
                env.write("src/orders.rs", "fn create() { todo!() }\n");
                set_time("src/orders.rs", 600);
                set_time("reports/orders.xml", 0);
            },
            "failed",
            Some("is the one accepted for an earlier version of the task's files"),
        ),
        // The pipeline ran the tests again: a new report.
        (
            &|| drop(env.write("reports/orders.xml", &report(2))),
            "passed",
            None,
        ),
    ];
    for (i, (change, status, reason)) in steps.iter().enumerate() {
        change();
        let out = verify();
        let doc = out.json();
        assert_eq!(doc["attempt"], i + 1, "{doc}");
        let tests = item(&doc, "orders.tests").unwrap();
        assert_eq!(tests["status"], *status, "attempt {}: {tests}", i + 1);
        if let Some(reason) = reason {
            let said = tests["reason"].as_str().unwrap_or_default();
            assert!(said.contains(reason), "attempt {}: {said}", i + 1);
        }
    }
}

/// The reports accepted over a task's files are the spec's on its base,
/// not one series': a pass closes the series, and in the next one (or
/// under another series key) the report accepted before is stale once the
/// task's files change, byte for byte as it was; the same report over the
/// same files as when it was accepted (a fresh checkout) still passes.
#[test]
fn a_task_report_accepted_before_a_pass_is_stale_in_every_later_series() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"reports\"\n[policy]\nbuiltin_parse = false\n\
         [[task]]\nid = \"orders\"\npaths = [\"src/**\"]\n\
         tests = { report = \"reports/orders.xml\" }\n",
    );
    let failing = "<testsuite><testcase name=\"creates\"><failure message=\"no\"/></testcase>\
                   </testsuite>\n";
    let passing = "<testsuite><testcase name=\"creates\" time=\"0.01\"/></testsuite>\n";
    let v1 = "fn create() {}\n";
    let v2 = "fn create() { todo!() }\n";
    let stale = "is the one accepted for an earlier version of the task's files";
    // (the code, the report, the flags, the exit code, the attempt, the
    // report item's status, its reason)
    type Step<'a> = (
        &'a str,
        &'a str,
        &'a [&'a str],
        i32,
        u32,
        &'a str,
        Option<&'a str>,
    );
    let steps: [Step<'_>; 6] = [
        (v1, failing, &[], 1, 1, "failed", Some("1 failure: creates")),
        // The pipeline ran the tests again: the pass closes the series.
        (v1, passing, &[], 0, 2, "passed", None),
        // A new series; the code changed, the report put back as it was.
        (v2, passing, &[], 1, 1, "failed", Some(stale)),
        // Another series key, and one an operator starts afresh.
        (
            v2,
            passing,
            &["--series", "pr:7"],
            1,
            1,
            "failed",
            Some(stale),
        ),
        (v2, passing, &["--new-series"], 1, 1, "failed", Some(stale)),
        // A fresh checkout of the code that report was accepted for.
        (v1, passing, &[], 0, 2, "passed", None),
    ];
    for (i, (code, report, flags, exit, attempt, status, reason)) in steps.iter().enumerate() {
        env.write("src/orders.rs", code);
        env.write("reports/orders.xml", report);
        let mut args = vec!["verify", "--format", "json"];
        args.extend_from_slice(flags);
        let out = env.gate(&args).run();
        out.assert_exit(*exit);
        let doc = out.json();
        let step = i + 1;
        assert_eq!(doc["attempt"], *attempt, "step {step}: {doc}");
        let tests = item(&doc, "orders.tests").unwrap();
        assert_eq!(tests["status"], *status, "step {step}: {tests}");
        if let Some(reason) = reason {
            let said = tests["reason"].as_str().unwrap_or_default();
            assert!(said.contains(reason), "step {step}: {said}");
        }
    }
}

/// A report in git is not the pipeline's: its test step writes the report
/// after checkout, untracked or ignored. One the change committed (`git
/// add -f`) is a critical finding naming it and fails the task's report
/// check, without a base and against one, even where the same bytes were
/// accepted while ignored (and the item would otherwise carry); removed
/// from git and left ignored on disk, it is taken again.
#[test]
fn a_report_the_change_committed_is_a_critical_finding() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"committed\"\n[policy]\nbuiltin_parse = false\n\
         [[check]]\nid = \"hold\"\nrun = \"test ! -f hold\"\n\
         [[task]]\nid = \"orders\"\npaths = [\"src/**\"]\n\
         tests = { report = \"reports/orders.xml\" }\n",
    );
    env.write(".gitignore", "reports/\nhold\n.gate/\n");
    env.write("src/orders.rs", "fn create() {}\n");
    env.git(&["init", "-q", "-b", "main"]);
    env.git(&["add", "gate.toml", ".gitignore", "src"]);
    env.git(&["commit", "-q", "-m", "base"]);
    env.git(&["checkout", "-q", "-b", "change"]);
    env.write("src/orders.rs", "fn create() { let _ = 1; }\n");
    env.git(&["commit", "-q", "-am", "the change"]);
    env.write(
        "reports/orders.xml",
        "<testsuite><testcase name=\"creates\" time=\"0.01\"/></testsuite>\n",
    );
    // `hold` keeps the series open, so an unchanged report item would carry.
    env.write("hold", "");
    let commit_report = || {
        env.git(&["add", "-f", "reports/orders.xml"]);
        env.git(&["commit", "-q", "-m", "the report"]);
    };
    let untrack_report = || {
        env.git(&["rm", "-q", "--cached", "reports/orders.xml"]);
        env.git(&["commit", "-q", "-m", "no report"]);
        std::fs::remove_file(env.path().join("hold")).unwrap();
    };
    let committed = "is committed in git";
    // (what happens first, the flags, the exit code, the report item's
    // status, whether a critical finding names the report)
    type Step<'a> = (&'a dyn Fn(), &'a [&'a str], i32, &'a str, bool);
    let steps: [Step<'_>; 5] = [
        // Written after checkout, ignored: the pipeline's word.
        (&|| {}, &[], 1, "passed", false),
        (&commit_report, &[], 1, "failed", true),
        (&|| {}, &["--base", "main"], 1, "failed", true),
        (&untrack_report, &["--base", "main"], 0, "passed", false),
        (&|| {}, &[], 0, "passed", false),
    ];
    for (i, (before, flags, exit, status, named)) in steps.iter().enumerate() {
        before();
        let mut args = vec!["verify", "--format", "json"];
        args.extend_from_slice(flags);
        let out = env.gate(&args).run();
        out.assert_exit(*exit);
        let doc = out.json();
        let step = i + 1;
        let tests = item(&doc, "orders.tests").unwrap();
        assert_eq!(tests["status"], *status, "step {step}: {tests}");
        let critical: Vec<&serde_json::Value> = findings(&doc)
            .into_iter()
            .filter(|f| f["severity"] == "critical" && f["file"] == "reports/orders.xml")
            .collect();
        assert_eq!(
            !critical.is_empty(),
            *named,
            "step {step}: {}",
            doc["findings"]
        );
        if *named {
            let said = tests["reason"].as_str().unwrap_or_default();
            assert!(said.contains(committed), "step {step}: {said}");
            assert_ne!(doc["verdict"], "pass", "step {step}");
        }
    }
}

/// As root, items run as the run's own uid and the tracer runs inside
/// their sandbox, still root: an item that looks for its trace's folder
/// finds it closed, cannot plant a trace file there, and cannot kill the
/// tracer, so what it read is still recorded.
#[test]
fn an_item_cannot_reach_the_tracer_that_watches_it() {
    if !nix::unistd::geteuid().is_root() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root, where this must run"
        );
        return;
    }
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        r#"
[spec]
id = "spy"
[policy]
builtin_parse = false
[[task]]
id = "t"
paths = ["src/**", "tests/**"]
[[task.criterion]]
id = "spy"
text = "the spy finds nothing"
run = "sh tests/spy.sh"
inputs = ["tests/spy.sh"]
"#,
    );
    env.write(
        "tests/spy.sh",
        r#"set -u
cat src/read.txt >/dev/null
test -d /run/gate-trace || { echo "no trace folder inside"; exit 1; }
ls /run/gate-trace >/dev/null 2>&1 && { echo "the trace is readable"; exit 1; }
{ echo 'openat(AT_FDCWD</>, "/x", O_RDONLY) = 3' > /run/gate-trace/trace.1; } 2>/dev/null && { echo "a trace was planted"; exit 1; }
for p in /proc/[0-9]*; do
  [ "$(stat -c %u "$p")" = 0 ] || continue
  kill -9 "${p#/proc/}" 2>/dev/null && { echo "killed ${p#/proc/}"; exit 1; }
done
exit 0
"#,
    );
    env.write("src/read.txt", "watched\n");
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(status_of(&doc, "spy"), "passed", "{doc:#}");
    assert_eq!(
        item(&doc, "spy").unwrap()["read_beyond_inputs"],
        1,
        "{doc:#}"
    );
}

/// Every read is compared wherever it was made: an ignored file edited
/// between attempts, an ignored file probed for that a re-run check makes,
/// a hard link in an ignored folder to a tracked file edited in place each
/// run again and fail as `--full` fails, while two criteria that only
/// append to one log file carry independently.
#[test]
fn every_read_is_compared_wherever_it_was_made() {
    for mode in tracers() {
        reads_compared(mode);
    }
}

/// The sequence of [`every_read_is_compared_wherever_it_was_made`] with
/// `GATE_TRACE=mode`.
fn reads_compared(mode: &str) {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        r#"
[spec]
id = "reads"
[policy]
builtin_parse = false
[[check]]
id = "maker"
run = "sh maker.sh"
[[task]]
id = "t"
paths = ["src/**"]
[[task.criterion]]
id = "ign"
text = "the ignored setting holds"
run = "grep -qx ok .cache/ign.txt"
inputs = ["README.md"]
[[task.criterion]]
id = "probe"
text = "no flag is set"
run = "sleep 1; test ! -e .cache/flag"
inputs = ["README.md"]
[[task.criterion]]
id = "hard"
text = "the linked data holds"
run = "grep -qx ok .cache/hard.txt"
inputs = ["README.md"]
[[task.criterion]]
id = "log-a"
text = "a logs"
run = "sh a.sh"
inputs = ["a.sh"]
[[task.criterion]]
id = "log-b"
text = "b logs"
run = "echo b >> log/shared.log"
inputs = ["README.md"]
[[task.criterion]]
id = "other"
text = "other holds"
run = "grep -qx yes src/other.txt"
inputs = ["src/other.txt"]
"#,
    );
    env.write(".gitignore", ".gate/\n.cache/\nlog/\n");
    env.write("README.md", "reads\n");
    env.write("maker.sh", "true\n");
    env.write("a.sh", "echo a >> log/shared.log\n");
    env.write(".cache/ign.txt", "ok\n");
    env.write("data.txt", "ok\n");
    std::fs::hard_link(
        env.path().join("data.txt"),
        env.path().join(".cache/hard.txt"),
    )
    .unwrap();
    std::fs::create_dir_all(env.path().join("log")).unwrap();
    env.write("src/other.txt", "no\n");
    let verify = |extra: &[&str]| {
        let mut args = vec!["verify", "--format", "json"];
        args.extend_from_slice(extra);
        env.gate(&args).trace(mode).run()
    };
    let out = verify(&[]);
    out.assert_exit(1);
    let doc = out.json();
    for id in ["ign", "probe", "hard", "log-a", "log-b"] {
        assert_eq!(status_of(&doc, id), "passed", "{mode} {id}: {doc:#}");
    }

    // The retry fixes `other`, and changes what the others read where the
    // fingerprint does not look.
    env.write("src/other.txt", "yes\n");
    env.write(".cache/ign.txt", "bad\n");
    env.write("maker.sh", "mkdir -p .cache && : > .cache/flag\n");
    env.write("a.sh", "echo a2 >> log/shared.log\n");
    // In place: the link keeps its inode.
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(env.path().join("data.txt"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"bad\n"))
        .unwrap();
    let out = verify(&[]);
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["attempt"], 2, "{mode}");
    for id in ["ign", "probe", "hard"] {
        assert_eq!(status_of(&doc, id), "failed", "{mode} {id}: {doc:#}");
    }
    assert!(
        out.stderr.contains("running `probe` after all"),
        "{mode}: {}",
        out.stderr
    );
    assert_eq!(status_of(&doc, "log-a"), "passed", "{mode}");
    assert_eq!(status_of(&doc, "log-b"), "carried", "{mode}: {doc:#}");
    assert_eq!(status_of(&doc, "other"), "passed", "{mode}");

    // `--full` on the same tree fails on the same criteria.
    let out = verify(&["--full"]);
    out.assert_exit(1);
    let doc = out.json();
    for id in ["ign", "probe", "hard"] {
        assert_eq!(status_of(&doc, id), "failed", "{mode} --full {id}");
    }
}

/// A program on `PATH` outside the workspace is the host's toolchain: it
/// is not traced file by file, but replaced between attempts it makes the
/// retry carry nothing, and the criterion that ran it fails as `--full`
/// fails.
#[test]
fn a_toolchain_changed_between_attempts_carries_nothing() {
    let env = TestEnv::new();
    let tools = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tools.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let tool = tools.path().join("checker");
    let install = |code: u8| {
        let new = tools.path().join("checker.new");
        std::fs::write(&new, format!("#!/bin/sh\nexit {code}\n")).unwrap();
        std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::rename(&new, &tool).unwrap();
    };
    install(0);
    env.write(
        "gate.toml",
        r#"
[spec]
id = "toolchain"
[policy]
builtin_parse = false
[[task]]
id = "t"
paths = ["src/**"]
[[task.criterion]]
id = "checked"
text = "the checker agrees"
run = "checker"
inputs = ["README.md"]
[[task.criterion]]
id = "other"
text = "other holds"
run = "grep -qx yes src/other.txt"
inputs = ["src/other.txt"]
"#,
    );
    env.write("README.md", "toolchain\n");
    env.write("src/other.txt", "no\n");
    let path = std::env::join_paths(std::iter::once(tools.path().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let verify = |extra: &[&str]| {
        let mut args = vec!["verify", "--format", "json"];
        args.extend_from_slice(extra);
        env.gate(&args).env("PATH", &path).run()
    };
    let out = verify(&[]);
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(status_of(&doc, "checked"), "passed", "{doc:#}");
    assert_eq!(status_of(&doc, "other"), "failed");

    // The same toolchain: the pass is carried.
    env.write("src/other.txt", "still no\n");
    let doc = verify(&[]).json();
    assert_eq!(status_of(&doc, "checked"), "carried", "{doc:#}");

    // The checker upgraded to one that disagrees; `other` fixed.
    install(1);
    env.write("src/other.txt", "yes\n");
    let out = verify(&[]);
    let doc = out.json();
    assert_eq!(status_of(&doc, "checked"), "failed", "{doc:#}");
    assert_eq!(status_of(&doc, "other"), "passed");
    assert!(
        out.stderr.contains("carrying 0 forward"),
        "nothing is carried: {}",
        out.stderr
    );
    out.assert_exit(1);
    // A new series: the same failure again would be a doom loop's to judge.
    let full = verify(&["--full", "--new-series"]);
    assert_eq!(full.code, out.code, "the retry ends as --full does");
    assert_eq!(status_of(&full.json(), "checked"), "failed");
}
