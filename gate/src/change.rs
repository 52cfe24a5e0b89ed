//! The change: the files a review looks at and sensitive paths lift on.
//!
//! With a base it is every file that differs between the merge-base of the
//! base and the working tree (committed, uncommitted and untracked); without
//! one, every file under the tasks' `paths`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use gate_evidence::Snapshot;
use gate_specs::InputGlobs;

use crate::errors::GateError;
use crate::git::{Git, TreeEntry, tree_entries};
use crate::record::Verified;

mod attributes;

/// The commit `base` names, resolved before anything of the workspace
/// runs: everything the run compares with the base uses this id, so what a
/// check does to the repository's refs later changes nothing.
pub(crate) async fn resolve_base(
    git: &Git,
    workspace: &Path,
    base: &str,
) -> Result<String, GateError> {
    // git would read it as one of its options, not as a revision.
    if base.starts_with('-') {
        return Err(GateError::Base {
            base: base.to_owned(),
            reason: "a commit or branch name cannot start with `-`".to_owned(),
        });
    }
    match git.resolve_commit(workspace, base).await {
        Ok(commit) => Ok(commit),
        Err(failed) => {
            // `rev-parse --quiet` says nothing when the name resolves to nothing.
            let reason = if failed.ends_with(": ") {
                format!("`{base}` does not name a commit in this clone")
            } else {
                failed
            };
            Err(GateError::Base {
                base: base.to_owned(),
                reason: shallow_hint(git, workspace, reason).await,
            })
        }
    }
}

/// The changed files, workspace-relative, sorted and unique: what differs
/// between the working tree and the merge-base of `commit` (what `base`
/// resolved to) and HEAD.
///
/// The merge-base's tree is compared with the files themselves, never
/// through the repository's index: whoever wrote `.git` could mark a file
/// assume-unchanged or skip-worktree there, or forge the stat data git
/// trusts instead of reading a file, and `git diff` would not name it.
pub(crate) async fn with_base(
    git: &Git,
    workspace: &Path,
    snapshot: &Snapshot,
    base: &str,
    commit: &str,
) -> Result<Vec<String>, GateError> {
    let merge_base = merge_base(git, workspace, base, commit).await?;
    differs_from(git, workspace, snapshot, &merge_base)
        .await
        .map_err(|reason| GateError::Base {
            base: base.to_owned(),
            reason,
        })
}

/// The merge-base of `commit` (what `base` resolved to) and `HEAD`: the
/// commit a change is measured from.
pub(crate) async fn merge_base(
    git: &Git,
    workspace: &Path,
    base: &str,
    commit: &str,
) -> Result<String, GateError> {
    let merge_base = match git.run(workspace, &["merge-base", commit, "HEAD"]).await {
        Ok(found) => found,
        Err(failed) => {
            // git says nothing when both exist but never meet.
            let reason = if failed.ends_with(": ") || failed.ends_with(':') {
                format!("HEAD and `{base}` have no common ancestor in this clone")
            } else {
                failed
            };
            return Err(GateError::Base {
                base: base.to_owned(),
                reason: shallow_hint(git, workspace, reason).await,
            });
        }
    };
    Ok(String::from_utf8_lossy(&merge_base).trim().to_owned())
}

/// The variables a CI names a detached checkout's branch by, in order.
const CI_BRANCH: [&str; 8] = [
    "GITHUB_HEAD_REF",
    "GITHUB_REF_NAME",
    "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
    "CI_COMMIT_REF_NAME",
    "BUILDKITE_BRANCH",
    "CIRCLE_BRANCH",
    "BRANCH_NAME",
    "GIT_BRANCH",
];

/// Where the workspace's `HEAD` is when the run starts, read before
/// anything of the workspace runs: what the run verifies, and the branch
/// its series is named by when nothing names one first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Head {
    /// `HEAD`'s commit; none outside a repository or before a first commit.
    pub commit: Option<String>,
    /// `HEAD`'s branch, else (a detached checkout) the CI's name for it.
    pub branch: Option<String>,
}

/// `HEAD`'s commit and branch (else the CI's name for the branch).
pub(crate) async fn head(
    git: &Git,
    workspace: &Path,
    env: &crate::environment::Environment,
) -> Head {
    let Ok(commit) = git.head(workspace).await else {
        return Head::default();
    };
    let branch = match git
        .run(workspace, &["symbolic-ref", "--short", "-q", "HEAD"])
        .await
    {
        Ok(name) => Some(String::from_utf8_lossy(&name).trim().to_owned()),
        Err(_) => CI_BRANCH
            .iter()
            .find_map(|name| env.var(name).map(str::trim).filter(|v| !v.is_empty()))
            .map(str::to_owned),
    }
    .filter(|b| !b.is_empty());
    Head {
        commit: Some(commit),
        branch,
    }
}

/// What the run verifies: `head`'s commit and branch and how many files
/// differ from that commit as git sees them ([`uncommitted`]). Outside a
/// repository, or before a first commit, nothing but the files.
pub(crate) async fn verified(
    git: &Git,
    workspace: &Path,
    snapshot: &Snapshot,
    head: &Head,
    env: &crate::environment::Environment,
) -> Verified {
    let Some(commit) = head.commit.clone() else {
        return Verified {
            uncommitted: snapshot.len(),
            ..Verified::default()
        };
    };
    let uncommitted = match uncommitted(git, workspace, snapshot, &commit, env).await {
        // What a runner or build wrote beside the code is no part of it.
        Ok(files) => files
            .iter()
            .filter(|f| !crate::build_output::is_build_output(f))
            .count(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot compare the workspace with HEAD");
            snapshot.len()
        }
    };
    let root_commits = git.root_commits(workspace, &commit).await;
    Verified {
        commit: Some(commit),
        branch: head.branch.clone(),
        uncommitted,
        root_commits,
    }
}

/// How many paths a git call names at once.
const PATHS_PER_CALL: usize = 1_000;

/// The workspace's files that differ from `commit` as git sees them: a
/// file git ignores (`.gitignore`, `.git/info/exclude`, `core.excludesFile`)
/// that the commit does not hold is not uncommitted, and a file whose bytes
/// differ only by the conversions checkout makes (line endings, `ident`),
/// as the commit's own `.gitattributes` asks (never the working tree's: a
/// change could add one), is the commit's. Filter drivers never run (the
/// gate's git empties them). Content is still read from the files, never
/// through the index.
pub(crate) async fn uncommitted(
    git: &Git,
    workspace: &Path,
    snapshot: &Snapshot,
    commit: &str,
    env: &crate::environment::Environment,
) -> Result<Vec<String>, String> {
    let listing = git
        .run(workspace, &["ls-tree", "-r", "-z", commit, "--", "."])
        .await?;
    let tree: BTreeMap<String, TreeEntry> = tree_entries(&listing).into_iter().collect();
    let mut files: Vec<String> = Vec::new();
    let mut converted: Vec<String> = Vec::new();
    for path in differing(workspace, &tree, commit) {
        if only_content(&workspace.join(&path), &tree[&path]) {
            converted.push(path);
        } else {
            files.push(path);
        }
    }
    // Checkout's conversions, undone as `git add` would with the commit's
    // own attributes: what is left differing is the change's.
    if !converted.is_empty() {
        let attributes = commit_attributes(git, workspace, &tree).await?;
        for path in converted {
            let file = workspace.join(&path);
            let same = std::fs::read(&file).ok().is_some_and(|disk| {
                attributes.cleaned(&file, &disk).is_some_and(|clean| {
                    crate::verifiers::git_blob_id(&clean, commit) == tree[&path].id
                })
            });
            if !same {
                files.push(path);
            }
        }
    }
    let untracked: Vec<String> = snapshot
        .entries()
        .map(|(p, _)| p)
        .filter(|p| !tree.contains_key(*p))
        .map(str::to_owned)
        .collect();
    let ignored = ignored(git, workspace, &untracked, env).await?;
    files.extend(untracked.into_iter().filter(|p| !ignored.contains(p)));
    files.sort();
    files.dedup();
    Ok(files)
}

/// The commit's `.gitattributes` files (those of the workspace's folders),
/// outermost first.
async fn commit_attributes(
    git: &Git,
    workspace: &Path,
    tree: &BTreeMap<String, TreeEntry>,
) -> Result<attributes::Attributes, String> {
    let mut files: Vec<(String, String)> = Vec::new();
    for (path, entry) in tree {
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
        if name != ".gitattributes" || entry.kind != "blob" {
            continue;
        }
        let text = git.run(workspace, &["cat-file", "blob", &entry.id]).await?;
        files.push((dir.to_owned(), String::from_utf8_lossy(&text).into_owned()));
    }
    files.sort_by_key(|(dir, _)| {
        (
            dir.matches('/').count() + usize::from(!dir.is_empty()),
            dir.clone(),
        )
    });
    Ok(attributes::Attributes::new(workspace, &files))
}

/// Whether `file` and the tree's `entry` differ in content alone: both
/// regular files of the same mode.
fn only_content(file: &Path, entry: &TreeEntry) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(file) else {
        return false;
    };
    let executable = meta.permissions().mode() & 0o111 != 0;
    meta.is_file()
        && match entry.mode.as_str() {
            "100644" => !executable,
            "100755" => executable,
            _ => false,
        }
}

/// Those of `paths` (not in the commit) git ignores. Whoever wrote `.git`
/// could list a file in the index to keep it from being ignored: that only
/// makes it count as uncommitted.
async fn ignored(
    git: &Git,
    workspace: &Path,
    paths: &[String],
    env: &crate::environment::Environment,
) -> Result<std::collections::HashSet<String>, String> {
    let mut found = std::collections::HashSet::new();
    if paths.is_empty() {
        return Ok(found);
    }
    let excludes = excludes_file(git, workspace, env)
        .await
        .map(|f| format!("core.excludesFile={}", f.display()));
    for chunk in paths.chunks(PATHS_PER_CALL) {
        let specs: Vec<String> = chunk.iter().map(|p| format!(":(literal){p}")).collect();
        let mut args: Vec<&str> = Vec::new();
        if let Some(excludes) = &excludes {
            args.extend(["-c", excludes.as_str()]);
        }
        args.extend([
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--",
        ]);
        args.extend(specs.iter().map(String::as_str));
        let out = git.run(workspace, &args).await?;
        found.extend(
            out.split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .filter_map(|p| std::str::from_utf8(p).ok())
                .map(str::to_owned),
        );
    }
    Ok(found)
}

/// The excludes file git reads besides `.gitignore` and
/// `.git/info/exclude`: `core.excludesFile` of the repository's own
/// configuration, else of the user's (`~/.gitconfig`), else git's default
/// (`$XDG_CONFIG_HOME/git/ignore`, `~/.config/git/ignore`). The gate's git
/// reads no user configuration itself.
async fn excludes_file(
    git: &Git,
    workspace: &Path,
    env: &crate::environment::Environment,
) -> Option<PathBuf> {
    let home = env.var_os("HOME").map(PathBuf::from);
    let expand = |value: &[u8]| -> Option<PathBuf> {
        let value = std::str::from_utf8(value).ok()?.trim();
        match value.strip_prefix("~/") {
            Some(rest) => Some(home.as_ref()?.join(rest)),
            None if value.is_empty() => None,
            None => Some(PathBuf::from(value)),
        }
    };
    let local = git
        .run(
            workspace,
            &["config", "--local", "--get", "core.excludesFile"],
        )
        .await;
    if let Some(file) = local.ok().and_then(|v| expand(&v)) {
        return Some(file);
    }
    let home_config = home.as_ref()?.join(".gitconfig");
    if home_config.is_file() {
        let file = home_config.display().to_string();
        let user = git
            .run(
                workspace,
                &["config", "--file", &file, "--get", "core.excludesFile"],
            )
            .await;
        if let Some(file) = user.ok().and_then(|v| expand(&v)) {
            return Some(file);
        }
    }
    let config = env
        .var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")))?;
    Some(config.join("git/ignore")).filter(|f| f.is_file())
}

/// The workspace's files that differ from `commit`: gone, another kind,
/// mode or content, or not in it (as the snapshot names them).
pub(crate) async fn differs_from(
    git: &Git,
    workspace: &Path,
    snapshot: &Snapshot,
    commit: &str,
) -> Result<Vec<String>, String> {
    // Paths relative to the directory git runs in (the workspace), and only
    // what lies under it: the workspace may be a folder of a larger repository.
    let listing = git
        .run(workspace, &["ls-tree", "-r", "-z", commit, "--", "."])
        .await?;
    let tree: BTreeMap<String, TreeEntry> = tree_entries(&listing).into_iter().collect();
    let mut files: Vec<String> = differing(workspace, &tree, commit);
    files.extend(
        snapshot
            .entries()
            .map(|(p, _)| p)
            .filter(|p| !tree.contains_key(*p))
            .map(str::to_owned),
    );
    files.sort();
    files.dedup();
    Ok(files)
}

/// The tree's files that the working tree no longer holds as they were:
/// gone, another kind, another mode, or other content (by git blob id).
fn differing(workspace: &Path, tree: &BTreeMap<String, TreeEntry>, like: &str) -> Vec<String> {
    use rayon::prelude::*;
    tree.par_iter()
        .filter(|(path, entry)| !same_as_tree(&workspace.join(path), entry, like))
        .map(|(path, _)| path.clone())
        .collect()
}

/// Whether `file` on disk is what `entry` records.
fn same_as_tree(file: &Path, entry: &TreeEntry, like: &str) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(file) else {
        return false;
    };
    let link = match entry.mode.as_str() {
        "120000" if meta.is_symlink() => true,
        "100644" | "100755" if meta.is_file() => {
            let executable = meta.permissions().mode() & 0o111 != 0;
            if executable != (entry.mode == "100755") {
                return false;
            }
            false
        }
        // A submodule's commit is its own repository's business.
        "160000" => return true,
        _ => return false,
    };
    crate::verifiers::blob_id_on_disk(file, link, like).is_some_and(|id| id == entry.id)
}

/// Whether the change committed the file at workspace-relative `path`:
/// `head`'s tree holds it, or the folder link or file it resolves through
/// (a committed symbolic link leads a read to committed bytes), and, with
/// `base` (the base's commit), not as the merge-base of `base` and `head`
/// held it. Without a base every commit is the change's: a file the
/// pipeline makes after checkout is untracked or ignored, never in `head`.
/// The trees are read from git's objects, never through the index.
pub(crate) async fn committed(
    git: &Git,
    workspace: &Path,
    path: &str,
    head: &str,
    base: Option<&str>,
) -> Result<bool, String> {
    let names = tree_names(workspace, path);
    let at_head = listed(git, workspace, head, &names).await?;
    if at_head.is_empty() {
        return Ok(false);
    }
    let Some(base) = base else {
        return Ok(true);
    };
    let merge_base = git.run(workspace, &["merge-base", base, head]).await?;
    let merge_base = String::from_utf8_lossy(&merge_base).trim().to_owned();
    let at_base = listed(git, workspace, &merge_base, &names).await?;
    Ok(at_head.iter().any(|entry| !at_base.contains(entry)))
}

/// What a tree holds at `path` and on the way to it: the path itself, each
/// folder above it (a link there is a file in git), and where it resolves
/// to now, each as `./…` so that git reads no pathspec magic in a name.
fn tree_names(workspace: &Path, path: &str) -> Vec<String> {
    let mut names = vec![path.to_owned()];
    let mut above = path;
    while let Some((parent, _)) = above.rsplit_once('/') {
        names.push(parent.to_owned());
        above = parent;
    }
    names.extend(relative_to(workspace, &[workspace.join(path)]));
    names.sort();
    names.dedup();
    names.into_iter().map(|n| format!("./{n}")).collect()
}

/// The files and links `commit`'s tree holds at `names` (folders left out).
async fn listed(
    git: &Git,
    workspace: &Path,
    commit: &str,
    names: &[String],
) -> Result<Vec<(String, TreeEntry)>, String> {
    let mut args = vec!["ls-tree", "-z", commit, "--"];
    args.extend(names.iter().map(String::as_str));
    let listing = git.run(workspace, &args).await?;
    Ok(tree_entries(&listing)
        .into_iter()
        .filter(|(_, entry)| entry.kind == "blob")
        .collect())
}

/// The workspace-relative paths, as the snapshot names them, of those of
/// `files` that lie inside the workspace (compared canonically; a file not
/// there yet is skipped).
pub(crate) fn relative_to(workspace: &Path, files: &[PathBuf]) -> Vec<String> {
    let Ok(root) = workspace.canonicalize() else {
        return Vec::new();
    };
    files
        .iter()
        .filter_map(|f| f.canonicalize().ok())
        .filter_map(|f| gate_evidence::snapshot::relative(&root, &f))
        .collect()
}

/// Removes from `changed` every path that is one of `own` or lies under one.
pub(crate) fn leave_out(changed: &mut Vec<String>, own: &[String]) {
    changed.retain(|path| {
        !own.iter().any(|o| {
            path.strip_prefix(o.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    });
}

/// Without a base: every file of the snapshot under the tasks' paths.
pub(crate) fn by_paths(snapshot: &Snapshot, paths: &InputGlobs) -> Vec<String> {
    if paths.is_empty() {
        return Vec::new();
    }
    snapshot
        .entries()
        .filter(|(p, _)| paths.is_match(p))
        .map(|(p, _)| p.to_owned())
        .collect()
}

/// `reason`, and when the clone is shallow (CI checks out shallow clones by
/// default, where the base is missing or its history does not reach
/// HEAD's), what to fetch.
async fn shallow_hint(git: &Git, workspace: &Path, reason: String) -> String {
    let shallow = git
        .run(workspace, &["rev-parse", "--is-shallow-repository"])
        .await
        .is_ok_and(|out| out.trim_ascii() == b"true");
    if shallow {
        format!(
            "{reason}; this clone is shallow, so fetch the history `--base` needs \
             (`fetch-depth: 0` for actions/checkout, `GIT_DEPTH: 0` in GitLab CI, \
             or `git fetch --unshallow`)"
        )
    } else {
        reason
    }
}

#[cfg(test)]
mod tests {
    /// Runs git with a committer in `dir`, reading no global configuration.
    fn git(dir: &std::path::Path, args: &[&str]) {
        #[allow(clippy::disallowed_methods)] // test set-up
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    use super::*;

    #[test]
    fn own_files_are_named_relative_to_the_workspace_when_inside_it() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("out")).unwrap();
        for file in ["ws/result.json", "ws/out/gate.sarif", "elsewhere.json"] {
            std::fs::write(dir.path().join(file), "").unwrap();
        }
        let files = [
            ws.join("result.json"),
            ws.join("out/../out/gate.sarif"),
            dir.path().join("elsewhere.json"),
            ws.join("not-written-yet.xml"),
        ];
        assert_eq!(relative_to(&ws, &files), ["result.json", "out/gate.sarif"]);
    }

    #[test]
    fn own_files_and_everything_under_own_folders_are_left_out() {
        let mut changed: Vec<String> = [
            ".gate/keys/signing.key",
            ".gate",
            ".gateway/app.py",
            "result.json",
            "result.json.bak",
            "src/a.py",
        ]
        .map(str::to_owned)
        .to_vec();
        leave_out(
            &mut changed,
            &[".gate".to_owned(), "result.json".to_owned()],
        );
        assert_eq!(changed, [".gateway/app.py", "result.json.bak", "src/a.py"]);
    }

    #[tokio::test]
    async fn a_base_that_git_would_read_as_an_option_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for base in ["--all", "-h", "--output=/tmp/x"] {
            let git = Git::new(
                gate_harness::Launcher::new(Vec::new()),
                crate::git::Repository::find(dir.path()),
            );
            let err = resolve_base(&git, dir.path(), base).await.unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("base `{base}`: a commit or branch name cannot start with `-`")
            );
        }
    }

    /// Uncommitted as git sees it: files git ignores (by `.git/info/exclude`
    /// and the repository's `core.excludesFile`) and a checkout's CRLF under
    /// the commit's `eol=crlf` are the commit's; an untracked file nothing
    /// ignores and a tracked file changed are not.
    #[tokio::test]
    async fn uncommitted_is_what_git_sees() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        let git_in = |args: &[&str]| git(ws, args);
        git_in(&["init", "-q", "-b", "main"]);
        std::fs::write(ws.join(".gitattributes"), "NOTES.txt text eol=crlf\n").unwrap();
        std::fs::write(ws.join("NOTES.txt"), "one\ntwo\n").unwrap();
        std::fs::write(ws.join("kept.txt"), "kept\n").unwrap();
        git_in(&["add", "."]);
        git_in(&["commit", "-qm", "base"]);
        std::fs::write(ws.join("NOTES.txt"), "one\r\ntwo\r\n").unwrap();
        std::fs::write(ws.join(".git/info/exclude"), "gate.toml\n").unwrap();
        let excludes = dir.path().join(".git/my-excludes");
        std::fs::write(&excludes, "*.log\n").unwrap();
        git_in(&["config", "core.excludesFile", excludes.to_str().unwrap()]);
        std::fs::write(ws.join("gate.toml"), "[spec]\n").unwrap();
        std::fs::write(ws.join("build.log"), "noise\n").unwrap();
        std::fs::write(ws.join("new.txt"), "new\n").unwrap();
        std::fs::write(ws.join("kept.txt"), "changed\n").unwrap();
        let path = crate::environment::Environment::capture()
            .path()
            .map(ToOwned::to_owned);
        let git = Git::new(
            gate_harness::Launcher::new(crate::git::environment(path, None)),
            crate::git::Repository::find(ws),
        );
        let commit = resolve_base(&git, ws, "main").await.unwrap();
        let snapshot =
            Snapshot::take(ws, &gate_evidence::snapshot::WalkOptions::default()).unwrap();
        let env = crate::environment::Environment::capture();
        let files = uncommitted(&git, ws, &snapshot, &commit, &env)
            .await
            .unwrap();
        assert_eq!(files, ["kept.txt", "new.txt"]);
        // The working tree's attributes do not count: only the commit's.
        std::fs::write(ws.join(".gitattributes"), "").unwrap();
        std::fs::write(ws.join("kept.txt"), "kept\n").unwrap();
        let snapshot =
            Snapshot::take(ws, &gate_evidence::snapshot::WalkOptions::default()).unwrap();
        let files = uncommitted(&git, ws, &snapshot, &commit, &env)
            .await
            .unwrap();
        assert_eq!(files, [".gitattributes", "new.txt"]);
    }

    /// An index whoever wrote `.git` forged hides nothing: a file marked
    /// assume-unchanged or skip-worktree, a new file the index lists as
    /// tracked, a mode change, a deletion, all in a subfolder workspace.
    #[tokio::test]
    async fn the_change_is_read_from_the_files_never_from_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        let ws = top.join("app");
        std::fs::create_dir_all(&ws).unwrap();
        let git_in = |args: &[&str]| git(top, args);
        git_in(&["init", "-q", "-b", "main"]);
        for file in [
            "hidden.txt",
            "skipped.txt",
            "same.txt",
            "gone.txt",
            "run.sh",
        ] {
            std::fs::write(ws.join(file), format!("{file}\n")).unwrap();
        }
        std::fs::write(top.join("outside.txt"), "x\n").unwrap();
        git_in(&["add", "."]);
        git_in(&["commit", "-qm", "base"]);
        git_in(&["checkout", "-q", "-b", "change"]);
        for file in ["hidden.txt", "skipped.txt"] {
            std::fs::write(ws.join(file), "changed\n").unwrap();
        }
        std::fs::remove_file(ws.join("gone.txt")).unwrap();
        std::fs::set_permissions(ws.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::write(ws.join("new.txt"), "new\n").unwrap();
        std::fs::write(top.join("outside.txt"), "changed\n").unwrap();
        git_in(&["add", "-N", "app/new.txt"]);
        git_in(&["update-index", "--assume-unchanged", "app/hidden.txt"]);
        git_in(&["update-index", "--skip-worktree", "app/skipped.txt"]);
        git_in(&["update-index", "--assume-unchanged", "app/run.sh"]);
        let path = crate::environment::Environment::capture()
            .path()
            .map(ToOwned::to_owned);
        let git = Git::new(
            gate_harness::Launcher::new(crate::git::environment(path, None)),
            crate::git::Repository::find(&ws),
        );
        let commit = resolve_base(&git, &ws, "main").await.unwrap();
        let snapshot =
            Snapshot::take(&ws, &gate_evidence::snapshot::WalkOptions::default()).unwrap();
        let changed = with_base(&git, &ws, &snapshot, "main", &commit)
            .await
            .unwrap();
        assert_eq!(
            changed,
            ["gone.txt", "hidden.txt", "new.txt", "run.sh", "skipped.txt"]
        );
    }

    /// What the change committed at a report's path, in a subfolder
    /// workspace: added or modified since the base, or (without one) in
    /// `HEAD` at all; also through a committed folder link or a link to a
    /// committed file; an untracked file is not, whatever its name.
    #[tokio::test]
    async fn a_file_is_the_change_s_when_its_commits_hold_it() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        let ws = top.join("app");
        let git_in = |args: &[&str]| git(top, args);
        let write = |rel: &str| {
            let file = ws.join(rel);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, format!("{rel}\n")).unwrap();
        };
        git_in(&["init", "-q", "-b", "main"]);
        for rel in [
            "src.rs",
            "old/report.xml",
            "kept/report.xml",
            "fixtures/pass.xml",
        ] {
            write(rel);
        }
        git_in(&["add", "-f", "."]);
        git_in(&["commit", "-qm", "base"]);
        git_in(&["checkout", "-q", "-b", "change"]);
        write("added/report.xml");
        std::fs::write(ws.join("kept/report.xml"), "changed\n").unwrap();
        std::os::unix::fs::symlink("fixtures", ws.join("links")).unwrap();
        git_in(&["add", "-f", "app/added", "app/kept", "app/links"]);
        git_in(&["commit", "-qm", "the change"]);
        write("untracked/report.xml");
        write(":(glob)report.xml");
        std::os::unix::fs::symlink("fixtures/pass.xml", ws.join("via.xml")).unwrap();
        let path = crate::environment::Environment::capture()
            .path()
            .map(ToOwned::to_owned);
        let git = Git::new(
            gate_harness::Launcher::new(crate::git::environment(path, None)),
            crate::git::Repository::find(&ws),
        );
        let head = git.resolve_commit(&ws, "HEAD").await.unwrap();
        let base = resolve_base(&git, &ws, "main").await.unwrap();
        // (the report's path, committed without a base, with one)
        let cases = [
            ("added/report.xml", true, true),
            ("kept/report.xml", true, true),
            ("old/report.xml", true, false),
            ("links/pass.xml", true, true),
            ("via.xml", true, false),
            ("untracked/report.xml", false, false),
            (":(glob)report.xml", false, false),
            ("not/there.xml", false, false),
        ];
        for (path, without, with) in cases {
            let found = committed(&git, &ws, path, &head, None).await.unwrap();
            assert_eq!(found, without, "{path} without a base");
            let found = committed(&git, &ws, path, &head, Some(&base))
                .await
                .unwrap();
            assert_eq!(found, with, "{path} with a base");
        }
    }
}
