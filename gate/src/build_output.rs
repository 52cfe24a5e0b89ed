//! What runners and builds write beside the code and no change is made of:
//! Python's byte-code and caches, a package's `.egg-info`. Files there are
//! not counted as uncommitted, and one an item wrote is no "changed while
//! the checks ran" warning, whether or not the repository ignores them
//! (the workspace walk reads only the tree's own `.gitignore` files, so
//! a global or `.git/info/exclude` rule does not hide them from it).
//! Nothing here lowers a critical finding: a protected file is judged as
//! one wherever it lies.

/// Folders whose every file is a runner's or build's output.
const FOLDERS: [&str; 7] = [
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    ".tox",
    ".nox",
];

/// Whether the workspace-relative `path` is build output by its name.
pub(crate) fn is_build_output(path: &str) -> bool {
    let folders = path.rsplit_once('/').map_or("", |(dirs, _)| dirs);
    folders.split('/').any(|part| {
        FOLDERS.contains(&part) || part.ends_with(".egg-info") || part.ends_with(".dist-info")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_output_by_name() {
        for (path, want) in [
            ("src/__pycache__/app.cpython-311.pyc", true),
            ("src/waitress.egg-info/PKG-INFO", true),
            (".pytest_cache/v/cache/nodeids", true),
            ("src/app.py", false),
            ("app.pyc", false),
            ("docs/__pycache__.md", false),
            ("src/egg-info.py", false),
        ] {
            assert_eq!(is_build_output(path), want, "{path}");
        }
    }
}
