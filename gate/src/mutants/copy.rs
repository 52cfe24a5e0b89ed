//! A mutant's own copy of the workspace, in a folder of the gate's outside
//! it (a base run's kind of folder, removed with everything in it).
//!
//! Every file is copied (`copy_file_range`, a clone where the file system
//! shares blocks), links as links, each with its modification time kept:
//! a build the workspace holds (`target/`, `node_modules/`, `__pycache__`)
//! is reused, and only what the mutated file feeds is rebuilt, since the
//! mutated file alone is newer than what was built from it.

use std::path::Path;

/// Copies `from` into `to` (which must not exist), leaving out the
/// top-level paths `skip`, then writes `text` as `file`
/// (workspace-relative) with the time now.
pub(super) fn workspace(
    from: &Path,
    to: &Path,
    skip: &[&Path],
    file: &str,
    text: &str,
) -> Result<(), String> {
    copy_dir(from, to, &|rel: &Path| skip.contains(&rel), Path::new(""))?;
    let target = to.join(file);
    // A fresh inode: the copy's file, never one a link shares.
    let _ = std::fs::remove_file(&target);
    std::fs::write(&target, text)
        .map_err(|e| format!("cannot write the mutant into {}: {e}", target.display()))
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
