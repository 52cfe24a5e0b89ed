//! The base's folder: made outside the workspace for one base run (or one
//! mutant's copy of the workspace), and removed with everything in it,
//! whatever was left read-only.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The base's folder, removed when dropped, even where what ran there left
/// read-only folders behind (a Go module cache, a build's output).
pub(crate) struct BaseFolder(PathBuf);

impl BaseFolder {
    pub(super) fn new() -> Result<Self, String> {
        Self::named("gate-base-")
    }

    /// A folder whose name starts with `prefix`.
    pub(crate) fn named(prefix: &str) -> Result<Self, String> {
        let path = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .map(tempfile::TempDir::keep)
            .map_err(|e| format!("cannot create the folder {prefix}…: {e}"))?;
        // A second signal ends the gate with no destructor run.
        crate::interrupt::remove_on_exit(&path, remove);
        Ok(Self(path))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for BaseFolder {
    fn drop(&mut self) {
        crate::interrupt::forget_on_exit(&self.0);
        remove(&self.0);
    }
}

/// Removes a base folder, making what was left read-only writable first.
pub(super) fn remove(path: &Path) {
    if std::fs::remove_dir_all(path).is_ok() || !path.exists() {
        return;
    }
    make_writable(path);
    if let Err(e) = std::fs::remove_dir_all(path) {
        tracing::warn!(path = %path.display(), error = %e, "cannot remove the base's folder");
    }
}

/// Gives the owner write and search permission on every folder under `dir`.
fn make_writable(dir: &Path) {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = std::fs::set_permissions(
        dir,
        std::fs::Permissions::from_mode(meta.permissions().mode() | 0o700),
    );
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            make_writable(&entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_folder_goes_with_what_was_left_read_only() {
        let folder = BaseFolder::new().unwrap();
        let path = folder.path().to_path_buf();
        let cache = path.join("tree/pkg/mod");
        std::fs::create_dir_all(&cache).unwrap();
        std::fs::write(cache.join("file"), "x").unwrap();
        for dir in [&cache, &path.join("tree/pkg")] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        drop(folder);
        assert!(!path.exists(), "{} is still there", path.display());
    }
}
