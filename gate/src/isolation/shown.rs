//! What of the host a sandbox shows: an allow-list, never the host's root
//! minus a deny-list.
//!
//! Read-only, at their own paths: the system's program and library
//! folders and `/etc` ([`SYSTEM`]), `/sys`, the folders the toolchain
//! variables name ([`TOOLCHAIN_VARIABLES`]), the folders of `PATH`, and
//! `[sandbox] readable`. Those under the gate's home are shown inside the
//! private home instead; the workspace is shown anyway. Nothing else of
//! `/var`, `/srv`, `/home`, `/root`, `/mnt` or `/media` is there, and so no
//! host socket: `/run`, `/tmp` and `/var/tmp` are the run's own.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use gate_harness::sandbox::{Bind, Shown};

pub(crate) use gate_harness::system::FOLDERS as SYSTEM;

/// Variables that name a toolchain's folder, shown read-only wherever it
/// lies.
pub(crate) const TOOLCHAIN_VARIABLES: [&str; 8] = [
    "RUSTUP_HOME",
    "CARGO_HOME",
    "PYENV_ROOT",
    "VIRTUAL_ENV",
    "GOROOT",
    "GOPATH",
    "JAVA_HOME",
    "NVM_DIR",
];

/// The folders a run's toolchain variables, `PATH` and `readable` name,
/// absolute and present, that are neither the root nor above the home or
/// the workspace (which would show all they hold).
fn named(
    env: &[(OsString, OsString)],
    readable: &[PathBuf],
    home: Option<&Path>,
    workspace: &Path,
) -> Vec<PathBuf> {
    let value = |name: &str| {
        env.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_os_str())
            .filter(|v| !v.is_empty())
    };
    let mut out: Vec<PathBuf> = TOOLCHAIN_VARIABLES
        .iter()
        .filter_map(|name| value(name).map(PathBuf::from))
        .collect();
    out.extend(
        value("PATH")
            .map(std::env::split_paths)
            .into_iter()
            .flatten(),
    );
    out.extend(readable.iter().cloned());
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in out {
        let above = |p: &Path| p.starts_with(&path);
        let fine = path.is_absolute()
            && path.parent().is_some()
            && path.exists()
            && !home.is_some_and(above)
            && !above(workspace)
            && !path.starts_with(workspace)
            && !kept.contains(&path);
        if fine {
            kept.push(path);
        }
    }
    kept
}

/// What is shown outside the home: the system's folders, and the named
/// folders none of them holds.
pub(crate) fn outside_home(
    env: &[(OsString, OsString)],
    readable: &[PathBuf],
    home: Option<&Path>,
    workspace: &Path,
) -> Vec<Shown> {
    let mut shown: Vec<Shown> = Vec::new();
    for dir in SYSTEM {
        let path = Path::new(dir);
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    shown.push(Shown::Link {
                        path: path.to_path_buf(),
                        target,
                    });
                }
            }
            Ok(_) => shown.push(Shown::Path(path.to_path_buf())),
            Err(_) => {}
        }
    }
    for path in named(env, readable, home, workspace) {
        let real = path.canonicalize().unwrap_or_else(|_| path.clone());
        let covered = |p: &Path| {
            shown.iter().any(|s| match s {
                Shown::Path(shown) => p.starts_with(shown),
                Shown::Link { path, .. } => p.starts_with(path),
            })
        };
        if home.is_some_and(|h| path.starts_with(h)) || (covered(&path) && covered(&real)) {
            continue;
        }
        shown.push(Shown::Path(path));
    }
    shown
}

/// The named folders under the home, shown read-only in the private home.
pub(crate) fn in_home(
    env: &[(OsString, OsString)],
    readable: &[PathBuf],
    home: &Path,
    workspace: &Path,
) -> Vec<Bind> {
    named(env, readable, Some(home), workspace)
        .into_iter()
        .filter(|p| p.starts_with(home) && p != home)
        .map(|p| Bind {
            source: p.clone(),
            target: p,
        })
        .collect()
}

/// The most entries looked at for sockets under one shown folder.
const SOCKET_SCAN_LIMIT: usize = 20_000;

/// The Unix sockets the sandbox could show: a read-only mount does not stop
/// `connect()`, so each is hidden. Every socket bound to a path in the
/// host's network namespace (the kernel lists them, wherever they are),
/// and what a search of the folders that hold configuration or what the
/// user named finds (`/etc`, `readable`; the first level of each `PATH`
/// folder), which also catches a socket file whose server is in another
/// namespace.
pub(crate) fn sockets(env: &[(OsString, OsString)], readable: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = std::fs::read_to_string("/proc/net/unix")
        .map(|t| bound_sockets(&t))
        .unwrap_or_default();
    found.extend(searched_sockets(env, readable));
    found
}

/// The paths of `/proc/net/unix`'s sockets (abstract ones, `@name`, have
/// no file to hide).
fn bound_sockets(table: &str) -> Vec<PathBuf> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            // Seven fields (the inode padded with spaces), then the path.
            let mut rest = line;
            for _ in 0..7 {
                rest = rest.trim_start();
                rest = &rest[rest.find(' ')?..];
            }
            let path = rest.trim_start();
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

/// The sockets a search of `/etc`, `readable` and the first level of each
/// `PATH` folder finds.
fn searched_sockets(env: &[(OsString, OsString)], readable: &[PathBuf]) -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let mut deep: Vec<PathBuf> = vec![PathBuf::from("/etc")];
    deep.extend(readable.iter().cloned());
    let shallow: Vec<PathBuf> = env
        .iter()
        .find(|(n, _)| n == "PATH")
        .map(|(_, v)| std::env::split_paths(v).collect())
        .unwrap_or_default();
    let mut found = Vec::new();
    let mut look = |root: &Path, depth: usize| {
        let mut todo = vec![(root.to_path_buf(), 0)];
        let mut seen = 0;
        while let Some((dir, d)) = todo.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                if seen > SOCKET_SCAN_LIMIT {
                    return;
                }
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_socket() {
                    found.push(entry.path());
                } else if kind.is_dir() && d + 1 < depth {
                    todo.push((entry.path(), d + 1));
                }
            }
        }
    };
    for root in &deep {
        look(root, usize::MAX);
    }
    for root in shallow.iter().filter(|p| p.is_absolute()) {
        look(root, 1);
    }
    found
}

/// The file `/etc/resolv.conf` leads to when it lies in `/run` (as with
/// systemd-resolved): shown in the private `/run`, so names still resolve.
pub(crate) fn run_files() -> Vec<PathBuf> {
    resolv_target(Path::new("/etc/resolv.conf"))
        .into_iter()
        .collect()
}

fn resolv_target(link: &Path) -> Option<PathBuf> {
    let real = link.canonicalize().ok()?;
    (real.starts_with("/run") || real.starts_with("/var/run")).then_some(real)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn os(s: &str) -> OsString {
        OsStr::new(s).to_owned()
    }

    #[test]
    fn named_folders_are_shown_unless_they_would_show_the_home_or_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home/ci");
        let ws = root.join("work/ws");
        let tools = root.join("tools/bin");
        let pyenv = home.join(".pyenv");
        for d in [&home, &ws, &tools, &pyenv, &ws.join(".venv/bin")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let path = std::env::join_paths([
            tools.clone(),
            ws.join(".venv/bin"),
            root.clone(),
            home.clone(),
            PathBuf::from("relative"),
            root.join("missing"),
        ])
        .unwrap();
        let env = vec![
            (os("PATH"), path),
            (os("PYENV_ROOT"), pyenv.clone().into_os_string()),
            (os("GOROOT"), os("")),
        ];
        let readable = [root.join("work")];
        let outside = outside_home(&env, &readable, Some(&home), &ws);
        let extra: Vec<&Shown> = outside
            .iter()
            .filter(|s| {
                let at = match s {
                    Shown::Path(p) | Shown::Link { path: p, .. } => p,
                };
                !SYSTEM.iter().any(|d| at == Path::new(d))
            })
            .collect();
        // (what is shown outside the home): the tools folder only; the
        // workspace's venv is in the workspace, the root and the home are
        // above what they would show, `readable` naming a folder above the
        // workspace is refused alike.
        assert_eq!(extra, [&Shown::Path(tools)]);
        let inside = in_home(&env, &readable, &home, &ws);
        assert_eq!(
            inside,
            [Bind {
                source: pyenv.clone(),
                target: pyenv
            }]
        );
    }

    #[test]
    fn the_kernels_socket_table_is_read() {
        let table = "Num       RefCount Protocol Flags    Type St Inode Path\n\
            0000000000000000: 00000002 00000000 00010000 0001 01 12345 /run/docker.sock\n\
            0000000000000000: 00000002 00000000 00010000 0001 01  9876 /opt/app/a b.sock\n\
            0000000000000000: 00000002 00000000 00010000 0001 01 23456 @/tmp/.X11-unix/X0\n\
            0000000000000000: 00000003 00000000 00000000 0001 03 34567\n";
        assert_eq!(
            bound_sockets(table),
            [
                PathBuf::from("/run/docker.sock"),
                PathBuf::from("/opt/app/a b.sock")
            ]
        );
    }

    #[test]
    fn sockets_in_named_folders_are_found_to_be_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("data/a/b");
        let bin = dir.path().join("bin");
        for d in [&deep, &bin.join("sub")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let _deep = std::os::unix::net::UnixListener::bind(deep.join("d.sock")).unwrap();
        let _top = std::os::unix::net::UnixListener::bind(bin.join("t.sock")).unwrap();
        let _below = std::os::unix::net::UnixListener::bind(bin.join("sub/s.sock")).unwrap();
        std::fs::write(deep.join("plain"), "").unwrap();
        let env = vec![(os("PATH"), bin.clone().into_os_string())];
        let mut found = searched_sockets(&env, &[dir.path().join("data")]);
        found.retain(|p| p.starts_with(dir.path()));
        found.sort();
        // (a socket deep in `readable`, one at the top of a PATH folder;
        // not one below that)
        assert_eq!(found, [bin.join("t.sock"), deep.join("d.sock")]);
        // The kernel's list has every bound one, below a PATH folder too.
        let mut all = sockets(&env, &[]);
        all.retain(|p| p.starts_with(dir.path()));
        all.sort();
        all.dedup();
        assert_eq!(
            all,
            [
                bin.join("sub/s.sock"),
                bin.join("t.sock"),
                deep.join("d.sock")
            ]
        );
    }

    #[test]
    fn a_resolver_file_in_run_is_shown_and_one_elsewhere_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("resolv.conf");
        std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
        assert_eq!(resolv_target(&link), None);
        // Only root can make a file in /run.
        if let Ok(run) = tempfile::tempdir_in("/run") {
            let file = run.path().join("stub-resolv.conf");
            std::fs::write(&file, "nameserver 127.0.0.53\n").unwrap();
            std::fs::remove_file(&link).unwrap();
            std::os::unix::fs::symlink(&file, &link).unwrap();
            assert_eq!(resolv_target(&link), Some(file.canonicalize().unwrap()));
        }
    }
}
