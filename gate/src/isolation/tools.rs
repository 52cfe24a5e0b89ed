//! The gate's own tools (`bwrap`, `nsenter`, `setpriv`, `git`, the `sh`
//! that runs every item's command line, and the `strace` that records what
//! items read), found once
//! at the start of a run where the agent under review cannot write.
//!
//! `PATH` is the user's, and a CI step may have put a folder of the
//! workspace on it (an activated virtual environment): a `bwrap` the agent
//! committed there would otherwise start every item unsandboxed while the
//! record says "bwrap sandbox". So a tool is looked for only in `PATH`
//! folders outside the workspace, the state directory and every writable
//! path, that no other user can write to, and what is found is recorded
//! with its digest.

use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use gate_evidence::ledger::RunTool;
use sha2::{Digest as _, Sha256};

/// The gate's own program that drops an item to the run's uid, looked for
/// beside the gate's executable (`setpriv` stands in when it is not there).
pub(crate) const DROPPER: &str = "gate-drop";

/// The tools the gate runs itself, by name.
pub(crate) const NAMES: [&str; 6] = ["bwrap", "nsenter", "setpriv", "git", "sh", "strace"];

/// The gate's tools as found for one run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tools {
    /// Each tool found: its name, path (links resolved) and digest.
    pub found: Vec<RunTool>,
    /// `PATH` folders passed over because the items can write there.
    pub skipped: Vec<PathBuf>,
}

impl Tools {
    /// Finds each of [`NAMES`] and `extra` (the eBPF tracer's `clang`,
    /// when it is asked for) on `path`, passing over every folder that is
    /// relative, lies in one of `untrusted` (canonical paths), or that a user
    /// other than root and the gate's own can write to.
    pub(crate) fn resolve(path: Option<&OsStr>, untrusted: &[PathBuf], extra: &[&str]) -> Self {
        let own_uid = nix::unistd::geteuid().as_raw();
        let mut tools = Self::default();
        let dirs: Vec<PathBuf> = path
            .map(std::env::split_paths)
            .into_iter()
            .flatten()
            .collect();
        let mut trusted = Vec::new();
        for dir in dirs {
            match trusted_dir(&dir, untrusted, own_uid) {
                Some(real) => trusted.push(real),
                None => {
                    if !tools.skipped.contains(&dir) && !dir.as_os_str().is_empty() {
                        tools.skipped.push(dir);
                    }
                }
            }
        }
        for name in NAMES.iter().chain(extra) {
            tools
                .found
                .extend(found_in(&trusted, name, untrusted, own_uid));
        }
        // The gate's own dropper is taken only from beside the gate itself.
        let beside = std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.to_path_buf()))
            .and_then(|dir| trusted_dir(&dir, untrusted, own_uid));
        if let Some(dir) = beside {
            tools
                .found
                .extend(found_in(&[dir], DROPPER, untrusted, own_uid));
        }
        tools
    }

    /// The path of the tool `name`, when it was found.
    pub(crate) fn path(&self, name: &str) -> Option<PathBuf> {
        self.found
            .iter()
            .find(|t| t.name == name)
            .map(|t| PathBuf::from(&t.path))
    }

    /// What the run should be told of the folders passed over, once.
    pub(crate) fn warning(&self) -> Option<String> {
        (!self.skipped.is_empty()).then(|| {
            format!(
                "the gate's own tools (bwrap, nsenter, setpriv, git, sh, strace) are not looked for in {}: \
                 what runs for the workspace can write there",
                self.skipped
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }
}

/// The tool `name` in the first of `dirs` that holds a usable one: an
/// executable file no other user can change, outside `untrusted`.
fn found_in(dirs: &[PathBuf], name: &str, untrusted: &[PathBuf], own_uid: u32) -> Option<RunTool> {
    let real = dirs.iter().find_map(|dir| {
        let real = dir.join(name).canonicalize().ok()?;
        let meta = std::fs::metadata(&real).ok()?;
        let usable = meta.is_file()
            && meta.mode() & 0o111 != 0
            && !inside(&real, untrusted)
            && !writable_by_others(&meta, own_uid);
        usable.then_some(real)
    })?;
    let bytes = std::fs::read(&real).ok()?;
    Some(RunTool {
        name: name.to_owned(),
        path: real.display().to_string(),
        sha256: hex::encode(Sha256::digest(&bytes)),
    })
}

/// `dir` with its links resolved, when the gate may take its own tools
/// from it.
fn trusted_dir(dir: &Path, untrusted: &[PathBuf], own_uid: u32) -> Option<PathBuf> {
    if !dir.is_absolute() {
        return None;
    }
    let real = dir.canonicalize().ok()?;
    if inside(&real, untrusted) {
        return None;
    }
    // No other user can change the folder, nor swap any folder on the
    // way to it (in a sticky folder such as /tmp, only its owner can).
    for (i, ancestor) in real.ancestors().enumerate() {
        let meta = std::fs::metadata(ancestor).ok()?;
        let sticky = meta.mode() & 0o1000 != 0;
        if writable_by_others(&meta, own_uid) && (i == 0 || !sticky) {
            return None;
        }
    }
    Some(real)
}

fn inside(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|root| path.starts_with(root))
}

/// Whether someone other than root and `own_uid` can change the file or
/// folder: its owner, or anyone through the group or other bits.
fn writable_by_others(meta: &std::fs::Metadata, own_uid: u32) -> bool {
    let owner_ok = meta.uid() == 0 || meta.uid() == own_uid;
    !owner_ok || meta.mode() & 0o022 != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(path: &Path) {
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn tools_are_taken_only_from_folders_the_items_cannot_write() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (ws, system, open) = (root.join("ws"), root.join("sys"), root.join("open"));
        for d in [ws.join(".venv/bin"), system.clone(), open.clone()] {
            std::fs::create_dir_all(&d).unwrap();
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        for name in ["bwrap", "git"] {
            executable(&ws.join(".venv/bin").join(name));
            executable(&open.join(name));
        }
        executable(&system.join("git"));
        let path = std::env::join_paths([
            ws.join(".venv/bin"),
            PathBuf::from("relative/bin"),
            open.clone(),
            system.clone(),
        ])
        .unwrap();
        let tools = Tools::resolve(Some(&path), std::slice::from_ref(&ws), &[]);
        // (tool, where it is found)
        let cases = [("git", Some(system.join("git"))), ("bwrap", None)];
        for (name, want) in cases {
            assert_eq!(tools.path(name), want, "{name}");
        }
        assert_eq!(
            tools.skipped,
            [ws.join(".venv/bin"), PathBuf::from("relative/bin"), open]
        );
        let git = &tools.found[0];
        assert_eq!(git.sha256, hex::encode(Sha256::digest(b"#!/bin/sh\n")));
        assert!(tools.warning().unwrap().contains(".venv/bin"));
    }
}
