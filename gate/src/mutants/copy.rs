//! A mutant's own copy of the workspace, in a folder of the gate's outside
//! it (a base run's kind of folder, removed with everything in it).
//!
//! Every file is copied (`copy_file_range`, a clone where the file system
//! shares blocks), links as links, each with its modification time kept:
//! a build the workspace holds (`target/`, `node_modules/`, `__pycache__`)
//! is reused, and only what the mutated file feeds is rebuilt, since the
//! mutated file alone is newer than what was built from it.

use std::io::Read as _;
use std::os::fd::AsFd as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use nix::fcntl::OFlag;
use nix::sys::stat::{Mode, SFlag};

/// Copies `from` into `to` (which must not exist), leaving out the
/// top-level paths `skip`, then writes `text` as `file`
/// (workspace-relative) with the time now and the copied file's mode.
pub(super) fn workspace(
    from: &Path,
    to: &Path,
    skip: &[&Path],
    file: &str,
    text: &str,
) -> Result<(), String> {
    copy_dir(from, to, &|rel: &Path| skip.contains(&rel), Path::new(""))?;
    let target = to.join(file);
    let mode = std::fs::symlink_metadata(&target)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map_or(0o644, |m| m.permissions().mode() & 0o777);
    // A fresh inode, by name relative to folders opened without following
    // a link: a link in the copy (the workspace's own) is refused, never
    // written through to where it points.
    gate_evidence::place::replace_file(to, &target, text.as_bytes())
        .and_then(|()| std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode)))
        .map_err(|e| format!("cannot write the mutant into {}: {e}", target.display()))
}

/// The text of the regular file `rel` (workspace-relative, `/`-separated)
/// inside `root`, every folder on the way and the file itself opened
/// without following a link: a changed file the change made a link (to a
/// key, to a host file) is never read through, so its target's text can
/// reach neither a mutant nor a report. `None` for a link, anything but a
/// regular file, a path leaving `root`, or text that is not UTF-8.
pub(super) fn read_regular(root: &Path, rel: &str) -> Option<String> {
    let folder = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut dir = nix::fcntl::open(root, folder, Mode::empty()).ok()?;
    let parts: Vec<&str> = rel.split('/').collect();
    let (name, folders) = parts.split_last()?;
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return None;
    }
    for part in folders {
        dir = nix::fcntl::openat(dir.as_fd(), *part, folder, Mode::empty()).ok()?;
    }
    // Non-blocking: a FIFO is refused below, never waited on.
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let fd = nix::fcntl::openat(dir.as_fd(), *name, flags, Mode::empty()).ok()?;
    let stat = nix::sys::stat::fstat(fd.as_fd()).ok()?;
    if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG {
        return None;
    }
    let mut text = String::new();
    std::fs::File::from(fd).read_to_string(&mut text).ok()?;
    Some(text)
}

fn copy_dir(
    from: &Path,
    to: &Path,
    skip: &dyn Fn(&Path) -> bool,
    rel: &Path,
) -> Result<(), String> {
    let why = |p: &Path, e: std::io::Error| format!("cannot copy {}: {e}", p.display());
    std::fs::create_dir(to).map_err(|e| why(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| why(from, e))? {
        let entry = entry.map_err(|e| why(from, e))?;
        let name = entry.file_name();
        let rel = rel.join(&name);
        if skip(&rel) {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        let meta = std::fs::symlink_metadata(&src).map_err(|e| why(&src, e))?;
        if meta.is_symlink() {
            let link = std::fs::read_link(&src).map_err(|e| why(&src, e))?;
            std::os::unix::fs::symlink(link, &dst).map_err(|e| why(&dst, e))?;
        } else if meta.is_dir() {
            copy_dir(&src, &dst, skip, &rel)?;
            std::fs::set_permissions(&dst, meta.permissions()).map_err(|e| why(&dst, e))?;
        } else if meta.is_file() {
            std::fs::copy(&src, &dst).map_err(|e| why(&src, e))?;
            let times =
                std::fs::FileTimes::new().set_modified(meta.modified().map_err(|e| why(&src, e))?);
            std::fs::File::options()
                .write(true)
                .open(&dst)
                .and_then(|f| f.set_times(times))
                .map_err(|e| why(&dst, e))?;
        }
        // Sockets and FIFOs are a running process's, not the code's.
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A changed file the change made a link, or put under a linked
    /// folder, is never read through; a mutant is never written through a
    /// link in the copy; a script keeps its mode.
    #[test]
    fn links_are_neither_read_nor_written_through() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("key.py"), "SECRET = 12345\n").unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("src")).unwrap();
        std::fs::write(ws.path().join("src/ok.py"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("key.py"), ws.path().join("src/leak.py"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("out")).unwrap();
        std::os::unix::fs::symlink("/", ws.path().join("root")).unwrap();
        assert_eq!(
            read_regular(ws.path(), "src/ok.py").as_deref(),
            Some("x = 1\n")
        );
        for rel in [
            "src/leak.py",
            "out/key.py",
            "src/../src/ok.py",
            "src",
            "root/etc/hostname",
        ] {
            assert_eq!(read_regular(ws.path(), rel), None, "{rel}");
        }

        std::fs::write(ws.path().join("run.py"), "#!/usr/bin/env python3\n").unwrap();
        std::fs::set_permissions(
            ws.path().join("run.py"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let folder = crate::base_runs::folder::BaseFolder::named("gate-mutant-").unwrap();
        let to = folder.path().join("tree");
        workspace(ws.path(), &to, &[], "out/key.py", "SECRET = 0\n").unwrap_err();
        assert_eq!(
            std::fs::read_to_string(outside.path().join("key.py")).unwrap(),
            "SECRET = 12345\n",
            "written through the copy's link"
        );
        let to = folder.path().join("tree2");
        workspace(
            ws.path(),
            &to,
            &[],
            "run.py",
            "#!/usr/bin/env python3\n# x\n",
        )
        .unwrap();
        let mode = std::fs::metadata(to.join("run.py"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    #[test]
    fn the_copy_keeps_times_and_links_and_holds_the_mutant() {
        let from = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(from.path().join("src")).unwrap();
        std::fs::create_dir_all(from.path().join(".git")).unwrap();
        std::fs::write(from.path().join("src/rules.py"), "age >= 18\n").unwrap();
        std::fs::write(from.path().join("built"), "old\n").unwrap();
        std::os::unix::fs::symlink("src/rules.py", from.path().join("link")).unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        std::fs::File::options()
            .write(true)
            .open(from.path().join("built"))
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(old))
            .unwrap();
        let folder = crate::base_runs::folder::BaseFolder::named("gate-mutant-").unwrap();
        let to = folder.path().join("tree");
        workspace(
            from.path(),
            &to,
            &[Path::new(".git")],
            "src/rules.py",
            "age > 18\n",
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(to.join("src/rules.py")).unwrap(),
            "age > 18\n"
        );
        assert_eq!(
            std::fs::read_to_string(from.path().join("src/rules.py")).unwrap(),
            "age >= 18\n",
            "the workspace is untouched"
        );
        assert_eq!(
            std::fs::metadata(to.join("built"))
                .unwrap()
                .modified()
                .unwrap(),
            old
        );
        assert!(
            std::fs::symlink_metadata(to.join("link"))
                .unwrap()
                .is_symlink()
        );
        assert!(!to.join(".git").exists());
        let path = folder.path().to_path_buf();
        drop(folder);
        assert!(!path.exists());
    }
}
