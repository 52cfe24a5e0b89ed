//! The SZZ step measured against PyDriller: on a public repository's
//! history the tests carry (`tests/fixtures/szz/`), every fix commit the
//! default fix pattern finds is blamed by `gate outcome blame` and by
//! PyDriller's `Git.get_commits_last_modified_lines`; the two must name the
//! same commits for at least 95% of the fixes, and every difference must
//! be the documented rule PyDriller lacks: a removed line the same hunk
//! adds back, whitespace aside, is not blamed.
#![allow(
    clippy::unwrap_used,
    clippy::disallowed_methods,
    clippy::print_stderr,
    reason = "a test that prints its agreement and drives git and Python"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use gate_tests::{TestEnv, peers};

/// The default `[eval] fix_pattern`, as documented.
const FIX_PATTERN: &str =
    r"(?i)\b(fix(e[sd]|ing)?|bug(s|fix)?|hotfix|regressions?|broken|crash(es|ed)?|defects?)\b";

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/szz")
        .join(name)
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether a fix removes a line the same hunk adds back, whitespace aside
/// (the one rule by which the gate blames less than PyDriller).
fn has_whitespace_only_change(repo: &Path, fix: &str) -> bool {
    let diff = git(repo, &["show", "-U0", "--format=", "--find-renames", fix]);
    let squeeze = |l: &str| l.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let (mut removed, mut added) = (BTreeSet::new(), BTreeSet::new());
    let mut found = false;
    for line in diff.lines().chain(["@@ end"]) {
        if line.starts_with("@@") {
            found |= removed.intersection(&added).next().is_some();
            removed.clear();
            added.clear();
        } else if let Some(l) = line.strip_prefix('-').filter(|_| !line.starts_with("---")) {
            removed.insert(squeeze(l));
        } else if let Some(l) = line.strip_prefix('+').filter(|_| !line.starts_with("+++")) {
            added.insert(squeeze(l));
        }
    }
    found
}

#[test]
fn szz_blames_what_pydriller_blames_but_for_whitespace_only_changes() {
    let env = TestEnv::new();
    let repo = env.path().join("repo");
    let bundle = fixture("itsdangerous.bundle");
    git(
        env.path(),
        &[
            "clone",
            "-q",
            "-b",
            "main",
            bundle.to_str().unwrap(),
            "repo",
        ],
    );
    let pattern = regex::Regex::new(FIX_PATTERN).unwrap();
    let fixes: Vec<String> = git(&repo, &["log", "--no-merges", "--format=%H%x00%s"])
        .lines()
        .filter_map(|l| l.split_once('\0'))
        .filter(|(_, subject)| pattern.is_match(subject))
        .map(|(id, _)| id.to_owned())
        .collect();
    assert!(fixes.len() >= 40, "{} fixes", fixes.len());

    let mut args = vec!["--workspace", repo.to_str().unwrap(), "outcome", "blame"];
    args.extend(["--format", "json"]);
    args.extend(fixes.iter().map(String::as_str));
    let out = env.gate(&args).run();
    out.assert_exit(0);
    let ours: BTreeMap<String, BTreeSet<String>> = out.json()["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let commits = f["commits"].as_array().unwrap();
            (
                f["commit"].as_str().unwrap().to_owned(),
                commits
                    .iter()
                    .map(|c| c.as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect();

    let mut child = Command::new(peers::python())
        .arg(fixture("pydriller_blame.py"))
        .arg(&repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(fixes.join("\n").as_bytes())
        .unwrap();
    let peer = child.wait_with_output().unwrap();
    assert!(
        peer.status.success(),
        "PyDriller (pydriller in GATE_TEST_PYTHON's venv, scripts/peer-requirements.txt): {}",
        String::from_utf8_lossy(&peer.stderr)
    );
    let theirs: BTreeMap<String, BTreeSet<String>> =
        serde_json::from_slice::<BTreeMap<String, Vec<String>>>(&peer.stdout)
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().collect()))
            .collect();

    let mut same = 0;
    for fix in &fixes {
        let (o, t) = (&ours[fix], &theirs[fix]);
        if o == t {
            same += 1;
            continue;
        }
        eprintln!(
            "differs on {fix}: only the gate {:?}, only PyDriller {:?}",
            o.difference(t).collect::<Vec<_>>(),
            t.difference(o).collect::<Vec<_>>()
        );
        // The gate only ever leaves lines out, and only by its rule.
        assert!(
            o.is_subset(t),
            "{fix}: the gate blames a commit PyDriller does not"
        );
        assert!(
            has_whitespace_only_change(&repo, fix),
            "{fix}: a difference no documented rule explains"
        );
    }
    let agreement = f64::from(same) / fixes.len() as f64;
    eprintln!(
        "SZZ agreement with PyDriller: {same} of {} fixes ({:.1}%)",
        fixes.len(),
        agreement * 100.0
    );
    assert!(agreement >= 0.95, "{agreement}");
}
