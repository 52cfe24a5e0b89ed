//! Regenerable caches, valued by what decides them.
//!
//! Some files a test runner reads and writes on every run do not decide
//! its result, and keeping them as reads would tie every item that uses
//! the runner to every other (one writes the cache, the next reads it):
//!
//! - a compiled Python module (`__pycache__/*.pyc`) is its source: Python
//!   looks at the source (its size and time) before it takes the compiled
//!   file, and the source is what is compared;
//! - pytest's cache (`.pytest_cache/`) decides nothing unless the run asks
//!   it to: `--lf`, `--ff`, `--nf`, `--sw` and their long forms, on the
//!   command line or in the pytest configuration files the item read;
//! - coverage data files (`.coverage`, `.coverage.*`) decide nothing unless
//!   the command reports on them or holds a threshold (`coverage report`,
//!   `combine`, `xml`, `json`, `html`, `lcov`, `annotate`, `--cov-append`,
//!   `--append`, `-a`, `fail-under`).
//!
//! Anything else an item reads is an input, however cache-like its name.

use std::path::Path;

use gate_harness::trace::Accesses;

/// pytest options that make its cache decide what runs.
const PYTEST_CACHE_OPTIONS: [&str; 13] = [
    "--lf",
    "--last-failed",
    "--ff",
    "--failed-first",
    "--nf",
    "--new-first",
    "--sw",
    "--stepwise",
    "--sw-skip",
    "--stepwise-skip",
    "--lfnf",
    "--last-failed-no-failures",
    "--cache-show",
];

/// The files pytest reads its options from.
const PYTEST_CONFIGS: [&str; 5] = [
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
];

/// What in a command line makes coverage data decide the result.
const COVERAGE_READERS: [&str; 11] = [
    "coverage report",
    "coverage combine",
    "coverage xml",
    "coverage json",
    "coverage html",
    "coverage lcov",
    "coverage annotate",
    "--cov-append",
    "--append",
    " -a",
    "fail-under",
];

/// Which cache a workspace path is in, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cache {
    Compiled,
    Pytest,
    Coverage,
}

fn cache_of(path: &str) -> Option<Cache> {
    let mut parts = path.split('/');
    let name = parts.next_back()?;
    let dirs: Vec<&str> = parts.collect();
    // Python writes and takes `.pyc` in lower case only.
    let compiled = Path::new(name).extension().is_some_and(|e| e == "pyc");
    if name == "__pycache__" || (dirs.last() == Some(&"__pycache__") && compiled) {
        return Some(Cache::Compiled);
    }
    if dirs.contains(&".pytest_cache") || (name == ".pytest_cache") {
        return Some(Cache::Pytest);
    }
    if name == ".coverage" || name.starts_with(".coverage.") {
        return Some(Cache::Coverage);
    }
    None
}

/// Takes out of `accesses` what the caches it touched hold, where they
/// do not decide the result of `command`; `workspace` holds the pytest
/// configuration files it read.
pub(crate) fn settle(accesses: &mut Accesses, command: &str, workspace: &Path) {
    let pytest_cache_decides = PYTEST_CACHE_OPTIONS.iter().any(|o| mentions(command, o))
        || accesses
            .paths
            .iter()
            .filter(|p| PYTEST_CONFIGS.contains(&p.rsplit('/').next().unwrap_or(p)))
            .filter_map(|p| std::fs::read_to_string(workspace.join(p)).ok())
            .any(|text| PYTEST_CACHE_OPTIONS.iter().any(|o| mentions(&text, o)));
    let coverage_decides = COVERAGE_READERS.iter().any(|r| command.contains(r));
    let inert = |path: &String| match cache_of(path) {
        Some(Cache::Compiled) => true,
        Some(Cache::Pytest) => !pytest_cache_decides,
        Some(Cache::Coverage) => !coverage_decides,
        None => false,
    };
    accesses.paths.retain(|p| !inert(p));
    accesses.written.retain(|p| !inert(p));
    accesses.listed.retain(|p| !inert(p));
}

/// Whether `text` holds `option` as a word of its own (`--lf`, not
/// `--lfx`).
fn mentions(text: &str, option: &str) -> bool {
    text.match_indices(option).any(|(at, _)| {
        let after = text[at + option.len()..].chars().next();
        !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accesses(paths: &[&str]) -> Accesses {
        Accesses {
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            written: paths.iter().map(|p| (*p).to_owned()).collect(),
            ..Accesses::default()
        }
    }

    /// Each cache, under a command that makes it decide and one that does
    /// not: what stays a read.
    #[test]
    fn a_cache_is_an_input_only_where_it_decides() {
        let ws = tempfile::tempdir().unwrap();
        let cases: [(&str, &str, bool); 13] = [
            ("pkg/__pycache__/m.cpython-311.pyc", "pytest -q", false),
            ("pkg/__pycache__", "pytest -q", false),
            ("pkg/__pycache__/m.cpython-311.pyc", "pytest --lf", false),
            ("pkg/m.pyc", "python -m pkg", true),
            (".pytest_cache/v/cache/lastfailed", "pytest -q", false),
            (".pytest_cache/v/cache/lastfailed", "pytest -q --lf", true),
            (
                ".pytest_cache/v/cache/lastfailed",
                "pytest --sw tests",
                true,
            ),
            (".pytest_cache/v/cache/lastfailed", "pytest --lfx", false),
            (".coverage", "pytest --cov=pkg", false),
            (".coverage", "pytest --cov=pkg --cov-fail-under=90", true),
            (
                ".coverage.host.1",
                "coverage combine && coverage report",
                true,
            ),
            (".coverage", "coverage run -m pytest", false),
            ("src/cache.txt", "pytest -q", true),
        ];
        for (path, command, kept) in cases {
            let mut a = accesses(&[path]);
            settle(&mut a, command, ws.path());
            assert_eq!(a.paths.contains(path), kept, "{path} under `{command}`");
            assert_eq!(a.written.contains(path), kept, "{path} under `{command}`");
        }
    }

    /// `addopts = --lf` in a configuration file the item read makes
    /// pytest's cache decide as the command line would.
    #[test]
    fn a_pytest_option_in_a_configuration_file_counts() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("pytest.ini"), "[pytest]\naddopts = --ff\n").unwrap();
        let mut a = accesses(&[".pytest_cache/v/cache/lastfailed", "pytest.ini"]);
        settle(&mut a, "pytest -q", ws.path());
        assert!(a.paths.contains(".pytest_cache/v/cache/lastfailed"));
    }
}
