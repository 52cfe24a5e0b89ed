//! The programs that run the exam, when the items' `PATH` finds them in the
//! workspace: `python3` in `python3 tests/accept.py` is a virtual
//! environment's `.venv/bin/python3` once a CI step activated it.
//!
//! The items keep the user's `PATH` (an activated virtual environment must
//! keep working), so such an interpreter is part of what decides the
//! criterion. A virtual environment is rarely committed, so there is no
//! base to compare it with; what an item must not do is replace it while
//! the checks run. Each is recorded before the items start (a link's
//! target, else the file's digest) and looked at again after: one that
//! changed is a critical finding.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use gate_specs::Spec;

use crate::guard::GUARD_ROLE;
use crate::record::Finding;

/// One interpreter found in the workspace, and what it was when the items
/// started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Interpreter {
    /// Workspace-relative path (`.venv/bin/python3`).
    pub path: String,
    /// What it was: `link:TARGET`, `file:DIGEST`, or `None` when gone.
    pub state: Option<String>,
}

/// The programs the spec's checks and criteria run verifiers with that the
/// items' `path` finds inside `workspace`, each with its state now.
pub(crate) fn in_workspace(
    spec: &Spec,
    path: Option<&OsStr>,
    workspace: &Path,
) -> Vec<Interpreter> {
    let runs = spec
        .checks
        .iter()
        .map(|c| c.run.as_str())
        .chain(spec.criteria().filter_map(|(_, c)| c.run.as_deref()));
    let mut names: Vec<String> = Vec::new();
    for run in runs {
        for name in gate_specs::verifier_programs(run) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    let dirs: Vec<PathBuf> = path
        .map(std::env::split_paths)
        .into_iter()
        .flatten()
        .map(|d| {
            if d.is_absolute() {
                d
            } else {
                workspace.join(d)
            }
        })
        .collect();
    let mut out = Vec::new();
    for name in names {
        let Some(found) = dirs.iter().map(|d| d.join(&name)).find(|p| runnable(p)) else {
            continue;
        };
        if let Ok(rel) = found.strip_prefix(workspace)
            && let Some(rel) = rel.to_str()
        {
            out.push(Interpreter {
                path: rel.to_owned(),
                state: state(&found, workspace),
            });
        }
    }
    out
}

/// Whether the shell would run `path`: an executable file, or a link to one.
fn runnable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What `path` is: each link on the way (a venv's `python3` →
/// `python3.11` → `/usr/bin/python3.11`) while it stays in `workspace`,
/// then the file's digest when that is in the workspace too.
fn state(path: &Path, workspace: &Path) -> Option<String> {
    let mut parts = Vec::new();
    let mut at = path.to_path_buf();
    for _ in 0..16 {
        let meta = std::fs::symlink_metadata(&at).ok()?;
        if !meta.is_symlink() {
            let bytes = std::fs::read(&at).ok()?;
            parts.push(format!("file:{}", blake3::hash(&bytes).to_hex()));
            break;
        }
        let target = std::fs::read_link(&at).ok()?;
        parts.push(format!("link:{}", target.display()));
        at = at
            .parent()
            .map_or_else(|| target.clone(), |p| p.join(&target));
        if !at.starts_with(workspace) {
            break;
        }
    }
    Some(parts.join(" "))
}

/// A critical finding for each interpreter an item replaced while the
/// checks ran.
pub(crate) fn replaced(before: &[Interpreter], workspace: &Path) -> Vec<Finding> {
    before
        .iter()
        .filter(|i| state(&workspace.join(&i.path), workspace) != i.state)
        .map(|i| {
            Finding::raised(
                GUARD_ROLE,
                "critical",
                i.path.clone(),
                None,
                format!("The interpreter `{}` changed while the checks ran", i.path),
                "A check or criterion runs its verifier with this program, which the items' \
                 PATH finds in the workspace; what the gate runs must not replace the program \
                 that runs the exam."
                    .to_owned(),
                1.0,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    #[test]
    fn an_interpreter_the_path_finds_in_the_workspace_is_watched() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".venv/bin")).unwrap();
        symlink("python3.11", ws.join(".venv/bin/python3")).unwrap();
        symlink("/bin/sh", ws.join(".venv/bin/python3.11")).unwrap();
        let node = ws.join(".venv/bin/node");
        std::fs::write(&node, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o755)).unwrap();
        let spec = gate_specs::parse_str(
            "[spec]\nid = \"s\"\n[[check]]\nid = \"a\"\nrun = \"python3 tests/a.py\"\n\
             [[check]]\nid = \"b\"\nrun = \"node e2e.js\"\n[[check]]\nid = \"c\"\nrun = \"bash x.sh\"\n",
            Path::new("gate.toml"),
            gate_specs::Format::Toml,
        )
        .unwrap();
        let path = std::env::join_paths([
            PathBuf::from(".venv/bin"),
            PathBuf::from("/usr/bin"),
            PathBuf::from("/bin"),
        ])
        .unwrap();
        let found = in_workspace(&spec, Some(&path), &ws);
        // (what is watched): the venv's python3 and node; bash is the system's.
        let paths: Vec<&str> = found.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(paths, [".venv/bin/python3", ".venv/bin/node"]);
        assert!(replaced(&found, &ws).is_empty());
        // An item points the link's own target elsewhere and rewrites the
        // script.
        std::fs::remove_file(ws.join(".venv/bin/python3.11")).unwrap();
        symlink("/bin/true", ws.join(".venv/bin/python3.11")).unwrap();
        std::fs::write(&node, "#!/bin/sh\nexit 0\n").unwrap();
        let titles: Vec<String> = replaced(&found, &ws).into_iter().map(|f| f.title).collect();
        assert_eq!(
            titles,
            [
                "The interpreter `.venv/bin/python3` changed while the checks ran",
                "The interpreter `.venv/bin/node` changed while the checks ran"
            ]
        );
    }
}
