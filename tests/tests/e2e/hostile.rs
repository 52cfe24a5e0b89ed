//! Large and hostile workspaces: the run completes or fails with a clear
//! error, and memory stays bounded.

use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::process::Command;
use std::time::Duration;

use gate_tests::{TestEnv, gate_bin, gate_command, hermetic};

/// Peak resident memory of the finished children of this test process, in MiB.
fn children_peak_mib() -> u64 {
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage");
    // Linux reports kilobytes.
    u64::try_from(usage.max_rss()).unwrap_or(0) / 1024
}

const SPEC: &str = "[spec]\nid = \"hostile\"\n[[check]]\nid = \"c\"\nrun = \"true\"\n[[task]]\nid = \"t\"\npaths = [\"**\"]\n";

#[test]
fn odd_names_binary_files_symlink_loops_and_a_yaml_alias_bomb() {
    let env = TestEnv::new();
    env.write("gate.toml", SPEC);
    // A name that is not UTF-8, binary content, invalid UTF-8 in a text file.
    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9 menu.txt");
    std::fs::write(env.path().join(odd), b"bonjour").unwrap();
    let binary: Vec<u8> = (0..=255u8).cycle().take(64 * 1024).collect();
    std::fs::write(env.path().join("blob.bin"), &binary).unwrap();
    std::fs::write(env.path().join("notes.txt"), b"ok \xff\xfe not utf-8\n").unwrap();
    // Symlink loops, a deep chain, a dangling link, a folder loop.
    symlink("loop-b", env.path().join("loop-a")).unwrap();
    symlink("loop-a", env.path().join("loop-b")).unwrap();
    env.write("chain/target.txt", "end of the chain\n");
    for i in 0..60 {
        let to = if i == 0 {
            "target.txt".to_owned()
        } else {
            format!("link{}", i - 1)
        };
        symlink(to, env.path().join(format!("chain/link{i}"))).unwrap();
    }
    symlink("does/not/exist", env.path().join("dangling")).unwrap();
    std::fs::create_dir_all(env.path().join("dir")).unwrap();
    symlink("..", env.path().join("dir/up")).unwrap();
    // "Billion laughs": valid YAML of a few hundred bytes whose aliases
    // expand to 9^9 nodes, read by the built-in parse check.
    let mut laughs = String::from("l0: &l0 lol\n");
    for i in 1..=9 {
        let aliases = vec![format!("*l{}", i - 1); 9].join(", ");
        writeln!(laughs, "l{i}: &l{i} [{aliases}]").unwrap();
    }
    env.write("config/laughs.yaml", &laughs);
    let out = env
        .gate(&["verify", "--format", "json"])
        .timeout(Duration::from_secs(60))
        .run();
    out.assert_exit(0);
    assert!(
        out.json()["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["status"] == "passed")
    );
}

/// Files the spec or a rules file names by path, planted in the workspace
/// as symbolic links to files outside it: a task's JUnit report (a passing
/// one, so trusting it would pass the task) and a house rule's case
/// screenshot (a real PNG, so reading it would go on to a model). The gate
/// reads neither and says why.
#[test]
fn links_that_lead_out_of_the_workspace_are_never_read() {
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";
    const JUNIT: &str =
        r#"<testsuite name="t" tests="1" failures="0"><testcase name="ok"/></testsuite>"#;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("junit.xml"), JUNIT).unwrap();
    std::fs::write(outside.path().join("shot.png"), PNG).unwrap();

    // The report.
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"out\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
         tests = { report = \"reports/junit.xml\" }\n",
    );
    env.write("src/a.py", "x = 1\n");
    std::fs::create_dir_all(env.path().join("reports")).unwrap();
    symlink(
        outside.path().join("junit.xml"),
        env.path().join("reports/junit.xml"),
    )
    .unwrap();
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(1);
    let doc = out.json();
    let tests = gate_tests::item(&doc, "t.tests").unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(tests["status"], "failed", "{tests:#}");
    let reason = tests["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("leads out of the workspace"), "{reason}");

    // The screenshot.
    let env = TestEnv::new();
    env.write("gate.toml", SPEC);
    env.write(
        "docs/review/rules.toml",
        r#"[[rule]]
id = "one-primary"
applies = ["web/**"]
mistake = "More than one primary button"
fix = "Keep one"
[[rule.cases.violating]]
images = ["docs/review/cases/bad.png"]
[[rule.cases.compliant]]
images = ["docs/review/cases/good.png"]
"#,
    );
    std::fs::create_dir_all(env.path().join("docs/review/cases")).unwrap();
    std::fs::write(env.path().join("docs/review/cases/good.png"), PNG).unwrap();
    symlink(
        outside.path().join("shot.png"),
        env.path().join("docs/review/cases/bad.png"),
    )
    .unwrap();
    for command in [&["verify"][..], &["rules", "test"]] {
        env.gate(command).run().assert_exit(2).stderr_has(
            "`docs/review/cases/bad.png` cannot be read: it leads out of the workspace through a symbolic link",
        );
    }
}

/// A check runs code an agent wrote: it must not see the gate's own
/// settings, least of all the signing key (PEM text in `GATE_SIGNING_KEY`)
/// or the ledger's URL with its password, or it could sign and record as
/// the gate.
#[test]
fn checks_never_see_the_gates_own_settings() {
    let keys = TestEnv::new();
    keys.gate(&["keys", "generate"]).run().assert_exit(0);
    let pem = keys.read(".gate/keys/signing.key");
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"env\"\n[[check]]\nid = \"peek\"\nrun = \"env > seen.txt\"\n",
    );
    let ledger = env.path().join("elsewhere/ledger.db");
    let out = env
        .gate(&["verify", "--format", "json"])
        .env("GATE_SIGNING_KEY", &pem)
        .env("GATE_LEDGER", &ledger)
        .env("GATE_OFFLINE", "1")
        .run();
    out.assert_exit(0);
    assert!(ledger.exists(), "the gate itself used GATE_LEDGER");
    let seen = env.read("seen.txt");
    assert!(
        seen.contains("PATH="),
        "the check saw an environment: {seen}"
    );
    for line in seen.lines() {
        assert!(!line.starts_with("GATE_"), "the check saw {line}");
    }
    assert!(
        !seen.contains("PRIVATE KEY"),
        "the check saw the signing key"
    );
}

#[test]
fn a_hundred_thousand_files_and_a_two_gib_file_in_bounded_memory() {
    let env = TestEnv::new();
    env.write("gate.toml", SPEC);
    for d in 0..100 {
        let dir = env.path().join(format!("d{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..1000 {
            std::fs::write(dir.join(format!("f{f:04}.txt")), format!("{d} {f}\n")).unwrap();
        }
    }
    // Sparse: 2 GiB to hash without 2 GiB on disk.
    let big = std::fs::File::create(env.path().join("big.bin")).unwrap();
    big.set_len(2 * 1024 * 1024 * 1024).unwrap();
    drop(big);
    let out = env
        .gate(&["verify", "--format", "json"])
        .timeout(Duration::from_secs(300))
        .run();
    out.assert_exit(0);
    let peak = children_peak_mib();
    assert!(peak < 400, "the gate peaked at {peak} MiB");
}

#[test]
fn a_file_the_gate_may_not_read_is_a_clear_error() {
    let env = TestEnv::new();
    env.write("gate.toml", SPEC);
    env.write("secret/locked.txt", "no\n");
    let locked = env.path().join("secret/locked.txt");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let root = nix::unistd::Uid::effective().is_root();
    let out = if root {
        // Root reads everything: run the gate as an unprivileged user.
        std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::set_permissions(
            env.path().join("secret"),
            std::fs::Permissions::from_mode(0o777),
        )
        .unwrap();
        std::fs::set_permissions(
            env.path().join("gate.toml"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        #[allow(clippy::disallowed_methods)] // drives the real binary as another user
        hermetic(&mut Command::new("setpriv"))
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(gate_bin())
            .args(["verify", "--workspace"])
            .arg(env.path())
            .env("HOME", env.path())
            .output()
            .expect("setpriv runs the gate as nobody")
    } else {
        gate_command()
            .args(["verify", "--workspace"])
            .arg(env.path())
            .output()
            .unwrap()
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "stderr: {stderr}");
    assert!(
        stderr.contains("locked.txt") && stderr.contains("ermission denied"),
        "{stderr}"
    );
}

/// Whether `text` could fool a person reading it: a raw ESC, CR or C1
/// control, or a line that starts with the forged verdict.
fn fools_a_reader(text: &str) -> Option<String> {
    if let Some(c) = text
        .chars()
        .find(|&c| c == '\x1b' || c == '\r' || ('\u{80}'..='\u{9f}').contains(&c))
    {
        return Some(format!("a raw {c:?}"));
    }
    text.lines()
        .find(|l| l.trim_start().starts_with("verdict: PASS"))
        .map(|l| format!("the line {l:?}"))
}

/// A changed file whose name holds a line break, a carriage return, a
/// forged `verdict: PASS` and an ESC conceal sequence, and a check whose
/// output holds carriage returns, ESC sequences and a C1 control: every
/// format a person reads shows them escaped, and none has a line that
/// starts with the forged verdict, while `json` keeps the name exact.
#[test]
fn a_file_name_or_an_output_tail_cannot_forge_a_verdict_line() {
    const NAME: &str = "x\n\rverdict: PASS\x1b[8m.json";
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"screen\"\n[[check]]\nid = \"noisy\"\n\
         run = \"printf 'building\\\\r\\\\033[8mverdict: PASS\\\\033[0m\\\\nstep\\\\302\\\\233 two\\\\033[2K\\\\rdone\\\\n'; exit 1\"\n\
         [[task]]\nid = \"t\"\npaths = [\"**\"]\n",
    );
    // Not JSON, so the parse check fails there and names the file.
    env.write(NAME, "{");
    let formats = ["markdown", "sarif", "junit", "github", "gitlab", "json"];
    let mut args = vec![
        "verify".to_owned(),
        "--format".to_owned(),
        "human".to_owned(),
    ];
    for f in formats {
        args.push("--report".to_owned());
        args.push(format!("{f}=.gate/reports/out.{f}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = env.gate(&args).run();
    run.assert_exit(1);
    let json: serde_json::Value =
        serde_json::from_str(&env.read(".gate/reports/out.json")).unwrap();
    let parse = gate_tests::item(&json, "builtin.parse").unwrap();
    assert_eq!(
        parse["locations"][0]["file"], NAME,
        "json keeps the name exact"
    );
    let noisy = gate_tests::item(&json, "noisy").unwrap();
    assert!(noisy["output_tail"].as_str().unwrap().contains("\r\x1b[8m"));
    let run_id = json["run_id"].as_str().unwrap();

    let mut shown = vec![
        ("human".to_owned(), run.stdout.clone()),
        ("stderr".to_owned(), run.stderr.clone()),
    ];
    for f in formats.iter().filter(|f| **f != "json") {
        shown.push(((*f).to_owned(), env.read(&format!(".gate/reports/out.{f}"))));
    }
    for f in ["human", "markdown", "github"] {
        let out = env.gate(&["evidence", "show", run_id, "--format", f]).run();
        out.assert_exit(0);
        shown.push((format!("evidence show --format {f}"), out.stdout));
    }
    for (what, text) in &shown {
        if let Some(how) = fools_a_reader(text) {
            panic!("{what} holds {how}:\n{text}");
        }
    }
    let escaped = "x\\n\\rverdict: PASS\\x1b[8m.json";
    for (what, text) in &shown[..1] {
        assert!(
            text.contains(escaped),
            "{what} shows the name escaped:\n{text}"
        );
        assert!(
            text.contains("building\\r\\x1b[8mverdict: PASS\\x1b[0m"),
            "{what} shows the tail escaped:\n{text}"
        );
        assert!(text.contains("step\\u{9b} two"), "{what}:\n{text}");
    }
}

/// With the state kept outside the workspace, a check replaces the report
/// folder with a link to a host folder while the run goes: the gate, which
/// writes its reports after the checks, writes nothing through it, names
/// the link, and the verdict stands (the exit code is the one for a report
/// not written).
#[test]
fn a_report_folder_made_a_link_while_the_run_goes_is_not_written_through() {
    let env = TestEnv::new();
    let host = TestEnv::new();
    let state = TestEnv::new();
    env.write(
        "gate.toml",
        &format!(
            "[spec]\nid = \"place\"\n[[check]]\nid = \"plant\"\n\
             run = \"mkdir -p .gate && rm -rf .gate/reports && ln -s {} .gate/reports\"\n\
             [[task]]\nid = \"t\"\npaths = [\"**\"]\n",
            host.path().display()
        ),
    );
    std::fs::create_dir_all(env.path().join(".gate/reports")).unwrap();
    let out = env
        .gate(&[
            "verify",
            "--format",
            "json",
            "--report",
            "sarif=.gate/reports/gate.sarif",
            "--report",
            "markdown=.gate/reports/deep/gate.md",
        ])
        .env("GATE_STATE_DIR", state.path())
        .run();
    assert!(
        std::fs::symlink_metadata(env.path().join(".gate/reports"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the check planted its link"
    );
    let written: Vec<_> = std::fs::read_dir(host.path()).unwrap().collect();
    assert!(written.is_empty(), "written outside: {written:?}");
    for (format, file) in [("sarif", "gate.sarif"), ("markdown", "deep/gate.md")] {
        out.stderr_has(&format!(
            "gate: not writing the {format} report .gate/reports/{file}: \
             .gate/reports is a symbolic link"
        ));
    }
    // The verdict is the run's; the exit code is a report not written's.
    let run = out.json();
    assert_eq!(run["verdict"], "pass", "{}", out.stderr);
    out.assert_exit(4);
}
