//! The gate's own `git`, hardened against the repository it reads.
//!
//! The workspace's `.git` is the agent's to configure: a `core.fsmonitor`
//! command, a hook, an external diff or textconv driver, a clean filter
//! named by `.gitattributes`, a `refs/replace/` ref that swaps the base
//! commit for a forged one, a graft, a `core.worktree` or `core.bare` that
//! moves what git reads, an `include` of a file it wrote, an alternate
//! object store elsewhere on the machine, a `.git` file naming another
//! repository. The gate therefore finds the repository itself
//! ([`Repository::find`]) and names its git dir and work tree on every
//! call; every call switches the rest off on its command line (which wins
//! over anything a configuration file or its includes set) and in its
//! environment, runs with an environment of its own (no `GATE_*`, no
//! provider key, no global or system configuration), and runs through the
//! launcher the run gives it: read-only and with the gate's secrets hidden
//! where the machine can isolate.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gate_harness::Launcher;
use gate_harness::process;

/// The most one git call may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The most of one call's output kept.
const OUTPUT_CAP: usize = 64 * 1024 * 1024;

/// Settings that make a read-only git call run nothing of the repository's
/// and read what the gate asks for, whatever the repository's configuration
/// (or a file it includes) says.
const HARDENING: [&str; 40] = [
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
    "-c",
    "core.useReplaceRefs=false",
    "-c",
    "core.bare=false",
    // A forged commit-graph or multi-pack index would be believed for
    // ancestry (the merge-base) and object lookup.
    "-c",
    "core.commitGraph=false",
    "-c",
    "core.multiPackIndex=false",
    // What lists untracked files: only the `.gitignore` files of the tree.
    "-c",
    "core.excludesFile=",
    "-c",
    "core.attributesFile=/dev/null",
    "-c",
    "core.sparseCheckout=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "core.autocrlf=false",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
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

/// One entry of `git ls-tree -z` output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TreeEntry {
    /// Its mode (`100644`, `100755`, `120000`, `160000`, `040000`).
    pub mode: String,
    /// Its object type (`blob`, `tree`, `commit`).
    pub kind: String,
    /// Its object id.
    pub id: String,
}

/// `git ls-tree -z` output (`<mode> SP <type> SP <object> TAB <path>`), in
/// order; a path that is not UTF-8 cannot be named in a spec or a finding.
pub(crate) fn tree_entries(listing: &[u8]) -> Vec<(String, TreeEntry)> {
    let mut out = Vec::new();
    for entry in listing.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let Ok(entry) = std::str::from_utf8(entry) else {
            tracing::warn!(entry = %String::from_utf8_lossy(entry), "skipping a non-UTF-8 path");
            continue;
        };
        let Some((meta, path)) = entry.split_once('\t') else {
            continue;
        };
        let mut fields = meta.split(' ');
        if let (Some(mode), Some(kind), Some(id)) = (fields.next(), fields.next(), fields.next()) {
            out.push((
                path.to_owned(),
                TreeEntry {
                    mode: mode.to_owned(),
                    kind: kind.to_owned(),
                    id: id.to_owned(),
                },
            ));
        }
    }
    out
}

/// How many alternate object stores deep git looks (its own limit).
const MAX_ALTERNATE_DEPTH: usize = 5;

/// A repository as the gate found it: its git dir and its work tree, named
/// on every call so that nothing in the repository moves them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Repository {
    git_dir: PathBuf,
    work_tree: PathBuf,
}

impl Repository {
    /// The repository `workspace` is in: the nearest folder at or above it
    /// holding a `.git` folder. A `.git` file is followed only to a git dir
    /// inside its own folder: one naming a repository elsewhere (a linked
    /// worktree, a submodule, or a planted pointer) is refused, and so is
    /// an alternate object store outside the git dir.
    pub(crate) fn find(workspace: &Path) -> Result<Self, String> {
        let start = workspace
            .canonicalize()
            .map_err(|e| format!("cannot read {}: {e}", workspace.display()))?;
        for dir in start.ancestors() {
            let dot_git = dir.join(".git");
            let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
                continue;
            };
            let git_dir = if meta.is_dir() {
                dot_git
            } else {
                pointed_git_dir(dir, &dot_git)?
            };
            let found = Self {
                git_dir,
                work_tree: dir.to_path_buf(),
            };
            found.check_alternates()?;
            return Ok(found);
        }
        Err(format!(
            "{} is not inside a git repository",
            start.display()
        ))
    }

    /// A repository the gate made itself (the base's checkout), trusted as
    /// it is: `work_tree/.git`.
    pub(crate) fn own(work_tree: &Path) -> Self {
        Self {
            git_dir: work_tree.join(".git"),
            work_tree: work_tree.to_path_buf(),
        }
    }

    /// The folder the repository's files are checked out in.
    pub(crate) fn work_tree(&self) -> &Path {
        &self.work_tree
    }

    /// The repository's object store.
    pub(crate) fn objects(&self) -> PathBuf {
        self.git_dir.join("objects")
    }

    /// Every alternate object store the repository borrows from lies inside
    /// its git dir: objects the gate reads come from the repository, not
    /// from a folder a `.git` the agent wrote points at.
    fn check_alternates(&self) -> Result<(), String> {
        let inside = self
            .git_dir
            .canonicalize()
            .map_err(|e| format!("cannot read {}: {e}", self.git_dir.display()))?;
        let mut stores = vec![self.objects()];
        for _ in 0..MAX_ALTERNATE_DEPTH {
            let mut next = Vec::new();
            for store in &stores {
                let file = store.join("info/alternates");
                let Ok(text) = std::fs::read_to_string(&file) else {
                    continue;
                };
                for line in text
                    .lines()
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                {
                    let alternate = store.join(line.trim_matches('"'));
                    let real = alternate.canonicalize().unwrap_or(alternate.clone());
                    if !real.starts_with(&inside) {
                        return Err(format!(
                            "{} borrows objects from {}, outside the repository; \
                             the gate reads objects only from the repository itself",
                            file.display(),
                            alternate.display()
                        ));
                    }
                    next.push(real);
                }
            }
            if next.is_empty() {
                break;
            }
            stores = next;
        }
        Ok(())
    }
}

/// The git dir a `.git` file in `dir` names, when it lies inside `dir`.
fn pointed_git_dir(dir: &Path, dot_git: &Path) -> Result<PathBuf, String> {
    let text = std::fs::read_to_string(dot_git)
        .map_err(|e| format!("cannot read {}: {e}", dot_git.display()))?;
    let named = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("gitdir:"))
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| format!("{} is not a git dir or a `gitdir:` file", dot_git.display()))?;
    let target = dir.join(named);
    let real = target.canonicalize().map_err(|e| {
        format!(
            "{} names {}, which cannot be read: {e}",
            dot_git.display(),
            target.display()
        )
    })?;
    if real.starts_with(dir) && real != dir {
        return Ok(real);
    }
    Err(format!(
        "{} names the repository {}, outside {}; the gate reads only a repository \
         whose git dir is inside the folder it belongs to (clone the repository, \
         rather than verifying a linked worktree or a submodule in place)",
        dot_git.display(),
        real.display(),
        dir.display()
    ))
}

/// Runs the gate's git calls for one repository.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    launcher: Launcher,
    /// The repository, or why there is none to read.
    repository: Result<Repository, String>,
    /// The settings that empty the repository's filter drivers, once read:
    /// its configuration does not change while the gate runs (no item can
    /// write `.git`), and each read is a sandboxed process.
    filters: Arc<tokio::sync::OnceCell<Vec<String>>>,
    /// `HEAD`'s commit, once resolved: no item can write `.git` and the
    /// gate moves no branch, so it is the same for the whole run.
    head: Arc<tokio::sync::OnceCell<Result<String, String>>>,
    /// `rev-parse --show-prefix` of each folder asked about.
    prefixes: Arc<std::sync::Mutex<Vec<(PathBuf, String)>>>,
}

/// The history walk (`gate-history`) runs git as every other git call of
/// the gate's: sandboxed, with the repository's filters neutralised.
impl gate_history::RunGit for Git {
    async fn run(&self, dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
        Git::run(self, dir, args).await
    }

    async fn run_whole(&self, dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
        Git::run_whole(self, dir, args).await
    }
}

impl Git {
    /// Git calls on `repository` started through `launcher` (whose
    /// environment should be [`environment`]).
    pub(crate) fn new(launcher: Launcher, repository: Result<Repository, String>) -> Self {
        Self {
            launcher,
            repository,
            filters: Arc::default(),
            head: Arc::default(),
            prefixes: Arc::default(),
        }
    }

    /// The repository these calls read, or why there is none.
    pub(crate) fn repository(&self) -> Result<&Repository, String> {
        self.repository.as_ref().map_err(Clone::clone)
    }

    /// Runs `git ARGS` in `dir` (inside the work tree) and returns its
    /// stdout, or one line on why it failed.
    pub(crate) async fn run(&self, dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
        self.run_capped(dir, args, false).await
    }

    /// As [`Git::run`], but an output longer than the cap is an error, not
    /// its head: for a pass whose every record must be read.
    pub(crate) async fn run_whole(&self, dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
        self.run_capped(dir, args, true).await
    }

    async fn run_capped(&self, dir: &Path, args: &[&str], whole: bool) -> Result<Vec<u8>, String> {
        let located = self.located()?;
        let filters = self
            .filters
            .get_or_init(|| self.filter_settings(dir, &located))
            .await;
        let mut argv: Vec<&str> = vec!["git"];
        argv.extend(located.iter().map(String::as_str));
        argv.extend(HARDENING);
        argv.extend(filters.iter().map(String::as_str));
        argv.extend_from_slice(args);
        let out = self.call_output(dir, &argv, args).await?;
        if whole && out.truncated {
            return Err(format!(
                "`git {}` wrote more than {} MiB",
                args.join(" "),
                OUTPUT_CAP >> 20
            ));
        }
        Ok(out.stdout)
    }

    /// Creates the repository (`git init`) of the gate's own checkout at
    /// `root`, from `dir`.
    pub(crate) async fn init(&self, dir: &Path, root: &Path) -> Result<(), String> {
        let root = root.to_string_lossy();
        let mut argv: Vec<&str> = vec!["git"];
        argv.extend(HARDENING);
        let args = ["init", "-q", "--template=", &root];
        argv.extend(args);
        self.call(dir, &argv, &args).await.map(drop)
    }

    /// `--git-dir` and `--work-tree`, as every call names them.
    fn located(&self) -> Result<[String; 2], String> {
        let repository = self.repository()?;
        Ok([
            format!("--git-dir={}", repository.git_dir.display()),
            format!("--work-tree={}", repository.work_tree.display()),
        ])
    }

    /// The `-c` settings that empty every filter driver the repository
    /// configures: `git diff` and `git status` would otherwise run a
    /// driver's `clean` command on any file `.gitattributes` assigns to it.
    async fn filter_settings(&self, dir: &Path, located: &[String; 2]) -> Vec<String> {
        let argv = [
            "git",
            located[0].as_str(),
            located[1].as_str(),
            "-c",
            "core.fsmonitor=false",
            "config",
            "--null",
            "--name-only",
            "--get-regexp",
            r"^filter\.",
        ];
        let names = self.call(dir, &argv, &argv[5..]).await.unwrap_or_default();
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
        self.call_output(dir, argv, shown)
            .await
            .map(|out| out.stdout)
    }

    /// Runs `argv`: its output when it exited 0, else one line on why not.
    async fn call_output(
        &self,
        dir: &Path,
        argv: &[&str],
        shown: &[&str],
    ) -> Result<process::ProcessOutput, String> {
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
        Ok(out)
    }

    /// `HEAD`'s commit, as [`Git::resolve_commit`] gives it, resolved once
    /// per run.
    pub(crate) async fn head(&self, dir: &Path) -> Result<String, String> {
        self.head
            .get_or_init(|| self.resolve_commit(dir, "HEAD"))
            .await
            .clone()
    }

    /// `dir`'s path inside the work tree (`""` at the top, else
    /// `sub/dir/`), asked of git once per folder.
    pub(crate) async fn prefix(&self, dir: &Path) -> Result<String, String> {
        let known = |prefixes: &[(PathBuf, String)]| {
            prefixes
                .iter()
                .find(|(d, _)| d == dir)
                .map(|(_, p)| p.clone())
        };
        if let Some(prefix) = self.prefixes.lock().ok().and_then(|p| known(&p)) {
            return Ok(prefix);
        }
        let out = self.run(dir, &["rev-parse", "--show-prefix"]).await?;
        let prefix = String::from_utf8_lossy(&out)
            .trim_end_matches('\n')
            .to_owned();
        if let Ok(mut prefixes) = self.prefixes.lock() {
            prefixes.push((dir.to_path_buf(), prefix.clone()));
        }
        Ok(prefix)
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

    /// The commits `revs` name, each as its full id, in their order: one
    /// git call for all of them, or, when some rev names no commit, one per
    /// rev, so the error names it.
    pub(crate) async fn resolve_commits(
        &self,
        dir: &Path,
        revs: &[String],
    ) -> Result<Vec<String>, String> {
        let commits: Vec<String> = revs.iter().map(|r| format!("{r}^{{commit}}")).collect();
        let mut args = vec!["rev-parse", "--end-of-options"];
        args.extend(commits.iter().map(String::as_str));
        if let Ok(out) = self.run(dir, &args).await {
            // Newer gits echo the `--end-of-options` marker itself.
            let ids: Vec<String> = String::from_utf8_lossy(&out)
                .lines()
                .filter(|l| *l != "--end-of-options")
                .map(str::to_owned)
                .collect();
            if ids.len() == revs.len()
                && ids.iter().all(|id| {
                    matches!(id.len(), 40 | 64) && id.bytes().all(|b| b.is_ascii_hexdigit())
                })
            {
                return Ok(ids);
            }
        }
        let mut ids = Vec::with_capacity(revs.len());
        for rev in revs {
            ids.push(self.resolve_commit(dir, rev).await?);
        }
        Ok(ids)
    }

    /// `path`'s content at `commit`: `None` when it is not a file there, an
    /// error when git could not say (so a base that cannot be read is never
    /// taken for one without the file).
    pub(crate) async fn read_at(
        &self,
        commit: &str,
        path: &Path,
    ) -> Result<Option<Vec<u8>>, String> {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return Ok(None);
        };
        // `./name` is relative to the directory git runs in.
        let literal = format!(":(literal)./{name}");
        let listing = self
            .run(dir, &["ls-tree", "-z", commit, "--", &literal])
            .await?;
        let Some((_, entry)) = tree_entries(&listing).into_iter().next() else {
            return Ok(None);
        };
        if entry.kind != "blob" {
            return Ok(None);
        }
        self.run(dir, &["cat-file", "blob", &entry.id])
            .await
            .map(Some)
    }

    /// The root commits reachable from `commit`, sorted: the repository's
    /// identity (none when git cannot list them, a shallow clone among them).
    pub(crate) async fn root_commits(&self, workspace: &Path, commit: &str) -> Vec<String> {
        // A shallow clone's oldest commits look parentless without being roots.
        let shallow = self
            .run(workspace, &["rev-parse", "--is-shallow-repository"])
            .await
            .map(|out| out.starts_with(b"true"));
        if shallow.unwrap_or(true) {
            return Vec::new();
        }
        match self
            .run(workspace, &["rev-list", "--max-parents=0", commit, "--"])
            .await
        {
            Ok(out) => {
                let mut roots: Vec<String> = String::from_utf8_lossy(&out)
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned)
                    .collect();
                roots.sort();
                roots
            }
            Err(e) => {
                tracing::debug!(error = %e, "cannot list the repository's root commits");
                Vec::new()
            }
        }
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
        // What moves git elsewhere: a work tree above the workspace, and an
        // included file that ignores every untracked file.
        let ignore_all = dir.path().join("ignore-all");
        std::fs::write(&ignore_all, "*\n").unwrap();
        let included = dir.path().join("included");
        std::fs::write(
            &included,
            format!("[core]\n\texcludesFile = {}\n", ignore_all.display()),
        )
        .unwrap();
        sh(&["config", "core.worktree", ".."]);
        sh(&["config", "include.path", &included.to_string_lossy()]);
        std::fs::write(ws.join("a.txt"), "two\n").unwrap();
        std::fs::write(ws.join("b.txt"), "new\n").unwrap();
        let git = host_git(&ws);
        let diff = git
            .run(
                &ws,
                &["diff", "--no-ext-diff", "--no-textconv", "HEAD", "--"],
            )
            .await
            .unwrap();
        assert!(String::from_utf8_lossy(&diff).contains("+two"));
        git.run(&ws, &["status", "--porcelain"]).await.unwrap();
        let untracked = git
            .run(
                &ws,
                &["ls-files", "--others", "--exclude-per-directory=.gitignore"],
            )
            .await
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&untracked), "b.txt\n");
        assert!(!marker.exists(), "the repository ran a command of its own");
        let resolved = git.resolve_commit(&ws, "main").await.unwrap();
        assert_eq!(resolved, base.trim());
        assert!(git.resolve_commit(&ws, "no-such-branch").await.is_err());
        let revs = [
            "main".to_owned(),
            "HEAD".to_owned(),
            resolved[..12].to_owned(),
        ];
        assert_eq!(
            git.resolve_commits(&ws, &revs).await.unwrap(),
            vec![resolved.clone(); 3]
        );
        let with_bad = ["main".to_owned(), "no-such-branch".to_owned()];
        let why = git.resolve_commits(&ws, &with_bad).await.unwrap_err();
        assert!(why.contains("no-such-branch"), "{why}");
        assert_eq!(
            git.read_at(&resolved, &ws.join("a.txt"))
                .await
                .unwrap()
                .as_deref(),
            Some(&b"one\n"[..])
        );
        assert_eq!(git.read_at(&resolved, &ws.join("b.txt")).await, Ok(None));
    }

    /// Git calls on the repository at `ws`, unsandboxed, with the host's
    /// `PATH`.
    fn host_git(ws: &Path) -> Git {
        let path = crate::environment::Environment::capture()
            .path()
            .map(ToOwned::to_owned);
        Git::new(Launcher::new(environment(path, None)), Repository::find(ws))
    }

    /// `HEAD` and a folder's prefix are asked of git once per run: a later
    /// commit made behind the gate's back does not change what the run
    /// resolved.
    #[tokio::test]
    async fn head_and_prefixes_are_resolved_once() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        let sh = |args: &[&str]| {
            #[allow(clippy::disallowed_methods)] // test set-up
            let out = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .current_dir(&ws)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}");
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        };
        sh(&["init", "-q"]);
        sh(&["commit", "-q", "--allow-empty", "-m", "one"]);
        let first = sh(&["rev-parse", "HEAD"]);
        let git = host_git(&ws);
        assert_eq!(git.head(&ws).await, Ok(first.clone()));
        assert_eq!(git.prefix(&ws.join("sub")).await, Ok("sub/".to_owned()));
        assert_eq!(git.prefix(&ws).await, Ok(String::new()));
        sh(&["commit", "-q", "--allow-empty", "-m", "two"]);
        assert_eq!(git.clone().head(&ws).await, Ok(first));
        assert_ne!(git.resolve_commit(&ws, "HEAD").await, git.head(&ws).await);
    }

    /// Where the gate finds a repository, and what it refuses to follow.
    #[test]
    fn a_repository_is_found_only_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let elsewhere = root.join("elsewhere/.git");
        std::fs::create_dir_all(elsewhere.join("objects")).unwrap();
        let write = |rel: &str, text: &str| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        std::fs::create_dir_all(root.join("plain/.git/objects/info")).unwrap();
        std::fs::create_dir_all(root.join("plain/app/src")).unwrap();
        std::fs::create_dir_all(root.join("inner/.git-real/objects")).unwrap();
        write("inner/.git", "gitdir: .git-real\n");
        write(
            "pointer/.git",
            &format!("gitdir: {}\n", elsewhere.display()),
        );
        write(
            "borrows/.git/objects/info/alternates",
            &format!("{}\n", elsewhere.join("objects").display()),
        );
        std::fs::create_dir_all(root.join("borrows/.git/objects/pack")).unwrap();
        write("own-pack/.git/objects/info/alternates", "pack\n");
        std::fs::create_dir_all(root.join("own-pack/.git/objects/pack")).unwrap();
        for (workspace, found) in [
            ("plain", Ok("plain")),
            ("plain/app/src", Ok("plain")),
            ("inner", Ok("inner")),
            ("pointer", Err("outside")),
            ("borrows", Err("outside the repository")),
            ("own-pack", Ok("own-pack")),
        ] {
            let got = Repository::find(&root.join(workspace));
            match (found, got) {
                (Ok(top), Ok(repo)) => assert_eq!(repo.work_tree, root.join(top), "{workspace}"),
                (Err(why), Err(said)) => assert!(said.contains(why), "{workspace}: {said}"),
                (want, got) => panic!("{workspace}: wanted {want:?}, got {got:?}"),
            }
        }
    }
}
