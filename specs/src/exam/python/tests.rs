use super::super::testutil::{Mem, configs, files};
use super::super::{LaunchChange, Runner, RunnerConfig, exam, launch_changes};

fn tree() -> Mem {
    Mem::new(&[
        (
            "pyproject.toml",
            "[project]\nname = \"a\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests/acc\"]\naddopts = \"-q\"\n",
        ),
        ("setup.cfg", "[metadata]\nname = a\n"),
        ("conftest.py", "\n"),
        (
            "tests/conftest.py",
            "pytest_plugins = [\"tests.plugins.db\"]\n",
        ),
        ("tests/plugins/db.py", "\n"),
        ("tests/acc/conftest.py", "\n"),
        ("tests/acc/test_a.py", "\n"),
        ("tests/acc/__snapshots__/test_a.ambr", "\n"),
        ("tests/acc/b_test.py", "\n"),
        ("tests/acc/helper.py", "\n"),
        ("tests/acc/sub/test_c.py", "\n"),
        ("tests/acc/.hidden/test_h.py", "\n"),
        ("tests/unit/__init__.py", "\n"),
        (
            "tests/unit/test_u.py",
            "from tests.support.db import fake\nfrom . import helpers\nimport app.core\n",
        ),
        ("tests/unit/helpers.py", "from ..support import other\n"),
        ("tests/support/__init__.py", "\n"),
        ("tests/support/db.py", "\n"),
        ("tests/support/other.py", "\n"),
        ("app/core.py", "\n"),
        // A suite that is a package, its helpers in `__init__.py`.
        ("test/__init__.py", "class CacheTestMixin:\n    pass\n"),
        ("test/test_lru.py", "from . import CacheTestMixin\n"),
        ("test/ttl/__init__.py", "\n"),
        (
            "test/ttl/test_ttl.py",
            "from .. import CacheTestMixin\nfrom . import (\n    mixin,  # the shared cases\n    util,\n)\n",
        ),
        ("test/ttl/mixin.py", "\n"),
        ("test/ttl/util/__init__.py", "\n"),
        ("test/ttl/unused.py", "\n"),
    ])
}

#[test]
fn what_pytest_and_unittest_run() {
    let tree = tree();
    let acc: &[&str] = &[
        "conftest.py",
        "tests/conftest.py",
        "tests/acc/conftest.py",
        "tests/acc/b_test.py",
        "tests/acc/sub/test_c.py",
        "tests/acc/test_a.py",
        "tests/acc/__snapshots__/test_a.ambr",
        "tests/plugins/db.py",
    ];
    let unit: &[&str] = &[
        "conftest.py",
        "tests/conftest.py",
        "tests/unit/test_u.py",
        "tests/unit/__init__.py",
        "tests/support/db.py",
        "tests/unit/helpers.py",
        "tests/support/__init__.py",
        "tests/support/other.py",
        "tests/plugins/db.py",
    ];
    let cases: &[(&str, &[&str])] = &[
        ("pytest tests/acc", acc),
        ("pytest -q", acc),
        ("uv run pytest tests/acc/", acc),
        ("python -m pytest tests/unit/test_u.py::test_x -k foo", unit),
        (
            "cd tests && python3 -m pytest -p no:cacheprovider unit",
            unit,
        ),
        (
            "python3 -m unittest discover -s tests/unit -p 'test_*.py'",
            &[
                "tests/unit/__init__.py",
                "tests/unit/test_u.py",
                "tests/support/db.py",
                "tests/unit/helpers.py",
                "tests/support/__init__.py",
                "tests/support/other.py",
            ],
        ),
        (
            "python -m unittest tests.unit.test_u.TestX",
            &[
                "tests/unit/test_u.py",
                "tests/unit/__init__.py",
                "tests/support/db.py",
                "tests/unit/helpers.py",
                "tests/support/__init__.py",
                "tests/support/other.py",
            ],
        ),
        ("python3 tests/acc/helper.py", &[]),
        // The rootdir is the package: its `__init__.py` runs all the same.
        (
            "pytest --rootdir=test test/test_lru.py",
            &["conftest.py", "test/test_lru.py", "test/__init__.py"],
        ),
        // `from .. import`, and submodules named over lines, one a package.
        (
            "python -m pytest test/ttl/test_ttl.py",
            &[
                "conftest.py",
                "test/ttl/test_ttl.py",
                "test/ttl/__init__.py",
                "test/__init__.py",
                "test/ttl/mixin.py",
                "test/ttl/util/__init__.py",
            ],
        ),
    ];
    for (run, want) in cases {
        let got = exam(run, &tree);
        assert_eq!(files(&got), *want, "{run}");
        assert!(got.unresolved.is_empty(), "{run}: {:?}", got.unresolved);
    }
    assert!(!exam("pytest --pyargs pkg", &tree).unresolved.is_empty());
    assert!(exam("pytest tests/acc", &tree).in_code.is_empty());
    for run in [
        "pytest --doctest-modules src",
        "python3 -m doctest app/core.py",
    ] {
        assert!(!exam(run, &tree).in_code.is_empty(), "{run}");
    }
    assert!(
        !exam("python -m unittest nope.mod", &tree)
            .unresolved
            .is_empty()
    );
}

#[test]
fn the_configuration_pytest_picks() {
    let got = configs(&exam("pytest tests/acc", &tree()));
    let mut want: Vec<String> = Vec::new();
    for dir in ["tests/acc/", "tests/", ""] {
        for c in [
            "pytest.ini#pytest",
            ".pytest.ini#pytest",
            "pyproject.toml#tool.pytest",
            "tox.ini#pytest",
            "setup.cfg#tool:pytest",
        ] {
            want.push(format!("{dir}{c}"));
        }
    }
    // The root's pyproject.toml is picked: its setup.cfg and tox.ini are not read.
    want.truncate(want.len() - 2);
    want.extend(["conftest.py", "tests/conftest.py", "tests/acc/conftest.py"].map(String::from));
    assert_eq!(got, want);
}

#[test]
fn a_pytest_ini_nearer_the_tests_wins() {
    let mut tree = tree();
    tree.0.insert(
        "tests/pytest.ini".into(),
        b"[pytest]\naddopts = -q\n".to_vec(),
    );
    let got = exam("pytest tests/acc", &tree);
    let configs = configs(&got);
    assert!(configs.contains(&"tests/pytest.ini#pytest".to_owned()));
    // Found nearer, it is picked: the root's files are not candidates.
    assert!(!configs.contains(&"pyproject.toml#tool.pytest".to_owned()));
    // conftest.py files above it count still (pytest versions differ).
    assert_eq!(files(&got)[0], "conftest.py");
}

#[test]
fn launch_changes_of_pytest_files() {
    /// (file, section, base ("" = absent), now, keys that count)
    type Case<'a> = (&'a str, Option<&'a str>, &'a str, &'a str, &'a [&'a str]);
    let py = "[project]\ndependencies = []\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\n";
    let cases: &[Case<'_>] = &[
        (
            "pyproject.toml",
            Some("tool.pytest"),
            py,
            "[project]\ndependencies = [\"requests\"]\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\n",
            &[],
        ),
        (
            "pyproject.toml",
            Some("tool.pytest"),
            py,
            "[project]\ndependencies = []\n\n[tool.pytest.ini_options]\naddopts = \"-q -k nothing\"\n",
            &["tool.pytest.ini_options.addopts"],
        ),
        (
            "setup.cfg",
            Some("tool:pytest"),
            "[metadata]\nname = a\n",
            "[metadata]\nname = b\n[tool:pytest]\naddopts = -x\n",
            &["[tool:pytest]", "addopts"],
        ),
        (
            "tox.ini",
            Some("pytest"),
            "[tox]\nenvlist = py3\n",
            "[tox]\nenvlist = py311\n",
            &[],
        ),
        ("pytest.ini", Some("pytest"), "", "", &[]),
        (
            "pytest.ini",
            Some("pytest"),
            "",
            "[pytest]\n",
            &["[pytest]"],
        ),
        (
            "conftest.py",
            None,
            "",
            "import pytest\n",
            &["the whole file"],
        ),
    ];
    for (path, section, base, now, want) in cases {
        let config = RunnerConfig {
            path: (*path).to_owned(),
            runner: Runner::Pytest,
            section: section.map(str::to_owned),
        };
        let bytes = |t: &str| (!t.is_empty()).then(|| t.as_bytes().to_vec());
        let got: Vec<String> =
            launch_changes(&config, bytes(base).as_deref(), bytes(now).as_deref())
                .into_iter()
                .map(|LaunchChange { key, .. }| key)
                .collect();
        assert_eq!(got, *want, "{path}: {now}");
    }
}

/// Every criterion that pytest imports a package's `__init__.py` for holds
/// it in its exam, and `python -m` names the modules the working directory
/// would shadow.
#[test]
fn package_inits_for_every_criterion_and_shadowed_runners() {
    let tree = Mem::new(&[
        ("tests/__init__.py", "\n"),
        ("tests/test_a.py", "\n"),
        ("tests/acceptance/__init__.py", "\n"),
        ("tests/acceptance/test_b.py", "\n"),
    ]);
    for run in [
        "python -m pytest tests/test_a.py",
        "python -m pytest tests/acceptance/test_b.py",
        "pytest tests -k b",
        "python -m unittest tests.acceptance.test_b",
    ] {
        let got = files(&exam(run, &tree));
        assert!(
            got.iter().any(|f| f == "tests/__init__.py"),
            "{run}: {got:?}"
        );
    }
    let module = |run: &str| -> Vec<String> {
        exam(run, &tree)
            .configs
            .into_iter()
            .filter(|c| c.runner == Runner::Module)
            .map(|c| c.path)
            .collect()
    };
    let pytest = module("python3 -m pytest tests");
    assert!(pytest.contains(&"pytest.py".to_owned()), "{pytest:?}");
    assert!(
        pytest.contains(&"pluggy/__init__.py".to_owned()),
        "{pytest:?}"
    );
    assert_eq!(
        module("cd tests && python -m unittest test_a"),
        ["tests/unittest.py", "tests/unittest/__init__.py"]
    );
    assert!(module("python -I -m pytest tests").is_empty());
    assert!(module("pytest tests").is_empty());
    let config = RunnerConfig {
        path: "pytest.py".to_owned(),
        runner: Runner::Module,
        section: None,
    };
    assert_eq!(
        launch_changes(&config, None, Some(b"print('2 passed')")).len(),
        1
    );
}
