//! Workspace files by path: the files a path is or holds, and a base's
//! version of one shown over it in the items' sandbox.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use gate_harness::sandbox::Overlay;

/// The files of `files` that `path` is or holds.
pub(crate) fn under<'a>(files: &BTreeSet<&'a str>, path: &str) -> Vec<&'a str> {
    let prefix = format!("{path}/");
    let mut out: Vec<&'a str> = files
        .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
        .take_while(|f| f.starts_with(&prefix))
        .copied()
        .collect();
    if let Some(f) = files.get(path) {
        out.push(*f);
    }
    out
}

/// Whether `target` can be covered by an overlay: only a regular file can,
/// without creating anything in the workspace.
pub(crate) fn coverable(target: &Path) -> bool {
    std::fs::symlink_metadata(target).is_ok_and(|m| m.is_file())
}

/// `bytes` (a base's version of `file`) written under `dir` with the mode
/// `executable` says, and the overlay that shows it over the workspace's
/// `file`; `None` when it cannot be.
pub(crate) fn overlay(
    workspace: &Path,
    file: &str,
    bytes: &[u8],
    dir: &Path,
    executable: bool,
) -> Option<Overlay> {
    let target = workspace.join(file);
    if !coverable(&target) {
        return None;
    }
    let source = dir.join(file);
    std::fs::create_dir_all(source.parent()?).ok()?;
    std::fs::write(&source, bytes).ok()?;
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(&source, std::fs::Permissions::from_mode(mode)).ok()?;
    Some(Overlay { source, target })
}
