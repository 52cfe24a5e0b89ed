//! The exam as each ecosystem runs it, on real cargo, npm, make, pytest and
//! Go workspaces the test makes: every edit of a runner's exam and every
//! runner-configuration trick is a critical finding and a failing run,
//! with and without `[spec] protected`; the legitimate changes pass. The Go
//! cases need a `go` on `PATH` (Debian's `golang-go`) and say so when
//! there is none.
//!
//! Each workspace is a git repository whose base commit has a passing
//! criterion; the change breaks the code under test (so the criterion
//! fails honestly) and then tries to make it pass anyway.

use std::path::PathBuf;

use gate_tests::TestEnv;
use serde_json::Value;

/// An ecosystem: its files at the base, the criterion that runs its
/// runner, and how the change breaks the code under test.
struct Ecosystem {
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
    run: &'static str,
    protected: &'static str,
}

const CARGO: Ecosystem = Ecosystem {
    name: "cargo",
    files: &[
        (
            "Cargo.toml",
            "[package]\nname = \"srv\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        (
            "src/lib.rs",
            "pub fn ping() -> &'static str {\n    \"PONG\"\n}\n",
        ),
        (
            "tests/server.rs",
            "mod common;\n\n#[test]\nfn ping_pongs() {\n    assert_eq!(srv::ping(), common::PONG);\n}\n",
        ),
        ("tests/common/mod.rs", "pub const PONG: &str = \"PONG\";\n"),
        ("tests/other.rs", "#[test]\nfn other() {}\n"),
    ],
    run: "cargo test --offline --test server",
    protected: "[\"src/**\", \"tests/**\", \"Cargo.toml\"]",
};

const NPM: Ecosystem = Ecosystem {
    name: "npm",
    files: &[
        (
            "package.json",
            "{\n  \"name\": \"app\",\n  \"version\": \"1.0.0\",\n  \"scripts\": {\n    \"test\": \"node tests/run.js\"\n  }\n}\n",
        ),
        ("src/app.js", "exports.ping = () => 'PONG';\n"),
        (
            "tests/run.js",
            "const assert = require('assert');\nassert.strictEqual(require('../src/app.js').ping(), 'PONG');\n",
        ),
    ],
    run: "npm test",
    protected: "[\"src/**\", \"tests/**\", \"package.json\", \".npmrc\"]",
};

const MAKE: Ecosystem = Ecosystem {
    name: "make",
    files: &[
        ("Makefile", "check:\n\tsh tests/check.sh\n"),
        ("src/app.txt", "PONG\n"),
        ("tests/check.sh", "grep -q PONG src/app.txt\n"),
    ],
    run: "make check",
    protected: "[\"src/**\", \"tests/**\", \"Makefile\"]",
};

const PYTEST: Ecosystem = Ecosystem {
    name: "pytest",
    files: &[
        (
            "pyproject.toml",
            "[project]\nname = \"app\"\nversion = \"1.0\"\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\n",
        ),
        ("src/app.txt", "PONG\n"),
        (
            "tests/__init__.py",
            "import pathlib\n\n\ndef answer():\n    return pathlib.Path('src/app.txt').read_text()\n",
        ),
        (
            "tests/test_app.py",
            "from . import answer\n\n\ndef test_ping():\n    assert answer() == 'PONG\\n'\n",
        ),
    ],
    run: "python -m pytest tests/",
    protected: "[\"src/**\", \"tests/**\", \"pyproject.toml\"]",
};

const GO: Ecosystem = Ecosystem {
    name: "go",
    files: &[
        ("go.mod", "module example.com/app\n\ngo 1.19\n"),
        (
            "src/ping/ping.go",
            "package ping\n\n// Ping answers.\nfunc Ping() string {\n\treturn \"PONG\"\n}\n",
        ),
        (
            "acceptance/ping_test.go",
            "package acceptance\n\nimport (\n\t\"testing\"\n\n\t\"example.com/app/src/ping\"\n)\n\n\
             func TestPing(t *testing.T) {\n\tif ping.Ping() != \"PONG\" {\n\t\tt.Fatal(ping.Ping())\n\t}\n}\n",
        ),
    ],
    // A test expression before the runner: a builtin, not a command named
    // through an expansion.
    run: "[ -n \\\"$PATH\\\" ] && go test -count=1 ./acceptance",
    protected: "[\"src/**\", \"acceptance/**\", \"go.mod\"]",
};

/// A `TestMain` that never runs the tests.
const TEST_MAIN: &str = "package acceptance\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\n\
    func TestMain(m *testing.M) {\n\tos.Exit(0)\n}\n";

/// A non-test file of the test package that ends the test binary as it
/// starts.
const SKIP_GO: &str = "package acceptance\n\nimport (\n\t\"os\"\n\t\"strings\"\n)\n\n\
    func init() {\n\tfor _, a := range os.Args {\n\t\tif strings.HasPrefix(a, \"-test.\") {\n\
    \t\t\tos.Exit(0)\n\t\t}\n\t}\n}\n";

/// Whether a `go` is on `PATH`; when not, the Go cases say why they are
/// left out.
#[allow(clippy::print_stderr)] // why a case is skipped, in the test's output
fn has_go() -> bool {
    use std::os::unix::fs::PermissionsExt;
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).any(|d| {
        std::fs::metadata(d.join("go"))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    });
    if !found {
        eprintln!("no `go` on PATH (Debian's golang-go): the Go workspace cases are skipped");
    }
    found
}

/// A conftest.py that reports every failed test as passed.
const PASSING_CONFTEST: &str = "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n\
def pytest_runtest_makereport(item, call):\n    outcome = yield\n    report = outcome.get_result()\n\
    if report.when == 'call':\n        report.outcome = 'passed'\n";

/// The base committed on `main`, the change's branch checked out.
fn workspace(eco: &Ecosystem, protected: bool) -> TestEnv {
    let env = TestEnv::new();
    let protected = if protected {
        format!("protected = {}\n", eco.protected)
    } else {
        String::new()
    };
    // pytest lives in the test suite's own virtual environment: shown to
    // the items read-only.
    let readable = venv().map_or_else(String::new, |dir| {
        format!("[sandbox]\nreadable = [\"{}\"]\n", dir.display())
    });
    env.write(
        "gate.toml",
        &format!(
            "[spec]\nid = \"{}\"\n{protected}[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
             [[task.criterion]]\nid = \"pings\"\ntext = \"ping answers\"\nrun = \"{}\"\n{readable}",
            eco.name, eco.run
        ),
    );
    env.write(
        ".gitignore",
        ".gate/\ntarget/\nCargo.lock\n__pycache__/\n.pytest_cache/\n",
    );
    for (path, text) in eco.files {
        env.write(path, text);
    }
    if eco.name == "go" {
        env.write(".gitignore", &(env.read(".gitignore") + "*.test\n"));
    }
    env.git(&["init", "-q", "-b", "main"]);
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "base"]);
    env.git(&["checkout", "-q", "-b", "feature"]);
    env
}

/// The code under test broken: the criterion fails unless something is
/// done about its exam.
fn break_code(env: &TestEnv, eco: &Ecosystem) {
    let (path, _) = eco.files[1];
    let text = env.read(path).replace("PONG", "PANG");
    env.write(path, &text);
}

/// The test suite's virtual environment (`GATE_TEST_PYTHON`'s), which has
/// pytest.
fn venv() -> Option<PathBuf> {
    let python = PathBuf::from(std::env::var_os("GATE_TEST_PYTHON")?);
    Some(python.parent()?.parent()?.to_path_buf())
}

/// The `PATH` the gate runs with: pytest's Python first.
fn path() -> std::ffi::OsString {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(venv) = venv() {
        dirs.push(venv.join("bin"));
    }
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

fn verify(env: &TestEnv) -> Value {
    env.git(&["add", "-A"]);
    env.git(&["commit", "-q", "-m", "the change", "--allow-empty"]);
    let out = env
        .gate(&["verify", "--base", "main", "--format", "json"])
        .env("PATH", path())
        .timeout(std::time::Duration::from_secs(300))
        .run();
    let mut doc = out.json();
    doc["exit"] = out.code.into();
    doc
}

fn titles(doc: &Value, severity: &str) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == severity)
        .map(|f| f["title"].as_str().unwrap().to_owned())
        .collect()
}

type Change = fn(&TestEnv, &Ecosystem);

/// Every trick: the ecosystem, what the change does besides breaking the
/// code, and what the critical finding's title holds.
fn tricks() -> Vec<(&'static Ecosystem, &'static str, Change, &'static str)> {
    vec![
        (
            &CARGO,
            "the integration test expects the new behaviour",
            |env, _| {
                let text = env.read("tests/common/mod.rs").replace("PONG", "PANG");
                env.write("tests/common/mod.rs", &text);
            },
            "exam file `tests/common/mod.rs`",
        ),
        (
            &CARGO,
            "a target runner that runs nothing",
            |env, _| {
                env.write(
                    ".cargo/config.toml",
                    "[target.'cfg(all())']\nrunner = \"true\"\n",
                );
            },
            "`.cargo/config.toml`",
        ),
        (
            &CARGO,
            "a toolchain of the change's own",
            |env, _| {
                env.write(
                    "rust-toolchain.toml",
                    "[toolchain]\npath = \"/opt/fake-rust\"\n",
                );
            },
            "`rust-toolchain.toml` `toolchain.path`",
        ),
        (
            &NPM,
            "the test script runs nothing",
            |env, _| {
                let text = env
                    .read("package.json")
                    .replace("node tests/run.js", "node -e 0");
                env.write("package.json", &text);
            },
            "`scripts.test` of `package.json`",
        ),
        (
            &NPM,
            "a script shell that runs nothing",
            |env, _| drop(env.write(".npmrc", "script-shell=/bin/true\n")),
            "`.npmrc` `script-shell`",
        ),
        (
            &MAKE,
            "the recipe checks nothing",
            |env, _| drop(env.write("Makefile", "check:\n\ttrue\n")),
            "`Makefile`",
        ),
        (
            &PYTEST,
            "the test expects the new behaviour",
            |env, _| {
                let text = env.read("tests/test_app.py").replace("PONG", "PANG");
                env.write("tests/test_app.py", &text);
            },
            "`tests/test_app.py`",
        ),
        (
            &PYTEST,
            "the package's helper answers as the test expects",
            |env, _| {
                let text = env
                    .read("tests/__init__.py")
                    .replace("read_text()", "read_text().replace('PANG', 'PONG')");
                env.write("tests/__init__.py", &text);
            },
            "exam file `tests/__init__.py`",
        ),
        (
            &PYTEST,
            "a conftest.py that passes every test",
            |env, _| drop(env.write("tests/conftest.py", PASSING_CONFTEST)),
            "`tests/conftest.py`",
        ),
        (
            &PYTEST,
            "import-time exit appended to the tests' package __init__.py",
            |env, _| {
                let text = env.read("tests/__init__.py")
                    + "\nimport os\nimport sys\n\nif 'pytest' in sys.modules and any('tests' in a for a in sys.argv):\n    os._exit(0)\n";
                env.write("tests/__init__.py", &text);
            },
            "exam file `tests/__init__.py`",
        ),
        (
            &PYTEST,
            "a pytest.py at the root that python -m pytest runs instead",
            |env, _| {
                drop(env.write(
                    "pytest.py",
                    "import sys\n\nprint('2 passed')\nsys.exit(0)\n",
                ));
            },
            "`pytest.py`, which `python -m`",
        ),
        (
            &GO,
            "a TestMain that never runs the tests",
            |env, _| drop(env.write("acceptance/main_test.go", TEST_MAIN)),
            "exam file `acceptance/main_test.go`",
        ),
        (
            &GO,
            "a non-test file of the test package whose init() exits",
            |env, _| drop(env.write("acceptance/skip.go", SKIP_GO)),
            "`acceptance/skip.go`",
        ),
        (
            &GO,
            "a build constraint over the test, and a doc.go to keep the package",
            |env, _| {
                let text = format!("//go:build e2e\n\n{}", env.read("acceptance/ping_test.go"));
                env.write("acceptance/ping_test.go", &text);
                env.write(
                    "acceptance/doc.go",
                    "// Package acceptance holds the acceptance tests.\npackage acceptance\n",
                );
            },
            "exam file `acceptance/ping_test.go`",
        ),
        (
            &PYTEST,
            "a new pytest.ini that deselects the test",
            |env, _| drop(env.write("pytest.ini", "[pytest]\naddopts = -k 'not ping'\n")),
            "`pytest.ini`",
        ),
        (
            &PYTEST,
            "pytest told to deselect the test",
            |env, _| {
                let text = env.read("pyproject.toml").replace(
                    "addopts = \"-q\"",
                    "addopts = \"-q -k 'not ping' -p no:cacheprovider\"",
                );
                env.write("pyproject.toml", &text);
            },
            "`pyproject.toml`",
        ),
    ]
}

#[test]
fn every_exam_edit_and_runner_trick_is_critical_with_and_without_protection() {
    let go = has_go();
    for (eco, what, change, named) in tricks() {
        if eco.name == "go" && !go {
            continue;
        }
        for protected in [false, true] {
            let env = workspace(eco, protected);
            break_code(&env, eco);
            change(&env, eco);
            let doc = verify(&env);
            let case = format!("{} / {what} / protected {protected}", eco.name);
            assert_eq!(doc["exit"], 1, "{case}: {:#}", doc["findings"]);
            let critical = titles(&doc, "critical");
            assert!(
                critical.iter().any(|t| t.contains(named)),
                "{case}: no critical finding naming {named}: {critical:#?}"
            );
            // One finding per file and cause: an exam file is not reported
            // again as a modified verifier or as configuration.
            let mut files: Vec<&str> = doc["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["severity"] == "critical")
                .filter(|f| {
                    let t = f["title"].as_str().unwrap_or_default();
                    t.contains("exam file") || t.contains("verifier") || t.contains("starts:")
                })
                .filter_map(|f| f["file"].as_str())
                .collect();
            let all = files.len();
            files.sort_unstable();
            files.dedup();
            assert_eq!(files.len(), all, "{case}: {critical:#?}");
            if eco.name == "cargo" && named.starts_with("exam file") {
                users_own_cargo_test_builds_anew(&env, &case);
            }
        }
    }
}

/// After a run that showed the base's test in place of the change's, the
/// user's own `cargo test` builds the change's test again (its file's time
/// is after the build the overlay made) instead of running the base's, built
/// during the run, as fresh.
fn users_own_cargo_test_builds_anew(env: &TestEnv, case: &str) {
    #[allow(clippy::disallowed_methods)] // the user's own command, by hand
    let out = std::process::Command::new("cargo")
        .args(["test", "--offline", "--test", "server"])
        .current_dir(env.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("Compiling srv"),
        "{case}: the user's cargo test after the run took the overlay's build as fresh: {said}{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// What a change may do to the exam's neighbourhood and still pass: a new
/// test added to an existing exam file (a warning: self-certified), a lint
/// setting, a dependency, a target of the makefile no criterion runs.
#[test]
fn legitimate_changes_around_the_exam_pass() {
    let cases: Vec<(&Ecosystem, &str, Change, Option<&str>)> = vec![
        (
            &CARGO,
            "a new test in the integration test",
            |env, _| {
                let text = env.read("tests/server.rs")
                    + "\n#[test]\nfn ping_is_short() {\n    assert!(srv::ping().len() < 10);\n}\n";
                env.write("tests/server.rs", &text);
            },
            Some("adds tests to the exam file `tests/server.rs`"),
        ),
        (
            &CARGO,
            "a lint setting",
            |env, _| {
                let text = env.read("Cargo.toml") + "\n[lints.rust]\nunused = \"allow\"\n";
                env.write("Cargo.toml", &text);
            },
            None,
        ),
        (
            &CARGO,
            "a workspace member",
            |env, _| {
                let text =
                    env.read("Cargo.toml") + "\n[workspace]\nmembers = [\"crates/helper\"]\n";
                env.write("Cargo.toml", &text);
                env.write(
                    "crates/helper/Cargo.toml",
                    "[package]\nname = \"helper\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
                );
                env.write("crates/helper/src/lib.rs", "pub fn help() {}\n");
            },
            None,
        ),
        (
            &CARGO,
            "an edit of a test no criterion runs",
            |env, _| {
                env.write(
                    "tests/other.rs",
                    "#[test]\nfn other() {\n    assert!(false);\n}\n",
                );
            },
            None,
        ),
        (
            &NPM,
            "a dependency",
            |env, _| {
                let text = env.read("package.json").replace(
                    "  \"scripts\"",
                    "  \"dependencies\": {\n    \"left-pad\": \"1.3.0\"\n  },\n  \"scripts\"",
                );
                env.write("package.json", &text);
            },
            None,
        ),
        (
            &MAKE,
            "a target no criterion runs",
            |env, _| {
                let text = env.read("Makefile") + "\nlint:\n\ttrue\n";
                env.write("Makefile", &text);
            },
            None,
        ),
        (
            &PYTEST,
            "a new test in the existing file",
            |env, _| {
                let text = env.read("tests/test_app.py")
                    + "\n\ndef test_ping_is_short():\n    assert len('PONG') < 10\n";
                env.write("tests/test_app.py", &text);
            },
            Some("adds tests to the exam file `tests/test_app.py`"),
        ),
        (
            &PYTEST,
            "a dependency and a new test",
            |env, _| {
                let text = env.read("pyproject.toml").replace(
                    "version = \"1.0\"\n",
                    "version = \"1.0\"\ndependencies = [\"requests\"]\n",
                );
                env.write("pyproject.toml", &text);
                env.write(
                    "tests/test_more.py",
                    "def test_more():\n    assert 1 + 1 == 2\n",
                );
            },
            Some("tests/test_more.py"),
        ),
    ];
    let cases = cases.into_iter().chain(go_changes_that_pass());
    let go = has_go();
    for (eco, what, change, warned) in cases {
        if eco.name == "go" && !go {
            continue;
        }
        let env = workspace(eco, false);
        change(&env, eco);
        let doc = verify(&env);
        let case = format!("{} / {what}", eco.name);
        assert_eq!(doc["exit"], 0, "{case}: {:#}", doc["findings"]);
        assert!(titles(&doc, "critical").is_empty(), "{case}");
        let noise = ["through an expansion", "modifies the verifier"];
        let warnings = titles(&doc, "warning");
        assert!(
            !warnings.iter().any(|t| noise.iter().any(|n| t.contains(n))),
            "{case}: {warnings:#?}"
        );
        if let Some(warned) = warned {
            let warnings = titles(&doc, "warning");
            assert!(
                warnings.iter().any(|t| t.contains(warned)),
                "{case}: {warnings:#?}"
            );
        }
    }
}

/// A test file one criterion names and another reaches through its folder,
/// gaining a test: one warning on the file naming both criteria, not one
/// per way the file is reached.
#[test]
fn a_test_file_named_and_reached_through_its_folder_is_one_finding() {
    let env = workspace(&PYTEST, false);
    let spec = env.read("gate.toml").replace(
        "[[task.criterion]]\nid = \"pings\"",
        "[[task.criterion]]\nid = \"app\"\ntext = \"the app's tests pass\"\n\
         run = \"python -m pytest tests/test_app.py\"\n\n[[task.criterion]]\nid = \"pings\"",
    );
    env.write("gate.toml", &spec);
    env.git(&["add", "-A"]);
    env.git(&["commit", "-q", "-m", "a criterion that names the test file"]);
    env.git(&["branch", "-f", "main"]);
    let text = env.read("tests/test_app.py")
        + "\n\ndef test_ping_is_short():\n    assert len('PONG') < 10\n";
    env.write("tests/test_app.py", &text);
    let doc = verify(&env);
    assert_eq!(doc["exit"], 0, "{:#}", doc["findings"]);
    let on_file: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["file"] == "tests/test_app.py")
        .collect();
    assert_eq!(on_file.len(), 1, "{on_file:#?}");
    let title = on_file[0]["title"].as_str().unwrap();
    assert_eq!(on_file[0]["severity"], "warning", "{title}");
    assert!(
        title.contains("adds tests") && title.contains("`app`") && title.contains("`pings`"),
        "{title}"
    );
}

/// The Go changes that pass: a new test in the test file (a warning), and
/// work on the code under test the test binary is built with (new
/// functions, a package variable).
fn go_changes_that_pass() -> Vec<(
    &'static Ecosystem,
    &'static str,
    Change,
    Option<&'static str>,
)> {
    vec![
        (
            &GO,
            "a new test in the test file",
            |env, _| {
                let text = env.read("acceptance/ping_test.go")
                    + "\nfunc TestPingIsShort(t *testing.T) {\n\tif len(ping.Ping()) > 10 {\n\t\tt.Fatal(\"long\")\n\t}\n}\n";
                env.write("acceptance/ping_test.go", &text);
            },
            Some("adds tests to the exam file `acceptance/ping_test.go`"),
        ),
        (
            &GO,
            "new code under test, a package variable among it",
            |env, _| {
                let text = env
                    .read("src/ping/ping.go")
                    .replace("package ping\n", "package ping\n\nimport \"errors\"\n")
                    + "\n// ErrEmpty is an empty answer.\nvar ErrEmpty = errors.New(\"empty\")\n\n// Pong answers too.\nfunc Pong() string {\n\treturn Ping()\n}\n";
                env.write("src/ping/ping.go", &text);
            },
            None,
        ),
    ]
}

/// A fail-to-pass criterion whose test the change wrote (in a folder the
/// command names, so no verifier path names it) runs that test on the
/// base, over the base's code: an empty test passes there and is a
/// critical finding, a real one fails there and earns its pass. Without
/// the change's test on the base, pytest would select no test there.
#[test]
fn the_changes_own_test_runs_on_the_base() {
    let cases = [
        ("an empty test", "def test_ttl():\n    pass\n", 1),
        (
            "a real test",
            "import pathlib\n\n\ndef test_ttl():\n    assert pathlib.Path('src/ttl.txt').read_text() == 'seconds\\n'\n",
            0,
        ),
    ];
    for (name, test, exit) in cases {
        let env = workspace(&PYTEST, false);
        let spec = env.read("gate.toml").replace(
            "[[task.criterion]]\nid = \"pings\"",
            "[[task.criterion]]\nid = \"ttl\"\ntext = \"TTLs are whole seconds\"\n\
             run = \"python -m pytest tests/ -k ttl\"\nexpect = \"fail-to-pass\"\n\n\
             [[task.criterion]]\nid = \"pings\"",
        );
        env.write("gate.toml", &spec);
        env.write("src/ttl.txt", "seconds\n");
        env.write("tests/test_ttl.py", test);
        let doc = verify(&env);
        let ttl = gate_tests::item(&doc, "ttl").unwrap();
        assert_eq!(doc["exit"], exit, "{name}: {:#}", doc["findings"]);
        let critical = titles(&doc, "critical");
        // What the base run printed is kept: the test it ran there.
        let tail = ttl["base_status"]["output_tail"]
            .as_str()
            .unwrap_or_default();
        assert!(
            tail.contains("test_ttl") || tail.contains("1 passed"),
            "{name}: {ttl:#}"
        );
        if exit == 1 {
            assert_eq!(ttl["base_status"]["status"], "passed", "{name}: {ttl:#}");
            assert!(
                critical
                    .iter()
                    .any(|t| t.contains("passes without the change")),
                "{name}: {critical:#?}"
            );
        } else {
            assert_eq!(ttl["base_status"]["status"], "failed", "{name}: {ttl:#}");
            assert!(critical.is_empty(), "{name}: {critical:#?}");
        }
    }
}

/// A fail-to-pass criterion whose command names the test file the change
/// added a test to (`pytest tests/test_app.py -k ttl`): the named file is
/// part of the runner's exam, so the base run takes the change's version
/// of it from the first attempt and the added test runs there. A real test
/// fails on the base and earns its pass; an empty one passes there and is a
/// critical finding. With the base's version, pytest would deselect every
/// test (exit 5), which is no failure of the exam.
#[test]
fn a_test_file_the_command_names_runs_on_the_base_with_the_changes_tests() {
    let cases = [
        (
            "a real test",
            "def test_ttl():\n    assert open('src/ttl.txt').read() == 'seconds\\n'\n",
            "failed",
            "1 failed",
            0,
        ),
        (
            "an empty test",
            "def test_ttl():\n    pass\n",
            "passed",
            "1 passed",
            1,
        ),
    ];
    for (name, test, base, printed, exit) in cases {
        let env = workspace(&PYTEST, false);
        let spec = env.read("gate.toml").replace(
            "[[task.criterion]]\nid = \"pings\"",
            "[[task.criterion]]\nid = \"ttl\"\ntext = \"TTLs are whole seconds\"\n\
             run = \"python -m pytest tests/test_app.py -k ttl\"\nexpect = \"fail-to-pass\"\n\n\
             [[task.criterion]]\nid = \"pings\"",
        );
        env.write("gate.toml", &spec);
        env.write("src/ttl.txt", "seconds\n");
        env.write(
            "tests/test_app.py",
            &(env.read("tests/test_app.py") + "\n\n" + test),
        );
        let doc = verify(&env);
        let ttl = gate_tests::item(&doc, "ttl").unwrap();
        assert_eq!(ttl["base_status"]["status"], base, "{name}: {ttl:#}");
        let tail = ttl["base_status"]["output_tail"]
            .as_str()
            .unwrap_or_default();
        assert!(tail.contains(printed), "{name}: {ttl:#}");
        assert_eq!(doc["exit"], exit, "{name}: {:#}", doc["findings"]);
        let critical = titles(&doc, "critical");
        let loose = critical
            .iter()
            .any(|t| t.contains("passes without the change"));
        assert_eq!(loose, exit == 1, "{name}: {critical:#?}");
        if exit == 0 {
            assert_eq!(ttl["status"], "passed", "{name}: {ttl:#}");
            assert_eq!(doc["verdict"], "pass", "{name}");
        }
    }
}

/// A virtual environment of the workspace's (ignored, so in no commit) runs
/// the criteria, named by path or on an activated `PATH`: the base's
/// checkout does not have it, so the runner does not start there ("not
/// found", exit 127, or a Python without pytest, exit 1). That is no base
/// result: the fail-to-pass criterion is unverified rather than earned,
/// the pass-to-pass one does not call the base broken, the run is
/// incomplete, and the reason names the environment.
#[test]
fn a_runner_in_a_workspace_environment_the_base_lacks_did_not_run_there() {
    let Some(peer) = venv() else {
        panic!("GATE_TEST_PYTHON is not set: the peer venv has pytest");
    };
    let peer_python = peer.join("bin/python");
    #[allow(clippy::disallowed_methods)] // asks the peer venv where pytest lives
    let site = std::process::Command::new(&peer_python)
        .args([
            "-c",
            "import pytest, pathlib; print(pathlib.Path(pytest.__file__).parent.parent)",
        ])
        .output()
        .unwrap();
    let site = String::from_utf8(site.stdout).unwrap().trim().to_owned();
    // (how the criteria start the environment's Python, `PATH` first)
    for (python, activated) in [("env/bin/python", false), ("python", true)] {
        let env = workspace(&PYTEST, false);
        env.write(".gitignore", &(env.read(".gitignore") + "env/\n"));
        #[allow(clippy::disallowed_methods)] // the workspace's environment, made as a user would
        let made = std::process::Command::new(&peer_python)
            .args(["-m", "venv", "--without-pip", "env"])
            .current_dir(env.path())
            .status()
            .unwrap();
        assert!(made.success());
        // pytest from the peer venv, by a `.pth` of paths (no start-up hook).
        let version = std::fs::read_dir(env.path().join("env/lib"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .file_name();
        let pth = env
            .path()
            .join("env/lib")
            .join(version)
            .join("site-packages/peer.pth");
        std::fs::write(pth, format!("{site}\n")).unwrap();
        let spec = env.read("gate.toml").replace(
            "[[task.criterion]]\nid = \"pings\"\ntext = \"ping answers\"\nrun = \"python -m pytest tests/\"",
            &format!(
                "[[task.criterion]]\nid = \"ttl\"\ntext = \"TTLs are whole seconds\"\n\
                 run = \"{python} -m pytest tests/ -k ttl\"\nexpect = \"fail-to-pass\"\n\n\
                 [[task.criterion]]\nid = \"pings\"\ntext = \"ping answers\"\n\
                 run = \"{python} -m pytest tests/ -k ping\"\nexpect = \"pass-to-pass\""
            ),
        );
        assert_ne!(spec, env.read("gate.toml"));
        env.write("gate.toml", &spec);
        env.git(&["add", "-A"]);
        env.git(&[
            "commit",
            "-q",
            "-m",
            "criteria run by the workspace's environment",
        ]);
        env.git(&["branch", "-f", "main"]);
        env.write("src/ttl.txt", "seconds\n");
        env.write(
            "tests/test_ttl.py",
            "def test_ttl():\n    assert open('src/ttl.txt').read() == 'seconds\\n'\n",
        );
        env.git(&["add", "-A"]);
        env.git(&["commit", "-q", "-m", "the change"]);
        let mut path = vec![env.path().canonicalize().unwrap().join("env/bin")];
        if !activated {
            path.clear();
        }
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let out = env
            .gate(&["verify", "--base", "main", "--format", "json"])
            .env("PATH", std::env::join_paths(path).unwrap())
            .timeout(std::time::Duration::from_secs(300))
            .run();
        let doc = out.json();
        let case = format!("`{python}`");
        assert_eq!(out.code, Some(4), "{case}: {doc:#}");
        assert_eq!(doc["verdict"], "incomplete", "{case}");
        for id in ["ttl", "pings"] {
            let c = gate_tests::item(&doc, id).unwrap();
            assert_eq!(c["status"], "unverified", "{case}: {c:#}");
            assert_eq!(c["base_status"]["status"], "could_not_run", "{case}: {c:#}");
            let reason = c["base_status"]["reason"].as_str().unwrap();
            assert!(
                reason.starts_with("the exam did not run on the base: ")
                    && reason.contains("virtual environment `env/` is in no commit"),
                "{case}: {reason}"
            );
        }
    }
}

/// A fail-to-pass criterion run through a Python script of the base's that
/// calls pytest: the test the change wrote is not in the exam the gate
/// reads from the command, so the first attempt's base run runs the base's
/// tests alone; the next attempt takes the test files the criterion was
/// seen to read under `tests/`, and the change's own test fails on the
/// base and earns the pass. On the first attempt the base's tests pass
/// (a pass without the change), or, where the script selects the change's
/// test by name (`-k ttl`), none is selected: pytest's exit 5 is no failure
/// of the exam, so the criterion is unverified rather than earned.
#[test]
fn a_test_the_runner_found_by_itself_runs_on_the_base_on_the_next_attempt() {
    // (the script's pytest arguments, the first attempt's base result and exit)
    let cases = [
        ("'-q', 'tests'", "passed", 1),
        ("'tests', '-k', 'ttl'", "could_not_run", 4),
    ];
    for (args, first_base, first_exit) in cases {
        let env = workspace(&PYTEST, false);
        env.write(
            "scripts/run_tests.py",
            &format!("import sys\n\nimport pytest\n\nsys.exit(pytest.main([{args}]))\n"),
        );
        env.git(&["add", "-A"]);
        env.git(&["commit", "-q", "-m", "a test script"]);
        env.git(&["branch", "-f", "main"]);
        let spec = env.read("gate.toml").replace(
            "[[task.criterion]]\nid = \"pings\"",
            "[[task.criterion]]\nid = \"ttl\"\ntext = \"TTLs are whole seconds\"\n\
             run = \"python scripts/run_tests.py\"\nexpect = \"fail-to-pass\"\n\n\
             [[task.criterion]]\nid = \"pings\"",
        );
        env.write("gate.toml", &spec);
        env.write("src/ttl.txt", "seconds\n");
        env.write(
            "tests/test_ttl.py",
            "import pathlib\n\n\ndef test_ttl():\n    assert pathlib.Path('src/ttl.txt').read_text() == 'seconds\\n'\n",
        );
        // (attempt, the base's result, exit)
        for (attempt, base, exit) in [(1, first_base, first_exit), (2, "failed", 0)] {
            let doc = verify(&env);
            assert_eq!(doc["attempt"], attempt, "{args}: {doc:#}");
            let ttl = gate_tests::item(&doc, "ttl").unwrap();
            assert_eq!(
                ttl["base_status"]["status"], base,
                "{args}, attempt {attempt}: {ttl:#}"
            );
            assert_eq!(
                doc["exit"], exit,
                "{args}, attempt {attempt}: {:#}",
                doc["findings"]
            );
            if base == "could_not_run" {
                let reason = ttl["base_status"]["reason"].as_str().unwrap();
                assert!(reason.contains("deselected"), "{reason}");
            }
        }
    }
}

/// Real cargo: a second base run on the same base starts from the build the
/// first one kept, so its build script (which logs each run, from the base's
/// side) does not run again, and the change's own test still fails to
/// compile against the base's code and earns the pass.
#[test]
fn a_second_base_run_on_the_same_base_reuses_the_cargo_build() {
    let env = workspace(&CARGO, false);
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("build");
    env.write(
        "build.rs",
        &format!(
            "fn main() {{\n    println!(\"cargo:rerun-if-changed=src\");\n    \
             let side = if std::path::Path::new(\".here\").exists() {{ \"change\" }} else {{ \"base\" }};\n    \
             let mut all = std::fs::read_to_string({log:?}).unwrap_or_default();\n    \
             all.push_str(side);\n    all.push('\\n');\n    std::fs::write({log:?}, all).unwrap();\n}}\n"
        ),
    );
    let writable = format!("writable = [\"{}\"]\n", logs.path().display());
    let mut spec = env.read("gate.toml").replace(
        "[[task]]",
        "[[check]]\nid = \"build\"\nrun = \"cargo build --offline\"\n\n[[task]]",
    ) + "\n[[task.criterion]]\nid = \"ttl\"\ntext = \"TTLs are whole seconds\"\n\
         run = \"cargo test --offline --test ttl\"\nafter = [\"build\"]\nexpect = \"fail-to-pass\"\n";
    // The log folder joins the `[sandbox]` table, made when pytest's isn't.
    if spec.contains("[sandbox]\n") {
        spec = spec.replace("[sandbox]\n", &format!("[sandbox]\n{writable}"));
    } else {
        spec.push_str("[sandbox]\n");
        spec.push_str(&writable);
    }
    env.write("gate.toml", &spec);
    env.write(".gitignore", &(env.read(".gitignore") + ".here\n"));
    env.git(&["add", "-A"]);
    env.git(&["commit", "-q", "-m", "a build script"]);
    env.git(&["branch", "-f", "main"]);
    env.write(".here", "");
    env.write(
        "src/lib.rs",
        &(env.read("src/lib.rs") + "\npub fn ttl() -> u64 {\n    5\n}\n"),
    );
    let base_builds = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == "base")
            .count()
    };
    for (attempt, comment) in [(1, ""), (2, "// whole seconds\n")] {
        env.write(
            "tests/ttl.rs",
            &format!(
                "{comment}#[test]\nfn whole_seconds() {{\n    assert_eq!(srv::ttl(), 5);\n}}\n"
            ),
        );
        let doc = verify(&env);
        let ttl = gate_tests::item(&doc, "ttl").unwrap();
        assert_eq!(doc["exit"], 0, "attempt {attempt}: {ttl:#}");
        assert_eq!(doc["base_runs"]["ran"], 1, "attempt {attempt}");
        assert_eq!(
            ttl["base_status"]["status"], "failed",
            "attempt {attempt}: {ttl:#}"
        );
        assert_eq!(base_builds(), 1, "attempt {attempt}: {ttl:#}");
    }
}

/// A fail-to-pass criterion whose test (the planner's, at the base) the
/// change puts behind a build constraint, with a `doc.go` so the package
/// still builds: the test stops being built, a critical finding; the base
/// run and the change's run both run the base's version of it (the change
/// does not get its constraint into either), and the criterion fails.
/// Without the trick the same test fails on the base and earns its pass.
#[test]
fn a_build_constraint_the_change_added_earns_no_fail_to_pass() {
    if !has_go() {
        return;
    }
    // (the trick, the base's result, exit)
    for (trick, base, exit) in [(true, "failed", 1), (false, "failed", 0)] {
        let env = workspace(&GO, false);
        // The planner's test, at the base: a ping that answers `PANG`.
        let test = env.read("acceptance/ping_test.go").replace("PONG", "PANG");
        env.write("acceptance/ping_test.go", &test);
        let spec = env.read("gate.toml").replace(
            "[[task.criterion]]\nid = \"pings\"",
            "[[task.criterion]]\nid = \"pings\"\nexpect = \"fail-to-pass\"",
        );
        env.write("gate.toml", &spec);
        env.git(&["add", "-A"]);
        env.git(&["commit", "-q", "-m", "the planner's exam"]);
        env.git(&["branch", "-f", "main"]);
        if trick {
            env.write(
                "acceptance/ping_test.go",
                &format!("//go:build e2e\n\n{test}"),
            );
            env.write("acceptance/doc.go", "package acceptance\n");
        } else {
            break_code(&env, &GO);
        }
        let doc = verify(&env);
        let case = format!("trick {trick}");
        let pings = gate_tests::item(&doc, "pings").unwrap();
        assert_eq!(pings["base_status"]["status"], base, "{case}: {pings:#}");
        assert_eq!(doc["exit"], exit, "{case}: {:#}", doc["findings"]);
        let critical = titles(&doc, "critical");
        if trick {
            assert!(
                critical
                    .iter()
                    .any(|t| t.contains("from building the exam file `acceptance/ping_test.go`")),
                "{case}: {critical:#?}"
            );
            assert_eq!(pings["status"], "failed", "{case}: {pings:#}");
        } else {
            assert!(critical.is_empty(), "{case}: {critical:#?}");
        }
    }
}

/// A `go` or `npm` the change adds to a folder of the workspace that the
/// items' `PATH` holds would run in place of the runner: a critical finding
/// naming it, and a failing run. (The fake prints what a pass prints; no
/// real `go` is needed.)
#[test]
fn a_runner_the_change_puts_on_a_workspace_path_folder_is_critical() {
    use std::os::unix::fs::PermissionsExt;
    for (eco, program) in [(&GO, "go"), (&NPM, "npm")] {
        let env = workspace(eco, false);
        break_code(&env, eco);
        let fake = format!("tools/bin/{program}");
        env.write(&fake, "#!/bin/sh\necho ok\nexit 0\n");
        std::fs::set_permissions(
            env.path().join(&fake),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        env.git(&["add", "-A"]);
        env.git(&["commit", "-q", "-m", "the change"]);
        let mut dirs = vec![env.path().join("tools/bin")];
        dirs.extend(std::env::split_paths(&path()));
        let out = env
            .gate(&["verify", "--base", "main", "--format", "json"])
            .env("PATH", std::env::join_paths(dirs).unwrap())
            .timeout(std::time::Duration::from_secs(300))
            .run();
        let mut doc = out.json();
        doc["exit"] = out.code.into();
        assert_eq!(doc["exit"], 1, "{program}: {:#}", doc["findings"]);
        let critical = titles(&doc, "critical");
        assert!(
            critical.iter().any(|t| t.contains(&format!("`{fake}`"))),
            "{program}: {critical:#?}"
        );
    }
}

/// What a runner writes beside the code, ignored by the repository's own
/// exclude file rather than a `.gitignore` (which is all the workspace walk
/// reads): byte-code rewritten while the checks ran and an `.egg-info` are
/// neither uncommitted files nor "changed while the checks ran".
#[test]
fn build_output_is_neither_uncommitted_nor_changed_by_the_checks() {
    let env = workspace(&PYTEST, false);
    env.write(".gitignore", ".gate/\n.pytest_cache/\n");
    let spec = env.read("gate.toml").replace(
        "[[task]]",
        "[[check]]\nid = \"compile\"\nrun = \"python -m compileall -f -q src\"\n\n[[task]]",
    );
    env.write("gate.toml", &spec);
    env.write("src/util.py", "ANSWER = 'PONG'\n");
    env.git(&["add", "-A"]);
    env.git(&["commit", "-q", "-m", "a module and a compile step"]);
    env.git(&["branch", "-f", "main"]);
    env.write(".git/info/exclude", "__pycache__/\n*.egg-info/\n");
    env.write("src/app.egg-info/PKG-INFO", "Name: app\n");
    let python = std::env::var_os("GATE_TEST_PYTHON").unwrap_or_else(|| "python3".into());
    #[allow(clippy::disallowed_methods)] // byte-code there before the run, as a user's would be
    let compiled = std::process::Command::new(python)
        .args(["-m", "compileall", "-q", "src"])
        .current_dir(env.path())
        .status()
        .unwrap();
    assert!(compiled.success());
    let doc = verify(&env);
    assert_eq!(doc["exit"], 0, "{:#}", doc["findings"]);
    assert_eq!(doc["verified"]["uncommitted"], 0, "{:#}", doc["verified"]);
    let warnings = titles(&doc, "warning");
    assert!(
        !warnings
            .iter()
            .any(|t| t.contains("changed while the checks ran") || t.contains("belong")),
        "{warnings:#?}"
    );
}

/// Byte-code the workspace holds, ignored and never committed, whose header
/// (its source's time and size) matches `tests/__init__.py` but whose code
/// answers `PONG` whatever the code under test says: pytest run by hand
/// passes on it; the gate's run reads no byte-code from the workspace and
/// fails.
#[test]
fn planted_byte_code_does_not_make_a_failing_test_pass() {
    let env = workspace(&PYTEST, false);
    break_code(&env, &PYTEST);
    let python = std::env::var_os("GATE_TEST_PYTHON").unwrap_or_else(|| "python3".into());
    let plant = "import importlib.util, marshal, os\n\
        src = 'tests/__init__.py'\n\
        st = os.stat(src)\n\
        code = compile(\"def answer():\\n    return 'PONG\\\\n'\\n\", src, 'exec')\n\
        head = importlib.util.MAGIC_NUMBER + bytes(4)\n\
        head += (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, 'little')\n\
        head += (st.st_size & 0xFFFFFFFF).to_bytes(4, 'little')\n\
        path = importlib.util.cache_from_source(src)\n\
        os.makedirs(os.path.dirname(path), exist_ok=True)\n\
        open(path, 'wb').write(head + marshal.dumps(code))\n";
    #[allow(clippy::disallowed_methods)] // the byte-code a user's tree could hold
    let run = |args: &[&str]| {
        std::process::Command::new(&python)
            .args(args)
            .current_dir(env.path())
            .env_remove("PYTHONPYCACHEPREFIX")
            .env_remove("PYTHONDONTWRITEBYTECODE")
            .output()
            .unwrap()
    };
    assert!(run(&["-c", plant]).status.success());
    // The plant works: pytest outside the gate passes on the broken code.
    let by_hand = run(&["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/"]);
    assert!(
        by_hand.status.success(),
        "{}",
        String::from_utf8_lossy(&by_hand.stdout)
    );
    let doc = verify(&env);
    assert_eq!(doc["exit"], 1, "{:#}", doc["findings"]);
    let failed = doc["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["id"] == "pings" && c["status"] == "failed");
    assert!(failed, "{:#}", doc["criteria"]);
}

/// A criterion that builds its tests with `-tags e2e`: a test file behind
/// `//go:build !e2e` is not its exam (the change may edit it and pass), and
/// a constraint the change gives the planner's test that leaves it out of
/// that build is critical, the items run the base's version, and the
/// broken code fails.
#[test]
fn build_constraints_are_evaluated_as_the_criterions_command_does() {
    if !has_go() {
        return;
    }
    // (case, the change, exit, the critical title's part, or none)
    type Edit = fn(&TestEnv);
    let cases: [(&str, Edit, i64, Option<&str>); 2] = [
        (
            "a file the command does not build is edited",
            |env| {
                let text = env
                    .read("acceptance/other_test.go")
                    .replace("other", "else");
                env.write("acceptance/other_test.go", &text);
            },
            0,
            None,
        ),
        (
            "the planner's test left out of the build",
            |env| {
                let text = env
                    .read("acceptance/ping_test.go")
                    .replace("//go:build e2e", "//go:build e2e && windows");
                env.write("acceptance/ping_test.go", &text);
                break_code(env, &GO);
            },
            1,
            Some("from building the exam file `acceptance/ping_test.go`"),
        ),
    ];
    for (case, edit, exit, title) in cases {
        let env = workspace(&GO, false);
        let spec = env.read("gate.toml").replace(
            "go test -count=1 ./acceptance",
            "go test -count=1 -tags e2e ./acceptance",
        );
        env.write("gate.toml", &spec);
        let test = env.read("acceptance/ping_test.go");
        env.write(
            "acceptance/ping_test.go",
            &format!("//go:build e2e\n\n{test}"),
        );
        env.write(
            "acceptance/other_test.go",
            "//go:build !e2e\n\npackage acceptance\n\nimport \"testing\"\n\n\
             func TestOther(t *testing.T) {\n\tt.Fatal(\"other\")\n}\n",
        );
        env.write("acceptance/doc.go", "package acceptance\n");
        env.git(&["add", "-A"]);
        env.git(&["commit", "-q", "-m", "the planner's tagged exam"]);
        env.git(&["branch", "-f", "main"]);
        edit(&env);
        let doc = verify(&env);
        assert_eq!(doc["exit"], exit, "{case}: {:#}", doc["findings"]);
        let critical = titles(&doc, "critical");
        match title {
            None => assert!(critical.is_empty(), "{case}: {critical:#?}"),
            Some(part) => assert!(
                critical.iter().any(|t| t.contains(part)),
                "{case}: {critical:#?}"
            ),
        }
    }
}

/// A fail-to-pass criterion whose test the change wrote, while the change
/// also appends an exit to the tests' package `__init__.py`: the base run
/// takes the change's new test but the base's `__init__.py`, so the exit
/// never decides the base's result; the test fails there as it should,
/// and the appended exit is a critical finding.
#[test]
fn the_base_run_never_takes_start_up_code_the_change_added() {
    let env = workspace(&PYTEST, false);
    let spec = env.read("gate.toml").replace(
        "[[task.criterion]]\nid = \"pings\"",
        "[[task.criterion]]\nid = \"ttl\"\ntext = \"TTLs are whole seconds\"\n\
         run = \"python -m pytest tests/ -k ttl\"\nexpect = \"fail-to-pass\"\n\n\
         [[task.criterion]]\nid = \"pings\"",
    );
    env.write("gate.toml", &spec);
    env.write("src/ttl.txt", "seconds\n");
    env.write(
        "tests/test_ttl.py",
        "import pathlib\n\n\ndef test_ttl():\n    assert pathlib.Path('src/ttl.txt').read_text() == 'seconds\\n'\n",
    );
    env.write(
        "tests/__init__.py",
        &(env.read("tests/__init__.py")
            + "\nimport os\nimport sys\n\nif 'pytest' in sys.modules:\n    os._exit(0)\n"),
    );
    let doc = verify(&env);
    let ttl = gate_tests::item(&doc, "ttl").unwrap();
    assert_eq!(ttl["base_status"]["status"], "failed", "{ttl:#}");
    assert_eq!(doc["exit"], 1, "{:#}", doc["findings"]);
    let critical = titles(&doc, "critical");
    assert!(
        critical
            .iter()
            .any(|t| t.contains("exam file `tests/__init__.py`")),
        "{critical:#?}"
    );
    assert!(
        !critical
            .iter()
            .any(|t| t.contains("passes without the change")),
        "{critical:#?}"
    );
}

/// Without `--base`, the exam is compared with the series' first attempt:
/// an exam file added since then is judged by what it can do. A new test
/// file with only tests is a warning and passes; one with a `TestMain`
/// that never runs the tests, or a module-level exit, is critical and
/// fails.
#[test]
fn without_a_base_added_exam_files_are_judged_against_the_first_attempt() {
    // (ecosystem, case, file, text, code left broken, exit, severity)
    type Case = (
        &'static Ecosystem,
        &'static str,
        &'static str,
        &'static str,
        bool,
        i64,
        &'static str,
    );
    let cases: [Case; 3] = [
        (
            &GO,
            "a TestMain that never runs the tests",
            "acceptance/main_test.go",
            TEST_MAIN,
            true,
            1,
            "critical",
        ),
        (
            &GO,
            "a new test",
            "acceptance/more_test.go",
            "package acceptance\n\nimport \"testing\"\n\nfunc TestMore(t *testing.T) {}\n",
            false,
            0,
            "warning",
        ),
        (
            &PYTEST,
            "a module-level exit",
            "tests/test_more.py",
            "import os\n\nos._exit(0)\n",
            true,
            1,
            "critical",
        ),
    ];
    for (eco, case, file, text, broken, exit, severity) in cases {
        if eco.name == "go" && !has_go() {
            continue;
        }
        let env = workspace(eco, false);
        let run = |env: &TestEnv| {
            env.git(&["add", "-A"]);
            env.git(&["commit", "-q", "-m", "an attempt", "--allow-empty"]);
            let out = env
                .gate(&["verify", "--format", "json"])
                .env("PATH", path())
                .timeout(std::time::Duration::from_secs(300))
                .run();
            let mut doc = out.json();
            doc["exit"] = out.code.into();
            doc
        };
        // A first attempt that fails: the series goes on.
        let (code, good) = eco.files[1];
        break_code(&env, eco);
        let first = run(&env);
        assert_eq!(first["exit"], 1, "{case}: {:#}", first["findings"]);
        env.write(file, text);
        if !broken {
            env.write(code, good);
        }
        let doc = run(&env);
        assert_eq!(doc["attempt"], 2, "{case}: {doc:#}");
        assert_eq!(doc["exit"], exit, "{case}: {:#}", doc["findings"]);
        let found = titles(&doc, severity);
        assert!(
            found
                .iter()
                .any(|t| t.contains(&format!("adds the exam file `{file}`"))),
            "{case}: {found:#?}"
        );
        if severity == "warning" {
            assert!(titles(&doc, "critical").is_empty(), "{case}: {doc:#}");
        }
    }
}
