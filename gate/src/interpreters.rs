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
//!
//! Nor may the file it runs be one the agent could have put there before
//! the run: the file an interpreter resolves to inside the workspace must
//! be vouched for by a commit (the base's, or without a base the one the
//! workspace is at), by being a copy of the interpreter its virtual
//! environment names, or by being an installer's launch script whose own
//! interpreter is vouched for. Anything else is a critical finding before
//! a verdict can rest on it.

mod launcher;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use gate_review::findings::Finding;
use gate_specs::Spec;

use crate::git::Git;
use crate::guard::GUARD_ROLE;
use launcher::Launch;

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
    let dirs = path_dirs(path, workspace);
    let mut out = Vec::new();
    for name in names {
        let Some(found) = find(&name, &dirs) else {
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

/// The folders of `path`, a relative one taken from `workspace` (where the
/// items start).
fn path_dirs(path: Option<&OsStr>, workspace: &Path) -> Vec<PathBuf> {
    path.map(std::env::split_paths)
        .into_iter()
        .flatten()
        .map(|d| {
            if d.is_absolute() {
                d
            } else {
                workspace.join(d)
            }
        })
        .collect()
}

/// Where the shell finds `name` on `dirs`.
fn find(name: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter().map(|d| d.join(name)).find(|p| runnable(p))
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

/// What can vouch for an interpreter's file in the workspace.
pub(crate) struct Reference<'a> {
    /// The gate's git on the workspace's repository.
    pub git: &'a Git,
    /// The commit the workspace is at.
    pub head: Option<&'a str>,
    /// The base commit, when the run has one: then only the base vouches.
    pub base: Option<&'a str>,
}

/// A critical finding for each interpreter whose file in the workspace
/// nothing vouches for (see the module's doc). `path` is the items' `PATH`.
pub(crate) async fn unvouched(
    found: &[Interpreter],
    path: Option<&OsStr>,
    workspace: &Path,
    reference: &Reference<'_>,
) -> Vec<Finding> {
    let dirs = path_dirs(path, workspace);
    let mut out = Vec::new();
    for interpreter in found {
        let Ok(file) = std::fs::canonicalize(workspace.join(&interpreter.path)) else {
            continue;
        };
        if !file.starts_with(workspace) || vouched(&file, workspace, reference, &dirs).await {
            continue;
        }
        let runs = file
            .strip_prefix(workspace)
            .map_or_else(|_| file.display().to_string(), |r| r.display().to_string());
        let resolves = if runs == interpreter.path {
            String::new()
        } else {
            format!(" (which resolves to `{runs}`)")
        };
        let vouching = if reference.base.is_some() {
            "the base's"
        } else {
            "committed"
        };
        out.push(Finding::raised(
            GUARD_ROLE,
            "critical",
            interpreter.path.clone(),
            None,
            format!(
                "The interpreter `{}` is a file in the workspace nothing vouches for",
                interpreter.path
            ),
            format!(
                "A check or criterion runs its verifier with `{}`, which the items' PATH finds \
                 in the workspace{resolves}. That file is not {vouching}, not a copy of the \
                 interpreter its virtual environment names, and not a package installer's \
                 launch script, so it could be anything the agent left there, and it decides \
                 the exam. Build the environment outside the workspace, or with links to its \
                 interpreter (`python -m venv` makes them by default).",
                interpreter.path
            ),
            1.0,
        ));
    }
    out
}

/// Whether `file` (canonical, in `workspace`) is vouched for: by the
/// reference commit or as a copy of its environment's interpreter, or as
/// a launch script whose interpreter is outside the workspace or vouched
/// for that way.
async fn vouched(
    file: &Path,
    workspace: &Path,
    reference: &Reference<'_>,
    dirs: &[PathBuf],
) -> bool {
    let Ok(bytes) = std::fs::read(file) else {
        return false;
    };
    if vouched_file(file, &bytes, workspace, reference).await {
        return true;
    }
    let interpreter = match launcher::launched_by(&bytes) {
        Some(Launch::Path(p)) => p,
        Some(Launch::Name(name)) => match find(&name, dirs) {
            Some(p) => p,
            None => return false,
        },
        None => return false,
    };
    let Ok(interpreter) = std::fs::canonicalize(interpreter) else {
        return false;
    };
    if !interpreter.starts_with(workspace) {
        return true;
    }
    match std::fs::read(&interpreter) {
        Ok(bytes) => vouched_file(&interpreter, &bytes, workspace, reference).await,
        Err(_) => false,
    }
}

/// Whether `file`, holding `bytes`, is the reference commit's or a copy of
/// the interpreter its virtual environment's `pyvenv.cfg` names.
async fn vouched_file(
    file: &Path,
    bytes: &[u8],
    workspace: &Path,
    reference: &Reference<'_>,
) -> bool {
    let commit = reference.base.or(reference.head);
    if let Some(commit) = commit
        && let Ok(Some(committed)) = reference.git.read_at(commit, file).await
        && committed == bytes
    {
        return true;
    }
    copy_of_home(file, bytes, workspace)
}

/// Whether `file` is a byte-for-byte copy of a `python*` program in the
/// folder its environment's `pyvenv.cfg` names as `home` (what
/// `python -m venv --copies` makes), that folder being outside the
/// workspace.
fn copy_of_home(file: &Path, bytes: &[u8], workspace: &Path) -> bool {
    let Some(root) = file.parent().and_then(Path::parent) else {
        return false;
    };
    let Ok(cfg) = std::fs::read_to_string(root.join("pyvenv.cfg")) else {
        return false;
    };
    let Some(home) = cfg.lines().find_map(|l| {
        let (key, value) = l.split_once('=')?;
        (key.trim() == "home").then(|| PathBuf::from(value.trim()))
    }) else {
        return false;
    };
    let Ok(home) = std::fs::canonicalize(home) else {
        return false;
    };
    if home.starts_with(workspace) {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(&home) else {
        return false;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
        .take(64)
        .filter_map(|e| std::fs::canonicalize(e.path()).ok())
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() == bytes.len() as u64))
        .any(|p| std::fs::read(p).is_ok_and(|b| b == bytes))
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

    /// Runs git in `ws` for the test's set-up; returns its stdout.
    fn git(ws: &Path, args: &[&str]) -> String {
        #[allow(clippy::disallowed_methods, reason = "test set-up")]
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(ws)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    fn script(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(path);
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn launch_script(interpreter: &str) -> String {
        format!(
            "#!{interpreter}\nimport re\nimport sys\nfrom pytest import console_main\n\
             if __name__ == '__main__':\n    sys.exit(console_main())\n"
        )
    }

    /// What vouches for an interpreter's file, and what does not: the
    /// planted `exit 0` in a gitignored virtual environment among them.
    #[tokio::test]
    async fn only_a_file_something_vouches_for_runs_the_exam() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        // A Python home outside the workspace, for a copied environment.
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let home = dir.path().join("home").canonicalize().unwrap();
        script(&home.join("python3.99"), "the real interpreter\n");
        git(&ws, &["init", "-q", "-b", "main"]);
        std::fs::write(ws.join(".gitignore"), ".venv/\n").unwrap();
        script(&ws.join("bin/tool"), "#!/bin/sh\necho base\n");
        git(&ws, &["add", "."]);
        git(&ws, &["commit", "-qm", "base"]);
        let base = git(&ws, &["rev-parse", "HEAD"]);
        script(&ws.join("bin/tool"), "#!/bin/sh\necho changed\n");
        script(&ws.join("bin/new"), "#!/bin/sh\necho new\n");
        git(&ws, &["add", "."]);
        git(&ws, &["commit", "-qm", "change"]);
        let head = git(&ws, &["rev-parse", "HEAD"]);

        let venv = ws.join(".venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(
            venv.join("pyvenv.cfg"),
            format!("home = {}\n", home.display()),
        )
        .unwrap();
        symlink("/bin/sh", venv.join("bin/python3")).unwrap();
        script(
            &venv.join("bin/pytest"),
            &launch_script(&venv.join("bin/python3").to_string_lossy()),
        );
        script(&venv.join("bin/python3.99"), "the real interpreter\n");
        script(
            &venv.join("bin/copied"),
            &launch_script(&venv.join("bin/python3.99").to_string_lossy()),
        );
        script(&venv.join("bin/python"), "#!/bin/sh\nexit 0\n");
        script(
            &venv.join("bin/planted"),
            &launch_script(&venv.join("bin/python").to_string_lossy()),
        );
        script(
            &venv.join("bin/by-name"),
            &launch_script("/usr/bin/env python"),
        );
        symlink("python", venv.join("bin/python-link")).unwrap();

        let path = std::env::join_paths([venv.join("bin"), PathBuf::from("/usr/bin")]).unwrap();
        let host_path = crate::environment::Environment::capture()
            .path()
            .map(ToOwned::to_owned);
        let runtime = gate_harness::Launcher::new(crate::git::environment(host_path, None));
        let git_tool = Git::new(runtime, crate::git::Repository::find(&ws));
        let cases: &[(&str, Option<&str>, bool)] = &[
            // (path, base, vouched)
            (".venv/bin/python3", None, true),
            (".venv/bin/pytest", None, true),
            (".venv/bin/python3.99", None, true),
            (".venv/bin/copied", None, true),
            (".venv/bin/python", None, false),
            (".venv/bin/python-link", None, false),
            (".venv/bin/planted", None, false),
            (".venv/bin/by-name", None, false),
            ("bin/tool", None, true),
            ("bin/tool", Some(&base), false),
            ("bin/new", Some(&base), false),
            ("bin/new", None, true),
        ];
        for (at, base, want) in cases {
            let reference = Reference {
                git: &git_tool,
                head: Some(&head),
                base: *base,
            };
            let found = [Interpreter {
                path: (*at).to_owned(),
                state: None,
            }];
            let findings = unvouched(&found, Some(&path), &ws, &reference).await;
            assert_eq!(
                findings.is_empty(),
                *want,
                "{at} with base {base:?}: {findings:?}"
            );
        }
        // A committed file edited after the commit is no longer vouched for.
        script(&ws.join("bin/new"), "#!/bin/sh\nexit 0\n");
        let found = [Interpreter {
            path: "bin/new".to_owned(),
            state: None,
        }];
        let reference = Reference {
            git: &git_tool,
            head: Some(&head),
            base: None,
        };
        let findings = unvouched(&found, Some(&path), &ws, &reference).await;
        assert_eq!(
            findings
                .iter()
                .map(|f| f.title.as_str())
                .collect::<Vec<_>>(),
            ["The interpreter `bin/new` is a file in the workspace nothing vouches for"]
        );
    }
}
