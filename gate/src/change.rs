//! The change: the files a review looks at and sensitive paths lift on.
//!
//! With a base it is every file that differs between the merge-base of the
//! base and the working tree (committed, uncommitted and untracked); without
//! one, every file under the tasks' `paths`.

use std::path::{Path, PathBuf};

use gate_evidence::Snapshot;
use gate_specs::InputGlobs;

use crate::errors::GateError;
use crate::git::Git;

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
pub(crate) async fn with_base(
    git: &Git,
    workspace: &Path,
    base: &str,
    commit: &str,
) -> Result<Vec<String>, GateError> {
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
    let merge_base = String::from_utf8_lossy(&merge_base).trim().to_owned();
    // `--relative` keeps the diff to the workspace and its paths relative to it,
    // which matters when the workspace is a folder inside a larger repository.
    let diffed = git
        .run(
            workspace,
            &[
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--name-only",
                "--no-renames",
                "--relative",
                "-z",
                &merge_base,
                "--",
            ],
        )
        .await;
    let untracked = git
        .run(
            workspace,
            &[
                "ls-files",
                "--others",
                "--exclude-standard",
                "-z",
                "--",
                ".",
            ],
        )
        .await;
    let mut files: Vec<String> = [diffed, untracked]
        .into_iter()
        .map(|r| {
            r.map_err(|e| GateError::Base {
                base: base.to_owned(),
                reason: e,
            })
        })
        .collect::<Result<Vec<_>, _>>()?
        .iter()
        .flat_map(|out| out.split(|b| *b == 0))
        .filter(|s| !s.is_empty())
        .filter_map(|s| {
            let path = std::str::from_utf8(s).ok().map(str::to_owned);
            if path.is_none() {
                // Such a file cannot be named in a spec or a finding.
                tracing::warn!(path = %String::from_utf8_lossy(s), "skipping a non-UTF-8 path");
            }
            path
        })
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
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
            let git = Git::new(gate_harness::Launcher::new(Vec::new()));
            let err = resolve_base(&git, dir.path(), base).await.unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("base `{base}`: a commit or branch name cannot start with `-`")
            );
        }
    }
}
