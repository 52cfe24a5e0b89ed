//! Fail-to-pass evidence: with a base, criteria that ask for it run on the
//! base commit (checked out by the gate, outside the workspace) and their
//! base result decides what their pass is worth. Each workspace is a git
//! repository the test makes: the base commit holds the spec, a build
//! script and the verifiers; the change is what the test writes after it.
//! Every script logs where it ran, and on which side, into a folder outside
//! the workspace (`[sandbox] writable`), so the test counts real executions
//! on the base. The base's checkout is shown where the workspace is, so a
//! script tells the two apart by content alone: `.here`, an ignored file
//! of the workspace's, is in no commit.

use std::path::{Path, PathBuf};

use gate_tests::{TestEnv, item};
use serde_json::Value;

/// A repository at its base commit, and the folder its scripts log into.
struct Repo {
    env: TestEnv,
    logs: tempfile::TempDir,
}

impl Repo {
    /// Commits the base: `src/app.txt` says `old`, `src/legacy.txt` says
    /// `legacy`; `build` copies `src/` into `target/`; `criteria` is the
    /// spec's criteria (TOML), every one `after = ["build"]`.
    fn new(criteria: &str, policy: &str) -> Self {
        let env = TestEnv::new();
        let logs = tempfile::tempdir().unwrap();
        let log = logs.path().display().to_string();
        env.write(
            "gate.toml",
            &format!(
                "[spec]\nid = \"orders\"\n\n[[check]]\nid = \"build\"\nrun = \"./scripts/build.sh\"\n\n\
                 [[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\n{criteria}\n{policy}\n\
                 [sandbox]\nwritable = [\"{log}\"]\n"
            ),
        );
        env.write(".gitignore", ".gate/\ntarget/\n.here\n");
        env.script(
            "scripts/build.sh",
            &format!(
                "#!/bin/sh\nset -e\n{SIDE} >> {log}/build\n\
                 test ! -e src/broken\nmkdir -p target\ncp src/*.txt target/\n"
            ),
        );
        // Each verifier logs its name and where it ran, then decides.
        let verifier = |name: &str, test: &str| {
            env.script(
                &format!("scripts/{name}.sh"),
                &format!("#!/bin/sh\n{SIDE} >> {log}/{name}\n{test}\n"),
            );
        };
        verifier("has_feature", "grep -q feature target/app.txt");
        verifier("always", "exit 0");
        verifier("never", "grep -q nope target/app.txt");
        verifier("legacy", "grep -q legacy target/legacy.txt");
        env.write("src/app.txt", "old\n");
        env.write("src/legacy.txt", "legacy\n");
        env.git(&["init", "-q", "-b", "main"]);
        env.git(&["add", "."]);
        env.git(&["commit", "-q", "-m", "base"]);
        env.write(".here", "");
        Self { env, logs }
    }

    /// The change: the feature.
    fn feature(&self) -> &Self {
        self.env.write("src/app.txt", "feature\n");
        self
    }

    fn verify(&self, extra: &[&str]) -> gate_tests::RunOutput {
        let mut args = vec!["verify", "--base", "main", "--format", "json"];
        args.extend_from_slice(extra);
        self.env.gate(&args).run()
    }

    /// Each run of a script: the folder it ran in and whether it was on
    /// the base.
    fn runs(&self, name: &str) -> Vec<(PathBuf, bool)> {
        std::fs::read_to_string(self.logs.path().join(name))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.rsplit_once(' '))
            .map(|(dir, side)| (PathBuf::from(dir), side == "base"))
            .collect()
    }

    /// The runs of a script on the base.
    fn ran_on_base(&self, name: &str) -> Vec<PathBuf> {
        self.runs(name)
            .into_iter()
            .filter(|(_, base)| *base)
            .map(|(dir, _)| dir)
            .collect()
    }
}

/// What a script logs: where it runs, and on which side.
const SIDE: &str = "echo \"$PWD $(test -e .here && echo change || echo base)\"";

fn criterion(id: &str, script: &str, expect: &str) -> String {
    format!(
        "[[task.criterion]]\nid = \"{id}\"\ntext = \"{id} holds\"\nrun = \"./scripts/{script}.sh\"\n\
         after = [\"build\"]\nexpect = \"{expect}\"\n\n"
    )
}

fn base_status<'a>(doc: &'a Value, id: &str) -> &'a Value {
    &item(doc, id).unwrap_or_else(|| panic!("no item {id}: {doc:#}"))["base_status"]
}

fn critical_titles(doc: &Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "critical")
        .map(|f| f["title"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_criterion_that_fails_on_the_base_and_passes_on_the_change_is_earned() {
    let repo = Repo::new(&criterion("orders-201", "has_feature", "fail-to-pass"), "");
    repo.feature();
    let out = repo.verify(&[]);
    out.assert_exit(0);
    let doc = out.json();
    let c = item(&doc, "orders-201").unwrap();
    assert_eq!(c["status"], "passed", "{c:#}");
    assert_eq!(c["expect"], "fail-to-pass");
    assert_eq!(c["base_status"]["status"], "failed", "{c:#}");
    assert_eq!(
        c["base_status"]["output_digest"].as_str().unwrap().len(),
        64
    );
    assert_eq!(doc["base_runs"]["ran"], 1, "{:#}", doc["base_runs"]);
    assert_eq!(doc["base_runs"]["reused"], 0);
    // It really ran on the base: once, with the build, outside the workspace.
    assert_eq!(repo.ran_on_base("has_feature").len(), 1);
    assert_eq!(repo.ran_on_base("build").len(), 1);

    // The human output says what the pass rests on.
    let human = repo.env.gate(&["verify", "--base", "main"]).run();
    human.assert_exit(0);
    human.stdout_has("fail→pass");
    // The bundle keeps it too.
    let shown = repo.env.shown(doc["run_id"].as_str().unwrap());
    assert_eq!(
        base_status(&shown["run"], "orders-201")["status"],
        "failed",
        "{shown:#}"
    );
    assert_eq!(shown["run"]["base_commit"], doc["base_commit"]);
}

#[test]
fn a_fail_to_pass_criterion_that_passes_on_the_base_is_a_critical_finding() {
    let repo = Repo::new(&criterion("loose", "always", "fail-to-pass"), "");
    repo.feature();
    let out = repo.verify(&[]);
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(base_status(&doc, "loose")["status"], "passed");
    assert_eq!(item(&doc, "loose").unwrap()["status"], "passed");
    assert!(
        critical_titles(&doc).contains(
            &"criterion `loose` passes without the change: it does not show the feature".to_owned()
        ),
        "{:#}",
        doc["findings"]
    );
    assert_eq!(doc["verdict"], "fail");
}

/// A verifier the change created that fails on purpose wherever the
/// workspace is not earns nothing: the base's checkout is shown at the
/// workspace's own path, so it passes there too.
#[test]
fn a_created_verifier_cannot_tell_the_base_by_where_it_runs() {
    let repo = Repo::new(&criterion("sly", "sly", "fail-to-pass"), "");
    let ws = repo.env.path().canonicalize().unwrap();
    repo.env.script(
        "scripts/sly.sh",
        &format!("#!/bin/sh\n[ \"$PWD\" = \"{}\" ]\n", ws.display()),
    );
    repo.feature();
    let out = repo.verify(&[]);
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(base_status(&doc, "sly")["status"], "passed", "{doc:#}");
    assert!(
        critical_titles(&doc).contains(
            &"criterion `sly` passes without the change: it does not show the feature".to_owned()
        ),
        "{:#}",
        doc["findings"]
    );
}

#[test]
fn a_criterion_that_fails_on_both_fails_as_it_always_did() {
    let repo = Repo::new(&criterion("nope", "never", "fail-to-pass"), "");
    repo.feature();
    let out = repo.verify(&[]);
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(item(&doc, "nope").unwrap()["status"], "failed");
    assert_eq!(base_status(&doc, "nope")["status"], "failed");
    assert!(critical_titles(&doc).is_empty(), "{:#}", doc["findings"]);
}

#[test]
fn a_pass_to_pass_criterion_the_change_breaks_fails() {
    let repo = Repo::new(&criterion("legacy", "legacy", "pass-to-pass"), "");
    repo.env.write("src/legacy.txt", "gone\n");
    let out = repo.verify(&[]);
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(item(&doc, "legacy").unwrap()["status"], "failed");
    assert_eq!(base_status(&doc, "legacy")["status"], "passed");
}

#[test]
fn a_pass_to_pass_criterion_broken_on_the_base_is_the_specs_problem() {
    let repo = Repo::new(&criterion("nope", "never", "pass-to-pass"), "");
    repo.feature();
    let out = repo.env.gate(&["verify", "--base", "main"]).run();
    out.assert_exit(2);
    out.stderr_has("criterion `nope` expects pass-to-pass but fails on the base");
    // Nothing of the change ran.
    assert!(repo.runs("never").iter().all(|(_, base)| *base));
}

#[test]
fn a_base_whose_build_fails_leaves_the_criteria_unverified() {
    let repo = Repo::new(
        &(criterion("orders-201", "has_feature", "fail-to-pass")
            + &criterion("legacy", "legacy", "pass-to-pass")),
        "",
    );
    // The base cannot build; the change fixes that and adds the feature.
    repo.env.write("src/broken", "");
    repo.env.git(&["add", "."]);
    repo.env
        .git(&["commit", "-q", "-m", "a base that does not build"]);
    std::fs::remove_file(repo.env.path().join("src/broken")).unwrap();
    repo.feature();
    let out = repo.verify(&[]);
    out.assert_exit(4);
    let doc = out.json();
    assert_eq!(doc["verdict"], "incomplete");
    for id in ["orders-201", "legacy"] {
        let c = item(&doc, id).unwrap();
        assert_eq!(c["status"], "unverified", "{c:#}");
        assert_eq!(c["base_status"]["status"], "could_not_run", "{c:#}");
        assert!(
            c["base_status"]["reason"]
                .as_str()
                .unwrap()
                .contains("build"),
            "{c:#}"
        );
    }
    // The base ran where the change does: at the workspace's own path.
    assert_eq!(
        repo.ran_on_base("build"),
        [repo.env.path().canonicalize().unwrap()]
    );
    assert!(repo.ran_on_base("has_feature").is_empty());
}

#[test]
fn a_second_attempt_does_not_run_the_base_again() {
    let criteria = criterion("orders-201", "has_feature", "fail-to-pass")
        + "[[task.criterion]]\nid = \"docs\"\ntext = \"the docs say so\"\n\
           run = \"grep -q feature src/docs.txt\"\n\n";
    let repo = Repo::new(&criteria, "");
    repo.feature();
    // Attempt 1 fails on `docs`; the base ran once.
    let first = repo.verify(&[]);
    first.assert_exit(1);
    assert_eq!(first.json()["base_runs"]["ran"], 1);
    // Attempt 2 fixes `docs`: the base's result is the ledger's.
    repo.env.write("src/docs.txt", "feature\n");
    let second = repo.verify(&[]);
    second.assert_exit(0);
    let doc = second.json();
    assert_eq!(doc["attempt"], 2);
    assert_eq!(doc["base_runs"]["ran"], 0, "{:#}", doc["base_runs"]);
    assert_eq!(doc["base_runs"]["reused"], 1);
    assert_eq!(base_status(&doc, "orders-201")["status"], "failed");
    assert_eq!(
        base_status(&doc, "orders-201")["from_run"],
        first.json()["run_id"]
    );
    assert_eq!(repo.ran_on_base("has_feature").len(), 1);
    assert_eq!(repo.ran_on_base("build").len(), 1);
}

/// The base's build is kept after the base's own checks: a second base run
/// on the same base starts from it, and what the change's exam wrote in the
/// base's checkout is not in it. Another manifest starts cold. Each base run
/// builds twice: before the change's verifier is copied in (what is kept),
/// and again over it (from the warm tree).
#[test]
fn a_second_base_run_on_the_same_base_starts_from_the_build_cache() {
    let repo = Repo::new(&criterion("planted", "planter", "fail-to-pass"), "");
    let log = repo.logs.path().display().to_string();
    // The build says whether it found its own output, anything else, and
    // how many lines a tracked file it writes to had (the commit's: none).
    repo.env.script(
        "scripts/build.sh",
        &format!(
            "#!/bin/sh\nset -e\n{SIDE} >> {log}/build\n\
             if [ -e target/built ]; then w=warm; else w=cold; fi\n\
             if [ -e target/planted ]; then w=\"$w planted\"; fi\n\
             w=\"$w $(wc -l < stamp.log)\"\necho built >> stamp.log\n\
             test -e .here || echo \"$w\" >> {log}/cache\n\
             mkdir -p target\ncp src/*.txt target/\ntouch target/built\n"
        ),
    );
    repo.env.write("stamp.log", "");
    repo.env.git(&["add", "stamp.log"]);
    repo.env
        .git(&["commit", "-qam", "a build that keeps its output"]);
    repo.feature();
    // The change's verifier, which runs on the base after the build, plants
    // a file in the build's output; each version of it runs there anew.
    let planter = |n: u32| {
        repo.env.script(
            "scripts/planter.sh",
            &format!(
                "#!/bin/sh\n# version {n}\ntouch target/planted\ngrep -q feature target/app.txt\n"
            ),
        );
    };
    let cache = || -> Vec<String> {
        std::fs::read_to_string(repo.logs.path().join("cache"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    planter(1);
    repo.verify(&[]).assert_exit(0);
    assert_eq!(cache(), ["cold 0", "warm 1"]);
    // Kept outside the workspace: the state directory is in it, so the
    // user's cache folder holds it.
    assert!(!repo.env.path().join(".gate/base-cache").exists());
    let entries = std::fs::read_dir(repo.env.cache_path().join("gate/base-cache"))
        .unwrap()
        .count();
    assert_eq!(entries, 1);
    planter(2);
    let second = repo.verify(&[]);
    second.assert_exit(0);
    assert_eq!(second.json()["base_runs"]["ran"], 1);
    // The entry's copy of the tracked file was written again from the
    // commit, and the planted file is not in it.
    assert_eq!(cache(), ["cold 0", "warm 1", "warm 0", "warm 1"]);
    // A dependency manifest of the change's goes into the build: another entry.
    repo.env.write("package.json", "{\"name\": \"orders\"}\n");
    planter(3);
    repo.verify(&[]).assert_exit(0);
    assert_eq!(
        cache(),
        ["cold 0", "warm 1", "warm 0", "warm 1", "cold 0", "warm 1"]
    );
}

#[test]
fn no_base_runs_leaves_unknown_base_results_unverified_and_says_so() {
    let repo = Repo::new(&criterion("orders-201", "has_feature", "fail-to-pass"), "");
    repo.feature();
    let out = repo.verify(&["--no-base-runs"]);
    out.assert_exit(4);
    let doc = out.json();
    assert_eq!(doc["base_runs"]["turned_off"], true);
    assert_eq!(item(&doc, "orders-201").unwrap()["status"], "unverified");
    assert!(repo.ran_on_base("has_feature").is_empty());
}

#[test]
fn the_base_checkout_is_gone_after_the_run_and_out_of_the_changes_reach() {
    let repo = Repo::new(&criterion("orders-201", "has_feature", "fail-to-pass"), "");
    // The gate makes the base's checkout in its temporary folder; the
    // change's criterion tries to write there.
    let tmp = tempfile::tempdir().unwrap();
    let (log, tmp_dir) = (
        repo.logs.path().display().to_string(),
        tmp.path().display().to_string(),
    );
    let spec = repo.env.read("gate.toml")
        + &format!(
            "[[task.criterion]]\nid = \"reach\"\ntext = \"reaches the base\"\n\
             run = \"for d in {tmp_dir}/gate-base-*/tree; do if touch $d/planted; then echo wrote $d >> {log}/reach; fi; done; true\"\n"
        );
    repo.env.write("gate.toml", &spec);
    repo.env.git(&["commit", "-qam", "the reach criterion"]);
    repo.feature();
    let out = repo
        .env
        .gate(&["verify", "--base", "main", "--format", "json"])
        .env("TMPDIR", tmp.path())
        .run();
    out.assert_exit(0);
    assert_eq!(repo.ran_on_base("has_feature").len(), 1);
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("gate-base-"))
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?} still there");
    assert!(
        !Path::new(&format!("{log}/reach")).exists(),
        "the change wrote into the base's checkout"
    );
}

/// Interrupted while the base builds: once (the run stops its processes,
/// ends incomplete and removes the checkout as it returns) or twice (the
/// gate exits at once, and still removes it first). Twice runs
/// unisolated with a build that ignores SIGTERM, so the first signal is
/// still being served when the second arrives.
#[test]
fn an_interrupted_base_run_leaves_no_checkout_behind() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    use std::time::{Duration, Instant};

    for (signals, extra, code) in [(1, &[][..], 4), (2, &["--sandbox", "off"][..], 128 + 15)] {
        let env = TestEnv::new();
        let logs = tempfile::tempdir().unwrap();
        let log = logs.path().display().to_string();
        env.write(
            "gate.toml",
            &format!(
                "[spec]\nid = \"stop\"\n[[check]]\nid = \"build\"\nrun = \"./build.sh\"\n\
                 [[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
                 [[task.criterion]]\nid = \"c\"\ntext = \"holds\"\nrun = \"true\"\n\
                 after = [\"build\"]\nexpect = \"fail-to-pass\"\n\
                 [sandbox]\nwritable = [\"{log}\"]\n"
            ),
        );
        env.script(
            "build.sh",
            &format!("#!/bin/sh\ntrap '' TERM\necho \"$PWD\" > {log}/where\nsleep 300\n"),
        );
        env.write("src/a.txt", "a\n");
        env.write(".gitignore", ".gate/\n");
        env.git(&["init", "-q", "-b", "main"]);
        env.git(&["add", "."]);
        env.git(&["commit", "-q", "-m", "base"]);
        let mut args = vec!["verify", "--base", "main", "--format", "json"];
        args.extend_from_slice(extra);
        // The checkout is made in the gate's temporary folder: where a
        // script runs no longer says (it is shown at the workspace's path).
        let tmp = tempfile::tempdir().unwrap();
        let mut child = env.gate(&args).env("TMPDIR", tmp.path()).spawn();
        let gate = Pid::from_raw(i32::try_from(child.id()).unwrap());
        let where_ = logs.path().join("where");
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::fs::read_to_string(&where_).map_or(true, |s| !s.ends_with('\n')) {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the base's build never started");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let checkouts = || -> Vec<PathBuf> {
            std::fs::read_dir(tmp.path())
                .unwrap()
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with("gate-base-")
                })
                .collect()
        };
        let found = checkouts();
        assert_eq!(found.len(), 1, "{found:?}");
        let checkout = found[0].clone();
        kill(gate, Signal::SIGTERM).unwrap();
        if signals == 2 {
            std::thread::sleep(Duration::from_millis(200));
            kill(gate, Signal::SIGTERM).unwrap();
        }
        let out = gate_tests::RunOutput::wait(child, "gate verify");
        out.assert_exit(code);
        assert!(
            !checkout.exists(),
            "{signals} signal(s): {} is still there",
            checkout.display()
        );
    }
}
