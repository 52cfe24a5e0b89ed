use super::super::testutil::{Mem, configs, files};
use super::super::{LaunchChange, Runner, RunnerConfig, exam, launch_changes};

/// A workspace of two packages, `server` with integration tests.
fn workspace() -> Mem {
    Mem::new(&[
        (
            "Cargo.toml",
            "[workspace]\nmembers = [\"crates/*\"]\nresolver = \"3\"\n\n[workspace.dependencies]\ntest-support = { path = \"crates/test-support\" }\n",
        ),
        (
            "crates/server/Cargo.toml",
            "[package]\nname = \"server\"\n\n[[test]]\nname = \"wire\"\npath = \"checks/wire.rs\"\n\n[[test]]\nname = \"slow\"\ntest = false\n",
        ),
        ("crates/server/src/lib.rs", "pub fn f() {}\n"),
        (
            "crates/server/tests/server.rs",
            "mod common;\n#[test] fn t() {}\n",
        ),
        (
            "crates/server/tests/common/mod.rs",
            "pub fn helper() {}\npub const GOLDEN: &str = concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/tests/data/golden.json\");\n",
        ),
        ("crates/server/tests/data/golden.json", "{}\n"),
        ("crates/server/tests/snapshots/server__t.snap", "x\n"),
        ("crates/server/tests/slow.rs", "#[test] fn s() {}\n"),
        ("crates/server/tests/multi/main.rs", "mod part;\n"),
        ("crates/server/tests/multi/part.rs", "\n"),
        ("crates/server/checks/wire.rs", "\n"),
        (
            "crates/cli/Cargo.toml",
            "[package]\nname = \"cli\"\nautotests = false\n\n[dev-dependencies]\ntest-support = { workspace = true }\n",
        ),
        ("crates/cli/src/main.rs", "fn main() {}\n"),
        (
            "crates/test-support/Cargo.toml",
            "[package]\nname = \"test-support\"\n",
        ),
        ("crates/test-support/src/lib.rs", "\n"),
        ("crates/cli/tests/ignored.rs", "\n"),
        ("single/Cargo.toml", "[package]\nname = \"single\"\n"),
        ("single/src/lib.rs", "\n"),
        ("single/tests/it.rs", "\n"),
    ])
}

const S: &str = "crates/server/";

/// What `--test server` runs: the target, its module, the golden file it
/// names and the snapshots beside it.
const SERVER: &[&str] = &[
    "tests/server.rs",
    "tests/common/mod.rs",
    "tests/data/golden.json",
    "tests/snapshots/server__t.snap",
];

#[test]
fn what_cargo_test_runs() {
    let tree = workspace();
    let all_server: &[&str] = &[
        "crates/server/tests/multi/main.rs",
        "crates/server/tests/multi/part.rs",
        "crates/server/tests/server.rs",
        "crates/server/tests/common/mod.rs",
        "crates/server/tests/data/golden.json",
        "crates/server/tests/snapshots/server__t.snap",
        "crates/server/checks/wire.rs",
    ];
    // (command line, exam files (sorted), whether in_code is set)
    let cases: &[(&str, &[&str], bool)] = &[
        ("cargo test -p server --test server", SERVER, false),
        (
            "cargo nextest run -p server --test server -- --exact t",
            SERVER,
            false,
        ),
        (
            "cargo test -p server --test=wire",
            &["checks/wire.rs"],
            false,
        ),
        (
            "cargo test -p server --test slow",
            &["tests/slow.rs", "tests/snapshots/server__t.snap"],
            false,
        ),
        (
            "cargo test -p server --test '*'",
            &[
                "tests/multi/main.rs",
                "tests/multi/part.rs",
                "tests/server.rs",
                "tests/common/mod.rs",
                "tests/data/golden.json",
                "tests/snapshots/server__t.snap",
                "tests/slow.rs",
                "checks/wire.rs",
            ],
            false,
        ),
        // In a virtual workspace `--test` need only be in one package.
        ("cargo test --test server", SERVER, false),
        (
            "cargo llvm-cov -p server --test wire",
            &["checks/wire.rs"],
            false,
        ),
        (
            "cargo llvm-cov nextest -p server --test wire",
            &["checks/wire.rs"],
            false,
        ),
        (
            "cargo insta test -p server --test wire",
            &["checks/wire.rs"],
            false,
        ),
        ("cargo llvm-cov report -p server --test wire", &[], false),
        ("cargo test -p server --lib", &[], true),
        ("cargo test -p server --doc", &[], true),
        ("cargo test --lib", &[], true),
        // Its tests use the workspace's test-support crate.
        (
            "cargo test -p cli",
            &["crates/test-support/src/lib.rs"],
            true,
        ),
        (
            "cd crates/server && cargo test --tests name_filter",
            &[],
            true,
        ),
    ];
    for (run, want, in_code) in cases {
        let got = exam(run, &tree);
        let mut want: Vec<String> = want
            .iter()
            .map(|p| {
                if p.starts_with("crates/") {
                    (*p).to_owned()
                } else {
                    format!("{S}{p}")
                }
            })
            .collect();
        if run.contains("--tests") {
            want = all_server.iter().map(|p| (*p).to_owned()).collect();
        }
        let mut got_files = files(&got);
        got_files.sort();
        want.sort();
        assert_eq!(got_files, want, "{run}");
        assert_eq!(
            !got.in_code.is_empty(),
            *in_code,
            "{run}: {:?}",
            got.in_code
        );
        assert!(got.unresolved.is_empty(), "{run}: {:?}", got.unresolved);
    }
}

#[test]
fn which_packages_cargo_test_selects() {
    let tree = workspace();
    // (command line, the first exam file of each package, in order)
    let cases: &[(&str, usize, &[&str])] = &[
        ("cargo test", 8, &["crates/server/tests/multi/main.rs"]),
        (
            "cargo test --workspace --exclude server",
            1,
            &["crates/test-support/src/lib.rs"],
        ),
        (
            "cargo test --manifest-path single/Cargo.toml",
            1,
            &["single/tests/it.rs"],
        ),
        ("cd single && cargo t", 1, &["single/tests/it.rs"]),
        ("cargo +stable build", 0, &[]),
    ];
    for (run, count, first) in cases {
        let got = exam(run, &tree);
        assert_eq!(got.files.len(), *count, "{run}: {:?}", files(&got));
        for f in *first {
            assert!(files(&got).contains(&(*f).to_owned()), "{run}");
        }
    }
}

#[test]
fn what_cargo_cannot_resolve() {
    let tree = workspace();
    for run in [
        "cargo test -p nope",
        "cargo test -p server --test nope",
        "cargo test --manifest-path ../x/Cargo.toml",
        "cargo +fake test -p cli",
    ] {
        assert!(!exam(run, &tree).unresolved.is_empty(), "{run}");
    }
    assert!(exam("cargo test", &Mem::new(&[])).unresolved[0].contains("no Cargo.toml"));
    assert!(exam("cargo +stable build", &tree).unresolved.is_empty());
    assert!(exam("cargo test -p nope", &tree).unresolved[0].contains("`nope`"));
}

#[test]
fn the_configuration_cargo_reads() {
    let got = exam("cargo nextest run -p server", &workspace());
    let want = [
        ".cargo/config.toml",
        ".cargo/config",
        "crates/server/.cargo/config.toml",
        "crates/server/.cargo/config",
        "crates/.cargo/config.toml",
        "crates/.cargo/config",
        "rust-toolchain.toml",
        "rust-toolchain",
        "Cargo.toml",
        "crates/server/Cargo.toml",
        ".config/nextest.toml",
    ];
    assert_eq!(configs(&got), want);
}

fn changes(path: &str, runner: Runner, base: Option<&str>, now: Option<&str>) -> Vec<String> {
    let config = RunnerConfig {
        path: path.to_owned(),
        runner,
        section: None,
    };
    launch_changes(&config, base.map(str::as_bytes), now.map(str::as_bytes))
        .into_iter()
        .map(|LaunchChange { key, .. }| key)
        .collect()
}

/// (file, runner, base, now, keys that count)
type Case<'a> = (
    &'a str,
    Runner,
    Option<&'a str>,
    Option<&'a str>,
    &'a [&'a str],
);

fn check(cases: &[Case<'_>]) {
    for (path, runner, base, now, want) in cases {
        assert_eq!(
            changes(path, *runner, *base, *now),
            *want,
            "{path}: {now:?}"
        );
    }
}

#[test]
fn launch_changes_of_cargo_files() {
    let manifest = "[package]\nname = \"a\"\n\n[dependencies]\nserde = \"1\"\n";
    let ws = "[workspace]\nmembers = [\"a\", \"b\"]\n";
    let cases: &[Case<'_>] = &[
        (
            ".cargo/config.toml",
            Runner::Cargo,
            None,
            Some("[target.x86_64-unknown-linux-gnu]\nrunner = \"true\"\n"),
            &["target.x86_64-unknown-linux-gnu.runner"],
        ),
        (
            ".cargo/config.toml",
            Runner::Cargo,
            None,
            Some("[net]\nretry = 3\n"),
            &[],
        ),
        (
            ".cargo/config",
            Runner::Cargo,
            Some("[http]\ntimeout = 1\n"),
            Some(
                "[http]\ntimeout = 2\n[build]\njobs = 2\nrustflags = [\"--cfg\", \"x\"]\n[alias]\nnextest = \"check\"\n",
            ),
            &["alias.nextest", "build.rustflags"],
        ),
        (
            ".cargo/config.toml",
            Runner::Cargo,
            None,
            Some("not = [toml"),
            &["the whole file"],
        ),
        (
            "Cargo.toml",
            Runner::Cargo,
            Some(manifest),
            Some(
                "[package]\nname = \"a\"\n\n[dependencies]\nserde = \"1\"\ntokio = \"1\"\n\n[lints.rust]\nunsafe_code = \"forbid\"\n\n[features]\nx = []\n",
            ),
            &[],
        ),
        (
            "Cargo.toml",
            Runner::Cargo,
            Some(ws),
            Some("[workspace]\nmembers = [\"a\", \"b\", \"c\"]\n"),
            &[],
        ),
        (
            "Cargo.toml",
            Runner::Cargo,
            Some(ws),
            Some("[workspace]\nmembers = [\"a\"]\n"),
            &["workspace.members"],
        ),
        (
            "Cargo.toml",
            Runner::Cargo,
            Some(manifest),
            Some(
                "[package]\nname = \"a\"\n\n[dependencies]\nserde = \"1\"\n\n[patch.crates-io]\nserde = { path = \"fake\" }\n",
            ),
            &["patch.crates-io.serde.path"],
        ),
        (
            "Cargo.toml",
            Runner::Cargo,
            Some(manifest),
            Some(
                "[package]\nname = \"a\"\nautotests = false\n\n[[test]]\nname = \"server\"\nharness = false\n\n[dependencies]\nserde = \"1\"\n",
            ),
            &["package.autotests", "test.server.harness"],
        ),
        (
            "Cargo.toml",
            Runner::Cargo,
            Some(manifest),
            Some(
                "[package]\nname = \"a\"\n\n[[test]]\nname = \"new\"\n\n[dependencies]\nserde = \"1\"\n",
            ),
            &[],
        ),
        (
            "Cargo.toml",
            Runner::Cargo,
            Some(manifest),
            Some(
                "[package]\nname = \"a\"\n\n[profile.test]\noverflow-checks = false\nopt-level = 1\n",
            ),
            &["profile.test.overflow-checks"],
        ),
    ];
    check(cases);
}

#[test]
fn launch_changes_of_toolchain_and_nextest_files() {
    let cases: &[Case<'_>] = &[
        (
            "rust-toolchain.toml",
            Runner::Rustup,
            None,
            Some("[toolchain]\nchannel = \"1.82.0\"\ncomponents = [\"clippy\"]\n"),
            &[],
        ),
        (
            "rust-toolchain.toml",
            Runner::Rustup,
            None,
            Some("[toolchain]\nchannel = \"nightly-2025-01-01-x86_64-unknown-linux-gnu\"\n"),
            &[],
        ),
        (
            "rust-toolchain.toml",
            Runner::Rustup,
            None,
            Some("[toolchain]\npath = \"/tmp/x\"\n"),
            &["toolchain.path"],
        ),
        (
            "rust-toolchain.toml",
            Runner::Rustup,
            Some("[toolchain]\nchannel = \"stable\"\n"),
            Some("[toolchain]\nchannel = \"fake\"\n"),
            &["toolchain.channel"],
        ),
        ("rust-toolchain", Runner::Rustup, None, Some("1.80\n"), &[]),
        (
            "rust-toolchain",
            Runner::Rustup,
            None,
            Some("my-linked\n"),
            &["toolchain.channel"],
        ),
        (
            ".config/nextest.toml",
            Runner::Nextest,
            None,
            Some("[profile.default]\n"),
            &["the whole file"],
        ),
    ];
    check(cases);
}
