//! Files the gate writes, written where they were asked for and crash-safe.
//!
//! A file's path is split at an anchor, a folder its owner chose (the
//! workspace, the state directory), which is opened as given; every
//! folder below it, and the file's own name, is opened without following a
//! symbolic link, so a link an item of the run planted on the way (the
//! report folder made a link to a host folder) is refused, naming it,
//! rather than written through. A path outside its anchor is walked from
//! `/`, every component checked. Missing folders are created on the way.
//!
//! The bytes go to a temporary file in the final folder (created there,
//! exclusively, with the final mode, so it is never more readable than the
//! result), which is synced, then moved or linked into place by name
//! relative to that folder, and the folder synced, so the name survives a
//! power cut too.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

/// What to do when the final name already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Existing {
    /// Fail with [`io::ErrorKind::AlreadyExists`] and leave the old file alone.
    Keep,
    /// Replace it atomically.
    Replace,
}

/// A symbolic link met on the way to a file being written: nothing was
/// written.
#[derive(Debug, thiserror::Error)]
#[error("{} is a symbolic link", .link.display())]
pub struct LinkRefused {
    /// The link: the file's own name, or a folder above it.
    pub link: PathBuf,
}

/// The link a write was refused for, when that is why `e` failed.
pub fn refused_link(e: &io::Error) -> Option<&Path> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<LinkRefused>())
        .map(|r| r.link.as_path())
}

/// Writes `bytes` to `path` atomically, replacing any file there (a report
/// or a metrics file that readers may open at any moment), mode 0644;
/// no symbolic link below `anchor` is followed (see the module).
pub fn replace_file(anchor: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    write(anchor, path, bytes, 0o644, Existing::Replace)
}

/// Writes `bytes` to a new file at `path`, mode 0644, never replacing one
/// (an existing file is [`io::ErrorKind::AlreadyExists`]); no symbolic
/// link below `anchor` is followed.
pub fn create_file(anchor: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    write(anchor, path, bytes, 0o644, Existing::Keep)
}

/// The folder `path` is in, as an anchor: only the file's own name is
/// then checked (a key file, whose folder its owner chose).
pub(crate) fn own_folder(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Writes `bytes` to `path` atomically with permission bits `mode`,
/// following no symbolic link below `anchor`.
pub(crate) fn write(
    anchor: &Path,
    path: &Path,
    bytes: &[u8],
    mode: u32,
    existing: Existing,
) -> io::Result<()> {
    let (root, below) = split(anchor, path);
    let Some(name) = below.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        ));
    };
    let folders = below.parent().unwrap_or(Path::new(""));
    imp::write(root, folders, name, bytes, mode, existing)
}

/// `path` as its anchor and the part below it: below `anchor` when it is
/// inside it, else below `/` (or below `.` for a relative path).
fn split<'a>(anchor: &'a Path, path: &'a Path) -> (&'a Path, &'a Path) {
    if !anchor.as_os_str().is_empty()
        && let Ok(below) = path.strip_prefix(anchor)
    {
        return (anchor, below);
    }
    match path.strip_prefix("/") {
        Ok(below) => (Path::new("/"), below),
        Err(_) => (Path::new("."), path),
    }
}

/// A fresh temporary name for `name`, never reused.
fn temp_name(name: &OsStr) -> io::Result<PathBuf> {
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(io::Error::other)?;
    Ok(PathBuf::from(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        hex::encode(nonce)
    )))
}

#[cfg(unix)]
mod imp {
    use std::ffi::OsStr;
    use std::fs::File;
    use std::io::{self, Write};
    use std::os::fd::OwnedFd;
    use std::path::{Component, Path, PathBuf};

    use nix::errno::Errno;
    use nix::fcntl::{AtFlags, OFlag, openat, renameat};
    use nix::sys::stat::{Mode, SFlag, fstatat, mkdirat};
    use nix::unistd::{UnlinkatFlags, fsync, linkat, unlinkat};

    use super::{Existing, LinkRefused, temp_name};

    /// Writes `name` in the folder `folders` below `root`.
    pub(super) fn write(
        root: &Path,
        folders: &Path,
        name: &OsStr,
        bytes: &[u8],
        mode: u32,
        existing: Existing,
    ) -> io::Result<()> {
        let (dir, at) = open_folders(root, folders)?;
        if is_link(&dir, name) {
            return Err(refused(at.join(name)));
        }
        let mut attempt = 0u32;
        let (tmp, mut file) = loop {
            let tmp = temp_name(name)?;
            let flags = OFlag::O_WRONLY
                | OFlag::O_CREAT
                | OFlag::O_EXCL
                | OFlag::O_NOFOLLOW
                | OFlag::O_CLOEXEC;
            match openat(&dir, &tmp, flags, Mode::from_bits_truncate(mode)) {
                Ok(fd) => break (tmp, File::from(fd)),
                Err(Errno::EEXIST) if attempt < 8 => attempt += 1,
                Err(e) => return Err(e.into()),
            }
        };
        let result = (|| {
            file.write_all(bytes)?;
            file.sync_all()?;
            drop(file);
            match existing {
                // A hard link fails when the name exists, so a file is never
                // replaced by a race between two writers.
                Existing::Keep => {
                    linkat(&dir, &tmp, &dir, name, AtFlags::empty())?;
                    unlinkat(&dir, &tmp, UnlinkatFlags::NoRemoveDir)?;
                }
                // A rename replaces a link at the name rather than writing
                // through it; the check above only makes the refusal clear.
                Existing::Replace => renameat(&dir, &tmp, &dir, name)?,
            }
            Ok::<(), io::Error>(())
        })();
        if result.is_err() {
            // Best effort: the temporary name is never read, so a leftover is only litter.
            let _ = unlinkat(&dir, &tmp, UnlinkatFlags::NoRemoveDir);
        }
        result?;
        Ok(fsync(&dir)?)
    }

    /// The folder `folders` below `root`, opened one component at a time
    /// without following a link and created where missing, with its path.
    fn open_folders(root: &Path, folders: &Path) -> io::Result<(OwnedFd, PathBuf)> {
        // The anchor is trusted as given, links and all.
        std::fs::create_dir_all(root)?;
        let mut dir = openat(
            nix::fcntl::AT_FDCWD,
            root,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        let mut at = root.to_path_buf();
        for component in folders.components() {
            let name = match component {
                Component::Normal(name) => name,
                // `..` of a folder opened without links is its real parent.
                Component::ParentDir => OsStr::new(".."),
                Component::CurDir | Component::RootDir | Component::Prefix(_) => continue,
            };
            at.push(name);
            dir = step(&dir, name, &at)?;
        }
        Ok((dir, at))
    }

    /// The folder `name` in `dir`, created if missing; a link is refused.
    fn step(dir: &OwnedFd, name: &OsStr, at: &Path) -> io::Result<OwnedFd> {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mut created = false;
        loop {
            match openat(dir, name, flags, Mode::empty()) {
                Ok(fd) => return Ok(fd),
                Err(Errno::ENOENT) if !created => {
                    created = true;
                    match mkdirat(dir, name, Mode::from_bits_truncate(0o755)) {
                        // Another writer made it first: open theirs.
                        Ok(()) | Err(Errno::EEXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Err(Errno::ELOOP | Errno::ENOTDIR) if is_link(dir, name) => {
                    return Err(refused(at.to_path_buf()));
                }
                Err(e) => {
                    return Err(io::Error::new(
                        io::Error::from(e).kind(),
                        format!("{}: {e}", at.display()),
                    ));
                }
            }
        }
    }

    /// Whether `name` in `dir` is a symbolic link (not following it).
    fn is_link(dir: &OwnedFd, name: &OsStr) -> bool {
        fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).is_ok_and(|st| {
            SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFLNK
        })
    }

    fn refused(link: PathBuf) -> io::Error {
        io::Error::other(LinkRefused { link })
    }
}

#[cfg(not(unix))]
mod imp {
    //! Without `openat`, the plain path: a temporary file beside it,
    //! renamed or linked into place.

    use std::ffi::OsStr;
    use std::fs::{self, OpenOptions};
    use std::io::{self, Write};
    use std::path::Path;

    use super::{Existing, temp_name};

    pub(super) fn write(
        root: &Path,
        folders: &Path,
        name: &OsStr,
        bytes: &[u8],
        _mode: u32,
        existing: Existing,
    ) -> io::Result<()> {
        let dir = root.join(folders);
        fs::create_dir_all(&dir)?;
        let tmp = dir.join(temp_name(name)?);
        let path = dir.join(name);
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        let result = (|| {
            file.write_all(bytes)?;
            file.sync_all()?;
            drop(file);
            match existing {
                Existing::Keep => {
                    fs::hard_link(&tmp, &path)?;
                    fs::remove_file(&tmp)
                }
                Existing::Replace => fs::rename(&tmp, &path),
            }
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{PermissionsExt, symlink};

    #[test]
    fn writes_with_mode_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.bin");
        write(dir.path(), &path, b"hello", 0o600, Existing::Keep).unwrap();
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
        write(dir.path(), &path, b"one", 0o644, Existing::Keep).unwrap();
        let err = write(dir.path(), &path, b"two", 0o644, Existing::Keep).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).unwrap(), b"one");
        write(dir.path(), &path, b"three", 0o644, Existing::Replace).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"three");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left behind"
        );
    }

    /// Each case plants links in a workspace `ws` beside a host folder
    /// `host`, then writes `target` (relative to `ws`, or absolute when it
    /// starts with `/`, then below the test's folder) anchored at `ws`.
    #[test]
    fn no_link_on_the_way_is_followed() {
        // (case, links to plant (at, to: "HOST" is the host folder), target,
        // the link refused (relative to the test's folder), or None: written)
        type Case = (
            &'static str,
            &'static [(&'static str, &'static str)],
            &'static str,
            Option<&'static str>,
        );
        let cases: &[Case] = &[
            ("plain path", &[], "r/out.txt", None),
            ("missing folders created", &[], "a/b/c/out.txt", None),
            ("bare name", &[], "out.txt", None),
            (
                "link as the file",
                &[("ws/r/out.txt", "HOST/out.txt")],
                "r/out.txt",
                Some("ws/r/out.txt"),
            ),
            (
                "dangling link as the file",
                &[("ws/r/out.txt", "HOST/none")],
                "r/out.txt",
                Some("ws/r/out.txt"),
            ),
            (
                "link as its folder",
                &[("ws/r", "HOST")],
                "r/out.txt",
                Some("ws/r"),
            ),
            (
                "link as a grandparent",
                &[("ws/g", "HOST")],
                "g/r/out.txt",
                Some("ws/g"),
            ),
            (
                "absolute path through a link",
                &[("elsewhere", "HOST")],
                "/elsewhere/out.txt",
                Some("elsewhere"),
            ),
            ("absolute plain path", &[], "/plain/out.txt", None),
        ];
        for (case, links, target, refused) in cases {
            let top = tempfile::tempdir().unwrap();
            let (ws, host) = (top.path().join("ws"), top.path().join("host"));
            fs::create_dir_all(ws.join("r")).unwrap();
            fs::create_dir_all(&host).unwrap();
            for (at, to) in *links {
                let at = top.path().join(at);
                let _ = fs::remove_dir(&at);
                fs::create_dir_all(at.parent().unwrap()).unwrap();
                symlink(to.replace("HOST", host.to_str().unwrap()), &at).unwrap();
            }
            let path = match target.strip_prefix('/') {
                Some(abs) => top.path().join(abs),
                None => ws.join(target),
            };
            let result = replace_file(&ws, &path, b"report");
            match refused {
                None => {
                    result.unwrap_or_else(|e| panic!("{case}: {e}"));
                    assert_eq!(fs::read(&path).unwrap(), b"report", "{case}");
                }
                Some(link) => {
                    let e = result.expect_err(case);
                    assert_eq!(
                        refused_link(&e),
                        Some(top.path().join(link).as_path()),
                        "{case}: {e}"
                    );
                    assert!(e.to_string().ends_with("is a symbolic link"), "{case}: {e}");
                }
            }
            assert_eq!(
                fs::read_dir(&host).unwrap().count(),
                0,
                "{case}: nothing in the host folder"
            );
        }
    }
}
