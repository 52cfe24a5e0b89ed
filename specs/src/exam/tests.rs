//! The exam through its public functions, across ecosystems.

use super::testutil::Mem;
use super::*;

#[test]
fn an_exam_serialises_for_the_evidence() {
    let tree = Mem::new(&[("package.json", r#"{"scripts": {"test": "jest"}}"#)]);
    let value = serde_json::to_value(exam("npm test", &tree)).unwrap();
    assert_eq!(
        value["files"][1]["kind"],
        serde_json::json!({"script-entry": {"key": "scripts.test"}})
    );
    assert_eq!(value["configs"][0]["runner"], "npm");
    assert_eq!(
        serde_json::to_value(LineFate::OnlyGained).unwrap(),
        "only-gained"
    );
}

/// Malformed files and command lines are read without a panic.
#[test]
fn what_is_malformed_is_read_without_a_panic() {
    let tree = Mem::new(&[
        ("Cargo.toml", "[package\nname = "),
        (
            "crates/a/Cargo.toml",
            "[package]\nname = \"a\"\n[[test]]\npath = 3\n",
        ),
        ("tests/x.rs", "mod \"é\"; /* unterminated r#\"x include!("),
        ("tests/y.rs", "'\\"),
        ("package.json", "{\"scripts\": {\"test\": \"npm test\"}"),
        ("Makefile", "check: $(\n\t$(MAKE) -C $${X\ninclude $(\n\\"),
        ("pytest.ini", "[pytest\naddopts"),
        ("pyproject.toml", "[tool.pytest.ini_options\n"),
        ("go.mod", "module\nreplace (\n=>\n"),
        ("é/ü.test.ts", "import x from '../../../../x'; require('"),
        ("scripts/loop.sh", "#!/bin/sh\n./scripts/loop.sh\n"),
    ]);
    let runs = [
        "cargo test --test x -p",
        "cargo test --manifest-path crates/a/Cargo.toml --test '['",
        "npm test",
        "npm run",
        "make check -C",
        "make -f",
        "pytest -c",
        "python -m",
        "go test -C",
        "go test ...",
        "vitest run '[' -c",
        "./scripts/loop.sh",
        "sh -c 'sh -c \"sh -c ./scripts/loop.sh\"'",
        "cd é && jest ü",
        "\"unterminated",
        "$(",
    ];
    for run in runs {
        let _ = exam(run, &tree);
    }
    for config in [
        "Cargo.toml",
        ".cargo/config",
        "rust-toolchain",
        "package.json",
        ".npmrc",
    ] {
        for runner in [
            Runner::Cargo,
            Runner::Rustup,
            Runner::Npm,
            Runner::Pytest,
            Runner::Make,
        ] {
            let c = RunnerConfig {
                path: config.to_owned(),
                runner,
                section: Some("x | y".to_owned()),
            };
            let _ = launch_changes(&c, Some(b"\xff\xfe["), Some(b"[a]\nb = 1"));
        }
    }
    let _ = line_fate(b"\xff\n", b"");
}
