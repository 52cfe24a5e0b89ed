//! The process environment, read once when the gate starts and passed to
//! whatever needs a variable: nothing else in the gate reads the process's
//! own, so a command sees one environment from start to end, and tests
//! build theirs from a list of pairs.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Environment variables the gate reads (besides `NO_COLOR`, `TERM`, `CI`,
/// `PATH`, `RUST_LOG`, the `AWS_*` variables, `GITHUB_STEP_SUMMARY` and the
/// variables the routing table and the spec's pages name).
pub(crate) mod names {
    /// The state directory (`--state` wins).
    pub(crate) const STATE_DIR: &str = "GATE_STATE_DIR";
    /// The signing key: PEM text or a path.
    pub(crate) const SIGNING_KEY: &str = "GATE_SIGNING_KEY";
    /// A shared ledger's URL (wins over `[ledger] url`).
    pub(crate) const LEDGER: &str = "GATE_LEDGER";
    /// Where bundles go: `s3://bucket/prefix` or a directory (default
    /// `bundles/` in the state directory).
    pub(crate) const BUNDLE_STORE: &str = "GATE_BUNDLE_STORE";
    /// Days a run's kept review request is kept in a directory store.
    pub(crate) const REQUEST_RETENTION_DAYS: &str = "GATE_REQUEST_RETENTION_DAYS";
    /// Where a routing patch is fetched from at start-up.
    pub(crate) const ROUTING_URL: &str = "GATE_ROUTING_URL";
    /// `gate verify`'s stdout format (`--format` wins).
    pub(crate) const FORMAT: &str = "GATE_FORMAT";
    /// `gate verify --offline` when true (`1`, `true`, `yes`).
    pub(crate) const OFFLINE: &str = "GATE_OFFLINE";
    /// Test suite only: panic right after start-up, to exercise the panic path.
    pub(crate) const TEST_PANIC: &str = "GATE_TEST_PANIC";
    /// Whether what items read is traced (on unless `0`/`false`/`no`/`off`).
    pub(crate) const TRACE: &str = "GATE_TRACE";
    /// The sandbox floor: `auto`, `required` or `off` (`--sandbox` wins).
    pub(crate) const SANDBOX: &str = "GATE_SANDBOX";
    /// Test suite only: a shorter heartbeat, in milliseconds.
    pub(crate) const HEARTBEAT_MS: &str = "GATE_HEARTBEAT_MS";
    /// The Chromium the page checks drive.
    pub(crate) const CHROMIUM: &str = "GATE_CHROMIUM";
    /// axe-core's `axe.min.js`, for the contrast check.
    pub(crate) const AXE_CORE: &str = "GATE_AXE_CORE";
    /// Set by `gate hook` for the run it starts inside an agent's session:
    /// the record is advisory, and no shared ledger is used.
    pub(crate) const ADVISORY: &str = "GATE_ADVISORY";
}

/// A snapshot of the process environment: every variable as it was when the
/// gate started, in the order the process had them.
///
/// The pairs are kept as a list, not a map, because the processes the gate
/// starts pick theirs from it and must get exactly what they got from the
/// process itself; a lookup takes the first pair of a name, as `getenv` does.
#[derive(Clone, Default)]
pub(crate) struct Environment {
    vars: Arc<[(OsString, OsString)]>,
}

/// Names only: the values hold keys and tokens.
impl fmt::Debug for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.vars.iter().map(|(name, _)| name))
            .finish()
    }
}

impl Environment {
    /// The process's environment now: the one place the gate reads it.
    pub(crate) fn capture() -> Self {
        Self::from_pairs(std::env::vars_os())
    }

    /// An environment of exactly these variables (tests).
    pub(crate) fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<OsString>,
        V: Into<OsString>,
    {
        Self {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// Every variable, in order: what the isolation of a run picks the
    /// processes' environment from.
    pub(crate) fn pairs(&self) -> &[(OsString, OsString)] {
        &self.vars
    }

    /// A variable's value, when it is set (even to nothing).
    pub(crate) fn var_os(&self, name: &str) -> Option<&OsStr> {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_os_str())
    }

    /// A variable's value, when it is set and Unicode.
    pub(crate) fn var(&self, name: &str) -> Option<&str> {
        self.var_os(name)?.to_str()
    }

    /// A variable's value as an owned string, when it is set and Unicode.
    pub(crate) fn value(&self, name: &str) -> Option<String> {
        self.var(name).map(str::to_owned)
    }

    /// Whether a variable is set to something.
    pub(crate) fn is_set(&self, name: &str) -> bool {
        self.var_os(name).is_some_and(|v| !v.is_empty())
    }

    /// Whether the variable `name` holds an API key: something besides
    /// whitespace, which the keys are trimmed of.
    pub(crate) fn key_is_set(&self, name: &str) -> bool {
        self.var_os(name)
            .is_some_and(|v| !v.to_string_lossy().trim().is_empty())
    }

    /// A Unicode value with something besides whitespace in it.
    fn non_blank(&self, name: &str) -> Option<String> {
        self.value(name).filter(|v| !v.trim().is_empty())
    }

    /// A non-empty value, as a path.
    fn path_of(&self, name: &str) -> Option<PathBuf> {
        self.var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    }

    /// The variable `name` as a path, when it is an absolute one (`HOME`,
    /// `XDG_STATE_HOME`, `CODEX_HOME`: a relative one would depend on where
    /// the gate was started).
    pub(crate) fn absolute_path(&self, name: &str) -> Option<PathBuf> {
        self.path_of(name).filter(|p| p.is_absolute())
    }

    /// `GATE_STATE_DIR`: the state directory, as given.
    pub(crate) fn state_dir(&self) -> Option<PathBuf> {
        self.path_of(names::STATE_DIR)
    }

    /// `GATE_LEDGER`: a shared ledger's URL.
    pub(crate) fn ledger(&self) -> Option<String> {
        self.non_blank(names::LEDGER)
    }

    /// `GATE_BUNDLE_STORE`: where bundles go.
    pub(crate) fn bundle_store(&self) -> Option<String> {
        self.non_blank(names::BUNDLE_STORE)
    }

    /// `GATE_REQUEST_RETENTION_DAYS` as written (the replay glue parses it).
    pub(crate) fn request_retention_days(&self) -> Option<String> {
        self.non_blank(names::REQUEST_RETENTION_DAYS)
    }

    /// `GATE_ROUTING_URL`: where a routing patch is fetched from.
    pub(crate) fn routing_url(&self) -> Option<String> {
        self.non_blank(names::ROUTING_URL)
    }

    /// `GATE_SIGNING_KEY`: PEM text or a path.
    pub(crate) fn signing_key(&self) -> Option<String> {
        self.non_blank(names::SIGNING_KEY)
    }

    /// `GATE_FORMAT` as written (the configuration parses it).
    pub(crate) fn format(&self) -> Option<&str> {
        self.var(names::FORMAT)
    }

    /// `GATE_OFFLINE` as written (the configuration parses it).
    pub(crate) fn offline(&self) -> Option<&str> {
        self.var(names::OFFLINE)
    }

    /// `GATE_SANDBOX` as written (the configuration parses it).
    pub(crate) fn sandbox(&self) -> Option<&str> {
        self.var(names::SANDBOX)
    }

    /// Whether the test suite asks for a panic at start-up (`GATE_TEST_PANIC=1`).
    pub(crate) fn test_panic(&self) -> bool {
        self.var(names::TEST_PANIC) == Some("1")
    }

    /// Whether the test suite asks for a panic inside a task the runtime
    /// spawned (`GATE_TEST_PANIC=task`), which the runtime itself catches.
    pub(crate) fn test_task_panic(&self) -> bool {
        self.var(names::TEST_PANIC) == Some("task")
    }

    /// `GATE_HEARTBEAT_MS`: a shorter heartbeat for tests (not part of the
    /// documented surface); `None` keeps the dispatcher's own.
    pub(crate) fn heartbeat(&self) -> Option<Duration> {
        self.var(names::HEARTBEAT_MS)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
    }

    /// `GATE_CHROMIUM`: the browser's path, when given.
    pub(crate) fn chromium(&self) -> Option<PathBuf> {
        self.path_of(names::CHROMIUM)
    }

    /// `GATE_AXE_CORE`: axe-core's `axe.min.js`, when given.
    pub(crate) fn axe_core(&self) -> Option<PathBuf> {
        self.path_of(names::AXE_CORE)
    }

    /// `PATH`, as it is (possibly empty).
    pub(crate) fn path(&self) -> Option<&OsStr> {
        self.var_os("PATH")
    }

    /// `RUST_LOG`: the log filter, when set and Unicode.
    pub(crate) fn rust_log(&self) -> Option<&str> {
        self.var("RUST_LOG")
    }

    /// `GITHUB_STEP_SUMMARY`: the file GitHub Actions shows as the job summary.
    pub(crate) fn github_step_summary(&self) -> Option<PathBuf> {
        self.path_of("GITHUB_STEP_SUMMARY")
    }

    /// `GATE_ADVISORY`: the run is advisory (`1`, `true` or `yes`).
    pub(crate) fn advisory(&self) -> bool {
        self.var(names::ADVISORY)
            .is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes"))
    }

    /// Whether the gate runs in CI (`CI` set to anything but empty, "false" or "0").
    pub(crate) fn in_ci(&self) -> bool {
        self.var("CI")
            .is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
    }

    /// Whether `NO_COLOR` asks for no colour (set to something).
    pub(crate) fn no_color(&self) -> bool {
        self.is_set("NO_COLOR")
    }

    /// Whether `TERM` says the terminal cannot redraw a line.
    pub(crate) fn dumb_terminal(&self) -> bool {
        self.var_os("TERM").is_some_and(|t| t == "dumb")
    }

    /// Every `AWS_*` variable (credentials, region, endpoint, `AWS_ALLOW_HTTP`…)
    /// set to something: how object storage is reached.
    pub(crate) fn aws(&self) -> Vec<(String, String)> {
        self.unicode()
            .filter(|(k, v)| k.starts_with("AWS_") && !v.is_empty())
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    /// Values of variables that look like secrets (names holding KEY,
    /// TOKEN, SECRET or PASSWORD), plus those `extra_names` names, sorted
    /// and each once: they are redacted from everything captured.
    pub(crate) fn secret_values(&self, extra_names: &[String]) -> Vec<String> {
        let mut values: Vec<String> = self
            .unicode()
            .filter(|(k, _)| {
                let k = k.to_ascii_uppercase();
                ["KEY", "TOKEN", "SECRET", "PASSWORD"]
                    .iter()
                    .any(|w| k.contains(w))
                    || extra_names.iter().any(|n| n.eq_ignore_ascii_case(&k))
            })
            .map(|(_, v)| v.to_owned())
            // Short values would redact ordinary words.
            .filter(|v| v.len() >= 8)
            .collect();
        values.sort();
        values.dedup();
        values
    }

    /// The pairs whose name and value are both Unicode.
    fn unicode(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars
            .iter()
            .filter_map(|(k, v)| Some((k.to_str()?, v.to_str()?)))
    }
}

/// The review asks the snapshot which API-key variables hold a key.
impl gate_review::routing::KeyLookup for Environment {
    fn key_is_set(&self, name: &str) -> bool {
        Environment::key_is_set(self, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn ci_is_on_for_any_value_but_empty_false_and_zero() {
        // (CI's value, whether the gate runs in CI)
        let cases = [
            (None, false),
            (Some(""), false),
            (Some("false"), false),
            (Some("0"), false),
            (Some("true"), true),
            (Some("1"), true),
            (Some("yes"), true),
        ];
        for (value, want) in cases {
            let e = env(&value.map(|v| ("CI", v)).into_iter().collect::<Vec<_>>());
            assert_eq!(e.in_ci(), want, "CI={value:?}");
        }
    }

    #[test]
    fn the_typed_accessors_read_what_the_pairs_hold() {
        // (the environment, what each accessor says)
        type Case = (
            &'static [(&'static str, &'static str)],
            fn(&Environment) -> bool,
        );
        let cases: &[Case] = &[
            (&[], |e| !e.no_color() && !e.dumb_terminal()),
            (&[("NO_COLOR", "")], |e| !e.no_color()),
            (&[("NO_COLOR", "1")], |e| e.no_color()),
            (&[("TERM", "dumb")], |e| e.dumb_terminal()),
            (&[("TERM", "xterm")], |e| !e.dumb_terminal()),
            (&[("GATE_OFFLINE", " yes ")], |e| {
                e.offline() == Some(" yes ")
            }),
            (&[], |e| e.offline().is_none() && e.format().is_none()),
            (&[("GATE_FORMAT", "github")], |e| {
                e.format() == Some("github")
            }),
            (&[("GATE_LEDGER", "  ")], |e| e.ledger().is_none()),
            (&[("GATE_LEDGER", "postgres://h/db")], |e| {
                e.ledger().as_deref() == Some("postgres://h/db")
            }),
            (&[("GATE_STATE_DIR", "")], |e| e.state_dir().is_none()),
            (&[("GATE_STATE_DIR", "s")], |e| {
                e.state_dir() == Some(PathBuf::from("s"))
            }),
            (&[("GATE_TEST_PANIC", "1")], |e| {
                e.test_panic() && !e.test_task_panic()
            }),
            (&[("GATE_TEST_PANIC", "task")], |e| {
                e.test_task_panic() && !e.test_panic()
            }),
            (&[("GATE_HEARTBEAT_MS", " 50 ")], |e| {
                e.heartbeat() == Some(Duration::from_millis(50))
            }),
            (&[("GATE_HEARTBEAT_MS", "0")], |e| e.heartbeat().is_none()),
            (&[("K", " \n")], |e| e.is_set("K") && !e.key_is_set("K")),
            (&[("K", "sk-1")], |e| e.key_is_set("K")),
            // The first of a name wins, as getenv has it.
            (&[("TERM", "dumb"), ("TERM", "xterm")], |e| {
                e.dumb_terminal()
            }),
        ];
        for (i, (pairs, holds)) in cases.iter().enumerate() {
            assert!(holds(&env(pairs)), "case {i}: {pairs:?}");
        }
    }

    #[test]
    fn secrets_are_the_long_values_of_secret_shaped_or_named_variables() {
        let e = env(&[
            ("OPENAI_API_KEY", "sk-0123456789"),
            ("GH_TOKEN", "short"),
            ("MY_CREDENTIAL", "credential-value"),
            ("HOME", "/home/someone"),
            ("DB_PASSWORD", "sk-0123456789"),
        ]);
        assert_eq!(
            e.secret_values(&["my_credential".to_owned()]),
            ["credential-value", "sk-0123456789"]
        );
    }

    #[test]
    fn the_pairs_are_kept_as_given_and_debug_shows_no_value() {
        let e = env(&[("B", "2"), ("AWS_REGION", "eu"), ("A", "1"), ("AWS_X", "")]);
        let names: Vec<&OsStr> = e.pairs().iter().map(|(n, _)| n.as_os_str()).collect();
        assert_eq!(names, ["B", "AWS_REGION", "A", "AWS_X"]);
        assert_eq!(e.aws(), [("AWS_REGION".to_owned(), "eu".to_owned())]);
        assert!(!format!("{e:?}").contains("eu"));
    }
}
