//! Finding rules files: every one in the workspace, or the ones that can
//! govern given files (walking up from each file to the workspace root).

use std::path::Path;

use crate::rules::model::RULES_FILE;

/// Every regular file of the workspace, workspace-relative and sorted: the
/// walk includes hidden files and skips `.git/`, the state directory and
/// what `.gitignore` ignores; it never follows a symlink.
pub fn workspace_files(workspace: &Path, state_dir: Option<&Path>) -> Vec<String> {
    let state_dir = state_dir.map(Path::to_path_buf);
    let walker = ignore::WalkBuilder::new(workspace)
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |e| {
            e.file_name() != ".git" && state_dir.as_deref().is_none_or(|s| e.path() != s)
        })
        .build();
    let mut files: Vec<String> = walker
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| {
            e.path()
                .strip_prefix(workspace)
                .ok()
                .and_then(|p| p.to_str())
                .map(|p| p.replace('\\', "/"))
        })
        .collect();
    files.sort();
    files
}

/// Whether a workspace-relative path is a rules file.
pub fn is_rules_file(path: &str) -> bool {
    path == RULES_FILE || path.ends_with(&format!("/{RULES_FILE}"))
}

/// Every rules file of the workspace, outermost first.
pub fn all(workspace: &Path, state_dir: Option<&Path>) -> Vec<String> {
    outermost_first(
        workspace_files(workspace, state_dir)
            .into_iter()
            .filter(|p| is_rules_file(p))
            .collect(),
    )
}

/// The rules files that can govern `files` (workspace-relative; they need
/// not exist yet): for each, `docs/review/rules.toml` in its folder and in
/// every folder above it up to the workspace root. Outermost first.
pub fn for_files(workspace: &Path, files: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        let mut dir = file.rsplit_once('/').map_or("", |(d, _)| d);
        loop {
            let candidate = if dir.is_empty() {
                RULES_FILE.to_owned()
            } else {
                format!("{dir}/{RULES_FILE}")
            };
            if !found.contains(&candidate)
                && std::fs::symlink_metadata(workspace.join(&candidate))
                    .is_ok_and(|m| m.file_type().is_file())
            {
                found.push(candidate);
            }
            if dir.is_empty() {
                break;
            }
            dir = dir.rsplit_once('/').map_or("", |(d, _)| d);
        }
    }
    outermost_first(found)
}

/// Sorted by depth of their home, then by path.
pub fn outermost_first(mut sources: Vec<String>) -> Vec<String> {
    sources.sort_by_key(|s| (s.matches('/').count(), s.clone()));
    sources.dedup();
    sources
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_up_and_skips_what_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        for rel in [
            "docs/review/rules.toml",
            "services/api/docs/review/rules.toml",
            "services/web/docs/review/rules.toml",
            "build/docs/review/rules.toml",
            ".gate/docs/review/rules.toml",
            "services/api/src/handler.rs",
        ] {
            let p = ws.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        std::fs::write(ws.join(".gitignore"), "build/\n").unwrap();
        assert_eq!(
            all(ws, Some(&ws.join(".gate"))),
            [
                "docs/review/rules.toml",
                "services/api/docs/review/rules.toml",
                "services/web/docs/review/rules.toml",
            ]
        );
        // A file that does not exist yet still has its folders walked.
        assert_eq!(
            for_files(
                ws,
                &[
                    "services/api/src/new/thing.rs".to_owned(),
                    "services/api/src/handler.rs".to_owned()
                ]
            ),
            [
                "docs/review/rules.toml",
                "services/api/docs/review/rules.toml"
            ]
        );
        assert_eq!(
            for_files(ws, &["README.md".to_owned()]),
            ["docs/review/rules.toml"]
        );
        assert!(is_rules_file("a/docs/review/rules.toml"));
        assert!(!is_rules_file("a/xdocs/review/rules.toml"));
    }
}
