//! Workspace-relative paths as the exam reads them: resolving, joining,
//! splitting, globs, and whether a file lies on the tests' side.

use crate::verifier;

/// `rel` from the workspace-relative directory `dir`, normalised; `None`
/// when it is absolute or leaves the workspace.
pub(super) fn resolve(dir: &str, rel: &str) -> Option<String> {
    if rel.starts_with('/') || rel.contains('\0') || rel.contains("://") {
        return None;
    }
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// `name` in the directory `dir` ("" = the root).
pub(super) fn in_dir(dir: &str, name: &str) -> String {
    verifier::join(dir, name)
}

/// The directory of a workspace-relative path ("" at the root).
pub(super) fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// A file's extension, as written (`rs` of `a/b.rs`).
pub(super) fn extension(path: &str) -> Option<&str> {
    file_name(path).rsplit_once('.').map(|(_, e)| e)
}

pub(super) fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `dir` and each directory above it, up to the root ("").
pub(super) fn ancestors(dir: &str) -> Vec<String> {
    let mut out = vec![dir.to_owned()];
    let mut d = dir;
    while !d.is_empty() {
        d = parent(d);
        out.push(d.to_owned());
    }
    out
}

/// A glob over workspace-relative paths, `*` not crossing `/`.
pub(super) fn glob(pattern: &str) -> Option<globset::GlobMatcher> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// Whether a file lies on the tests' side of a workspace: in a directory
/// named for tests or fixtures (`tests/`, `__tests__/`, `testutil/`,
/// `fixtures/`). A helper a test imports is part of the exam only there;
/// elsewhere it is the code under test.
pub(super) fn test_side(path: &str) -> bool {
    let dir = parent(path);
    !dir.is_empty()
        && dir.split('/').any(|c| {
            let c = c.to_ascii_lowercase();
            c.starts_with("test")
                || c.ends_with("tests")
                || c.ends_with("_test")
                || c == "__tests__"
                || c == "spec"
                || c == "e2e"
                || c.contains("fixture")
        })
}

/// Whether a word holds glob characters.
pub(super) fn is_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// Whether an operand of a runner looks like a path rather than a filter:
/// it holds a `/` or ends in a file extension.
pub(super) fn looks_like_path(text: &str) -> bool {
    text.contains('/')
        || text.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty() && !ext.is_empty() && ext.chars().all(|c| c.is_ascii_alphanumeric())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_within_the_workspace() {
        let cases = [
            ("", "a/./b", Some("a/b")),
            ("x/y", "../z", Some("x/z")),
            ("x", "../..", None),
            ("", "/abs", None),
            ("x", ".", Some("x")),
        ];
        for (dir, rel, want) in cases {
            assert_eq!(resolve(dir, rel).as_deref(), want, "{dir} {rel}");
        }
        assert_eq!(ancestors("a/b"), ["a/b", "a", ""]);
    }
}
