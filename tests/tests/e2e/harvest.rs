//! `gate outcome harvest` end to end: runs approved (and failed) by the
//! real binary on a real repository, their changes landed by squash,
//! rebase and merge, then reverted, fixed, named in a `Fixes:` trailer or
//! left alone; one harvest labels each from the history alone.
#![allow(
    clippy::unwrap_used,
    clippy::disallowed_methods,
    clippy::many_single_char_names,
    reason = "test fixtures build a repository with git (its files named by a letter) and \
              panic on a failed setup"
)]

use std::collections::BTreeMap;
use std::process::Command;

use gate_evidence::Ledger;
use gate_tests::TestEnv;
use serde_json::Value;

/// Seconds since the epoch, `days` ago (plus `minutes`, so commits of one
/// day keep their order).
fn ago(days: i64, minutes: i64) -> String {
    let t = chrono::Utc::now() - chrono::Duration::days(days) + chrono::Duration::minutes(minutes);
    format!("@{} +0000", t.timestamp())
}

/// The repository under test, every commit dated.
struct Repo {
    env: TestEnv,
    /// A shared ledger and the key that signs into it, when not the
    /// workspace's own.
    shared: Option<(String, std::path::PathBuf)>,
}

impl Repo {
    fn new() -> Self {
        Self {
            env: TestEnv::new(),
            shared: None,
        }
    }

    /// `gate ARGS` in the repository (on the shared ledger, if any).
    fn gate(&self, args: &[&str]) -> gate_tests::GateCommand {
        let cmd = self.env.gate(args);
        match &self.shared {
            Some((ledger, key)) => cmd.env("GATE_LEDGER", ledger).env("GATE_SIGNING_KEY", key),
            None => cmd,
        }
    }

    fn git(&self, when: &str, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(self.env.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .env("GIT_AUTHOR_DATE", when)
            .env("GIT_COMMITTER_DATE", when)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn head(&self) -> String {
        self.git("@0 +0000", &["rev-parse", "HEAD"])
    }

    /// Writes `file` with `lines` and commits it on the current branch.
    fn commit(&self, when: &str, file: &str, lines: &[&str], message: &str) -> String {
        self.env.write(file, &format!("{}\n", lines.join("\n")));
        self.git(when, &["add", "-A"]);
        self.git(when, &["commit", "-q", "-m", message]);
        self.head()
    }

    /// Runs the gate on the checkout as spec `spec`, whose one check
    /// passes when `pass`; the run's id.
    fn verify(&self, spec: &str, pass: bool) -> String {
        let check = if pass { "true" } else { "false" };
        self.env.write(
            "gate.toml",
            &format!("[spec]\nid = \"{spec}\"\n[[check]]\nid = \"build\"\nrun = \"{check}\"\n"),
        );
        let out = self.gate(&["verify", "--format", "json"]).run();
        out.assert_exit(i32::from(!pass));
        let doc = out.json();
        assert!(
            doc["verified"]["root_commits"]
                .as_array()
                .is_some_and(|r| r.len() == 1),
            "a run records its repository's root commit: {}",
            doc["verified"]
        );
        doc["run_id"].as_str().unwrap().to_owned()
    }

    /// A feature branch off main with one commit of `file`.
    fn feature(&self, name: &str, when: &str, file: &str, lines: &[&str]) -> String {
        self.git(when, &["checkout", "-q", "-b", name, "main"]);
        self.commit(when, file, lines, &format!("{name}: change {file}"))
    }

    /// Squash-merges `branch` into main; the squash commit.
    fn squash(&self, when: &str, branch: &str) -> String {
        self.git(when, &["checkout", "-q", "main"]);
        self.git(when, &["merge", "-q", "--squash", branch]);
        self.git(
            when,
            &["commit", "-q", "-m", &format!("{branch} (squashed)")],
        );
        self.head()
    }
}

fn lines(n: usize, tag: &str) -> Vec<String> {
    (1..=n).map(|i| format!("value_{i} = {tag}{i}")).collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The labels a harvest printed, by run id.
fn by_run(doc: &Value) -> BTreeMap<String, Value> {
    doc["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["run_id"].as_str().unwrap().to_owned(), l.clone()))
        .collect()
}

#[test]
fn one_harvest_labels_each_run_from_the_history_alone() {
    let repo = Repo::new();
    let r = &repo;
    r.git(&ago(95, 0), &["init", "-q", "-b", "main"]);
    r.env.write(".gitignore", "gate.toml\n.gate/\n");
    for f in ["a", "b", "c", "d", "e", "f", "g", "h", "p", "q"] {
        r.env
            .write(&format!("src/{f}.py"), &(lines(8, "0").join("\n") + "\n"));
    }
    r.commit(&ago(95, 0), "README", &["demo"], "initial");

    // Squashed, later reverted.
    let base = lines(8, "0");
    let mut a = base.clone();
    a[1] = "value_2 = 'a'".into();
    r.feature("reverted", &ago(90, 0), "src/a.py", &refs(&a));
    let run_reverted = r.verify("reverted", true);
    let squash_reverted = r.squash(&ago(90, 1), "reverted");

    // Squashed, its line later modified by a fix (SZZ).
    let mut b = base.clone();
    b[2] = "value_3 = price * qty".into();
    r.feature("blamed", &ago(89, 0), "src/b.py", &refs(&b));
    let run_blamed = r.verify("blamed", true);
    let squash_blamed = r.squash(&ago(89, 1), "blamed");

    // Squashed, later named in a `Fixes:` trailer by a commit that only
    // adds lines.
    let mut c = base.clone();
    c[3] = "value_4 = parse(text)".into();
    r.feature("named", &ago(88, 0), "src/c.py", &refs(&c));
    let run_named = r.verify("named", true);
    let squash_named = r.squash(&ago(88, 1), "named");

    // Squashed and left alone: it survives.
    let mut d = base.clone();
    d[4] = "value_5 = 'd'".into();
    r.feature("survivor", &ago(87, 0), "src/d.py", &refs(&d));
    let run_survivor = r.verify("survivor", true);
    let squash_survivor = r.squash(&ago(87, 1), "survivor");

    // Squashed, reverted, but a person said fine first: the person wins.
    let mut p = base.clone();
    p[0] = "value_1 = 'p'".into();
    r.feature("person", &ago(86, 0), "src/p.py", &refs(&p));
    let run_person = r.verify("person", true);
    let squash_person = r.squash(&ago(86, 1), "person");

    // Two commits, rebased onto a main that moved: landed by patch.
    let mut f = base.clone();
    f[5] = "value_6 = 'f'".into();
    r.feature("rebased", &ago(85, 0), "src/f.py", &refs(&f));
    let mut g = base.clone();
    g[5] = "value_6 = 'g'".into();
    r.commit(
        &ago(85, 1),
        "src/g.py",
        &refs(&g),
        "rebased: change src/g.py",
    );
    let run_rebased = r.verify("rebased", true);
    r.git(&ago(85, 2), &["checkout", "-q", "main"]);
    r.commit(&ago(85, 3), "NOTES", &["moved"], "docs: notes");
    r.git(&ago(84, 0), &["checkout", "-q", "rebased"]);
    r.git(&ago(84, 0), &["rebase", "-q", "main"]);
    r.git(&ago(84, 0), &["checkout", "-q", "main"]);
    r.git(&ago(84, 0), &["merge", "-q", "--ff-only", "rebased"]);

    // A failed attempt, then a passing one on top, merged with a merge
    // commit: only the passing attempt landed.
    let mut h = base.clone();
    h[6] = "value_7 = 'draft'".into();
    r.feature("merged", &ago(83, 0), "src/h.py", &refs(&h));
    let run_merged_failed = r.verify("merged", false);
    h[6] = "value_7 = 'h'".into();
    r.commit(&ago(83, 1), "src/h.py", &refs(&h), "merged: finish");
    let run_merged = r.verify("merged", true);
    r.git(&ago(83, 2), &["checkout", "-q", "main"]);
    r.git(
        &ago(83, 2),
        &[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "Merge branch 'merged'",
            "merged",
        ],
    );

    // Failed, landed anyway, survived: a false fail.
    let mut q = base.clone();
    q[7] = "value_8 = 'q'".into();
    r.feature("overruled", &ago(82, 0), "src/q.py", &refs(&q));
    let run_overruled = r.verify("overruled", false);
    r.squash(&ago(82, 1), "overruled");

    // Failed and never landed.
    r.feature("abandoned", &ago(81, 0), "src/d.py", &["value_1 = 'never'"]);
    let run_abandoned = r.verify("abandoned", false);
    r.git(&ago(81, 1), &["checkout", "-q", "main"]);

    // Verified files its head does not hold: left alone.
    r.env.write("src/dirty.py", "x = 1\n");
    let run_dirty = r.verify("dirty", true);
    std::fs::remove_file(r.env.path().join("src/dirty.py")).unwrap();

    // What happened after.
    r.git(&ago(70, 0), &["revert", "--no-edit", &squash_reverted]);
    r.git(&ago(70, 1), &["revert", "--no-edit", &squash_person]);
    let mut b_fixed = b.clone();
    b_fixed[2] = "value_3 = price * qty + tax".into();
    let fix = r.commit(
        &ago(69, 0),
        "src/b.py",
        &refs(&b_fixed),
        "Fix the total: tax was missing",
    );
    let mut c_more = c.clone();
    c_more.push("if text is None:".into());
    c_more.push("    value_4 = None".into());
    let trailer = r.commit(
        &ago(60, 0),
        "src/c.py",
        &refs(&c_more),
        // A message is the agent's text: a terminal escape in it is shown
        // escaped.
        &format!(
            "Handle empty input\u{1b}[2J\n\nFixes: {}",
            &squash_named[..12]
        ),
    );
    for i in 0..12 {
        r.commit(
            &ago(50 - i, 0),
            "NOTES",
            &[&format!("note {i}")],
            &format!("docs: note {i}"),
        );
    }

    // Recent: squashed, then a fix that only adds lines to its file.
    let mut e = base.clone();
    e[0] = "value_1 = load()".into();
    r.feature("recent", &ago(3, 0), "src/e.py", &refs(&e));
    let run_recent = r.verify("recent", true);
    r.squash(&ago(3, 1), "recent");
    let mut e_more = e.clone();
    e_more.push("if value_1 is None:".into());
    e_more.push("    raise ValueError('fix: nothing loaded')".into());
    r.commit(
        &ago(2, 0),
        "src/e.py",
        &refs(&e_more),
        "fix: guard against nothing loaded",
    );

    r.env
        .gate(&["outcome", &run_person, "--fine", "--source", "oncall"])
        .run()
        .assert_exit(0);
    // The harvester's sources are its own.
    r.env
        .gate(&[
            "outcome",
            &run_survivor,
            "--broken",
            "--source",
            "git:revert",
        ])
        .run()
        .assert_exit(2)
        .stderr_has("reserved");

    let dry = r.env.gate(&["outcome", "harvest", "--dry-run"]).run();
    dry.assert_exit(0)
        .stdout_has("would record: run")
        .stdout_has("git:fixes")
        .stdout_has("2 not integrated yet");
    assert!(!dry.stdout.contains('\u{1b}'), "{}", dry.stdout);
    let ledger = Ledger::open(r.env.path().join(".gate/ledger.db")).unwrap();
    assert_eq!(
        ledger.all_outcomes().unwrap().len(),
        1,
        "a dry run records nothing"
    );
    drop(ledger);
    let out = r
        .env
        .gate(&["outcome", "harvest", "--format", "json"])
        .run();
    out.assert_exit(0);
    let doc = out.json();
    let labels = by_run(&doc);
    let label = |run: &str| {
        labels
            .get(run)
            .unwrap_or_else(|| panic!("no label for {run} in {doc:#}"))
    };

    // (what, run, source, broken, fate)
    let cases = [
        ("reverted", &run_reverted, "git:revert", true, "recorded"),
        (
            "modified by a fix",
            &run_blamed,
            "git:szz",
            true,
            "recorded",
        ),
        ("named by Fixes:", &run_named, "git:fixes", true, "recorded"),
        (
            "left alone",
            &run_survivor,
            "git:survived",
            false,
            "recorded",
        ),
        (
            "rebased and left alone",
            &run_rebased,
            "git:survived",
            false,
            "recorded",
        ),
        (
            "merged and left alone",
            &run_merged,
            "git:survived",
            false,
            "recorded",
        ),
        (
            "failed, landed anyway",
            &run_overruled,
            "git:survived",
            false,
            "recorded",
        ),
        (
            "a person said fine",
            &run_person,
            "git:revert",
            true,
            "kept_person",
        ),
    ];
    for (what, run, source, broken, fate) in cases {
        let l = label(run);
        assert_eq!(l["source"], source, "{what}: {l:#}");
        assert_eq!(l["broken"], broken, "{what}: {l:#}");
        assert_eq!(l["fate"], fate, "{what}: {l:#}");
        assert!(l["confidence"].as_f64().unwrap() > 0.0, "{what}");
    }
    // Evidence: the commits each label rests on.
    let ev = |run: &str| label(run)["evidence"].clone();
    assert_eq!(ev(&run_reverted)["landed"][0], squash_reverted.as_str());
    assert_eq!(ev(&run_reverted)["landed_by"], "patch");
    assert!(
        ev(&run_reverted)["commits"][0]["summary"]
            .as_str()
            .unwrap()
            .starts_with("Revert")
    );
    assert_eq!(ev(&run_blamed)["commits"][0]["commit"], fix.as_str());
    assert_eq!(
        ev(&run_blamed)["blamed"],
        serde_json::json!([{"file": "src/b.py", "line": 3, "commit": squash_blamed}])
    );
    assert_eq!(ev(&run_named)["commits"][0]["commit"], trailer.as_str());
    assert!(
        ev(&run_named)["blamed"].is_null(),
        "a fix that only adds lines blames nothing"
    );
    assert_eq!(ev(&run_rebased)["landed_by"], "patch");
    assert_eq!(ev(&run_rebased)["landed"].as_array().unwrap().len(), 2);
    assert_eq!(ev(&run_merged)["landed_by"], "merge");
    assert!(
        ev(&run_survivor)["survived"]["later_commits"]
            .as_u64()
            .unwrap()
            >= 10
    );

    // No label: still in its window (its fix only added lines); an earlier
    // attempt whose commit only came in under a later one; never landed.
    for (what, run) in [
        ("inside its window", &run_recent),
        ("an earlier attempt", &run_merged_failed),
        ("never landed", &run_abandoned),
    ] {
        assert!(
            !labels.contains_key(run.as_str()),
            "{what}: {:#}",
            labels[run.as_str()]
        );
    }
    let not_integrated: Vec<&str> = doc["not_integrated"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(not_integrated.len(), 2, "{doc:#}");
    assert!(not_integrated.contains(&run_abandoned.as_str()));
    assert!(not_integrated.contains(&run_merged_failed.as_str()));
    assert_eq!(doc["pending"], 1);
    assert_eq!(doc["uncommitted"], 1, "{doc:#}");
    assert!(!labels.contains_key(&run_dirty));

    // The person's outcome stands, alone; every harvested one is signed.
    let ledger = Ledger::open(r.env.path().join(".gate/ledger.db")).unwrap();
    let person = ledger.outcomes(&run_person).unwrap();
    assert_eq!(person.len(), 1);
    assert_eq!(person[0].source.as_deref(), Some("oncall"));
    let blamed = ledger.outcomes(&run_blamed).unwrap();
    assert_eq!(blamed.len(), 1);
    assert!(blamed[0].envelope.is_some());
    assert_eq!(blamed[0].evidence.as_ref().unwrap().blamed[0].line, 3);
    let total = ledger.all_outcomes().unwrap().len();
    drop(ledger);

    // Twice adds nothing.
    let again = r
        .env
        .gate(&["outcome", "harvest", "--format", "json"])
        .run();
    again.assert_exit(0);
    assert_eq!(again.json()["recorded"], 0, "{:#}", again.json());
    let ledger = Ledger::open(r.env.path().join(".gate/ledger.db")).unwrap();
    assert_eq!(ledger.all_outcomes().unwrap().len(), total);
    drop(ledger);

    // The report counts them: a false-pass rate nobody typed.
    let report = r.env.gate(&["report", "--format", "json"]).run();
    report.assert_exit(0);
    let report = report.json();
    assert_eq!(
        report["false_pass"]["broken"], 3,
        "{:#}",
        report["false_pass"]
    );
    assert_eq!(
        report["false_pass"]["with_outcome"], 7,
        "{:#}",
        report["false_pass"]
    );
    assert_eq!(
        report["false_fail"]["fine"], 1,
        "{:#}",
        report["false_fail"]
    );
    assert_eq!(report["not_integrated"], 2);
    // Decided: 12 approved or failed runs; 4 without an outcome (two
    // never landed, one still inside its window, one left alone).
    assert_eq!(
        report["without_outcome"],
        serde_json::json!({"share": 4.0 / 12.0, "runs": 4, "decided": 12})
    );
    let by = &report["by"]["source"];
    assert_eq!(by["git:revert"]["false_pass"]["broken"], 1, "{by:#}");
    assert_eq!(by["git:szz"]["false_pass"]["broken"], 1, "{by:#}");
    assert_eq!(by["git:fixes"]["false_pass"]["broken"], 1, "{by:#}");
    assert_eq!(by["git:survived"]["runs"], 4, "{by:#}");
    assert_eq!(by["git:survived"]["false_fail"]["fine"], 1, "{by:#}");
    assert_eq!(by["person"]["runs"], 1, "{by:#}");
    // SZZ's labels are weaker than 0.6: left out above it.
    let strict = r
        .env
        .gate(&["report", "--format", "json", "--min-confidence", "0.6"])
        .run();
    strict.assert_exit(0);
    let strict = strict.json();
    assert_eq!(
        strict["false_pass"]["broken"], 2,
        "{:#}",
        strict["false_pass"]
    );
    assert_eq!(strict["false_pass"]["with_outcome"], 6);
    assert_eq!(strict["min_confidence"], 0.6);
    r.env
        .gate(&["report", "--min-confidence", "2"])
        .run()
        .assert_exit(2);
    // The text names the sources; the page shows the evidence.
    r.env
        .gate(&["report"])
        .run()
        .assert_exit(0)
        .stdout_has("by outcome source")
        .stdout_has("git:szz")
        .stdout_has("2 not integrated yet");
    r.env
        .gate(&["report", "--html", "out/report.html"])
        .run()
        .assert_exit(0);
    let page = r.env.read("out/report.html");
    for needle in [
        "Fix the total: tax was missing",
        "src/b.py:3",
        &squash_blamed[..12],
        "Handle empty input",
        r#"id="source-table""#,
    ] {
        assert!(page.contains(needle), "{needle} not on the page");
    }
    let metrics = r.env.gate(&["metrics"]).run();
    metrics
        .assert_exit(0)
        .stdout_has("gate_source_false_pass_ratio{source=\"git:revert\"} 1")
        .stdout_has("gate_not_integrated_runs 2");

    // A stronger label later replaces a weaker harvested one; the earlier
    // stays as history.
    r.git(&ago(1, 0), &["revert", "--no-edit", &squash_survivor]);
    let later = r
        .env
        .gate(&["outcome", "harvest", "--format", "json"])
        .run();
    later.assert_exit(0);
    let later = later.json();
    assert_eq!(later["recorded"], 1, "{later:#}");
    let survivor = &by_run(&later)[&run_survivor];
    assert_eq!(survivor["source"], "git:revert");
    assert_eq!(survivor["fate"], "replaced");
    assert_eq!(survivor["replaced"], "git:survived");
    let ledger = Ledger::open(r.env.path().join(".gate/ledger.db")).unwrap();
    let history: Vec<Option<String>> = ledger
        .outcomes(&run_survivor)
        .unwrap()
        .into_iter()
        .map(|o| o.source)
        .collect();
    assert_eq!(
        history,
        [
            Some("git:survived".to_owned()),
            Some("git:revert".to_owned())
        ]
    );
}

#[test]
fn a_shallow_clone_is_refused_with_what_to_fetch() {
    let repo = Repo::new();
    repo.git(&ago(3, 0), &["init", "-q", "-b", "main"]);
    repo.env.write(".gitignore", "gate.toml\n.gate/\n");
    repo.commit(&ago(3, 0), "a", &["1"], "one");
    repo.commit(&ago(2, 0), "a", &["2"], "two");
    repo.verify("s", true);
    let clone = TestEnv::new();
    let from = format!("file://{}", repo.env.path().display());
    let dest = clone.path().join("c");
    let out = Command::new("git")
        .args(["clone", "-q", "--depth", "1", &from])
        .arg(&dest)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::fs::write(dest.join("gate.toml"), "[spec]\nid = \"s\"\n").unwrap();
    let state = repo.env.path().join(".gate");
    let (dest, state) = (dest.display().to_string(), state.display().to_string());
    let out = repo
        .env
        .gate(&[
            "--workspace",
            &dest,
            "--state",
            &state,
            "outcome",
            "harvest",
        ])
        .run();
    out.assert_exit(2)
        .stderr_has("shallow")
        .stderr_has("--unshallow");
}

/// A shared PostgreSQL ledger holds runs of two repositories; a harvest in
/// a fresh full clone of one labels its runs and leaves the other's alone.
#[test]
fn a_harvest_on_a_fresh_clone_with_the_shared_ledger_leaves_other_repositories_alone() {
    let db = gate_tests::postgres::Database::fresh();
    let key_home = TestEnv::new();
    key_home.gate(&["keys", "generate"]).run().assert_exit(0);
    let shared = Some((
        db.url.clone(),
        key_home.path().join(".gate/keys/signing.key"),
    ));
    let ours = Repo {
        shared: shared.clone(),
        ..Repo::new()
    };
    let theirs = Repo {
        shared: shared.clone(),
        ..Repo::new()
    };
    for (repo, readme) in [(&ours, "ours"), (&theirs, "theirs")] {
        repo.git(&ago(40, 0), &["init", "-q", "-b", "main"]);
        repo.env.write(".gitignore", "gate.toml\n.gate/\n");
        repo.env
            .write("src/x.py", &(lines(4, "0").join("\n") + "\n"));
        repo.commit(&ago(40, 0), "README", &[readme], "initial");
    }
    let mut x = lines(4, "0");
    x[1] = "value_2 = 'ours'".into();
    ours.feature("change", &ago(39, 0), "src/x.py", &refs(&x));
    let run_ours = ours.verify("ours", true);
    let squash = ours.squash(&ago(39, 1), "change");
    ours.git(&ago(38, 0), &["revert", "--no-edit", &squash]);
    theirs.feature("change", &ago(39, 0), "src/x.py", &refs(&x));
    let run_theirs = theirs.verify("theirs", true);
    theirs.squash(&ago(39, 1), "change");

    // CI: a fresh clone with all of its history, the shared ledger.
    let ci = Repo {
        shared,
        ..Repo::new()
    };
    let from = format!("file://{}", ours.env.path().display());
    ci.git(&ago(0, 0), &["clone", "-q", &from, "."]);
    let out = ci.gate(&["outcome", "harvest", "--format", "json"]).run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["branch"], "origin/main", "{doc:#}");
    assert_eq!(doc["runs"], 1, "{doc:#}");
    assert_eq!(doc["elsewhere"], 1, "{doc:#}");
    let labels = by_run(&doc);
    assert_eq!(labels[&run_ours]["source"], "git:revert");
    assert!(!labels.contains_key(&run_theirs));
    let count = |run: &str| {
        db.column(&format!(
            "SELECT count(*) FROM outcomes WHERE run_id = '{run}' AND evidence IS NOT NULL"
        ))
    };
    assert_eq!(count(&run_ours), ["1"]);
    assert_eq!(count(&run_theirs), ["0"]);
}

/// The labels of a harvest, by run id, with the document.
fn harvested(repo: &Repo) -> (Value, BTreeMap<String, Value>) {
    let out = repo
        .env
        .gate(&["outcome", "harvest", "--format", "json"])
        .run();
    out.assert_exit(0);
    let doc = out.json();
    let labels = by_run(&doc);
    (doc, labels)
}

/// One spec for the whole repository, three pull requests, each built on
/// the last and merged another way: each run landed, and each is labelled
/// (a later change that contains a run's commit does not supersede it).
/// The spec is kept out of the commits by `.git/info/exclude`, and the
/// last change adds an `eol=crlf` attribute: neither makes a run
/// uncommitted; a tracked file really changed still does.
#[test]
fn three_pull_requests_of_one_spec_merged_three_ways_are_each_labelled() {
    let repo = Repo::new();
    let r = &repo;
    r.git(&ago(60, 0), &["init", "-q", "-b", "main"]);
    r.env.write(".gitignore", ".gate/\n");
    r.env.write(".git/info/exclude", "gate.toml\n");
    for f in ["a", "b", "c"] {
        r.env
            .write(&format!("src/{f}.py"), &(lines(4, "0").join("\n") + "\n"));
    }
    r.commit(&ago(60, 0), "README", &["demo"], "initial");
    let mut a = lines(4, "0");
    a[0] = "value_1 = 'one'".into();
    r.feature("one", &ago(50, 0), "src/a.py", &refs(&a));
    let run_merged = r.verify("app", true);
    r.git(&ago(50, 1), &["checkout", "-q", "main"]);
    r.git(
        &ago(50, 1),
        &["merge", "-q", "--no-ff", "-m", "Merge branch 'one'", "one"],
    );
    let mut b = lines(4, "0");
    b[1] = "value_2 = 'two'".into();
    r.feature("two", &ago(49, 0), "src/b.py", &refs(&b));
    let run_squashed = r.verify("app", true);
    r.squash(&ago(49, 1), "two");
    let mut c = lines(4, "0");
    c[2] = "value_3 = 'three'".into();
    r.feature("three", &ago(48, 0), "src/c.py", &refs(&c));
    r.env.write(".gitattributes", "NOTES.txt text eol=crlf\n");
    r.commit(&ago(48, 1), "NOTES.txt", &["one", "two"], "three: notes");
    // As a checkout writes it: CRLF on disk, LF in the commit.
    std::fs::remove_file(r.env.path().join("NOTES.txt")).unwrap();
    r.git(&ago(48, 1), &["checkout", "--", "NOTES.txt"]);
    assert!(r.env.read("NOTES.txt").contains("\r\n"), "checked out CRLF");
    let run_forwarded = r.verify("app", true);
    r.git(&ago(48, 2), &["checkout", "-q", "main"]);
    r.git(&ago(48, 2), &["merge", "-q", "--ff-only", "three"]);
    for i in 0..12 {
        r.commit(
            &ago(15 - i, 0),
            "NOTES",
            &[&format!("note {i}")],
            &format!("docs: note {i}"),
        );
    }
    // A tracked file changed and not committed is uncommitted.
    r.env.write("src/a.py", "changed = True\n");
    let run_dirty = r.verify("app", true);
    r.git(&ago(0, 0), &["checkout", "--", "src/a.py"]);

    let (doc, labels) = harvested(r);
    assert_eq!(
        doc["uncommitted"], 1,
        "only the really uncommitted: {doc:#}"
    );
    for (what, run, by) in [
        ("merge commit", &run_merged, "merge"),
        ("squash", &run_squashed, "patch"),
        ("fast-forward", &run_forwarded, "merge"),
    ] {
        let l = labels
            .get(run.as_str())
            .unwrap_or_else(|| panic!("{what}: no label in {doc:#}"));
        assert_eq!(l["source"], "git:survived", "{what}: {l:#}");
        assert_eq!(l["evidence"]["landed_by"], by, "{what}: {l:#}");
    }
    assert!(!labels.contains_key(&run_dirty));
    assert_eq!(doc["not_integrated"], serde_json::json!([]), "{doc:#}");
}

/// Signals the agent cannot write alone: a message that says it reverts
/// or fixes a landed commit, over a diff that does neither, labels nothing
/// (a note says so); a revert of what is left of a change after a later
/// edit counts; a change back-dated 80 days and landed by fast-forward is
/// judged from when it reached the branch, so the fix 4 days later blames
/// it.
#[test]
fn a_message_alone_labels_nothing_and_back_dating_keeps_the_window() {
    let repo = Repo::new();
    let r = &repo;
    r.git(&ago(120, 0), &["init", "-q", "-b", "main"]);
    r.env.write(".gitignore", "gate.toml\n.gate/\n");
    for f in ["h", "p", "k"] {
        r.env
            .write(&format!("src/{f}.py"), &(lines(6, "0").join("\n") + "\n"));
    }
    r.commit(&ago(120, 0), "README", &["demo"], "initial");

    let mut h = lines(6, "0");
    h[1] = "value_2 = 'honest'".into();
    r.feature("honest", &ago(100, 0), "src/h.py", &refs(&h));
    let run_honest = r.verify("honest", true);
    let squash_honest = r.squash(&ago(100, 1), "honest");
    r.commit(
        &ago(99, 0),
        "NOTES",
        &["unrelated"],
        &format!("Tidy the notes\n\nThis reverts commit {squash_honest}."),
    );
    r.commit(
        &ago(99, 1),
        "NOTES",
        &["unrelated too"],
        &format!("Reword the notes\n\nFixes: {}", &squash_honest[..12]),
    );

    // Two lines added; a later edit rewrites one; the revert takes out the
    // other (all that is left of it) and puts the old line back.
    let mut p = lines(6, "0");
    p[2] = "value_3 = 'first'".into();
    p[3] = "value_4 = 'second'".into();
    r.feature("partly", &ago(98, 0), "src/p.py", &refs(&p));
    let run_partly = r.verify("partly", true);
    let squash_partly = r.squash(&ago(98, 1), "partly");
    let mut edited = p.clone();
    edited[2] = "value_3 = 'edited'".into();
    r.commit(&ago(97, 0), "src/p.py", &refs(&edited), "tune value_3");
    let mut undone = edited.clone();
    undone[3] = "value_4 = 04".into();
    r.commit(
        &ago(96, 0),
        "src/p.py",
        &refs(&undone),
        &format!("Revert \"partly\"\n\nThis reverts commit {squash_partly}."),
    );

    for i in 0..12 {
        r.commit(
            &ago(60 - i, 0),
            "NOTES",
            &[&format!("note {i}")],
            &format!("docs: note {i}"),
        );
    }
    // Back-dated 80 days, landed by fast-forward 10 days ago; fixed 4 days
    // after it landed.
    r.commit(&ago(10, 0), "NOTES", &["before"], "docs: before");
    let mut k = lines(6, "0");
    k[4] = "value_5 = rate * 2".into();
    r.feature("backdated", &ago(90, 0), "src/k.py", &refs(&k));
    let run_backdated = r.verify("backdated", true);
    r.git(&ago(10, 1), &["checkout", "-q", "main"]);
    r.git(&ago(10, 1), &["merge", "-q", "--ff-only", "backdated"]);
    let mut k_fixed = k.clone();
    k_fixed[4] = "value_5 = rate * 3".into();
    r.commit(&ago(6, 0), "src/k.py", &refs(&k_fixed), "Fix the rate");
    for i in 0..12 {
        r.commit(
            &ago(5, i),
            "NOTES",
            &[&format!("later {i}")],
            &format!("docs: later {i}"),
        );
    }

    let (doc, labels) = harvested(r);
    let label = |run: &str| {
        labels
            .get(run)
            .unwrap_or_else(|| panic!("no label for {run} in {doc:#}"))
            .clone()
    };
    assert_eq!(label(&run_honest)["source"], "git:survived", "{doc:#}");
    let notes: Vec<&Value> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["run_id"] == run_honest.as_str())
        .collect();
    assert_eq!(notes.len(), 2, "a note for each claim: {doc:#}");
    let partly = label(&run_partly);
    assert_eq!(partly["source"], "git:revert", "{partly:#}");
    assert_eq!(partly["confidence"], 0.95, "{partly:#}");
    let backdated = label(&run_backdated);
    assert_eq!(backdated["source"], "git:szz", "{backdated:#}");
    assert_eq!(backdated["broken"], true);
    r.env
        .gate(&["outcome", "harvest", "--dry-run"])
        .run()
        .assert_exit(0)
        .stdout_has("note: run")
        .stdout_has("not a label");
}
