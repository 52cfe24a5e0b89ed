//! The gate's own `git`, hardened against the repository it reads.
//!
//! The workspace's `.git` is the agent's to configure: a `core.fsmonitor`
//! command, a hook, an external diff or textconv driver, a clean filter
//! named by `.gitattributes`, a `refs/replace/` ref that swaps the base
//! commit for a forged one, a graft. Every call the gate makes therefore
//! switches each of those off on its command line and in its environment,
//! runs with an environment of its own (no `GATE_*`, no provider key, no
//! global or system configuration), and runs through the launcher the run
//! gives it: read-only and with the gate's secrets hidden where the machine
//! can isolate.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use gate_harness::Launcher;
use gate_harness::process;

/// The most one git call may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The most of one call's output kept.
const OUTPUT_CAP: usize = 64 * 1024 * 1024;

/// Settings that make a read-only git call run nothing of the repository's.
const HARDENING: [&str; 18] = [
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "diff.external=",
    "-c",
    "log.showSignature=false",
    "-c",
    "protocol.allow=never",
    "-c",
    "core.pager=cat",
    "-c",
    "core.sshCommand=false",
    // Grafts are off (`GIT_GRAFT_FILE`); git would say so on every call.
    "-c",
    "advice.graftFileDeprecated=false",
];

/// The environment of every git call: the host's `PATH` and locale, and
/// what keeps git from reading configuration or objects it should not.
pub(crate) fn environment(
    path: Option<OsString>,
    home: Option<OsString>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vec![
        ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
        ("GIT_CONFIG_GLOBAL".into(), "/dev/null".into()),
        ("GIT_NO_REPLACE_OBJECTS".into(), "1".into()),
        ("GIT_GRAFT_FILE".into(), "/dev/null".into()),
        ("GIT_OPTIONAL_LOCKS".into(), "0".into()),
        ("GIT_TERMINAL_PROMPT".into(), "0".into()),
        // The workspace may belong to the run's own uid while the items
        // run; these calls run nothing of the repository's anyway.
        ("GIT_CONFIG_COUNT".into(), "1".into()),
        ("GIT_CONFIG_KEY_0".into(), "safe.directory".into()),
        ("GIT_CONFIG_VALUE_0".into(), "*".into()),
        ("LC_ALL".into(), "C".into()),
    ];
    if let Some(path) = path {
        env.push(("PATH".into(), path));
    }
    if let Some(home) = home {
        env.push(("HOME".into(), home));
    }
    env
}

/// Runs the gate's git calls for one workspace.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    launcher: Launcher,
}

impl Git {
    /// Git calls started through `launcher` (whose environment should be
    /// [`environment`]).
    pub(crate) fn new(launcher: Launcher) -> Self {
        Self { launcher }
    }

    /// Runs `git ARGS` in `dir` and returns its stdout, or one line on why
    /// it failed.
    pub(crate) async fn run(&self, dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
        let filters = self.filter_settings(dir).await;
        let mut argv: Vec<&str> = vec!["git"];
        argv.extend(HARDENING);
        argv.extend(filters.iter().map(String::as_str));
        argv.extend_from_slice(args);
        self.call(dir, &argv, args).await
    }

    /// The `-c` settings that empty every filter driver the repository
    /// configures: `git diff` and `git status` would otherwise run a
    /// driver's `clean` command on any file `.gitattributes` assigns to it.
    async fn filter_settings(&self, dir: &Path) -> Vec<String> {
        let argv = [
            "git",
            "-c",
            "core.fsmonitor=false",
            "config",
            "--null",
            "--name-only",
            "--get-regexp",
            r"^filter\.",
        ];
        let names = self.call(dir, &argv, &argv[3..]).await.unwrap_or_default();
        let mut drivers: Vec<String> = names
            .split(|b| *b == 0)
            .filter_map(|k| std::str::from_utf8(k).ok())
            .filter_map(|k| {
                let rest = k.strip_prefix("filter.")?;
                let (driver, _) = rest.rsplit_once('.')?;
                Some(driver.to_owned())
            })
            .collect();
        drivers.sort();
        drivers.dedup();
        drivers
            .iter()
            .flat_map(|d| {
                ["clean", "smudge", "process"]
                    .iter()
                    .flat_map(move |k| ["-c".to_owned(), format!("filter.{d}.{k}=")])
                    .chain(["-c".to_owned(), format!("filter.{d}.required=false")])
            })
            .collect()
    }

    async fn call(&self, dir: &Path, argv: &[&str], shown: &[&str]) -> Result<Vec<u8>, String> {
        let out = process::run_argv(argv, dir, TIMEOUT, OUTPUT_CAP, &self.launcher)
            .await
            .map_err(|e| e.to_string())?;
        if out.timed_out {
            return Err(format!("`git {}` timed out", shown.join(" ")));
        }
        if out.exit_code != Some(0) {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let line = stderr.lines().next().unwrap_or("").trim();
            return Err(format!("`git {}` failed: {line}", shown.join(" ")));
        }
        Ok(out.stdout)
    }

    /// The commit `rev` names (`rev^{commit}`), as its full id.
    pub(crate) async fn resolve_commit(&self, dir: &Path, rev: &str) -> Result<String, String> {
        let commit = format!("{rev}^{{commit}}");
        let out = self
            .run(
                dir,
                &[
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    "--end-of-options",
                    &commit,
                ],
            )
            .await?;
        let id = String::from_utf8_lossy(&out).trim().to_owned();
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("`{rev}` does not name a commit"));
        }
        Ok(id)
    }

    /// `path`'s content at `commit`, `None` when it did not exist there (or
    /// git could not say).
    pub(crate) async fn read_at(&self, commit: &str, path: &Path) -> Option<Vec<u8>> {
        let dir = path.parent()?;
        let name = path.file_name()?.to_str()?;
        // `REV:./name` is relative to the directory git runs in.
        let spec = format!("{commit}:./{name}");
        self.run(dir, &["cat-file", "blob", &spec]).await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository whose configuration tries every way of running a
    /// command from a read-only git call; each would create a marker file.
    #[tokio::test]
    async fn a_hostile_repository_runs_nothing_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let marker = dir.path().join("ran");
        std::fs::create_dir_all(&ws).unwrap();
        let sh = |args: &[&str]| {
            #[allow(clippy::disallowed_methods)] // test set-up
            let ok = std::process::Command::new("git")
                .args(args)
                .current_dir(&ws)
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.com")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.com")
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        sh(&["init", "-q", "-b", "main"]);
        std::fs::write(ws.join("a.txt"), "one\n").unwrap();
        std::fs::write(ws.join(".gitattributes"), "*.txt filter=evil diff=evil\n").unwrap();
        sh(&["add", "."]);
        sh(&["commit", "-qm", "base"]);
        #[allow(clippy::disallowed_methods)] // test set-up
        let base = String::from_utf8(
            std::process::Command::new("git")
                .args(["rev-parse", "HEAD"])
                .current_dir(&ws)
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        // A forged base: a replace ref swaps the base commit for another.
        sh(&["checkout", "-q", "-b", "forged"]);
        std::fs::write(ws.join("a.txt"), "forged\n").unwrap();
        sh(&["commit", "-qam", "forged"]);
        sh(&["checkout", "-q", "main"]);
        sh(&["replace", base.trim(), "forged"]);
        let touch = format!("touch {}", marker.display());
        for (key, value) in [
            ("core.fsmonitor", touch.as_str()),
            ("filter.evil.clean", touch.as_str()),
            ("filter.evil.smudge", touch.as_str()),
            ("filter.evil.required", "true"),
            ("diff.evil.textconv", touch.as_str()),
            ("diff.evil.command", touch.as_str()),
            ("diff.external", touch.as_str()),
            ("core.pager", touch.as_str()),
        ] {
            sh(&["config", key, value]);
        }
        std::fs::write(ws.join("a.txt"), "two\n").unwrap();
        std::fs::write(ws.join("b.txt"), "new\n").unwrap();
        let path = crate::environment::Environment::capture()
            .path()
            .map(ToOwned::to_owned);
        let git = Git::new(Launcher::new(environment(path, None)));
        let diff = git
            .run(
                &ws,
                &["diff", "--no-ext-diff", "--no-textconv", "HEAD", "--"],
            )
            .await
            .unwrap();
        assert!(String::from_utf8_lossy(&diff).contains("+two"));
        git.run(&ws, &["status", "--porcelain"]).await.unwrap();
        assert!(!marker.exists(), "the repository ran a command of its own");
        let resolved = git.resolve_commit(&ws, "main").await.unwrap();
        assert_eq!(resolved, base.trim());
        assert!(git.resolve_commit(&ws, "no-such-branch").await.is_err());
        assert_eq!(
            git.read_at(&resolved, &ws.join("a.txt")).await.as_deref(),
            Some(&b"one\n"[..])
        );
        assert_eq!(git.read_at(&resolved, &ws.join("b.txt")).await, None);
    }
}
