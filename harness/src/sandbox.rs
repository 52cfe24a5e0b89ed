//! Isolation as a policy value: what a process the gate starts for the
//! workspace may see, turned into a bubblewrap command line in one place.
//!
//! Everything the gate runs for the workspace (checks, services, criteria,
//! task tests, the browser of a page check) is code the agent under review
//! wrote or can edit. Each runs through a [`Launcher`]: an exact environment
//! (nothing inherited from the gate) and, where the kernel allows, a
//! [`Sandbox`]:
//!
//! - a PID namespace of its own: the gate and every other process are
//!   invisible, and whatever the item started dies with it (bubblewrap's
//!   init is PID 1; when the item's command ends, so does the namespace);
//! - every capability dropped, root included, and no new privileges, so
//!   nothing mounted to hide a path can be unmounted;
//! - the filesystem read-only but for the workspace, the run's private
//!   `/tmp` and `HOME`, and what the policy makes writable; the paths the
//!   policy names read-only inside the workspace (`.git`, the spec, the
//!   gate's other inputs, protected verifiers) stay so;
//! - hidden paths (the state directory, the signing key's file, credential
//!   files) replaced by an empty directory or an empty file;
//! - a new session, so no terminal of the gate's can be reached;
//! - with [`Network::Private`], a network namespace with only loopback.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Which network a sandboxed process sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// The host's network.
    #[default]
    Host,
    /// A network namespace of its own with only loopback.
    Private,
}

/// A path made unreachable inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hidden {
    /// The path (absolute, symbolic links resolved).
    pub path: PathBuf,
    /// A folder (replaced by an empty read-only one) or a file (by an empty file).
    pub dir: bool,
}

/// A file shown at another path, read-only: the base's version of a
/// protected verifier the change modified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overlay {
    /// The file shown (outside the workspace).
    pub source: PathBuf,
    /// Where it is shown (inside the workspace).
    pub target: PathBuf,
}

/// A host path shown read-only at a path of the private home.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bind {
    /// The host path.
    pub source: PathBuf,
    /// Where it is shown.
    pub target: PathBuf,
}

/// The private `HOME` of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Home {
    /// The path `HOME` names inside the sandbox.
    pub path: PathBuf,
    /// The host folder shown there (empty at the start of the run).
    pub source: PathBuf,
    /// Toolchain folders shown read-only inside it.
    pub read_only: Vec<Bind>,
}

/// What a sandboxed process may see and touch: one value, turned into a
/// bubblewrap command line by [`Sandbox::args`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sandbox {
    /// The bubblewrap executable.
    pub bwrap: PathBuf,
    /// The workspace: writable, the working directory.
    pub workspace: PathBuf,
    /// Paths inside the workspace that stay read-only.
    pub read_only: Vec<PathBuf>,
    /// Files shown read-only over workspace paths.
    pub overlays: Vec<Overlay>,
    /// Paths made unreachable.
    pub hidden: Vec<Hidden>,
    /// Paths outside the workspace that are writable (shared with later runs).
    pub writable: Vec<PathBuf>,
    /// The host folder shown at `/tmp`: one per run, shared by its items.
    pub tmp: PathBuf,
    /// The private home, when the gate's user has one.
    pub home: Option<Home>,
    /// The network.
    pub network: Network,
}

/// Where a path's content comes from inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// The host's file system, as it is.
    Host,
    /// A folder of the gate's (the private `/tmp` or `HOME`).
    Private,
}

impl Sandbox {
    /// The bubblewrap arguments that run a command in `cwd` under this
    /// policy; the command and its arguments follow them.
    pub fn args(&self, cwd: &Path) -> Vec<OsString> {
        let mut a = Args::default();
        a.flags(&[
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]);
        if self.network == Network::Private {
            a.flags(&["--unshare-net"]);
        }
        a.flags(&["--cap-drop", "ALL"]);
        a.pair("--ro-bind", Path::new("/"), Path::new("/"));
        a.one("--dev", Path::new("/dev"));
        a.one("--proc", Path::new("/proc"));
        a.pair("--bind", &self.tmp, Path::new("/tmp"));
        if let Some(home) = &self.home {
            a.pair("--bind", &home.source, &home.path);
            for bind in &home.read_only {
                a.pair("--ro-bind", &bind.source, &bind.target);
            }
        }
        for dir in &self.writable {
            a.pair("--bind", dir, dir);
        }
        a.pair("--bind", &self.workspace, &self.workspace);
        for path in &self.read_only {
            a.pair("--ro-bind", path, path);
        }
        for overlay in &self.overlays {
            a.pair("--ro-bind", &overlay.source, &overlay.target);
        }
        for hidden in &self.hidden {
            let inside_another = self
                .hidden
                .iter()
                .any(|h| h.dir && h.path != hidden.path && hidden.path.starts_with(&h.path));
            if inside_another || self.origin(&hidden.path) == Origin::Private {
                // Already out of sight: masking it again would fail or
                // only create it.
                continue;
            }
            if hidden.dir {
                a.one("--tmpfs", &hidden.path);
                a.one("--remount-ro", &hidden.path);
            } else {
                a.pair("--ro-bind", Path::new("/dev/null"), &hidden.path);
            }
        }
        a.one("--chdir", cwd);
        a.flags(&["--"]);
        a.0
    }

    /// Where the content at `path` comes from: the innermost mount that
    /// holds it.
    fn origin(&self, path: &Path) -> Origin {
        let mut best: (usize, Origin) = (0, Origin::Host);
        let mut consider = |mount: &Path, origin: Origin| {
            let depth = mount.components().count();
            if path.starts_with(mount) && depth >= best.0 {
                best = (depth, origin);
            }
        };
        consider(Path::new("/tmp"), Origin::Private);
        if let Some(home) = &self.home {
            consider(&home.path, Origin::Private);
            for bind in &home.read_only {
                consider(&bind.target, Origin::Host);
            }
        }
        for dir in &self.writable {
            consider(dir, Origin::Host);
        }
        consider(&self.workspace, Origin::Host);
        best.1
    }
}

/// A bubblewrap command line being built.
#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn flags(&mut self, flags: &[&str]) {
        self.0.extend(flags.iter().map(OsString::from));
    }

    fn one(&mut self, flag: &str, path: &Path) {
        self.0.push(flag.into());
        self.0.push(path.into());
    }

    fn pair(&mut self, flag: &str, source: &Path, target: &Path) {
        self.0.push(flag.into());
        self.0.push(source.into());
        self.0.push(target.into());
    }
}

/// How the processes of a run are started: exactly this environment, and
/// the sandbox when there is one.
#[derive(Debug, Clone, Default)]
pub struct Launcher {
    env: Vec<(OsString, OsString)>,
    sandbox: Option<Sandbox>,
}

impl Launcher {
    /// Processes get exactly `env` and run unisolated.
    pub fn new(env: Vec<(OsString, OsString)>) -> Self {
        Self { env, sandbox: None }
    }

    /// Processes get exactly `env` and run in `sandbox`.
    pub fn sandboxed(env: Vec<(OsString, OsString)>, sandbox: Sandbox) -> Self {
        Self {
            env,
            sandbox: Some(sandbox),
        }
    }

    /// The sandbox, if processes run in one.
    pub fn sandbox(&self) -> Option<&Sandbox> {
        self.sandbox.as_ref()
    }

    /// The environment every process gets.
    pub fn env(&self) -> &[(OsString, OsString)] {
        &self.env
    }

    /// A new folder for a process to write in, removed when dropped, and its
    /// path as the process sees it: in the sandbox's private `/tmp` when
    /// there is one, else in the system's temporary folder.
    pub fn temp_dir(&self, prefix: &str) -> std::io::Result<(tempfile::TempDir, PathBuf)> {
        let mut builder = tempfile::Builder::new();
        builder.prefix(prefix);
        match &self.sandbox {
            None => {
                let dir = builder.tempdir()?;
                let inside = dir.path().to_path_buf();
                Ok((dir, inside))
            }
            Some(sandbox) => {
                let dir = builder.tempdir_in(&sandbox.tmp)?;
                let name = dir.path().file_name().unwrap_or_default().to_owned();
                Ok((dir, Path::new("/tmp").join(name)))
            }
        }
    }

    /// The program to start and its arguments, for `program args…` run in `cwd`.
    pub(crate) fn argv(
        &self,
        program: &OsStr,
        args: &[&OsStr],
        cwd: &Path,
    ) -> (OsString, Vec<OsString>) {
        match &self.sandbox {
            None => (
                program.to_owned(),
                args.iter().map(|a| (*a).to_owned()).collect(),
            ),
            Some(sandbox) => {
                let mut all = sandbox.args(cwd);
                all.push(program.to_owned());
                all.extend(args.iter().map(|a| (*a).to_owned()));
                (sandbox.bwrap.clone().into_os_string(), all)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Sandbox {
        Sandbox {
            bwrap: "/usr/bin/bwrap".into(),
            workspace: "/tmp/ws".into(),
            read_only: vec!["/tmp/ws/.git".into(), "/tmp/ws/gate.toml".into()],
            overlays: vec![Overlay {
                source: "/var/base/e2e.sh".into(),
                target: "/tmp/ws/scripts/e2e.sh".into(),
            }],
            hidden: vec![
                Hidden {
                    path: "/tmp/ws/.gate".into(),
                    dir: true,
                },
                Hidden {
                    path: "/root/.ssh".into(),
                    dir: true,
                },
                Hidden {
                    path: "/root/.rustup/credentials".into(),
                    dir: false,
                },
                Hidden {
                    path: "/tmp/other".into(),
                    dir: true,
                },
                Hidden {
                    path: "/etc/gate/signing.key".into(),
                    dir: false,
                },
                Hidden {
                    path: "/tmp/ws/.gate/ledger.db".into(),
                    dir: false,
                },
            ],
            writable: vec!["/cache".into()],
            tmp: "/var/run-tmp".into(),
            home: Some(Home {
                path: "/root".into(),
                source: "/var/run-home".into(),
                read_only: vec![Bind {
                    source: "/root/.rustup".into(),
                    target: "/root/.rustup".into(),
                }],
            }),
            network: Network::Host,
        }
    }

    #[test]
    fn the_policy_becomes_one_command_line_in_mount_order() {
        let args: Vec<String> = policy()
            .args(Path::new("/tmp/ws"))
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        let line = args.join(" ");
        let want = "--die-with-parent --new-session --unshare-pid --unshare-ipc --unshare-uts \
             --unshare-cgroup-try --cap-drop ALL --ro-bind / / --dev /dev --proc /proc \
             --bind /var/run-tmp /tmp --bind /var/run-home /root --ro-bind /root/.rustup /root/.rustup \
             --bind /cache /cache --bind /tmp/ws /tmp/ws --ro-bind /tmp/ws/.git /tmp/ws/.git \
             --ro-bind /tmp/ws/gate.toml /tmp/ws/gate.toml \
             --ro-bind /var/base/e2e.sh /tmp/ws/scripts/e2e.sh \
             --tmpfs /tmp/ws/.gate --remount-ro /tmp/ws/.gate \
             --ro-bind /dev/null /root/.rustup/credentials \
             --ro-bind /dev/null /etc/gate/signing.key --chdir /tmp/ws --";
        assert_eq!(line, want);
    }

    #[test]
    fn a_private_network_is_its_own_namespace() {
        let mut p = policy();
        p.network = Network::Private;
        let args = p.args(Path::new("/tmp/ws"));
        assert!(args.iter().any(|a| a == "--unshare-net"));
    }

    #[test]
    fn hidden_paths_already_out_of_sight_are_left_alone() {
        let p = policy();
        // (path, origin)
        let cases = [
            ("/root/.ssh", Origin::Private),
            ("/root/.rustup/x", Origin::Host),
            ("/tmp/other", Origin::Private),
            ("/tmp/ws/.gate", Origin::Host),
            ("/etc/passwd", Origin::Host),
            ("/cache/a", Origin::Host),
        ];
        for (path, origin) in cases {
            assert_eq!(p.origin(Path::new(path)), origin, "{path}");
        }
    }

    #[test]
    fn a_launcher_without_a_sandbox_runs_the_program_itself() {
        let l = Launcher::new(vec![("PATH".into(), "/bin".into())]);
        let (program, args) = l.argv(
            OsStr::new("sh"),
            &[OsStr::new("-c"), OsStr::new("true")],
            Path::new("/w"),
        );
        assert_eq!(program, "sh");
        assert_eq!(args, ["-c", "true"]);
        let l = Launcher::sandboxed(Vec::new(), policy());
        let (program, args) = l.argv(OsStr::new("sh"), &[OsStr::new("-c")], Path::new("/tmp/ws"));
        assert_eq!(program, "/usr/bin/bwrap");
        assert_eq!(args[args.len() - 3..], ["--", "sh", "-c"]);
    }
}
