//! The agent under review cannot touch the gate: each probe is a check the
//! "agent" wrote, trying one way to reach the gate's secrets, records or
//! process, or to outlive the run. Each probe writes what it saw into the
//! workspace and passes, so the run itself passes; the test then reads what
//! each probe saw. As root (CI runs as root) and as an unprivileged user.

use std::fmt::Write as _;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use gate_tests::{TestEnv, pids_with, unique_token};

use super::pages::{axe, chromium};
use serde_json::Value;

/// Who runs the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum As {
    Root,
    Nobody,
}

const NOBODY: u32 = 65534;

/// Gives `path` (and everything under it) to `nobody`.
fn give_to_nobody(path: &Path) {
    #[allow(clippy::disallowed_methods)] // test set-up
    let ok = Command::new("chown")
        .args(["-R", &format!("{NOBODY}:{NOBODY}")])
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "chown {}", path.display());
}

/// A copy of the gate binary that `nobody` can run (the build's own may sit
/// under a home folder only root can enter).
fn gate_for_nobody(dir: &Path) -> PathBuf {
    let bin = dir.join("gate");
    std::fs::copy(gate_tests::gate_bin(), &bin).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// The gate run as `who`, hermetic: for `nobody`, a copy of the binary in
/// `bin_dir`, and the folders of `owned` given to it (and opened to it).
pub(super) fn gate_as(who: As, bin_dir: &Path, owned: &[&Path]) -> Command {
    let mut cmd = match who {
        As::Root => {
            #[allow(clippy::disallowed_methods)] // tests drive the real binary
            Command::new(gate_tests::gate_bin())
        }
        As::Nobody => {
            let bin = gate_for_nobody(bin_dir);
            for p in owned {
                give_to_nobody(p);
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
            #[allow(clippy::disallowed_methods)] // the gate as an unprivileged user
            let mut c = Command::new("setpriv");
            c.args([
                &format!("--reuid={NOBODY}"),
                &format!("--regid={NOBODY}"),
                "--clear-groups",
                "--inh-caps=-all",
                "--",
            ])
            .arg(bin);
            c
        }
    };
    gate_tests::hermetic(&mut cmd);
    cmd
}

/// The probes: check id → shell command. `{KEY}` is the key file's path,
/// `{STATE}` the state directory, `{TOKEN}` this run's token.
const PROBES: &[(&str, &str)] = &[
    (
        "environ",
        "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\"; done > probe/environ.txt 2>/dev/null; exit 0",
    ),
    ("env", "env > probe/env.txt; exit 0"),
    ("keyfile", "cat '{KEY}' > probe/keyfile.txt 2>&1; exit 0"),
    ("symlink", "cat key-link > probe/symlink.txt 2>&1; exit 0"),
    (
        "umount",
        "(umount '{KEY}'; umount -l '{KEY}'; umount '{STATE}'; cat '{KEY}') > probe/umount.txt 2>&1; exit 0",
    ),
    (
        "state-read",
        "(ls -la '{STATE}' '{STATE}/keys'; head -c 200 '{STATE}/ledger.db') > probe/state-read.txt 2>&1; exit 0",
    ),
    (
        "state-write",
        "(mkdir -p '{STATE}/bundles' && touch '{STATE}/bundles/planted' && echo WROTE) > probe/state-write.txt 2>&1; exit 0",
    ),
    (
        "processes",
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done > probe/processes.txt 2>/dev/null; exit 0",
    ),
    (
        "signal",
        // The word is split so this command line does not match itself.
        "w=ver; w=${w}ify; for p in /proc/[0-9]*; do if tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -q \" $w\"; then kill -STOP ${p#/proc/} && echo \"stopped ${p#/proc/}\"; fi; done > probe/signal.txt 2>&1; exit 0",
    ),
    (
        "daemon",
        "setsid sh -c 'sleep 300' {TOKEN}-daemon > /dev/null 2>&1 < /dev/null & nohup sh -c 'sleep 300' {TOKEN}-nohup > /dev/null 2>&1 & exit 0",
    ),
    (
        "host-tmp",
        "(touch /tmp/{TOKEN}-tmp && echo WROTE) > probe/host-tmp.txt 2>&1; exit 0",
    ),
    (
        "home",
        "(touch \"$HOME/{TOKEN}-home\" && echo WROTE; touch '{HOME}/{TOKEN}-realhome' && echo WROTE) > probe/home.txt 2>&1; exit 0",
    ),
];

/// The secrets the gate's environment holds while the probes run.
const SECRETS: &[(&str, &str)] = &[
    ("OPENAI_API_KEY", "sk-probe-openai-0123456789abcdef"),
    ("AWS_SECRET_ACCESS_KEY", "probe-aws-secret-0123456789"),
    ("PGPASSWORD", "probe-pg-password-0123456789"),
    ("GITHUB_TOKEN", "ghp_probe0123456789abcdef0123456789ab"),
    ("DEPLOY_PASSWORD", "probe-deploy-password-0123"),
];

fn probe_spec(key: &Path, state: &Path, home: &Path, token: &str) -> String {
    let mut spec = String::from("[spec]\nid = \"probes\"\n[policy]\nbuiltin_secrets = false\n");
    for (id, run) in PROBES {
        let run = run
            .replace("{KEY}", &key.display().to_string())
            .replace("{STATE}", &state.display().to_string())
            .replace("{HOME}", &home.display().to_string())
            .replace("{TOKEN}", token);
        let _ = writeln!(spec, "[[check]]\nid = \"{id}\"\nrun = '''{run}'''");
    }
    spec
}

/// Runs the probes with the key given as PEM text (`in_env`) or as a path,
/// as `who`, and returns the workspace and what each probe wrote.
fn probe(who: As, key_in_env: bool, state_in_workspace: bool) -> (TestEnv, String, Value) {
    let env = TestEnv::new();
    // Outside /tmp, which the sandbox replaces anyway: what hides the key,
    // the state directory and the home is the sandbox's masks.
    let outside = tempfile::Builder::new()
        .prefix("gate-probe-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let state = if state_in_workspace {
        env.path().join(".gate")
    } else {
        outside.path().join("state")
    };
    let home = outside.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let token = unique_token("probe");
    // A key pair the gate signs with.
    let keys = outside.path().join("keys");
    env.gate(&["keys", "generate", "--state", &keys.display().to_string()])
        .run()
        .assert_exit(0);
    let key = keys.join("keys/signing.key");
    let pem = std::fs::read_to_string(&key).unwrap();
    if key_in_env {
        // The key lives only in the environment: a file the gate is not
        // told of is not the gate's to hide.
        std::fs::remove_file(&key).unwrap();
    }
    env.write("gate.toml", &probe_spec(&key, &state, &home, &token));
    std::fs::create_dir_all(env.path().join("probe")).unwrap();
    // The agent links the key file into the workspace before the run.
    symlink(&key, env.path().join("key-link")).unwrap();
    let bin_dir = tempfile::tempdir().unwrap();
    let mut cmd = gate_as(who, bin_dir.path(), &[env.path(), outside.path()]);
    cmd.args(["verify", "--offline", "--format", "json"])
        .current_dir(env.path())
        .env("HOME", &home);
    if !state_in_workspace {
        cmd.env("GATE_STATE_DIR", &state);
    }
    cmd.env(
        "GATE_SIGNING_KEY",
        if key_in_env {
            pem
        } else {
            key.display().to_string()
        },
    );
    for (name, value) in SECRETS {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{who:?}: the run itself passes\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    // Nothing the probes started outlives the run.
    for leftover in ["daemon", "nohup"] {
        let pids = pids_with(&format!("{token}-{leftover}"));
        assert!(
            pids.is_empty(),
            "{who:?}: a {leftover} outlived the run: {pids:?}"
        );
    }
    for written in [
        PathBuf::from(format!("/tmp/{token}-tmp")),
        home.join(format!("{token}-home")),
        home.join(format!("{token}-realhome")),
        state.join("bundles/planted"),
    ] {
        assert!(
            !written.exists(),
            "{who:?}: a probe wrote {} outside the workspace",
            written.display()
        );
    }
    drop(outside);
    drop(bin_dir);
    (env, token, doc)
}

#[test]
fn nothing_the_agent_wrote_reaches_the_gates_secrets_records_or_process() {
    for who in [As::Root, As::Nobody] {
        // (the key as PEM text in the environment, the state directory in
        // the workspace rather than outside it)
        for (key_in_env, state_in_workspace) in [(true, false), (false, false), (false, true)] {
            let case = format!(
                "{who:?}, key {}, state {}",
                if key_in_env { "in env" } else { "in a file" },
                if state_in_workspace {
                    "in the workspace"
                } else {
                    "outside"
                }
            );
            let (env, _token, doc) = probe(who, key_in_env, state_in_workspace);
            assert_eq!(doc["isolation"]["kind"], "bwrap", "{case}: {doc}");
            let saw = |probe: &str| env.read(&format!("probe/{probe}.txt"));
            for probe in [
                "environ",
                "env",
                "keyfile",
                "symlink",
                "umount",
                "state-read",
            ] {
                let text = saw(probe);
                assert!(
                    !text.contains("PRIVATE KEY"),
                    "{case}: {probe} read the signing key:\n{text}"
                );
                for (name, value) in SECRETS {
                    assert!(!text.contains(value), "{case}: {probe} saw {name}:\n{text}");
                }
                assert!(
                    !text.contains("GATE_"),
                    "{case}: {probe} saw a GATE_ variable:\n{text}"
                );
            }
            // A state directory outside the workspace is not there at all
            // (what a probe writes at its path lands in the run's own
            // `/var/tmp`); one inside is read-only. `probe` checks the host.
            if state_in_workspace {
                assert!(
                    !saw("state-write").contains("WROTE"),
                    "{case}: the state directory was written"
                );
            }
            // The state directory is there but empty: no ledger, no keys.
            let state = saw("state-read");
            assert!(
                !state.contains("SQLite"),
                "{case}: the ledger was read:\n{state}"
            );
            assert!(
                !state.contains("signing"),
                "{case}: the keys were listed:\n{state}"
            );
            // The gate's process is out of sight, so nothing could signal it.
            let processes = saw("processes");
            assert!(
                !processes.contains(" verify"),
                "{case}: the gate's process is visible:\n{processes}"
            );
            assert!(
                !saw("signal").contains("stopped"),
                "{case}: a probe signalled a process: {}",
                saw("signal")
            );
        }
    }
}

/// A key pair made in a folder of its own under `/var/tmp` (outside the
/// run's `/tmp`): the folder, and the state directory that holds `keys/`.
fn keys_outside(env: &TestEnv, prefix: &str) -> (tempfile::TempDir, PathBuf) {
    let outside = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/var/tmp")
        .unwrap();
    let state = outside.path().join("keys");
    env.gate(&["keys", "generate", "--state", &state.display().to_string()])
        .run()
        .assert_exit(0);
    (outside, state)
}

/// The signing key in a folder the sandbox shows (`[sandbox] readable`):
/// an item reads the folder's other files, and finds the key's name
/// neither in the folder's listing nor in the sandbox's mount table.
#[test]
fn a_hidden_key_is_named_nowhere_inside_the_sandbox() {
    for who in [As::Root, As::Nobody] {
        let env = TestEnv::new();
        let (outside, state) = keys_outside(&env, "gate-keys-");
        let dir = state.join("keys");
        // A folder others may list: its public key is theirs to read.
        for open in [&state, &dir] {
            std::fs::set_permissions(open, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let d = dir.display();
        env.write(
            "gate.toml",
            &format!(
                "[spec]\nid = \"named\"\n[policy]\nbuiltin_secrets = false\n\
                 [[check]]\nid = \"look\"\nrun = '''ls -a {d} > probe/ls.txt; \
                 cat /proc/self/mountinfo > probe/mountinfo.txt; cat {d}/signing.pub > probe/pub.txt'''\n\
                 [sandbox]\nmode = \"required\"\nreadable = [\"{d}\"]\n"
            ),
        );
        std::fs::create_dir_all(env.path().join("probe")).unwrap();
        let bin_dir = tempfile::tempdir().unwrap();
        let mut cmd = gate_as(who, bin_dir.path(), &[env.path(), outside.path()]);
        cmd.args(["verify", "--offline", "--format", "json"])
            .current_dir(env.path())
            .env("GATE_SIGNING_KEY", dir.join("signing.key"));
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{who:?}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let saw = |probe: &str| env.read(&format!("probe/{probe}.txt"));
        assert!(saw("pub").contains("PUBLIC KEY"), "{who:?}: {}", saw("pub"));
        assert!(saw("ls").contains("signing.pub"), "{who:?}: {}", saw("ls"));
        for probe in ["ls", "mountinfo"] {
            assert!(
                !saw(probe).contains("signing.key"),
                "{who:?}: {probe} names the key:\n{}",
                saw(probe)
            );
        }
    }
}

/// A repository whose base holds one criterion, decided by the verifier
/// `scripts/e2e.sh`, and a change that does not implement the feature.
fn exam() -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"exam\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
         [[task.criterion]]\nid = \"e2e\"\ntext = \"the feature works\"\nrun = \"./scripts/e2e.sh\"\n",
    );
    env.write(".gitignore", ".gate/\n");
    env.script("scripts/e2e.sh", "#!/bin/sh\ngrep -q feature src/app.txt\n");
    env.write("src/app.txt", "old\n");
    env.git(&["init", "-q", "-b", "main"]);
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "base"]);
    env.write("src/app.txt", "still old\n");
    env
}

fn titles(doc: &Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["severity"].as_str().unwrap(),
                f["title"].as_str().unwrap()
            )
        })
        .collect()
}

/// How the agent edits the exam it fails.
fn tamper(env: &TestEnv, how: &str) {
    let path = env.path().join("scripts/e2e.sh");
    match how {
        "edited" => {
            env.script("scripts/e2e.sh", "#!/bin/sh\nexit 0\n");
        }
        "deleted" => std::fs::remove_file(&path).unwrap(),
        "chmod -x" => {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        "symlink" => {
            std::fs::remove_file(&path).unwrap();
            symlink("/bin/true", &path).unwrap();
        }
        "renamed" => {
            std::fs::rename(&path, env.path().join("scripts/e2e-old.sh")).unwrap();
            env.script("scripts/e2e2.sh", "#!/bin/sh\nexit 0\n");
            let spec = env.read("gate.toml").replace("e2e.sh", "e2e2.sh");
            env.write("gate.toml", &spec);
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_change_that_edits_its_exam_is_caught_with_a_base_and_across_attempts() {
    // (how, the finding's title, whether the base's version ran)
    let cases = [
        (
            "edited",
            "critical The change modifies the verifier `scripts/e2e.sh`",
            true,
        ),
        (
            "deleted",
            "critical The change deletes or renames the verifier `scripts/e2e.sh`",
            false,
        ),
        (
            "chmod -x",
            "critical The change makes non-executable the verifier `scripts/e2e.sh`",
            true,
        ),
        (
            "symlink",
            "critical The change replaces with a symbolic link the verifier `scripts/e2e.sh`",
            false,
        ),
        (
            "renamed",
            "critical The change deletes or renames the verifier `scripts/e2e.sh`",
            false,
        ),
    ];
    for (how, title, base_version_ran) in cases {
        // With a base: the comparison is with the base commit.
        let env = exam();
        tamper(&env, how);
        let out = env
            .gate(&["verify", "--base", "main", "--format", "json"])
            .run();
        out.assert_exit(1);
        let doc = out.json();
        let found = titles(&doc);
        assert!(found.iter().any(|t| t == title), "{how}: {found:#?}");
        let e2e = gate_tests::item(&doc, "e2e").unwrap_or(&Value::Null);
        if base_version_ran {
            // The base's version ran, and it fails the missing feature.
            assert_eq!(e2e["status"], "failed", "{how}: {e2e}");
            assert_eq!(e2e["reason"], "exited with status 1", "{how}: {e2e}");
        }

        // Without a base: the series' first attempt is the reference.
        let env = exam();
        env.gate(&["verify"]).run().assert_exit(1);
        tamper(&env, how);
        let out = env.gate(&["verify", "--format", "json"]).run();
        out.assert_exit(1);
        let doc = out.json();
        assert_eq!(doc["attempt"], 2, "{how}");
        let found = titles(&doc);
        assert!(
            found.iter().any(|t| t == title),
            "{how}, no base: {found:#?}"
        );
    }
}

/// A verifier written with the change is allowed, said to be
/// self-certified, and held to fail-to-pass: it runs on the base too, and
/// one that passes there as well fails the run.
#[test]
fn a_new_acceptance_script_is_self_certified_and_must_fail_without_the_change() {
    let certified = "warning `new` runs `tests/new_check.py`, which the change created: its acceptance is self-certified";
    let loose = "critical criterion `new` passes without the change: it does not show the feature";
    // (the new script, exit, its base result, whether the run fails for it)
    let cases = [
        (
            "import sys\nsys.exit(0 if 'feature' in open('src/app.txt').read() else 1)\n",
            0,
            "failed",
            false,
        ),
        ("print('ok')\n", 1, "passed", true),
    ];
    for (script, exit, on_base, fails) in cases {
        let env = exam();
        env.write("src/app.txt", "feature\n");
        let spec = env.read("gate.toml")
            + "[[task.criterion]]\nid = \"new\"\ntext = \"also\"\nrun = \"python3 tests/new_check.py\"\n";
        env.write("gate.toml", &spec);
        env.write("tests/new_check.py", script);
        let out = env
            .gate(&["verify", "--base", "main", "--format", "json"])
            .run();
        out.assert_exit(exit);
        let doc = out.json();
        let found = titles(&doc);
        assert!(found.contains(&certified.to_owned()), "{found:#?}");
        assert_eq!(found.contains(&loose.to_owned()), fails, "{found:#?}");
        let new = gate_tests::item(&doc, "new").unwrap();
        assert_eq!(new["status"], "passed", "{new:#}");
        assert_eq!(new["expect"], "fail-to-pass", "{new:#}");
        assert_eq!(new["base_status"]["status"], on_base, "{new:#}");
    }
}

#[test]
fn an_override_lets_an_edited_exam_through_signed_and_counted() {
    let env = exam();
    tamper(&env, "edited");
    let out = env
        .gate(&["verify", "--base", "main", "--format", "json"])
        .run();
    out.assert_exit(1);
    let run = out.json()["run_id"].as_str().unwrap().to_owned();
    env.gate(&[
        "override",
        &run,
        "--reason",
        "the script was wrong",
        "--by",
        "ana",
    ])
    .run()
    .assert_exit(0);
    let out = env
        .gate(&["verify", "--base", "main", "--format", "json"])
        .run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["overridden"], true);
    // The critical finding stays on the record the override let through.
    assert!(
        titles(&doc)
            .iter()
            .any(|t| t.contains("modifies the verifier"))
    );
    let report = env.gate(&["report", "--format", "json"]).run();
    report.assert_exit(0);
    assert!(report.json()["override_rate"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_verifier_that_never_existed_is_the_specs_fault_once_its_checks_ran() {
    // (what the spec runs, set-up, exit, what stderr says)
    let cases = [
        (
            "./scripts/check_feed.sh",
            "",
            2,
            "`c` runs `scripts/check_feed.sh`, which is not in the workspace and was not before the change",
        ),
        (
            "./scripts/plain.sh",
            "plain",
            2,
            "`c` runs `scripts/plain.sh` directly, but it is not executable",
        ),
        // A verifier a build check makes counts.
        ("./bin/check", "build", 0, ""),
    ];
    for (run, setup, exit, says) in cases {
        let env = TestEnv::new();
        let mut spec = String::from("[spec]\nid = \"v\"\n");
        if setup == "build" {
            spec.push_str(
                "[[check]]\nid = \"build\"\nrun = \"mkdir -p bin && printf '#!/bin/sh\\\\nexit 0\\\\n' > bin/check && chmod +x bin/check\"\n",
            );
        }
        let _ = writeln!(
            spec,
            "[[task]]\nid = \"t\"\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\nrun = \"{run}\""
        );
        if setup == "build" {
            spec.push_str("after = [\"build\"]\n");
        }
        env.write("gate.toml", &spec);
        if setup == "plain" {
            env.write("scripts/plain.sh", "#!/bin/sh\nexit 0\n");
        }
        let out = env.gate(&["verify"]).run();
        out.assert_exit(exit);
        if !says.is_empty() {
            out.stderr_has(says);
        }
        // It names a file of the workspace: not an unprotected verifier.
        assert!(
            !out.stderr.contains("nothing protects"),
            "{run}: {}",
            out.stderr
        );
    }
}

/// Sandboxed, and unisolated too (where the gate's own git runs on the
/// host and a command the repository configured would leave its marker):
/// the base is the commit resolved before any check ran, and nothing the
/// workspace's git configuration names runs.
#[test]
fn the_gates_own_git_runs_nothing_the_workspace_configures_and_reads_the_base_it_resolved() {
    for sandboxed in [true, false] {
        let env = TestEnv::new();
        let token = unique_token("git");
        let marker = std::env::temp_dir().join(&token);
        let spec = "[spec]\nid = \"g\"\n[[check]]\nid = \"rewrite-base\"\nrun = \"git update-ref refs/heads/main HEAD; git config core.fsmonitor true; exit 0\"\n\
                    [[task]]\nid = \"t\"\npaths = [\"src/**\"]\n[[task.criterion]]\nid = \"hard\"\ntext = \"the hard one\"\nrun = \"grep -q done src/x.txt\"\n";
        env.write("gate.toml", spec);
        env.write(".gitignore", ".gate/\n");
        env.write("src/x.txt", "todo\n");
        env.git(&["init", "-q", "-b", "main"]);
        env.git(&["add", "."]);
        env.git(&["commit", "-q", "-m", "base"]);
        let base = env.git(&["rev-parse", "HEAD"]);
        env.git(&["checkout", "-q", "-b", "feature"]);
        env.write("src/x.txt", "todo, still\n");
        env.git(&["commit", "-qam", "work"]);
        // The agent deletes the criterion it cannot pass, and configures the
        // repository to run its own commands when git looks at it.
        let touch = format!("touch {}", marker.display());
        env.write(
            "gate.toml",
            &spec.replace(
                "[[task.criterion]]\nid = \"hard\"\ntext = \"the hard one\"\nrun = \"grep -q done src/x.txt\"\n",
                "",
            ),
        );
        env.write(".gitattributes", "*.txt filter=evil diff=evil\n");
        for (key, value) in [
            ("core.fsmonitor", touch.as_str()),
            ("core.hooksPath", "hooks"),
            ("filter.evil.clean", touch.as_str()),
            ("diff.evil.textconv", touch.as_str()),
            ("diff.external", touch.as_str()),
        ] {
            env.git(&["config", key, value]);
        }
        env.script("hooks/post-checkout", &format!("#!/bin/sh\n{touch}\n"));
        let mut args = vec!["verify", "--base", "main", "--format", "json"];
        if !sandboxed {
            args.extend(["--sandbox", "off"]);
        }
        let out = env.gate(&args).run();
        out.assert_exit(1);
        let doc = out.json();
        assert_eq!(
            doc["isolation"]["kind"],
            if sandboxed { "bwrap" } else { "none" }
        );
        assert!(
            titles(&doc)
                .contains(&"critical The change removes acceptance criterion `hard`".to_owned()),
            "sandboxed {sandboxed}: {:#?}",
            titles(&doc)
        );
        assert_eq!(doc["base_commit"].as_str().unwrap(), base.trim());
        assert!(
            !marker.exists(),
            "sandboxed {sandboxed}: a command the repository configured ran"
        );
        if sandboxed {
            // The check could not move the base: `.git` is read-only to it.
            assert_eq!(env.git(&["rev-parse", "main"]).trim(), base.trim());
            assert!(
                !env.git(&["config", "--list"])
                    .contains("core.fsmonitor=true")
            );
        } else {
            // Unisolated the check did move it, after the gate had read it.
            assert_ne!(env.git(&["rev-parse", "main"]).trim(), base.trim());
        }
    }
}

/// A workspace that is a folder of a larger repository: the gate's git
/// reads the repository above it (shown to git's sandbox read-only), so
/// an edited verifier is compared with the base there too.
#[test]
fn a_workspace_inside_a_larger_repository_is_compared_with_its_base() {
    let env = TestEnv::new();
    env.write(
        "app/gate.toml",
        "[spec]\nid = \"app\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
         [[task.criterion]]\nid = \"e2e\"\ntext = \"the feature works\"\nrun = \"./scripts/e2e.sh\"\n",
    );
    env.write(".gitignore", ".gate/\n");
    env.script(
        "app/scripts/e2e.sh",
        "#!/bin/sh\ngrep -q feature src/app.txt\n",
    );
    env.write("app/src/app.txt", "old\n");
    env.git(&["init", "-q", "-b", "main"]);
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "base"]);
    env.script("app/scripts/e2e.sh", "#!/bin/sh\nexit 0\n");
    let out = env
        .gate(&[
            "verify",
            "--workspace",
            "app",
            "--base",
            "main",
            "--format",
            "json",
        ])
        .run();
    out.assert_exit(1);
    let doc = out.json();
    assert!(
        titles(&doc)
            .contains(&"critical The change modifies the verifier `scripts/e2e.sh`".to_owned()),
        "{:#?}",
        titles(&doc)
    );
    assert_eq!(doc["isolation"]["kind"], "bwrap");
}

/// The workspace's repository configured to move what the gate's git reads
/// (a work tree above it, a bare repository, an included file saying so,
/// an index hiding the edit) changes nothing the gate reads: the spec at
/// the base is read, the edited verifier is a modified one and the edited
/// files are in the change. A `.git` file or an alternate object store
/// naming a repository elsewhere is refused.
#[test]
fn a_repository_configured_to_mislead_the_gate_is_not_followed() {
    let title = "critical The change modifies the verifier `scripts/e2e.sh`";
    for how in [
        "core.worktree",
        "core.bare",
        "include",
        "assume-unchanged",
        "gitdir elsewhere",
        "alternates elsewhere",
    ] {
        let env = exam();
        let elsewhere = tempfile::tempdir().unwrap();
        env.script("scripts/e2e.sh", "#!/bin/sh\nexit 0\n");
        match how {
            "core.worktree" => drop(env.git(&["config", "core.worktree", ".."])),
            "core.bare" => drop(env.git(&["config", "core.bare", "true"])),
            "include" => {
                let included = elsewhere.path().join("config");
                std::fs::write(&included, "[core]\n\tworktree = /\n").unwrap();
                env.git(&["config", "include.path", &included.to_string_lossy()]);
            }
            "assume-unchanged" => {
                for file in ["scripts/e2e.sh", "src/app.txt"] {
                    env.git(&["update-index", "--assume-unchanged", file]);
                }
            }
            "gitdir elsewhere" => {
                let moved = elsewhere.path().join("repo.git");
                std::fs::rename(env.path().join(".git"), &moved).unwrap();
                env.write(".git", &format!("gitdir: {}\n", moved.display()));
            }
            _ => {
                let objects = elsewhere.path().join("objects");
                std::fs::create_dir_all(&objects).unwrap();
                env.write(
                    ".git/objects/info/alternates",
                    &format!("{}\n", objects.display()),
                );
            }
        }
        let out = env
            .gate(&["verify", "--base", "main", "--format", "json"])
            .run();
        if how.ends_with("elsewhere") {
            out.assert_exit(2);
            out.stderr_has("outside");
            continue;
        }
        out.assert_exit(1);
        let doc = out.json();
        assert!(
            titles(&doc).iter().any(|t| t == title),
            "{how}: {:#?}",
            titles(&doc)
        );
        assert_eq!(
            doc["self_guard"]["status"], "on",
            "{how}: {}",
            doc["self_guard"]
        );
        let changed = doc["changed_files"].as_array().unwrap();
        for file in ["scripts/e2e.sh", "src/app.txt"] {
            assert!(changed.iter().any(|f| f == file), "{how}: {changed:?}");
        }
    }
}

/// A `PATH` whose `name` fails with `message`, as a tool does where the
/// kernel refuses it what it needs.
fn broken_tool(dir: &Path, name: &str, message: &str) -> String {
    let bin = dir.join(name);
    std::fs::write(&bin, format!("#!/bin/sh\necho \"{message}\" >&2\nexit 1\n")).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A `bwrap` that cannot start a sandbox, as on a kernel without user
/// namespaces.
fn broken_bwrap(dir: &Path) -> String {
    broken_tool(
        dir,
        "bwrap",
        "bwrap: No permissions to create a new namespace",
    )
}

#[test]
fn where_the_sandbox_cannot_run_required_refuses_and_auto_says_so() {
    let fake = tempfile::tempdir().unwrap();
    let path = broken_bwrap(fake.path());
    // (how the mode is set, exit, what is said)
    let cases: &[(&[&str], &str, i32, &str)] = &[
        (&["--sandbox", "required"], "", 2, "the sandbox is required"),
        (
            &[],
            "[sandbox]\nmode = \"required\"\n",
            2,
            "No permissions to create a new namespace",
        ),
        (
            &[],
            "",
            0,
            "runs unisolated: bubblewrap cannot start a sandbox here",
        ),
        (
            &["--sandbox", "off"],
            "",
            0,
            "the sandbox is off (--sandbox)",
        ),
    ];
    for (flags, section, exit, says) in cases {
        let env = TestEnv::new();
        env.write(
            "gate.toml",
            &format!("[spec]\nid = \"m\"\n{section}[[check]]\nid = \"c\"\nrun = \"true\"\n"),
        );
        let mut args = vec!["verify", "--format", "json"];
        args.extend_from_slice(flags);
        let out = env.gate(&args).env("PATH", &path).run();
        out.assert_exit(*exit);
        let all = format!("{}{}", out.stdout, out.stderr);
        assert!(all.contains(says), "{flags:?} {section:?}: {all}");
        if *exit == 0 {
            let doc = out.json();
            assert_eq!(doc["isolation"]["kind"], "none");
            assert!(doc["isolation"]["reason"].as_str().is_some());
        }
    }
}

#[test]
fn an_unisolated_check_that_changes_the_exam_while_it_runs_is_caught() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"t\"\n[[check]]\nid = \"sneaky\"\nrun = \"printf '#ED''ITED' >> gate.toml; printf x >> notes.txt\"\n",
    );
    env.write("notes.txt", "notes\n");
    let out = env
        .gate(&["verify", "--sandbox", "off", "--format", "json"])
        .run();
    out.assert_exit(1);
    let found = titles(&out.json());
    assert!(
        found.contains(&"critical `gate.toml` changed while the checks ran".to_owned()),
        "{found:#?}"
    );
    assert!(
        found.contains(&"warning `notes.txt` changed while the checks ran".to_owned()),
        "{found:#?}"
    );
    // In the sandbox the spec is read-only: the same check cannot change it.
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"t\"\n[[check]]\nid = \"sneaky\"\nrun = \"printf '#ED''ITED' >> gate.toml\"\n",
    );
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(1);
    assert!(!env.read("gate.toml").contains("EDITED"));
}

#[test]
fn a_change_that_widens_the_sandbox_is_a_loosening() {
    let env = TestEnv::new();
    let spec = "[spec]\nid = \"w\"\n[sandbox]\nmode = \"required\"\n[[check]]\nid = \"c\"\nrun = \"true\"\n";
    env.write("gate.toml", spec);
    env.write(".gitignore", ".gate/\n");
    env.git(&["init", "-q", "-b", "main"]);
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "base"]);
    env.write(
        "gate.toml",
        &spec.replace(
            "mode = \"required\"",
            "mode = \"off\"\npass_env = [\"DEPLOY_TOKEN\"]",
        ),
    );
    let out = env
        .gate(&["verify", "--base", "main", "--format", "json"])
        .run();
    out.assert_exit(1);
    let found = titles(&out.json());
    for want in [
        "critical The change weakens [sandbox] mode",
        "critical The change passes `DEPLOY_TOKEN` to what the gate runs",
    ] {
        assert!(found.contains(&want.to_owned()), "{found:#?}");
    }
}

/// A server on the host's loopback that answers every connection with an
/// HTTP 503: what a process inside the run's network must not reach, and
/// must not mistake for the run's own service on the same port.
fn host_server() -> u16 {
    use std::io::Write as _;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let _ = conn.write_all(b"HTTP/1.0 503 Service Unavailable\r\n\r\nthe host\n");
        }
    });
    port
}

/// The run's own service: answers `inside` to every GET.
const SERVE_PY: &str = r#"import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = open("page.html", "rb").read() if self.path == "/page" else b"inside"
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#;

/// The criterion: the run's service answers `inside`.
const TALK_PY: &str = r#"import sys, urllib.request
body = urllib.request.urlopen("http://127.0.0.1:%s/" % sys.argv[1], timeout=10).read()
sys.exit(0 if body == b"inside" else 1)
"#;

/// Processes (as the test sees them) in the network namespace `netns`
/// (`net:[…]`).
fn processes_in(netns: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/ns/net"))
                .is_ok_and(|l| l.to_string_lossy() == netns)
        })
        .filter(|pid| gate_tests::pid_alive(*pid))
        .collect()
}

#[test]
fn under_loopback_the_hosts_loopback_is_out_of_reach_and_the_runs_service_is_not() {
    // (network, who, what a check that dials the host's server sees)
    let cases = [
        ("loopback", As::Root, "refused"),
        ("loopback", As::Nobody, "refused"),
        ("host", As::Root, "reached"),
    ];
    for (network, who, dialled) in cases {
        let case = format!("{network}, {who:?}");
        let host = host_server();
        // Under loopback the service listens on the host server's port:
        // only inside the run's own network is that port free, and only
        // there does it answer `inside` rather than 503.
        let port = if network == "loopback" {
            host
        } else {
            gate_tests::free_port()
        };
        let env = TestEnv::new();
        env.write(
            "gate.toml",
            &format!(
                r#"[spec]
id = "net"
[sandbox]
network = "{network}"
[policy]
builtin_secrets = false
[[check]]
id = "dial-host"
run = "if bash -c 'exec 3<>/dev/tcp/127.0.0.1/{host}' 2>/dev/null; then echo reached; else echo refused; fi > probe/dial.txt; readlink /proc/self/ns/net > probe/netns.txt"
[[check]]
id = "serve"
run = "python3 serve.py {port}"
starts = {{ within_s = 20, ready_http = "http://127.0.0.1:{port}/" }}
# Under loopback the service takes the host server's port inside the
# run's network: the dial must happen before it listens there.
after = ["dial-host"]
[[task]]
id = "t"
[[task.criterion]]
id = "talk"
text = "the run's own service answers"
run = "python3 talk.py {port}"
after = ["serve"]
"#
            ),
        );
        env.write("serve.py", SERVE_PY);
        env.write("talk.py", TALK_PY);
        std::fs::create_dir_all(env.path().join("probe")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let home = outside.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let bin_dir = tempfile::tempdir().unwrap();
        let out = gate_as(who, bin_dir.path(), &[env.path(), outside.path()])
            .args(["verify", "--offline", "--format", "json"])
            .current_dir(env.path())
            .env("HOME", &home)
            .env("GATE_STATE_DIR", outside.path().join("state"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{case}: the service is ready by its probe and answers its criterion\n--- stdout\n{stdout}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(doc["isolation"]["kind"], "bwrap", "{case}: {doc}");
        assert_eq!(doc["isolation"]["network"], network, "{case}: {doc}");
        assert_eq!(doc["isolation"]["reason"], Value::Null, "{case}: {doc}");
        assert_eq!(env.read("probe/dial.txt").trim(), dialled, "{case}");
        // Nothing is left in the run's network namespace, its holder
        // included.
        let netns = env.read("probe/netns.txt").trim().to_owned();
        let own = std::fs::read_link("/proc/self/ns/net").unwrap();
        if network == "loopback" {
            assert_ne!(netns, own.to_string_lossy(), "{case}");
            let left = processes_in(&netns);
            assert!(left.is_empty(), "{case}: {left:?} outlived the run");
        } else {
            assert_eq!(netns, own.to_string_lossy(), "{case}");
        }
    }
}

#[test]
fn under_loopback_a_page_is_captured_inside_the_runs_network() {
    for who in [As::Root, As::Nobody] {
        // The host's server holds the page's port and answers 503: a
        // browser outside the run's network would capture that and fail.
        let port = host_server();
        let env = TestEnv::new();
        env.write(
            "gate.toml",
            &format!(
                r#"[spec]
id = "page"
[sandbox]
network = "loopback"
[policy]
builtin_secrets = false
[[check]]
id = "serve"
run = "python3 serve.py {port}"
starts = {{ within_s = 20, ready_tcp = "127.0.0.1:{port}" }}
[[task]]
id = "web"
paths = ["page.html"]
[[page]]
id = "home"
url = "http://127.0.0.1:{port}/page"
files = ["page.html"]
after = ["serve"]
"#
            ),
        );
        env.write("serve.py", SERVE_PY);
        env.write(
            "page.html",
            "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>Shop</title></head><body><h1>Checkout</h1></body></html>",
        );
        let outside = tempfile::tempdir().unwrap();
        let home = outside.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        // axe-core where the gate's user can read it.
        let axe_copy = outside.path().join("axe.min.js");
        std::fs::copy(axe(), &axe_copy).unwrap();
        let bin_dir = tempfile::tempdir().unwrap();
        let out = gate_as(who, bin_dir.path(), &[env.path(), outside.path()])
            .args(["verify", "--offline", "--format", "json"])
            .current_dir(env.path())
            .env("HOME", &home)
            .env("GATE_STATE_DIR", outside.path().join("state"))
            .env("GATE_CHROMIUM", chromium())
            .env("GATE_AXE_CORE", &axe_copy)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{who:?}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        );
        let doc: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(doc["isolation"]["network"], "loopback", "{who:?}: {doc}");
        let home_check = gate_tests::item(&doc, "home").expect("the page check");
        assert_eq!(home_check["status"], "passed", "{who:?}: {home_check}");
    }
}

/// An `nsenter` that cannot enter, as where the kernel refuses it.
fn broken_nsenter(dir: &Path) -> String {
    broken_tool(
        dir,
        "nsenter",
        "nsenter: reassociate to namespace 'ns/net' failed: Operation not permitted",
    )
}

#[test]
fn where_the_runs_network_cannot_be_joined_required_refuses_and_auto_says_so() {
    let fake = tempfile::tempdir().unwrap();
    let path = broken_nsenter(fake.path());
    // (mode, exit)
    for (mode, exit) in [("auto", 0), ("required", 2)] {
        let env = TestEnv::new();
        env.write(
            "gate.toml",
            &format!(
                "[spec]\nid = \"n\"\n[sandbox]\nmode = \"{mode}\"\nnetwork = \"loopback\"\n\
                 [[check]]\nid = \"c\"\nrun = \"true\"\n"
            ),
        );
        let out = env
            .gate(&["verify", "--offline", "--format", "json"])
            .env("PATH", &path)
            .run();
        out.assert_exit(exit);
        let says = "reassociate to namespace 'ns/net' failed: Operation not permitted";
        if exit == 0 {
            let doc = out.json();
            // Isolated still, but on the host's network, and the record says so.
            assert_eq!(doc["isolation"]["kind"], "bwrap", "{doc}");
            assert_eq!(doc["isolation"]["network"], "host", "{doc}");
            let reason = doc["isolation"]["reason"].as_str().unwrap();
            assert!(
                reason.starts_with("the host's network instead of a private one"),
                "{reason}"
            );
            assert!(reason.contains(says), "{reason}");
            out.stderr_has(says);
        } else {
            out.stderr_has("the sandbox is required");
            out.stderr_has(says);
        }
    }
}

#[test]
fn a_gate_run_from_the_workspace_runs_its_helpers_from_a_copy_a_check_cannot_replace() {
    // The gate verifies the workspace it was built in: its executable is a
    // file the checks may write. A check replaces it with a script; the
    // readiness probe, which runs the gate's executable outside the
    // sandbox, must not run that script.
    let env = TestEnv::new();
    let token = unique_token("helper");
    let marker = std::env::temp_dir().join(&token);
    let bin = env.path().join("bin/gate");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::copy(gate_tests::gate_bin(), &bin).unwrap();
    env.write(
        "gate.toml",
        "[spec]\nid = \"self\"\n[sandbox]\nnetwork = \"loopback\"\n[policy]\nbuiltin_secrets = false\n\
         [[check]]\nid = \"swap\"\nrun = \"sh swap.sh\"\n\
         [[check]]\nid = \"serve\"\nrun = \"python3 -m http.server 8000 --bind 127.0.0.1\"\n\
         after = [\"swap\"]\nstarts = { within_s = 20, ready_tcp = \"127.0.0.1:8000\" }\n",
    );
    env.write(
        "swap.sh",
        &format!(
            "rm -f bin/gate && printf '#!/bin/sh\\ntouch {}\\nexit 0\\n' > bin/gate && chmod +x bin/gate\n",
            marker.display()
        ),
    );
    #[allow(clippy::disallowed_methods)] // the gate from inside the workspace
    let mut cmd = Command::new(&bin);
    gate_tests::hermetic(&mut cmd);
    let out = cmd
        .args(["verify", "--offline", "--format", "json"])
        .current_dir(env.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|_| {
        panic!(
            "{stdout}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        env.read("bin/gate").contains("touch"),
        "the check replaced the executable"
    );
    assert!(
        !marker.exists(),
        "the script the check wrote ran outside the sandbox"
    );
    assert_eq!(doc["isolation"]["network"], "loopback", "{doc}");
    let serve = gate_tests::item(&doc, "serve").unwrap();
    assert_eq!(serve["status"], "passed", "{serve}");
}

#[test]
fn the_common_toolchains_work_inside_the_sandbox() {
    let env = TestEnv::new();
    env.write(
        "app/Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    env.write("app/src/main.rs", "fn main() { println!(\"built\"); }\n");
    env.write(
        "gate.toml",
        "[spec]\nid = \"tools\"\n\
         [[check]]\nid = \"cargo\"\nrun = \"cd app && cargo build --offline -q && ./target/debug/app\"\n\
         [[check]]\nid = \"venv\"\nrun = \"python3 -m venv .venv && .venv/bin/python -c 'print(1)'\"\n\
         [[check]]\nid = \"node\"\nrun = \"node -e 'console.log(1)' && npm --version\"\n\
         [[check]]\nid = \"git\"\nrun = \"git --version\"\n",
    );
    let out = env
        .gate(&["verify", "--format", "json"])
        .timeout(std::time::Duration::from_secs(300))
        .run();
    let doc = out.json();
    assert_eq!(doc["isolation"]["kind"], "bwrap");
    for id in ["cargo", "venv", "node", "git"] {
        let item = gate_tests::item(&doc, id).unwrap();
        assert_eq!(item["status"], "passed", "{id}: {item}\n{}", out.stderr);
    }
    out.assert_exit(0);
}

/// What the run cannot honour or protect is said on stderr, and the run
/// goes on: a `writable` path that is not there, a criterion whose verifier
/// is no file of the workspace.
#[test]
fn what_the_sandbox_cannot_honour_or_protect_is_said() {
    // (the spec's extra lines, what stderr says, what it must not say)
    let cases = [
        (
            "[sandbox]\nwritable = [\"/nonexistent/gate-cache\", \"~/no-such-cache\"]\n\
             [[task]]\nid = \"t\"\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\nrun = \"./check.sh\"\n",
            vec![
                "writable names /nonexistent/gate-cache, which does not exist",
                "no-such-cache, which does not exist",
            ],
            "nothing protects",
        ),
        (
            "[[task]]\nid = \"t\"\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\nrun = \"true\"\n",
            vec![
                "criterion `c` runs no file of the workspace, so nothing protects what decides it",
            ],
            "writable names",
        ),
    ];
    for (extra, said, unsaid) in cases {
        let env = TestEnv::new();
        env.write("gate.toml", &format!("[spec]\nid = \"warn\"\n{extra}"));
        env.script("check.sh", "#!/bin/sh\nexit 0\n");
        let out = env.gate(&["verify", "--format", "json"]).run();
        out.assert_exit(0);
        assert_eq!(out.json()["isolation"]["kind"], "bwrap", "{extra}");
        for needle in said {
            out.stderr_has(needle);
        }
        assert!(!out.stderr.contains(unsaid), "{extra}: {}", out.stderr);
    }
}

/// An exam Python runs as a module (`python3 -m checks.e2e`) is protected
/// like a script: its module and its package's `__init__.py` are the
/// verifier, and the base's version runs. A module the workspace never had
/// (`python3 -m json.tool`) is an installed one, not a missing verifier.
#[test]
fn an_exam_run_as_a_python_module_is_protected() {
    // (the file the agent rewrites, the finding's title)
    let cases = [
        (
            "checks/e2e.py",
            "critical The change modifies the verifier `checks/e2e.py`",
        ),
        (
            "checks/__init__.py",
            "critical The change modifies the verifier `checks/__init__.py`",
        ),
    ];
    for (file, title) in cases {
        let env = TestEnv::new();
        env.write(
            "gate.toml",
            "[spec]\nid = \"exam\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
             [[task.criterion]]\nid = \"e2e\"\ntext = \"the feature works\"\nrun = \"python3 -m checks.e2e\"\n\
             [[task.criterion]]\nid = \"json\"\ntext = \"the data is JSON\"\nrun = \"python3 -m json.tool src/data.json\"\n",
        );
        env.write(".gitignore", ".gate/\n__pycache__/\n");
        env.write("checks/__init__.py", "");
        env.write(
            "checks/e2e.py",
            "import sys\nsys.exit(0 if 'feature' in open('src/app.txt').read() else 1)\n",
        );
        env.write("src/app.txt", "old\n");
        env.write("src/data.json", "{}\n");
        env.git(&["init", "-q", "-b", "main"]);
        env.git(&["add", "."]);
        env.git(&["commit", "-q", "-m", "base"]);
        env.write("src/app.txt", "still old\n");
        env.write(file, "import os\nos._exit(0)\n");
        let out = env
            .gate(&["verify", "--base", "main", "--format", "json"])
            .run();
        out.assert_exit(1);
        let doc = out.json();
        let found = titles(&doc);
        assert!(found.iter().any(|t| t == title), "{file}: {found:#?}");
        // The base's version ran, and it fails the missing feature.
        let e2e = gate_tests::item(&doc, "e2e").unwrap();
        assert_eq!(e2e["status"], "failed", "{file}: {e2e}");
        let json = gate_tests::item(&doc, "json").unwrap();
        assert_eq!(json["status"], "passed", "{file}: {json}");
        // The module is protected; the installed one protects nothing.
        assert!(
            !out.stderr.contains("criterion `e2e` runs no file"),
            "{}",
            out.stderr
        );
        out.stderr_has("criterion `json` runs no file of the workspace");
    }
}

/// The attacks of a `[[check]]` the agent wrote, each writing what it got
/// into `probe/ID.txt`: check id → command. `{SOCKET}` is a Unix socket a
/// host daemon listens on, `{OWN}` a file only the gate's user may read,
/// `{ETC}` a root-only file in a folder the sandbox shows, `{LEDGER}` the
/// shared SQLite ledger, `{STATE}` and `{KEY}` the gate's state and key.
const ATTACKS: &[(&str, &str)] = &[
    (
        "sysctl",
        // The value it already has: only whether the write goes through matters.
        "v=$(cat /proc/sys/kernel/core_pattern); (printf '%s\\n' \"$v\" > /proc/sys/kernel/core_pattern && echo WROTE) > probe/sysctl.txt 2>&1; exit 0",
    ),
    ("shadow", "cat /etc/shadow > probe/shadow.txt 2>&1; exit 0"),
    ("own-file", "cat '{OWN}' > probe/own-file.txt 2>&1; exit 0"),
    ("etc-file", "cat '{ETC}' > probe/etc-file.txt 2>&1; exit 0"),
    (
        "socket",
        "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{SOCKET}'); print('CONNECTED', s.recv(16))\" > probe/socket.txt 2>&1; exit 0",
    ),
    (
        "shown-socket",
        "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{SHOWNSOCKET}'); print('CONNECTED', s.recv(16))\" > probe/shown-socket.txt 2>&1; exit 0",
    ),
    (
        "program-socket",
        "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{PROGRAMSOCKET}'); print('CONNECTED', s.recv(16))\" > probe/program-socket.txt 2>&1; exit 0",
    ),
    (
        "ledger-lock",
        "(exec 9< '{LEDGER}-append' && [ ! -c '{LEDGER}-append' ] && flock -n 9 && echo LOCKED) > probe/ledger-lock.txt 2>&1; exit 0",
    ),
    (
        "keyring",
        "python3 -c \"import ctypes; l=ctypes.CDLL(None, use_errno=True); r=l.syscall(250, 0, -3, 0); print('keyctl', r, ctypes.get_errno())\" > probe/keyring.txt 2>&1; exit 0",
    ),
    (
        "mount",
        // A user namespace of its own may be made; mounting in it may not.
        // (`--rbind`: the workspace holds mounts a plain bind may not copy.)
        "unshare -rm /bin/sh -c 'mkdir -p /tmp/m && mount --rbind \"$PWD\" /tmp/m && echo MOUNTED; chroot . /none 2>&1 | grep -q \"failed to run\" && echo CHROOTED' > probe/mount.txt 2>&1; exit 0",
    ),
    (
        "cmdline",
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done > probe/cmdline.txt 2>/dev/null; exit 0",
    ),
    (
        "uid",
        "(grep -E '^(Uid|Groups|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status; cat /proc/self/uid_map) > probe/uid.txt 2>&1; exit 0",
    ),
];

/// A fake tool the agent put on `PATH`: it leaves a mark, then does what
/// the real one would.
fn fake_tool(env: &TestEnv, name: &str, real: &str) {
    env.script(
        &format!(".venv/bin/{name}"),
        &format!(
            "#!/bin/sh\ntouch '{}/probe/FAKE-{name}'\nexec {real} \"$@\"\n",
            env.path().display()
        ),
    );
}

/// The git the test's own `PATH` finds.
fn real_git() -> String {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
        .map_or_else(|| "/usr/bin/git".to_owned(), |p| p.display().to_string())
}

/// A Unix socket a host daemon listens on at `path`; it answers each
/// connection and notes it.
fn daemon(path: &Path) -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
    use std::io::Write as _;
    let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ = stream.write_all(b"hello");
        }
    });
    seen
}

#[test]
fn every_attack_of_a_check_is_blocked_as_root_and_unprivileged() {
    for who in [As::Root, As::Nobody] {
        for mode in ["auto", "required"] {
            let case = format!("{who:?}, {mode}");
            let env = TestEnv::new();
            // Outside /tmp, which is the run's own anyway.
            let outside = tempfile::Builder::new()
                .prefix("gate-attack-")
                .tempdir_in("/var/tmp")
                .unwrap();
            let token = unique_token("attack");
            let state = outside.path().join("state");
            let home = outside.path().join("home");
            std::fs::create_dir_all(&home).unwrap();
            // A folder the sandbox shows, and files in it only root may read.
            let etc_dir = PathBuf::from(format!("/etc/gate-attack-{token}"));
            std::fs::create_dir_all(&etc_dir).unwrap();
            let etc_file = etc_dir.join("secret");
            std::fs::write(&etc_file, format!("{token}-etc")).unwrap();
            std::fs::set_permissions(&etc_file, std::fs::Permissions::from_mode(0o600)).unwrap();
            // The gate's user's own file, where the sandbox shows nothing.
            let own = outside.path().join("own");
            std::fs::write(&own, format!("{token}-own")).unwrap();
            // A host daemon's socket: in /run as root, beside the state otherwise.
            let socket_dir = match who {
                As::Root => PathBuf::from(format!("/run/gate-attack-{token}")),
                As::Nobody => outside.path().join("run"),
            };
            std::fs::create_dir_all(&socket_dir).unwrap();
            std::fs::set_permissions(&socket_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            let seen = daemon(&socket_dir.join("daemon.sock"));
            // One in a folder the sandbox shows (`[sandbox] readable`; /etc
            // is searched the same way), which a read-only mount alone
            // would not keep out.
            let shown_dir = outside.path().join("shown");
            std::fs::create_dir_all(&shown_dir).unwrap();
            let shown_seen = daemon(&shown_dir.join("daemon.sock"));
            // One deep in a program folder the sandbox shows and does not
            // search: below a `PATH` folder of this run's alone, so no other
            // test's run shows it (a socket that goes away while a run
            // starts would fail that run's mount).
            let tools_dir = outside.path().join("tools");
            let program_dir = tools_dir.join("lib/daemon");
            std::fs::create_dir_all(&program_dir).unwrap();
            for dir in [
                outside.path(),
                &tools_dir,
                &tools_dir.join("lib"),
                &program_dir,
            ] {
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
            let program_seen = daemon(&program_dir.join("daemon.sock"));
            // A shared SQLite ledger in a folder the sandbox shows.
            let ledger_dir = match who {
                As::Root => etc_dir.join("ledger"),
                As::Nobody => outside.path().join("ledger"),
            };
            std::fs::create_dir_all(&ledger_dir).unwrap();
            let ledger = ledger_dir.join("ledger.db");
            let mut spec =
                String::from("[spec]\nid = \"attacks\"\n[policy]\nbuiltin_secrets = false\n");
            for (id, run) in ATTACKS {
                let run = run
                    .replace(
                        "{SOCKET}",
                        &socket_dir.join("daemon.sock").display().to_string(),
                    )
                    .replace(
                        "{SHOWNSOCKET}",
                        &shown_dir.join("daemon.sock").display().to_string(),
                    )
                    .replace(
                        "{PROGRAMSOCKET}",
                        &program_dir.join("daemon.sock").display().to_string(),
                    )
                    .replace("{OWN}", &own.display().to_string())
                    .replace("{ETC}", &etc_file.display().to_string())
                    .replace("{LEDGER}", &ledger.display().to_string());
                let _ = writeln!(spec, "[[check]]\nid = \"{id}\"\nrun = '''{run}'''");
            }
            let _ = writeln!(
                spec,
                "[sandbox]\nmode = \"{mode}\"\nreadable = [\"{}\"]",
                shown_dir.display()
            );
            env.write("gate.toml", &spec);
            std::fs::create_dir_all(env.path().join("probe")).unwrap();
            // A workspace only its owner may enter (as `mktemp -d` makes):
            // the run's uid gets in once it is handed over.
            std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
            fake_tool(&env, "bwrap", "/usr/bin/bwrap");
            fake_tool(&env, "git", &real_git());
            // The shell every command line runs in is the gate's too.
            fake_tool(&env, "sh", "/bin/sh");
            let bin_dir = tempfile::tempdir().unwrap();
            let owned: Vec<&Path> = vec![env.path(), outside.path(), &ledger_dir];
            if who == As::Nobody {
                // Only the gate's user may read its file.
                give_to_nobody(&own);
            }
            let run = |bin_dir: &Path| {
                let mut cmd = gate_as(who, bin_dir, &owned);
                if who == As::Nobody {
                    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o600)).unwrap();
                }
                let path = format!(
                    "{}:{}:{}",
                    env.path().join(".venv/bin").display(),
                    std::env::var("PATH").unwrap_or_default(),
                    tools_dir.display()
                );
                cmd.args(["verify", "--offline", "--format", "json"])
                    .current_dir(env.path())
                    .env("HOME", &home)
                    .env("PATH", path)
                    .env("GATE_STATE_DIR", &state)
                    .env("GATE_LEDGER", &ledger);
                cmd.output().unwrap()
            };
            // The first run makes the ledger's lock file; the second is
            // the one attacked with it in place.
            run(bin_dir.path());
            let out = run(bin_dir.path());
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            assert_eq!(out.status.code(), Some(0), "{case}\n{stdout}\n{stderr}");
            let doc: Value = serde_json::from_str(&stdout).unwrap();
            let isolation = &doc["isolation"];
            assert_eq!(isolation["kind"], "bwrap", "{case}: {isolation}");
            let saw = |id: &str| env.read(&format!("probe/{id}.txt"));
            // (attack, what it must not have got)
            let blocked: [(&str, &str); 12] = [
                ("mount", "MOUNTED"),
                ("mount", "CHROOTED"),
                ("shown-socket", "CONNECTED"),
                ("program-socket", "CONNECTED"),
                ("sysctl", "WROTE"),
                ("shadow", "root:"),
                ("own-file", &format!("{token}-own")),
                ("etc-file", &format!("{token}-etc")),
                ("socket", "CONNECTED"),
                ("ledger-lock", "LOCKED"),
                ("cmdline", &state.display().to_string()),
                ("cmdline", "--ro-bind"),
            ];
            for (attack, got) in blocked {
                let text = saw(attack);
                assert!(!text.contains(got), "{case}: {attack} got {got}:\n{text}");
            }
            for (daemon, seen) in [
                ("/run", &seen),
                ("a shown folder", &shown_seen),
                ("a program folder", &program_seen),
            ] {
                assert_eq!(
                    seen.load(std::sync::atomic::Ordering::SeqCst),
                    0,
                    "{case}: the daemon in {daemon} was reached"
                );
            }
            // The keyring calls are refused outright.
            assert!(
                saw("keyring").contains("keyctl -1 1"),
                "{case}: {}",
                saw("keyring")
            );
            // Never host uid 0: as root the items are the run's own uid,
            // with no user namespace between it and the host.
            let uid = saw("uid");
            let inside: u32 = uid
                .split_whitespace()
                .nth(1)
                .and_then(|u| u.parse().ok())
                .unwrap_or_else(|| panic!("{case}: {uid}"));
            let identity = &isolation["identity"];
            match who {
                As::Root => {
                    assert_ne!(inside, 0, "{case}: {uid}");
                    assert!(uid.contains("0          0 4294967295"), "{case}: {uid}");
                    // The gate's own dropper left no group, no capability
                    // in any set and no way to gain one.
                    let groups = uid.lines().find_map(|l| l.strip_prefix("Groups:"));
                    assert_eq!(groups.map(str::trim), Some(""), "{case}: {uid}");
                    for line in [
                        "CapInh:\t0000000000000000",
                        "CapPrm:\t0000000000000000",
                        "CapEff:\t0000000000000000",
                        "CapBnd:\t0000000000000000",
                        "CapAmb:\t0000000000000000",
                        "NoNewPrivs:\t1",
                    ] {
                        assert!(uid.contains(line), "{case}: {line:?} in {uid}");
                    }
                    let dropper = isolation["tools"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|t| t["name"] == "gate-drop");
                    assert!(dropper.is_some(), "{case}: {isolation}");
                    assert_eq!(identity["kind"], "per_run", "{case}: {identity}");
                    assert_eq!(identity["uid"], inside, "{case}: {identity}");
                }
                As::Nobody => {
                    assert_eq!(inside, NOBODY, "{case}: {uid}");
                    assert_eq!(identity["kind"], "gate_user", "{case}: {identity}");
                }
            }
            // The fake tools on PATH never ran; the record names the real ones.
            for name in ["bwrap", "git", "sh"] {
                assert!(
                    !env.path().join(format!("probe/FAKE-{name}")).exists(),
                    "{case}: the workspace's {name} ran"
                );
                let tool = isolation["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|t| t["name"] == name)
                    .unwrap_or_else(|| panic!("{case}: no {name} in {isolation}"));
                let at = tool["path"].as_str().unwrap();
                assert!(
                    !at.starts_with(&env.path().display().to_string()),
                    "{case}: {tool}"
                );
                assert_eq!(tool["sha256"].as_str().unwrap().len(), 64, "{case}: {tool}");
            }
            assert!(stderr.contains("are not looked for in"), "{case}: {stderr}");
            // Ownership is back as it was.
            let meta = std::fs::metadata(env.path().join("probe")).unwrap();
            use std::os::unix::fs::MetadataExt as _;
            let want = if who == As::Root { 0 } else { NOBODY };
            assert_eq!(
                meta.uid(),
                want,
                "{case}: the workspace's files stayed the run's"
            );
            drop(outside);
            let _ = std::fs::remove_dir_all(&etc_dir);
            let _ = std::fs::remove_dir_all(&socket_dir);
        }
    }
}

/// A PostgreSQL ledger reached over its Unix socket, with a client key
/// named in its URL: a check can neither connect to the server's socket
/// nor read the key, though the key lies in a folder the sandbox shows.
#[test]
fn a_postgres_ledgers_socket_and_client_key_are_out_of_a_checks_reach() {
    // The key is put in /etc, which only root may write (CI runs as root).
    if std::env::var_os("GATE_TEST_POSTGRES").is_none() || !nix::unistd::geteuid().is_root() {
        return;
    }
    let db = gate_tests::postgres::Database::fresh();
    let socket_dir = db.column("SHOW unix_socket_directories")[0].clone();
    let port = gate_tests::postgres::port_of(&db.url);
    let socket = format!("{socket_dir}/.s.PGSQL.{port}");
    let token = unique_token("pgkey");
    let key_dir = PathBuf::from(format!("/etc/gate-attack-{token}"));
    std::fs::create_dir_all(&key_dir).unwrap();
    let (cert, key) = gate_tests::tls::Ca::new("gate test CA").issue("postgres", &[]);
    std::fs::write(key_dir.join("client.crt"), cert).unwrap();
    std::fs::write(key_dir.join("client.key"), &key).unwrap();
    let dbname = db.url.rsplit('/').next().unwrap().to_owned();
    let url = format!(
        "postgres://postgres@localhost/{dbname}?host={socket_dir}&port={port}&sslmode=prefer&sslcert={}&sslkey={}",
        key_dir.join("client.crt").display(),
        key_dir.join("client.key").display()
    );
    let env = TestEnv::new();
    std::fs::create_dir_all(env.path().join("probe")).unwrap();
    let checks = [
        (
            "socket",
            format!(
                "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{socket}'); print('CONNECTED')\" > probe/socket.txt 2>&1; exit 0"
            ),
        ),
        (
            "sslkey",
            format!(
                "cat '{}' > probe/sslkey.txt 2>&1; exit 0",
                key_dir.join("client.key").display()
            ),
        ),
    ];
    let mut spec = String::from("[spec]\nid = \"pg\"\n[policy]\nbuiltin_secrets = false\n");
    for (id, run) in &checks {
        let _ = writeln!(spec, "[[check]]\nid = \"{id}\"\nrun = '''{run}'''");
    }
    env.write("gate.toml", &spec);
    let out = env
        .gate(&["verify", "--offline", "--format", "json"])
        .env("GATE_LEDGER", &url)
        .run();
    let _ = std::fs::remove_dir_all(&key_dir);
    out.assert_exit(0);
    assert_eq!(out.json()["isolation"]["kind"], "bwrap");
    // The run reached its ledger over that socket all the same.
    assert_eq!(db.column("SELECT count(*) FROM runs"), ["1"]);
    let socket_probe = env.read("probe/socket.txt");
    assert!(!socket_probe.contains("CONNECTED"), "{socket_probe}");
    let key_probe = env.read("probe/sslkey.txt");
    assert!(!key_probe.contains("PRIVATE KEY"), "{key_probe}");
}

/// A check replaces the virtual environment's `python3` (which the items'
/// `PATH` finds first) with a program that exits 0, so the criterion run
/// with it passes: the run fails on a critical finding naming it.
/// `gate verify --offline --format json` with the workspace's `.venv`
/// activated (its `bin` first on `PATH`).
fn verify_with_venv(env: &TestEnv) -> gate_tests::RunOutput {
    let path = format!(
        "{}:{}",
        env.path().join(".venv/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    env.gate(&["verify", "--offline", "--format", "json"])
        .env("PATH", path)
        .run()
}

#[test]
fn an_item_that_replaces_the_exams_interpreter_fails_the_run() {
    let env = TestEnv::new();
    let python = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("/usr/bin/python3"));
    std::fs::create_dir_all(env.path().join(".venv/bin")).unwrap();
    symlink(&python, env.path().join(".venv/bin/python3")).unwrap();
    env.write("tests/accept.py", "import sys\nsys.exit(1)\n");
    env.write(
        "gate.toml",
        "[spec]\nid = \"interp\"\n[[check]]\nid = \"swap\"\n\
         run = \"rm .venv/bin/python3 && printf '#!/bin/sh\\\\nexit 0\\\\n' > .venv/bin/python3 && chmod +x .venv/bin/python3\"\n\
         [[task]]\nid = \"t\"\n[[task.criterion]]\nid = \"accept\"\ntext = \"accepted\"\n\
         run = \"python3 tests/accept.py\"\nafter = [\"swap\"]\n",
    );
    let out = verify_with_venv(&env);
    let doc = out.json();
    // The fake interpreter did make the criterion pass; the finding fails the run.
    assert_eq!(
        gate_tests::item(&doc, "accept").unwrap()["status"],
        "passed",
        "{doc}"
    );
    let found = titles(&doc);
    assert!(
        found
            .iter()
            .any(|t| t
                == "critical The interpreter `.venv/bin/python3` changed while the checks ran"),
        "{found:#?}"
    );
    out.assert_exit(1);
}

/// A virtual environment in the workspace, made before the run, that the
/// items' `PATH` finds: a real one runs the exam; one whose interpreter is
/// a file the agent left there fails the run before its pass counts.
#[test]
fn an_interpreter_nothing_vouches_for_cannot_pass_the_exam() {
    // (case, planted interpreter, exit, critical finding)
    let cases: [(&str, Option<&str>, i32, bool); 2] = [
        ("a real environment", None, 0, false),
        (
            "`exit 0` in its place",
            Some("#!/bin/sh\nexit 0\n"),
            1,
            true,
        ),
    ];
    for (case, planted, exit, critical) in cases {
        let env = TestEnv::new();
        env.write(".gitignore", ".venv/\n.gate/\n");
        env.write(
            "tests/accept.py",
            "import sys\nsys.exit(0 if sys.prefix.endswith('.venv') else 3)\n",
        );
        env.write(
            "gate.toml",
            "[spec]\nid = \"venv\"\n[[task]]\nid = \"t\"\n[[task.criterion]]\nid = \"accept\"\n\
             text = \"accepted\"\nrun = \"python3 tests/accept.py\"\n",
        );
        env.git(&["init", "-q"]);
        env.git(&["add", "."]);
        env.git(&["commit", "-qm", "work"]);
        #[allow(clippy::disallowed_methods, reason = "test set-up: a real venv")]
        let made = Command::new("python3")
            .args(["-m", "venv", "--without-pip", ".venv"])
            .current_dir(env.path())
            .status()
            .unwrap();
        assert!(made.success());
        if let Some(text) = planted {
            let python = env.path().join(".venv/bin/python3");
            std::fs::remove_file(&python).unwrap();
            std::fs::write(&python, text).unwrap();
            std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let out = verify_with_venv(&env);
        let doc = out.json();
        let found = titles(&doc);
        let title = "critical The interpreter `.venv/bin/python3` is a file in the workspace nothing vouches for";
        assert_eq!(
            found.iter().any(|t| t == title),
            critical,
            "{case}: {found:#?}"
        );
        assert_eq!(
            gate_tests::item(&doc, "accept").unwrap()["status"],
            "passed",
            "{case}: {doc}"
        );
        out.assert_exit(exit);
    }
}

/// A run killed while its items run cannot remove its scratch folder (the
/// `/tmp` and home of each item): the next run removes it, and
/// leaves the folder of a run still alive.
#[test]
fn a_killed_runs_private_folders_are_removed_by_the_next_run() {
    let env = TestEnv::new();
    let temp = tempfile::tempdir().unwrap();
    let spec = |run: &str| {
        format!(
            "[spec]\nid = \"killed\"\n[policy]\nbuiltin_parse = false\n[sandbox]\nmode = \"required\"\n\
             [[check]]\nid = \"c\"\nrun = \"{run}\"\ntimeout_s = 120\n"
        )
    };
    env.write("gate.toml", &spec("echo left > /tmp/left.txt; sleep 100"));
    let left = || -> Vec<PathBuf> {
        std::fs::read_dir(temp.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("items/0-tmp/left.txt").exists())
            .collect()
    };
    let mut killed = env.gate(&["verify"]).env("TMPDIR", temp.path()).spawn();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while left().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the item never ran");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    killed.kill().unwrap();
    killed.wait().unwrap();
    let folders = left();
    assert_eq!(folders.len(), 1, "{folders:?}");

    // The next run removes it; a run started while that one is alive
    // leaves the living run's folder.
    let mut alive = env.gate(&["verify"]).env("TMPDIR", temp.path()).spawn();
    let living = loop {
        let now = left();
        if let [only] = now.as_slice()
            && *only != folders[0]
        {
            break only.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the next item never ran: {now:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let other = TestEnv::new();
    other.write("gate.toml", &spec("true"));
    other
        .gate(&["verify"])
        .env("TMPDIR", temp.path())
        .run()
        .assert_exit(0);
    assert_eq!(left(), [living], "the live run's folder went");
    alive.kill().unwrap();
    alive.wait().unwrap();
}

/// The checks that look for a descriptor of the gate's: list the shell's
/// own (its output moved for good first, so it keeps no copy of the old),
/// read the one the key came in on, write to the one open on a root-only
/// file.
const DESCRIPTOR_PROBES: &str = "[spec]\nid = \"descriptors\"\n\
[[check]]\nid = \"list\"\nrun = 'exec > probe/fds.txt 2>&1; ls /proc/$$/fd; exit 0'\n\
[[check]]\nid = \"key\"\nrun = 'cat /dev/fd/9 > probe/key.txt 2>&1; exit 0'\n\
[[check]]\nid = \"write\"\nrun = '(echo planted >&7 && echo WROTE) > probe/write.txt 2>&1; exit 0'\n";

#[test]
fn no_descriptor_the_gate_was_started_with_reaches_an_item() {
    for (who, trace) in [(As::Root, None), (As::Root, Some("on")), (As::Nobody, None)] {
        let case = format!("{who:?}, GATE_TRACE {trace:?}");
        let env = TestEnv::new();
        env.write("gate.toml", DESCRIPTOR_PROBES);
        std::fs::create_dir_all(env.path().join("probe")).unwrap();
        let (outside, keys) = keys_outside(&env, "gate-fds-");
        let key = keys.join("keys/signing.key");
        // A file only root may write, which the gate holds open for appending.
        let root_only = tempfile::Builder::new()
            .prefix("gate-root-only-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let target = root_only.path().join("file");
        std::fs::write(&target, "").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        let bin_dir = tempfile::tempdir().unwrap();
        let gate = gate_as(who, bin_dir.path(), &[env.path(), outside.path()]);
        // How pipelines pass a secret without a file: a descriptor the
        // gate is started with, opened before the drop to `nobody`.
        #[allow(clippy::disallowed_methods)] // the gate started with extra descriptors
        let mut cmd = Command::new("bash");
        cmd.arg("-c")
            .arg("exec 9<\"$0\" 7>>\"$1\"; shift; exec \"$@\"")
            .arg(&key)
            .arg(&target)
            .arg(gate.get_program())
            .args(gate.get_args())
            .args(["verify", "--offline", "--format", "json"]);
        for (name, value) in gate.get_envs() {
            match value {
                Some(v) => cmd.env(name, v),
                None => cmd.env_remove(name),
            };
        }
        if let Some(trace) = trace {
            cmd.env("GATE_TRACE", trace);
        }
        cmd.current_dir(env.path())
            .env("GATE_SIGNING_KEY", "/dev/fd/9")
            .env("GATE_STATE_DIR", outside.path().join("state"));
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{case}: the run signs with the key it was given\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(doc["isolation"]["kind"], "bwrap", "{case}");
        let fds: Vec<String> = env
            .read("probe/fds.txt")
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        assert_eq!(fds, ["0", "1", "2"], "{case}: the item's descriptors");
        let read = env.read("probe/key.txt");
        assert!(
            !read.contains("PRIVATE KEY"),
            "{case}: an item read the key:\n{read}"
        );
        assert!(
            !env.read("probe/write.txt").contains("WROTE"),
            "{case}: an item wrote through the gate's descriptor"
        );
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "",
            "{case}: the root-only file was written"
        );
    }
}

#[test]
fn a_planted_link_in_the_state_directory_is_refused_before_anything_is_written() {
    for planted in [".gate", ".gate/keys", ".gate/ledger.db", ".gate/spool"] {
        let env = TestEnv::new();
        env.write(
            "gate.toml",
            "[spec]\nid = \"planted\"\n[[check]]\nid = \"ok\"\nrun = \"exit 0\"\n",
        );
        let elsewhere = tempfile::tempdir().unwrap();
        let link = env.path().join(planted);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        symlink(elsewhere.path(), &link).unwrap();
        let out = env.gate(&["verify", "--offline"]).run();
        out.assert_exit(2)
            .stderr_has(&format!("{} is a symbolic link", link.display()));
        let left: Vec<_> = std::fs::read_dir(elsewhere.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            left.is_empty(),
            "{planted}: written through the link: {left:?}"
        );
        // The gate's other writers of the state refuse it too.
        env.gate(&["keys", "generate"]).run().assert_exit(2);
        assert!(
            std::fs::read_dir(elsewhere.path())
                .unwrap()
                .next()
                .is_none(),
            "{planted}: `gate keys generate` wrote through the link"
        );
    }
}

#[test]
fn as_root_a_workspace_in_a_folder_only_root_may_enter_works() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: the gate runs as root only when the tests do");
        return;
    }
    // Where root's CI jobs and containers work: `mktemp -d` and `/root`.
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    // The gate's own git reads what the agent wrote (its objects, refs,
    // index): it runs as the run's uid, never as root. This `git` first on
    // `PATH` refuses to run as root.
    let tools = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tools.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let git = tools.path().join("git");
    std::fs::write(
        &git,
        format!(
            "#!/bin/sh\nif [ \"$(id -u)\" = 0 ]; then echo 'git ran as root' >&2; exit 97; fi\n\
             exec {} \"$@\"\n",
            real_git()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for parent in [std::env::temp_dir(), home] {
        let outer = tempfile::Builder::new()
            .prefix("gate-0700-")
            .tempdir_in(&parent)
            .unwrap();
        std::fs::set_permissions(outer.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::set_permissions(&ws, std::fs::Permissions::from_mode(0o700)).unwrap();
        let sh = |line: &str| {
            #[allow(clippy::disallowed_methods)] // test set-up
            let ok = Command::new("sh")
                .args(["-c", line])
                .current_dir(&ws)
                .status()
                .unwrap()
                .success();
            assert!(ok, "{line}");
        };
        std::fs::write(
            ws.join("gate.toml"),
            "[spec]\nid = \"closed\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
             [[task.criterion]]\nid = \"new\"\ntext = \"src says new\"\n\
             run = \"grep -q new src/a.txt\"\nexpect = \"fail-to-pass\"\n",
        )
        .unwrap();
        std::fs::create_dir(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/a.txt"), "old\n").unwrap();
        std::fs::write(ws.join(".gitignore"), ".gate/\n").unwrap();
        sh(
            "git init -q -b main && git add . && git -c user.email=e@x -c user.name=e commit -qm base",
        );
        let case = parent.display().to_string();
        let gate = |args: &[&str]| {
            let mut cmd = gate_tests::gate_command();
            cmd.args(args)
                .current_dir(&ws)
                .env("GATE_TRACE", "on")
                .env("PATH", &path);
            let out = cmd.output().unwrap();
            (
                out.status.code(),
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
            )
        };
        // The change does not do it yet: the criterion fails.
        sh("echo still old > src/a.txt");
        let (code, out) = gate(&["verify", "--offline", "--base", "main"]);
        assert_eq!(code, Some(1), "{case}: attempt 1\n{out}");
        // The retry does: it passes, having failed on the base.
        sh("echo new > src/a.txt");
        let (code, out) = gate(&["verify", "--offline", "--base", "main"]);
        assert_eq!(code, Some(0), "{case}: attempt 2\n{out}");
        assert!(out.contains("fail→pass"), "{case}: {out}");
        let (code, out) = gate(&["ledger", "verify"]);
        assert_eq!(code, Some(0), "{case}: ledger\n{out}");
        // Nothing outside the workspace changed hands or mode.
        let meta = std::fs::metadata(outer.path()).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o700, "{case}");
        assert_eq!(std::os::unix::fs::MetadataExt::uid(&meta), 0, "{case}");
    }
}

#[test]
fn a_check_cannot_plant_a_start_up_hook_in_pythons_user_site() {
    let env = TestEnv::new();
    // The plant: a `usercustomize.py` in the user site of the run's home,
    // which makes any Python whose arguments say `acceptance` exit 0.
    env.write(
        "gate.toml",
        "[spec]\nid = \"user-site\"\n\
         [[check]]\nid = \"plant\"\nrun = '''d=$(python3 -c 'import site; print(site.getusersitepackages())'); \
         mkdir -p \"$d\" && printf 'import sys, os\\nif \"acceptance\" in sys.argv: os._exit(0)\\n' > \"$d/usercustomize.py\"; exit 0'''\n\
         [[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
         [[task.criterion]]\nid = \"exam\"\ntext = \"the exam decides\"\n\
         run = \"python3 -c 'import sys; sys.exit(1)' acceptance\"\nafter = [\"plant\"]\n",
    );
    let out = env.gate(&["verify", "--offline", "--format", "json"]).run();
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["isolation"]["kind"], "bwrap", "{doc}");
    assert_eq!(gate_tests::status_of(&doc, "plant"), "passed", "{doc}");
    assert_eq!(
        gate_tests::status_of(&doc, "exam"),
        "failed",
        "the exam ran the hook a check planted: {doc}"
    );
}

#[test]
fn start_up_code_a_check_plants_in_the_workspaces_environment_fails_the_run() {
    let env = TestEnv::new();
    #[allow(clippy::disallowed_methods)] // test set-up: a real virtual environment
    let made = Command::new("python3")
        .args(["-m", "venv", "--without-pip", ".venv"])
        .current_dir(env.path())
        .status()
        .unwrap()
        .success();
    assert!(made, "python3 -m venv");
    env.write(".gitignore", ".venv/\n.gate/\n");
    env.write("src/app.py", "VALUE = 1\n");
    env.write(
        "gate.toml",
        "[spec]\nid = \"pth\"\n\
         [[check]]\nid = \"plant\"\n\
         run = '''for d in .venv/lib/python3*/site-packages; do printf 'import os, sys; \"acceptance\" in sys.argv and os._exit(0)\\n' > \"$d/zz.pth\"; done'''\n\
         [[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
         [[task.criterion]]\nid = \"exam\"\ntext = \"the exam decides\"\n\
         run = \".venv/bin/python -c 'import sys; sys.exit(1)' acceptance\"\nafter = [\"plant\"]\n",
    );
    let hook = |doc: &Value| {
        gate_tests::findings(doc)
            .into_iter()
            .filter(|f| f["severity"] == "critical")
            .filter_map(|f| f["file"].as_str().map(str::to_owned))
            .find(|f| f.ends_with("site-packages/zz.pth"))
    };
    let out = env.gate(&["verify", "--offline", "--format", "json"]).run();
    let doc = out.json();
    // The hook did make the exam pass; the finding fails the run.
    assert_eq!(gate_tests::status_of(&doc, "exam"), "passed", "{doc}");
    assert!(hook(&doc).is_some(), "attempt 1 names the hook: {doc}");
    out.assert_exit(1);
    // Left in place for the next attempt, it is found before anything runs.
    let out = env.gate(&["verify", "--offline", "--format", "json"]).run();
    let doc = out.json();
    assert!(hook(&doc).is_some(), "attempt 2 names the hook: {doc}");
    out.assert_exit(1);
}

/// A hook planted for the exam and removed (by another check, once the
/// exam has run) before the run ends is not in the workspace afterwards;
/// the trace saw it written, and that fails the run, with either tracer.
#[test]
fn start_up_code_planted_and_removed_within_the_run_fails_it() {
    for mode in ["on", "default"] {
        let env = TestEnv::new();
        env.write(".gitignore", ".venv/\n.gate/\n");
        env.write("src/app.py", "VALUE = 1\n");
        env.write(
            "gate.toml",
            "[spec]\nid = \"pth-gone\"\n\
             [[check]]\nid = \"plant\"\n\
             run = '''d=.venv/lib/python3/site-packages; mkdir -p $d && printf 'import os\\n' > $d/zz.pth'''\n\
             [[check]]\nid = \"clean\"\nrun = \"sleep 2; rm .venv/lib/python3/site-packages/zz.pth\"\n\
             [[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
             [[task.criterion]]\nid = \"exam\"\ntext = \"the exam decides\"\n\
             run = \"true\"\nafter = [\"plant\"]\n",
        );
        let out = env
            .gate(&["verify", "--offline", "--format", "json"])
            .trace(mode)
            .run();
        let doc = out.json();
        assert_eq!(
            gate_tests::status_of(&doc, "clean"),
            "passed",
            "{mode}: {doc}"
        );
        assert!(
            !env.path()
                .join(".venv/lib/python3/site-packages/zz.pth")
                .exists(),
            "{mode}"
        );
        let named = gate_tests::findings(&doc).into_iter().any(|f| {
            f["severity"] == "critical"
                && f["file"] == ".venv/lib/python3/site-packages/zz.pth"
                && f["title"].as_str().is_some_and(|t| t.contains("`plant`"))
        });
        assert!(named, "{mode}: the hook written and gone is named: {doc:#}");
        out.assert_exit(1);
    }
}

/// `uv run` builds and installs the project from the workspace before it
/// runs the command: a build backend of the change's whose wheel carries
/// an executable `.pth` makes the exam's Python exit 0. The environment is
/// looked at after the items like any other: the hook is the change's
/// (its distribution was installed from the workspace), and the run fails.
#[test]
fn a_build_backend_that_installs_a_start_up_hook_through_uv_run_fails_the_run() {
    let python = std::path::PathBuf::from(gate_tests::peers::python());
    let bin = python.parent().unwrap();
    assert!(bin.join("uv").is_file(), "scripts/peer-venv.sh installs uv");
    let env = TestEnv::new();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/uv-backend");
    for name in ["backend.py", "pyproject.toml"] {
        std::fs::copy(fixture.join(name), env.path().join(name)).unwrap();
    }
    env.write(".gitignore", ".venv/\n.gate/\nuv.lock\n__pycache__/\n");
    env.write(
        "gate.toml",
        "[spec]\nid = \"uv-backend\"\n\
         [[task]]\nid = \"t\"\npaths = [\"backend.py\", \"pyproject.toml\"]\n\
         [[task.criterion]]\nid = \"exam\"\ntext = \"the exam decides\"\n\
         run = \"uv run --offline python -c 'import sys; sys.exit(1)' acceptance\"\n",
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = env
        .gate(&["verify", "--offline", "--format", "json"])
        .env("PATH", &path)
        .run();
    let doc = out.json();
    // The hook did make the exam pass; the finding fails the run.
    assert_eq!(gate_tests::status_of(&doc, "exam"), "passed", "{doc:#}");
    let named = gate_tests::findings(&doc).into_iter().any(|f| {
        f["severity"] == "critical"
            && f["file"].as_str().is_some_and(|p| {
                p.starts_with(".venv/") && p.ends_with("site-packages/zz_demo.pth")
            })
    });
    assert!(named, "the backend's hook is named: {doc:#}");
    out.assert_exit(1);
}
