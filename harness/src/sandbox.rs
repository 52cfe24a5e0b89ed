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
//! - with [`Network::Private`], a network namespace of its own with only
//!   loopback; with [`Network::Join`], the run's network namespace.
//!
//! A run with a private network has one namespace for all its processes,
//! so a service and the criteria that talk to it meet on its loopback. One
//! process, the holder (`netns`), keeps it alive. Bubblewrap cannot join an
//! existing namespace, so a process is started through `nsenter` into the
//! holder's namespace, and bubblewrap inside it shares that network. The
//! gate's own code that must reach the run's services (readiness probes,
//! the bridge to a sandboxed browser's DevTools endpoint) runs there as a
//! [`Helper`] subprocess of the gate's own executable.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Which network a sandboxed process sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// The host's network.
    #[default]
    Host,
    /// A network namespace of its own with only loopback.
    Private,
    /// The run's network namespace, shared by all its processes.
    Join(Namespace),
}

/// A network namespace one process of the run holds, which the run's
/// processes join through `nsenter`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Namespace {
    /// The `nsenter` executable.
    pub nsenter: PathBuf,
    /// The holder's pid.
    pub pid: u32,
    /// Whether the holder's user namespace is joined too: when the gate is
    /// unprivileged the network namespace belongs to the user namespace the
    /// holder made, and only a member of it may enter.
    pub user: bool,
    /// The program that runs a [`Helper`] inside: the gate's own executable.
    pub helper: PathBuf,
}

impl Namespace {
    /// The `nsenter` arguments that run a command inside the namespace; the
    /// command and its arguments follow them.
    pub fn args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec!["--target".into(), self.pid.to_string().into()];
        if self.user {
            // Joining a user namespace maps the caller to root there unless
            // told otherwise: the process keeps the gate's uid and gid.
            a.extend(["--user".into(), "--preserve-credentials".into()]);
        }
        a.extend(["--net".into(), "--".into()]);
        a
    }
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
        match self.network {
            Network::Private => a.flags(&["--unshare-net"]),
            // Started inside the run's namespace: sharing it is the point.
            Network::Host | Network::Join(_) => {}
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
/// the sandbox or the network namespace when there is one.
#[derive(Debug, Clone, Default)]
pub struct Launcher {
    env: Vec<(OsString, OsString)>,
    how: How,
}

/// Where a launcher's processes run.
#[derive(Debug, Clone, Default)]
enum How {
    /// As they are.
    #[default]
    Direct,
    /// In a sandbox (inside the run's network namespace when its network
    /// says so).
    Sandboxed(Box<Sandbox>),
    /// Only inside the run's network namespace: the gate's own helpers.
    Joined(Namespace),
}

impl Launcher {
    /// Processes get exactly `env` and run unisolated.
    pub fn new(env: Vec<(OsString, OsString)>) -> Self {
        Self {
            env,
            how: How::Direct,
        }
    }

    /// Processes get exactly `env` and run in `sandbox`.
    pub fn sandboxed(env: Vec<(OsString, OsString)>, sandbox: Sandbox) -> Self {
        Self {
            env,
            how: How::Sandboxed(Box::new(sandbox)),
        }
    }

    /// The sandbox, if processes run in one.
    pub fn sandbox(&self) -> Option<&Sandbox> {
        match &self.how {
            How::Sandboxed(sandbox) => Some(sandbox),
            How::Direct | How::Joined(_) => None,
        }
    }

    /// The run's network namespace, if processes run inside one.
    pub fn namespace(&self) -> Option<&Namespace> {
        match &self.how {
            How::Sandboxed(sandbox) => match &sandbox.network {
                Network::Join(namespace) => Some(namespace),
                Network::Host | Network::Private => None,
            },
            How::Joined(namespace) => Some(namespace),
            How::Direct => None,
        }
    }

    /// The launcher of the gate's own [`Helper`]s, when processes run in a
    /// network namespace the gate's own process is outside of: the helpers
    /// join the namespace, with this environment, and nothing else.
    pub fn helpers(&self) -> Option<Self> {
        self.namespace().map(|namespace| Self {
            env: self.env.clone(),
            how: How::Joined(namespace.clone()),
        })
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
        match &self.how {
            How::Direct | How::Joined(_) => {
                let dir = builder.tempdir()?;
                let inside = dir.path().to_path_buf();
                Ok((dir, inside))
            }
            How::Sandboxed(sandbox) => {
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
        let command =
            std::iter::once(program.to_owned()).chain(args.iter().map(|a| (*a).to_owned()));
        match &self.how {
            How::Direct => (
                program.to_owned(),
                args.iter().map(|a| (*a).to_owned()).collect(),
            ),
            How::Joined(namespace) => {
                let mut all = namespace.args();
                all.extend(command);
                (namespace.nsenter.clone().into_os_string(), all)
            }
            How::Sandboxed(sandbox) => {
                let mut all = sandbox.args(cwd);
                all.extend(command);
                match &sandbox.network {
                    Network::Join(namespace) => {
                        let mut joined = namespace.args();
                        joined.push(sandbox.bwrap.clone().into_os_string());
                        joined.extend(all);
                        (namespace.nsenter.clone().into_os_string(), joined)
                    }
                    Network::Host | Network::Private => {
                        (sandbox.bwrap.clone().into_os_string(), all)
                    }
                }
            }
        }
    }
}

/// The hidden subcommand of the gate's executable that runs a [`Helper`].
pub const HELPER_COMMAND: &str = "sandbox-helper";

/// What the gate's own code does inside the run's network namespace, as a
/// subprocess of the gate's executable (`gate sandbox-helper …`): the
/// gate's own process is outside the namespace and cannot reach in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Helper {
    /// Tries a service's network readiness probes until they all answer,
    /// for at most `within`; says the last failure when they do not.
    Ready {
        /// `ready_tcp`'s `host:port`.
        tcp: Option<String>,
        /// `ready_http`'s URL.
        http: Option<String>,
        /// How long it may try.
        within: Duration,
    },
    /// Listens on the Unix socket `socket` (reachable from outside the
    /// namespace through the file system) and connects each connection to
    /// `to` inside it: the bridge to a sandboxed browser's DevTools.
    Forward {
        /// The socket's path.
        socket: PathBuf,
        /// `host:port` inside the namespace.
        to: String,
    },
}

impl Helper {
    /// The whole command line that runs the helper with `namespace`'s
    /// helper program.
    pub fn argv(&self, namespace: &Namespace) -> Vec<String> {
        std::iter::once(namespace.helper.as_os_str().to_owned())
            .chain(self.args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// The command line after the program: the subcommand and its arguments.
    pub fn args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec![HELPER_COMMAND.into()];
        match self {
            Self::Ready { tcp, http, within } => {
                a.extend([
                    "ready".into(),
                    "--within-ms".into(),
                    within.as_millis().to_string().into(),
                ]);
                if let Some(tcp) = tcp {
                    a.extend(["--tcp".into(), tcp.into()]);
                }
                if let Some(http) = http {
                    a.extend(["--http".into(), http.into()]);
                }
            }
            Self::Forward { socket, to } => {
                a.extend(["forward".into(), socket.into(), to.into()]);
            }
        }
        a
    }

    /// The helper a command line (after the subcommand) asks for.
    pub fn parse(args: &[OsString]) -> Result<Self, String> {
        let words: Vec<&str> = args
            .iter()
            .map(|a| {
                a.to_str()
                    .ok_or_else(|| format!("not UTF-8: {}", a.to_string_lossy()))
            })
            .collect::<Result<_, _>>()?;
        match words.as_slice() {
            ["forward", socket, to] => Ok(Self::Forward {
                socket: PathBuf::from(socket),
                to: (*to).to_owned(),
            }),
            ["ready", rest @ ..] => {
                let (mut tcp, mut http, mut within) = (None, None, None);
                for pair in rest.chunks(2) {
                    match pair {
                        ["--tcp", v] => tcp = Some((*v).to_owned()),
                        ["--http", v] => http = Some((*v).to_owned()),
                        ["--within-ms", v] => {
                            within = Some(Duration::from_millis(
                                v.parse()
                                    .map_err(|_| format!("not a number of milliseconds: {v}"))?,
                            ));
                        }
                        other => return Err(format!("unknown arguments: {}", other.join(" "))),
                    }
                }
                Ok(Self::Ready {
                    tcp,
                    http,
                    within: within.ok_or("--within-ms is missing")?,
                })
            }
            other => Err(format!("unknown helper: {}", other.join(" "))),
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

    fn namespace(user: bool) -> Namespace {
        Namespace {
            nsenter: "/usr/bin/nsenter".into(),
            pid: 4242,
            user,
            helper: "/usr/local/bin/gate".into(),
        }
    }

    fn strings(args: &[OsString]) -> Vec<String> {
        args.iter()
            .map(|a| a.to_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn a_private_network_is_its_own_namespace_and_the_runs_is_shared() {
        // (network, whether bubblewrap unshares the network)
        let cases = [
            (Network::Host, false),
            (Network::Private, true),
            (Network::Join(namespace(false)), false),
        ];
        for (network, unshares) in cases {
            let mut p = policy();
            p.network = network.clone();
            let args = p.args(Path::new("/tmp/ws"));
            assert_eq!(
                args.iter().any(|a| a == "--unshare-net"),
                unshares,
                "{network:?}"
            );
        }
    }

    #[test]
    fn a_process_joins_the_runs_network_through_nsenter_then_bubblewrap() {
        // (the gate's user has the holder's user namespace to join, the
        // nsenter arguments before the command)
        let cases: [(bool, &[&str]); 2] = [
            (false, &["--target", "4242", "--net", "--"]),
            (
                true,
                &[
                    "--target",
                    "4242",
                    "--user",
                    "--preserve-credentials",
                    "--net",
                    "--",
                ],
            ),
        ];
        for (user, nsenter) in cases {
            let mut p = policy();
            p.network = Network::Join(namespace(user));
            let bwrap = strings(&p.args(Path::new("/tmp/ws")));
            let l = Launcher::sandboxed(Vec::new(), p);
            let (program, args) = l.argv(
                OsStr::new("sh"),
                &[OsStr::new("-c"), OsStr::new("true")],
                Path::new("/tmp/ws"),
            );
            assert_eq!(program, "/usr/bin/nsenter");
            let mut want: Vec<String> = nsenter.iter().map(|a| (*a).to_owned()).collect();
            want.push("/usr/bin/bwrap".to_owned());
            want.extend(bwrap);
            want.extend(["sh", "-c", "true"].map(str::to_owned));
            assert_eq!(strings(&args), want, "user {user}");

            // The gate's helpers join the namespace and nothing else.
            let helpers = l.helpers().expect("a joined launcher has helpers");
            assert!(helpers.sandbox().is_none());
            let (program, args) = helpers.argv(
                OsStr::new("/usr/local/bin/gate"),
                &[OsStr::new("sandbox-helper")],
                Path::new("/tmp/ws"),
            );
            assert_eq!(program, "/usr/bin/nsenter");
            let mut want: Vec<String> = nsenter.iter().map(|a| (*a).to_owned()).collect();
            want.extend(["/usr/local/bin/gate", "sandbox-helper"].map(str::to_owned));
            assert_eq!(strings(&args), want, "user {user}");
        }
        // Without the run's namespace the gate's own process reaches the
        // services: no helpers.
        assert!(
            Launcher::sandboxed(Vec::new(), policy())
                .helpers()
                .is_none()
        );
        assert!(Launcher::new(Vec::new()).helpers().is_none());
    }

    #[test]
    fn helper_command_lines_are_read_back_or_refused() {
        // (arguments after the subcommand, what they ask for)
        let cases: [(&[&str], Result<Helper, &str>); 5] = [
            (
                &["ready", "--within-ms", "250", "--http", "http://h/"],
                Ok(Helper::Ready {
                    tcp: None,
                    http: Some("http://h/".to_owned()),
                    within: Duration::from_millis(250),
                }),
            ),
            (
                &["forward", "/s", "127.0.0.1:1"],
                Ok(Helper::Forward {
                    socket: "/s".into(),
                    to: "127.0.0.1:1".to_owned(),
                }),
            ),
            (&["ready", "--tcp", "h:1"], Err("--within-ms is missing")),
            (
                &["ready", "--within-ms", "soon"],
                Err("not a number of milliseconds: soon"),
            ),
            (
                &["shell", "rm -rf /"],
                Err("unknown helper: shell rm -rf /"),
            ),
        ];
        for (args, want) in cases {
            let args: Vec<OsString> = args.iter().map(OsString::from).collect();
            assert_eq!(
                Helper::parse(&args),
                want.map_err(str::to_owned),
                "{args:?}"
            );
        }
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
