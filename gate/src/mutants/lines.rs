//! The change's own lines: what `git diff -U0` against the merge-base
//! says each changed file added or modified (every line of a file the
//! base did not have).

use std::path::Path;

use gate_mutants::diff::{ChangedLines, all_lines, changed_lines};

use crate::git::Git;

/// The added and modified lines of `files` (workspace-relative, with their
/// text now) against `commit`.
pub(super) async fn changed(
    git: &Git,
    workspace: &Path,
    commit: &str,
    files: &[(String, String)],
) -> Result<ChangedLines, String> {
    if files.is_empty() {
        return Ok(ChangedLines::new());
    }
    let literal: Vec<String> = files
        .iter()
        .map(|(f, _)| format!(":(literal){f}"))
        .collect();
    let mut args = vec![
        "diff",
        "-U0",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        commit,
        "--",
    ];
    args.extend(literal.iter().map(String::as_str));
    let out = git.run_whole(workspace, &args).await?;
    let mut lines = changed_lines(&String::from_utf8_lossy(&out));
    // A file git does not track yet is in no diff: when the base has no
    // such file either, all of it is the change's.
    for (file, text) in files {
        if lines.contains_key(file) {
            continue;
        }
        let object = format!("{commit}:{file}");
        if git
            .run(workspace, &["cat-file", "-e", &object])
            .await
            .is_err()
        {
            lines.insert(file.clone(), all_lines(text));
        }
    }
    Ok(lines)
}
