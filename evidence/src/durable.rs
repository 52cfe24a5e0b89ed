//! Crash-safe file writes: a file appears under its final name complete or
//! not at all.
//!
//! The bytes go to a temporary file in the same directory (created with the
//! final mode, so it is never more readable than the result), which is synced,
//! then moved into place and the directory synced, so the name survives a
//! power cut too.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
#[cfg(unix)]
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// What to do when the final name already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Existing {
    /// Fail with [`io::ErrorKind::AlreadyExists`] and leave the old file alone.
    Keep,
    /// Replace it atomically.
    Replace,
}

/// Writes `bytes` to `path` atomically with permission bits `mode`.
pub(crate) fn write(path: &Path, bytes: &[u8], mode: u32, existing: Existing) -> io::Result<()> {
    let dir = parent(path);
    let (tmp_path, mut tmp) = create_temp(dir, path, mode)?;
    let result = (|| {
        tmp.write_all(bytes)?;
        tmp.sync_all()?;
        drop(tmp);
        match existing {
            // A hard link fails when the name exists, so a file is never
            // replaced by a race between two writers.
            Existing::Keep => {
                fs::hard_link(&tmp_path, path)?;
                fs::remove_file(&tmp_path)
            }
            Existing::Replace => fs::rename(&tmp_path, path),
        }
    })();
    if result.is_err() {
        // Best effort: the temporary name is never read, so a leftover is only litter.
        let _ = fs::remove_file(&tmp_path);
    }
    result?;
    sync_dir(dir)
}

/// Writes `bytes` to `path` atomically, replacing any file there (a report
/// or a metrics file that readers may open at any moment). Mode 0644.
pub fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write(path, bytes, 0o644, Existing::Replace)
}

/// The directory a file lives in (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Creates a fresh temporary file beside `path`, never reusing an existing name.
fn create_temp(dir: &Path, path: &Path, mode: u32) -> io::Result<(PathBuf, File)> {
    let stem = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let mut attempt = 0u32;
    loop {
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).map_err(io::Error::other)?;
        let tmp_path = dir.join(format!(".{stem}.tmp-{}", hex::encode(nonce)));
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        opts.mode(mode);
        #[cfg(not(unix))]
        let _ = mode;
        match opts.open(&tmp_path) {
            Ok(f) => return Ok((tmp_path, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 8 => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Syncs a directory so a rename or link in it survives a crash.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writes_with_mode_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.bin");
        write(&path, b"hello", 0o600, Existing::Keep).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"hello");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.bin")]);
    }

    #[test]
    fn keep_refuses_to_replace_and_replace_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.bin");
        write(&path, b"one", 0o644, Existing::Keep).unwrap();
        let err = write(&path, b"two", 0o644, Existing::Keep).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).unwrap(), b"one");
        write(&path, b"three", 0o644, Existing::Replace).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"three");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left behind"
        );
    }
}
