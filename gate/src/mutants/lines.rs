//! The change's own lines: each changed file's text now compared with its
//! text at the merge-base (every line of a file the base did not have).
//! The base's text is read from the commit's tree, never through the
//! index, so no flag the repository's index holds hides a changed line.

use std::path::Path;

use gate_mutants::diff::{ChangedLines, all_lines, changed_between};

use crate::git::Git;

/// The added and modified lines of `files` (workspace-relative, with their
/// text now) against `commit`.
pub(super) async fn changed(
    git: &Git,
    workspace: &Path,
    commit: &str,
    files: &[(String, String)],
) -> Result<ChangedLines, String> {
    let mut lines = ChangedLines::new();
    for (file, text) in files {
        let object = format!("{commit}:{file}");
        let in_base = git
            .run(workspace, &["cat-file", "-e", &object])
            .await
            .is_ok();
        let changed = if in_base {
            let base = git
                .run_whole(workspace, &["cat-file", "blob", &object])
                .await?;
            changed_between(&String::from_utf8_lossy(&base), text)
        } else {
            all_lines(text)
        };
        if !changed.is_empty() {
            lines.insert(file.clone(), changed);
        }
    }
    Ok(lines)
}
