//! The identity of the host toolchain a run's items use: what a retry
//! compares once per run instead of every host file an item read.
//!
//! The host folders the sandbox shows read-only are the machine's, not the
//! change's, and the trace does not value what items read there (it would
//! be thousands of files per interpreter start). An upgraded compiler, a
//! package installed into a virtual environment named `readable`, a new
//! program on `PATH` still decide results, so the folders of the items'
//! `PATH` and the `readable` paths are taken once per run: each folder's
//! own inode and times and those of every entry directly in it (an
//! upgrade replaces a program, which gives it a new inode or change time;
//! an install adds an entry). Folders inside the workspace are left out:
//! the trace values what items read there.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The toolchain's identity: blake3 (hex) over the folders of `path` and
/// the `readable` paths, outside `workspace`, in that order, each taken
/// once under the path its links lead to (`/bin` is `/usr/bin` on most
/// systems).
pub(crate) fn identity(path: Option<&OsStr>, readable: &[PathBuf], workspace: &Path) -> String {
    let mut seen: Vec<PathBuf> = Vec::new();
    let folders = path
        .into_iter()
        .flat_map(std::env::split_paths)
        .chain(readable.iter().cloned())
        .filter(|p| p.is_absolute() && !p.starts_with(workspace));
    let mut hasher = blake3::Hasher::new();
    for folder in folders {
        let folder = std::fs::canonicalize(&folder).unwrap_or(folder);
        if seen.contains(&folder) || folder.starts_with(workspace) {
            continue;
        }
        hasher.update(folder.as_os_str().as_bytes());
        hasher.update(b"\0");
        stamp(&mut hasher, std::fs::metadata(&folder).ok().as_ref());
        if let Ok(entries) = std::fs::read_dir(&folder) {
            let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
            entries.sort_by_key(std::fs::DirEntry::file_name);
            for entry in entries {
                hasher.update(entry.file_name().as_bytes());
                hasher.update(b"\0");
                // The link itself shows a re-pointed shim; what it names,
                // a program upgraded in place.
                let own = entry.path().symlink_metadata().ok();
                stamp(&mut hasher, own.as_ref());
                if own.is_some_and(|m| m.file_type().is_symlink()) {
                    stamp(&mut hasher, std::fs::metadata(entry.path()).ok().as_ref());
                }
            }
        }
        seen.push(folder);
    }
    hasher.finalize().to_hex().to_string()
}

/// Adds what tells one version of a file from another without reading it.
fn stamp(hasher: &mut blake3::Hasher, meta: Option<&std::fs::Metadata>) {
    let Some(m) = meta else {
        hasher.update(b"absent\0");
        return;
    };
    for n in [m.dev(), m.ino(), m.size(), u64::from(m.mode())] {
        hasher.update(&n.to_le_bytes());
    }
    for n in [m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()] {
        hasher.update(&n.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upgraded_or_added_program_changes_it_and_the_workspace_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        let venv = dir.path().join("venv");
        let ws = dir.path().join("ws");
        for d in [&bin, &venv, &ws.join("bin")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(bin.join("cc"), "v1").unwrap();
        let path = std::env::join_paths([&bin, &ws.join("bin")]).unwrap();
        let now = || identity(Some(&path), std::slice::from_ref(&venv), &ws);
        let first = now();
        assert_eq!(first, now(), "the same toolchain reads the same");

        // The workspace's own folders are the trace's to value.
        std::fs::write(ws.join("bin/tool"), "x").unwrap();
        assert_eq!(first, now(), "a workspace folder on PATH is left out");

        type Change = fn(&Path, &Path);
        let changes: [(&str, Change); 3] = [
            ("a program replaced", |bin, _| {
                std::fs::write(bin.join("cc.new"), "v2").unwrap();
                std::fs::rename(bin.join("cc.new"), bin.join("cc")).unwrap();
            }),
            ("a program added", |bin, _| {
                std::fs::write(bin.join("ld"), "v1").unwrap();
            }),
            ("a readable folder's entry added", |_, venv| {
                std::fs::write(venv.join("pyvenv.cfg"), "home = /x").unwrap();
            }),
        ];
        let mut last = first;
        for (what, change) in changes {
            change(&bin, &venv);
            let now = now();
            assert_ne!(last, now, "{what}");
            last = now;
        }
    }
}
