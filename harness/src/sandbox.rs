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
//! - every capability dropped and no new privileges, so nothing mounted to
//!   hide a path can be unmounted; with an [`Identity`] (the gate runs as
//!   root) the item runs as a uid of the run's own, never host uid 0;
//! - an allow-listed root: only the host paths the policy shows, read-only,
//!   a fresh `/proc` with the kernel's tunables read-only, a minimal
//!   `/dev`, and private `/tmp`, `/var/tmp`, `/run`, `/dev/shm` and `HOME`;
//!   writable only the workspace, those private folders and what the
//!   policy makes writable; the paths the policy names read-only inside
//!   the workspace (`.git`, the spec, the gate's other inputs, protected
//!   verifiers) stay so;
//! - a seccomp filter ([`crate::seccomp`]), and bubblewrap's arguments read
//!   from a file, not its command line;
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
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::seed::Private;

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

/// A host folder shown rebuilt without the hidden entries directly in it,
/// so that neither its listing nor the sandbox's mount table names them:
/// an empty read-only folder with the host folder's mode, each other entry
/// shown back in it read-only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rebuilt {
    /// The folder (absolute, symbolic links resolved).
    pub path: PathBuf,
    /// Its permission bits.
    pub mode: u32,
    /// Its other entries.
    pub entries: Vec<Entry>,
}

/// One entry of a [`Rebuilt`] folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Its name in the folder.
    pub name: OsString,
    /// A symbolic link's target (made again as a link, since a bind would
    /// follow it), or none for anything else (bound back).
    pub link: Option<PathBuf>,
}

/// Most entries a folder holding a hidden path may have to be rebuilt
/// without it: each one is a mount in every item's sandbox. A hidden file
/// in a larger folder, or in one the items may write, is emptied in place
/// instead (its name stays listed).
pub const REBUILD_AT_MOST: usize = 32;

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

/// A host path shown inside the sandbox at its own path, read-only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Shown {
    /// A folder or file, bound read-only.
    Path(PathBuf),
    /// A symbolic link the host has at `path` (`/bin` → `usr/bin` on a
    /// merged `/usr`), made again inside.
    Link {
        /// Where the link is.
        path: PathBuf,
        /// What it points at, as the host's link says.
        target: PathBuf,
    },
}

/// Who the items run as when the gate runs as root: bubblewrap starts as
/// root (so it can mount what only root can reach), keeps only the
/// capabilities that switch identity, and [`Identity::dropper`] drops to
/// this uid before the item's command, with no capability left, an empty
/// bounding set and no new privileges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The run's own uid (never 0).
    pub uid: u32,
    /// Its gid.
    pub gid: u32,
    /// The program that drops to it.
    pub dropper: Dropper,
    /// Files shown over `/etc/passwd` and `/etc/group` that name the uid,
    /// so tools that look their user up find one.
    pub accounts: Option<(PathBuf, PathBuf)>,
}

/// Where the gate's own `gate-drop` is shown inside a sandbox (under its
/// private `/run`).
pub const DROPPER_INSIDE: &str = "/run/gate-drop";

/// The program that switches an item to the run's identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Dropper {
    /// The gate's own `gate-drop` at this host path, shown read-only at
    /// [`DROPPER_INSIDE`]: it loads no locale and no library of its own.
    Own(PathBuf),
    /// util-linux's `setpriv` at this path, when `gate-drop` is not beside
    /// the gate.
    Setpriv(PathBuf),
}

impl Identity {
    /// The command that runs the rest of the line as this identity.
    pub fn drop_args(&self) -> Vec<OsString> {
        match &self.dropper {
            Dropper::Own(_) => vec![
                DROPPER_INSIDE.into(),
                self.uid.to_string().into(),
                self.gid.to_string().into(),
                "--".into(),
            ],
            Dropper::Setpriv(setpriv) => vec![
                setpriv.clone().into_os_string(),
                format!("--reuid={}", self.uid).into(),
                format!("--regid={}", self.gid).into(),
                "--clear-groups".into(),
                "--inh-caps=-all".into(),
                "--bounding-set=-all".into(),
                "--no-new-privs".into(),
                "--".into(),
            ],
        }
    }
}

/// What a sandboxed process may see and touch: one value, turned into a
/// bubblewrap command line by [`Sandbox::args`].
///
/// The root inside is empty but for what is listed here: the host paths
/// of `shown`, a minimal `/dev`, a fresh `/proc` with the kernel's
/// tunables read-only, private `/tmp`, `/var/tmp`, `/run` and `/dev/shm`,
/// the private home, the writable paths and the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sandbox {
    /// The bubblewrap executable.
    pub bwrap: PathBuf,
    /// Host paths shown read-only at their own path (system folders,
    /// toolchains, `PATH` folders, `[sandbox] readable`).
    pub shown: Vec<Shown>,
    /// Files under `/run` shown read-only in the private `/run` (where
    /// `/etc/resolv.conf` leads).
    pub run_files: Vec<PathBuf>,
    /// The workspace: writable, the working directory.
    pub workspace: PathBuf,
    /// Where the workspace is shown inside, when not at its own path: a
    /// base's checkout shown where the change's repository is, so what
    /// runs on the base cannot tell the two runs apart by where it runs.
    #[serde(default)]
    pub workspace_at: Option<PathBuf>,
    /// Paths that stay read-only: inside the workspace, or shown read-only
    /// at their own path outside it (the objects a base's checkout borrows).
    pub read_only: Vec<PathBuf>,
    /// Files shown read-only over workspace paths.
    pub overlays: Vec<Overlay>,
    /// Paths made unreachable.
    pub hidden: Vec<Hidden>,
    /// Read-only host folders shown without the hidden paths directly in
    /// them ([`Sandbox::rebuild_hidden_parents`]).
    #[serde(default)]
    pub rebuilt: Vec<Rebuilt>,
    /// Paths outside the workspace that are writable (shared with later runs).
    pub writable: Vec<PathBuf>,
    /// The host folder shown at `/tmp`: one per item
    /// ([`Launcher::with_private`]).
    pub tmp: PathBuf,
    /// The host folder shown at `/var/tmp`: one per item, like `tmp`.
    pub var_tmp: PathBuf,
    /// The private home, when the gate's user has one.
    pub home: Option<Home>,
    /// Sockets and FIFOs of the items an item runs after, shown read-only
    /// over their places in its copy of their folders
    /// ([`crate::seed`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inherited: Vec<Bind>,
    /// The network.
    pub network: Network,
    /// The identity items run as, when the gate runs as root.
    pub identity: Option<Identity>,
    /// Whether the command, run as root with no identity of its own (the
    /// gate's own git), keeps `CAP_DAC_READ_SEARCH`: the workspace is
    /// handed to the run's uid, and a workspace made with mode 0700 (any
    /// `mktemp -d`, anything under `/root`) is then closed to a root
    /// without capabilities. It reads; everything it sees is read-only.
    #[serde(default)]
    pub read_search: bool,
}

/// Where a path's content comes from inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// Nothing of the host: the path is not there at all.
    Absent,
    /// The host's file system, as it is.
    Host,
    /// A folder of the gate's (the private `/tmp` or `HOME`), or one
    /// made empty inside (`/run`, `/dev`, `/proc`).
    Private,
}

/// Files of `/proc` that change the whole machine, shown read-only over
/// the fresh `/proc`: uid 0 writes many tunables by their mode bits alone.
const PROC_READ_ONLY: [&str; 4] = ["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"];

/// Folders made empty inside the sandbox, whatever the host has there.
const PRIVATE_ROOTS: [&str; 5] = ["/tmp", "/var/tmp", "/run", "/dev", "/proc"];

impl Sandbox {
    /// The bubblewrap arguments that run a command in `cwd` under this
    /// policy; [`Sandbox::command_prefix`], then the command and its
    /// arguments follow them.
    pub fn args(&self, cwd: &Path) -> Vec<OsString> {
        self.args_traced(cwd, None)
    }

    /// [`Sandbox::args`], with the tracer inside when `trace` names its
    /// folder ([`Sandbox::traces_inside`]): the folder is shown at
    /// [`crate::trace::INSIDE`], and the tracer may trace (`CAP_SYS_PTRACE`,
    /// which it needs to read the descriptors of processes that dropped to
    /// the run's uid; the drop to that uid takes it with the rest).
    fn args_traced(&self, cwd: &Path, trace: Option<&Path>) -> Vec<OsString> {
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
        if self.identity.is_some() {
            // Only what the drop needs to become the run's uid, and what
            // bubblewrap needs to enter a working directory only that uid
            // may enter (a workspace made with mode 0700); the drop takes
            // them all before the item's command starts.
            a.flags(&[
                "--cap-add",
                "CAP_SETUID",
                "--cap-add",
                "CAP_SETGID",
                "--cap-add",
                "CAP_SETPCAP",
                "--cap-add",
                "CAP_DAC_READ_SEARCH",
            ]);
            if trace.is_some() {
                a.flags(&["--cap-add", "CAP_SYS_PTRACE"]);
            }
        } else if self.read_search {
            a.flags(&["--cap-add", "CAP_DAC_READ_SEARCH"]);
        }
        // What lies in a folder made private (a `readable` path under
        // /var/tmp) is shown after that folder is made.
        let private = |p: &Path| PRIVATE_ROOTS.iter().any(|r| p.starts_with(r));
        let show = |a: &mut Args, late: bool| {
            for shown in &self.shown {
                match shown {
                    Shown::Path(path) if private(path) == late => {
                        a.mount("--ro-bind", path, path);
                    }
                    Shown::Link { path, target } if private(path) == late => {
                        a.link(target, path);
                    }
                    Shown::Path(_) | Shown::Link { .. } => {}
                }
            }
        };
        show(&mut a, false);
        a.made("--dev", Path::new("/dev"), None);
        a.made("--tmpfs", Path::new("/dev/shm"), Some("1777"));
        a.made("--proc", Path::new("/proc"), None);
        for path in PROC_READ_ONLY {
            a.pair("--ro-bind-try", Path::new(path), Path::new(path));
        }
        a.made("--tmpfs", Path::new("/run"), Some("0755"));
        for file in &self.run_files {
            a.mount("--ro-bind", file, file);
        }
        if let Some(Dropper::Own(dropper)) = self.identity.as_ref().map(|i| &i.dropper) {
            a.mount("--ro-bind", dropper, Path::new(DROPPER_INSIDE));
        }
        if let Some(dir) = trace {
            a.mount("--bind", dir, Path::new(crate::trace::INSIDE));
        }
        a.mount("--bind", &self.tmp, Path::new("/tmp"));
        a.mount("--bind", &self.var_tmp, Path::new("/var/tmp"));
        show(&mut a, true);
        if let Some(home) = &self.home {
            a.mount("--bind", &home.source, &home.path);
            for bind in &home.read_only {
                a.mount("--ro-bind", &bind.source, &bind.target);
            }
        }
        // Over the empty files the copy left in their places.
        for bind in &self.inherited {
            a.pair("--ro-bind", &bind.source, &bind.target);
        }
        for dir in &self.writable {
            a.mount("--bind", dir, dir);
        }
        // A workspace read-only as a whole (the gate's own git) is one
        // mount, not a writable one with a read-only one over it.
        let whole = self.read_only.contains(&self.workspace);
        let flag = if whole { "--ro-bind" } else { "--bind" };
        a.mount(flag, &self.workspace, &self.inside(&self.workspace));
        for path in self.read_only.iter().filter(|p| **p != self.workspace) {
            if path.starts_with(&self.workspace) {
                a.pair("--ro-bind", path, &self.inside(path));
            } else {
                // Outside the workspace (the objects a base's checkout
                // borrows): the folders leading to it must open to the
                // run's uid.
                a.mount("--ro-bind", path, path);
            }
        }
        for overlay in &self.overlays {
            a.pair("--ro-bind", &overlay.source, &self.inside(&overlay.target));
        }
        if let Some((passwd, group)) = self.identity.as_ref().and_then(|i| i.accounts.as_ref()) {
            a.pair("--ro-bind", passwd, Path::new("/etc/passwd"));
            a.pair("--ro-bind", group, Path::new("/etc/group"));
        }
        self.mask_hidden(&mut a);
        a.one("--remount-ro", Path::new("/"));
        a.one("--chdir", &self.inside(cwd));
        a.args
    }

    /// This policy with `specials` (sockets and FIFOs of the items run
    /// before) shown at their places in the private folders.
    fn inheriting(&self, specials: &[crate::seed::Special]) -> Self {
        use crate::seed::Folder;
        let mut out = self.clone();
        out.inherited = specials
            .iter()
            .filter_map(|special| {
                let folder = match special.folder {
                    Folder::Tmp => Path::new("/tmp"),
                    Folder::VarTmp => Path::new("/var/tmp"),
                    Folder::Home => &self.home.as_ref()?.path,
                };
                Some(Bind {
                    source: special.source.clone(),
                    target: folder.join(&special.rel),
                })
            })
            .collect();
        out
    }

    /// Where the host path `path` is seen inside: under the workspace, at
    /// [`Sandbox::workspace_at`] when the workspace is shown elsewhere.
    pub fn inside(&self, path: &Path) -> PathBuf {
        match (&self.workspace_at, path.strip_prefix(&self.workspace)) {
            (Some(at), Ok(rest)) if rest.as_os_str().is_empty() => at.clone(),
            (Some(at), Ok(rest)) => at.join(rest),
            _ => path.to_path_buf(),
        }
    }

    /// This policy without the hidden paths that are gone since it was
    /// made (a socket removed, a ledger's journal deleted): bubblewrap
    /// would fail making a mount point in a read-only folder for them.
    pub fn still_there(&self) -> std::borrow::Cow<'_, Self> {
        let gone = |h: &Hidden| std::fs::symlink_metadata(&h.path).is_err();
        if !self.hidden.iter().any(gone) {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut present = self.clone();
        present.hidden.retain(|h| !gone(h));
        std::borrow::Cow::Owned(present)
    }

    /// Whether `tracer` runs inside this sandbox: when items drop to the
    /// run's own uid (so they cannot reach a tracer that stays root) and
    /// the tracer is among the host paths shown.
    pub fn traces_inside(&self, tracer: &crate::trace::Tracer) -> bool {
        self.identity.is_some()
            && self
                .shown
                .iter()
                .any(|s| matches!(s, Shown::Path(p) if tracer.strace.starts_with(p)))
    }

    /// What runs between bubblewrap and the item's command: the drop to
    /// the run's identity, when there is one.
    pub fn command_prefix(&self) -> Vec<OsString> {
        self.identity
            .as_ref()
            .map(Identity::drop_args)
            .unwrap_or_default()
    }

    /// Rebuilds, without their hidden entries, the folders that hold
    /// hidden paths directly, when each is a read-only host folder of at
    /// most [`REBUILD_AT_MOST`] entries with nothing else of the sandbox
    /// mounted inside it; the others' hidden files stay emptied in place.
    /// Reads those folders on the host once.
    pub fn rebuild_hidden_parents(&mut self) {
        let mut rebuilt: Vec<Rebuilt> = Vec::new();
        for hidden in &self.hidden {
            let Some(parent) = hidden.path.parent() else {
                continue;
            };
            if rebuilt.iter().any(|r| r.path == parent)
                || self.inside_hidden_folder(&hidden.path)
                || !self.rebuildable(parent)
            {
                continue;
            }
            if let Some(folder) = self.read_rebuilt(parent) {
                rebuilt.push(folder);
            }
        }
        self.rebuilt = rebuilt;
    }

    /// Whether `dir` is shown from a read-only host mount (a system or
    /// toolchain folder, a `readable` path) with nothing else mounted or
    /// made anywhere inside it.
    fn rebuildable(&self, dir: &Path) -> bool {
        let read_only = self
            .shown
            .iter()
            .filter_map(|s| match s {
                Shown::Path(p) => Some(p.as_path()),
                Shown::Link { .. } => None,
            })
            .chain(
                self.home
                    .iter()
                    .flat_map(|h| h.read_only.iter().map(|b| b.target.as_path())),
            );
        let others = self
            .places()
            .into_iter()
            .filter(|p| !read_only.clone().any(|r| r == *p));
        let depth = |p: &Path| p.components().count();
        let holder_ro = read_only
            .clone()
            .filter(|p| dir.starts_with(p))
            .map(depth)
            .max();
        let holder_other = others
            .clone()
            .filter(|p| dir.starts_with(p))
            .map(depth)
            .max();
        let held_read_only = match (holder_ro, holder_other) {
            (Some(ro), Some(other)) => ro > other,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let inside = |p: &Path| p != dir && p.starts_with(dir);
        held_read_only && !read_only.clone().any(inside) && !others.clone().any(inside)
    }

    /// Every place the sandbox mounts, links or makes something, but the
    /// hidden paths' masks.
    fn places(&self) -> Vec<&Path> {
        let mut places: Vec<&Path> = self
            .shown
            .iter()
            .map(|s| match s {
                Shown::Path(p) | Shown::Link { path: p, .. } => p.as_path(),
            })
            .collect();
        places.extend(PRIVATE_ROOTS.iter().map(Path::new));
        places.extend([Path::new("/dev/shm"), Path::new(DROPPER_INSIDE)]);
        places.extend(PROC_READ_ONLY.iter().map(Path::new));
        places.push(Path::new(crate::trace::INSIDE));
        places.extend(self.run_files.iter().map(PathBuf::as_path));
        if let Some(home) = &self.home {
            places.push(&home.path);
            places.extend(home.read_only.iter().map(|b| b.target.as_path()));
        }
        places.extend(self.writable.iter().map(PathBuf::as_path));
        places.push(self.workspace_at.as_deref().unwrap_or(&self.workspace));
        places.extend(self.read_only.iter().map(PathBuf::as_path));
        places.extend(self.overlays.iter().map(|o| o.target.as_path()));
        places.extend([Path::new("/etc/passwd"), Path::new("/etc/group")]);
        places
    }

    /// `dir` as it is on the host, without the hidden paths directly in
    /// it, when it has at most [`REBUILD_AT_MOST`] entries.
    fn read_rebuilt(&self, dir: &Path) -> Option<Rebuilt> {
        use std::os::unix::fs::MetadataExt as _;
        let mode = std::fs::metadata(dir).ok()?.mode() & 0o7777;
        let mut entries = Vec::new();
        for (i, entry) in std::fs::read_dir(dir).ok()?.enumerate() {
            if i >= REBUILD_AT_MOST {
                return None;
            }
            let entry = entry.ok()?;
            let path = entry.path();
            if self.hidden.iter().any(|h| h.path == path) {
                continue;
            }
            let link = if entry.file_type().ok()?.is_symlink() {
                Some(std::fs::read_link(&path).ok()?)
            } else {
                None
            };
            entries.push(Entry {
                name: entry.file_name(),
                link,
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Some(Rebuilt {
            path: dir.to_path_buf(),
            mode,
            entries,
        })
    }

    /// Whether `path` lies in a hidden folder, out of sight with it.
    fn inside_hidden_folder(&self, path: &Path) -> bool {
        self.hidden
            .iter()
            .any(|h| h.dir && h.path != path && path.starts_with(&h.path))
    }

    /// Masks each hidden path the sandbox shows from the host: the folders
    /// rebuilt without them first, then each one left in place emptied.
    fn mask_hidden(&self, a: &mut Args) {
        for folder in &self.rebuilt {
            a.made(
                "--tmpfs",
                &folder.path,
                Some(&format!("{:04o}", folder.mode)),
            );
            for entry in &folder.entries {
                let path = folder.path.join(&entry.name);
                match &entry.link {
                    Some(target) => a.link(target, &path),
                    // `-try`: an entry gone since the folder was read is
                    // simply not there.
                    None => a.mount("--ro-bind-try", &path, &path),
                }
            }
            a.one("--remount-ro", &folder.path);
        }
        for hidden in &self.hidden {
            let rebuilt = hidden
                .path
                .parent()
                .is_some_and(|p| self.rebuilt.iter().any(|r| r.path == p));
            if rebuilt
                || self.inside_hidden_folder(&hidden.path)
                || self.origin(&hidden.path) != Origin::Host
            {
                // Out of sight already: masking it would fail or only
                // create it.
                continue;
            }
            if hidden.dir {
                a.one("--tmpfs", &hidden.path);
                a.one("--remount-ro", &hidden.path);
            } else {
                a.pair("--ro-bind", Path::new("/dev/null"), &hidden.path);
            }
        }
    }

    /// Where the content at `path` comes from: the innermost mount that
    /// holds it.
    fn origin(&self, path: &Path) -> Origin {
        let mut best: (usize, Origin) = (0, Origin::Absent);
        let mut consider = |mount: &Path, origin: Origin| {
            let depth = mount.components().count();
            if path.starts_with(mount) && depth >= best.0 {
                best = (depth, origin);
            }
        };
        for shown in &self.shown {
            if let Shown::Path(p) = shown {
                consider(p, Origin::Host);
            }
        }
        for private in PRIVATE_ROOTS {
            consider(Path::new(private), Origin::Private);
        }
        for file in &self.run_files {
            consider(file, Origin::Host);
        }
        if let Some(home) = &self.home {
            consider(&home.path, Origin::Private);
            for bind in &home.read_only {
                consider(&bind.target, Origin::Host);
            }
        }
        for dir in &self.writable {
            consider(dir, Origin::Host);
        }
        // Shown elsewhere, what lies under its path inside is not the host's.
        match &self.workspace_at {
            None => consider(&self.workspace, Origin::Host),
            Some(at) => consider(at, Origin::Private),
        }
        best.1
    }
}

/// A bubblewrap command line being built, and the folders it has made
/// inside so far.
#[derive(Default)]
struct Args {
    args: Vec<OsString>,
    made: Vec<PathBuf>,
}

impl Args {
    fn flags(&mut self, flags: &[&str]) {
        self.args.extend(flags.iter().map(OsString::from));
    }

    fn one(&mut self, flag: &str, path: &Path) {
        self.args.push(flag.into());
        self.args.push(path.into());
    }

    fn pair(&mut self, flag: &str, source: &Path, target: &Path) {
        self.args.push(flag.into());
        self.args.push(source.into());
        self.args.push(target.into());
    }

    /// A mount at `target`, after the folders that lead to it: bubblewrap
    /// would make those itself, but only its own user could enter them,
    /// and the run's uid must.
    fn mount(&mut self, flag: &str, source: &Path, target: &Path) {
        self.parents(target);
        self.pair(flag, source, target);
        self.made.push(target.to_path_buf());
    }

    /// A link at `path`.
    fn link(&mut self, target: &Path, path: &Path) {
        self.parents(path);
        self.pair("--symlink", target, path);
        self.made.push(path.to_path_buf());
    }

    /// A file system bubblewrap makes at `path` (`--dev`, `--tmpfs`,
    /// `--proc`), with `perms` when given.
    fn made(&mut self, flag: &str, path: &Path, perms: Option<&str>) {
        self.parents(path);
        if let Some(perms) = perms {
            self.flags(&["--perms", perms]);
        }
        self.one(flag, path);
        self.made.push(path.to_path_buf());
    }

    /// Makes each folder above `path` that nothing made yet, open to all.
    fn parents(&mut self, path: &Path) {
        let mut missing: Vec<PathBuf> = path
            .ancestors()
            .skip(1)
            .take_while(|a| a.parent().is_some() && !self.made.iter().any(|m| m == a))
            .map(Path::to_path_buf)
            .collect();
        missing.reverse();
        for dir in missing {
            self.flags(&["--perms", "0755"]);
            self.one("--dir", &dir);
            self.made.push(dir);
        }
    }
}

/// How the processes of a run are started: exactly this environment, and
/// the sandbox or the network namespace when there is one.
#[derive(Debug, Clone, Default)]
pub struct Launcher {
    env: Vec<(OsString, OsString)>,
    how: How,
    /// The shell that runs a command line, when the gate found its own
    /// (else `sh` on the processes' `PATH`).
    shell: Option<PathBuf>,
    /// The tracer that records what items touch, when the gate has one.
    tracer: Option<crate::trace::Tracer>,
    /// The run's eBPF tracer, which traces the items that run as the
    /// run's own uid in a sandbox instead, when the gate runs one.
    watcher: Option<crate::bpf::Watching>,
    /// Where this launcher's processes are traced into, when they are.
    trace_to: Option<PathBuf>,
    /// The item's own private folders and what it inherits into them from
    /// the items it runs after ([`Launcher::with_private`]).
    seed: Option<Arc<crate::seed::Seed>>,
}

/// Where a launcher's processes run.
#[derive(Debug, Clone, Default)]
enum How {
    /// As they are, as the gate's user.
    #[default]
    Direct,
    /// Unisolated, as the run's own `(uid, gid)`: the gate runs as root
    /// and no sandbox can start here.
    As(u32, u32),
    /// In a sandbox (inside the run's network namespace when its network
    /// says so).
    Sandboxed(Box<Sandbox>),
    /// Only inside the run's network namespace: the gate's own helpers.
    Joined(Namespace),
}

/// The file descriptor bubblewrap reads its arguments from, so that they
/// (every hidden path among them) are not its command line, which
/// `/proc/1/cmdline` shows inside.
const ARGS_FD: i32 = 3;

/// The file descriptor bubblewrap reads the seccomp filter from.
const SECCOMP_FD: i32 = 4;

/// The file descriptor bubblewrap writes what it tells of the sandbox to.
const INFO_FD: i32 = 5;

/// How one process is started: the program, its arguments, the files it
/// gets as extra descriptors, and the identity it runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Argv {
    /// The program.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Contents the process reads at these descriptors.
    pub files: Vec<(i32, Vec<u8>)>,
    /// Files of the gate's the process writes at these descriptors.
    pub writes: Vec<(i32, PathBuf)>,
    /// The `(uid, gid)` to start it as, when not the gate's.
    pub run_as: Option<(u32, u32)>,
}

impl Launcher {
    /// Processes get exactly `env` and run unisolated.
    pub fn new(env: Vec<(OsString, OsString)>) -> Self {
        Self {
            env,
            how: How::Direct,
            shell: None,
            tracer: None,
            watcher: None,
            trace_to: None,
            seed: None,
        }
    }

    /// Processes get exactly `env` and run unisolated as `uid` and `gid`.
    pub fn as_user(env: Vec<(OsString, OsString)>, uid: u32, gid: u32) -> Self {
        Self {
            env,
            how: How::As(uid, gid),
            shell: None,
            tracer: None,
            watcher: None,
            trace_to: None,
            seed: None,
        }
    }

    /// Processes get exactly `env` and run in `sandbox`.
    pub fn sandboxed(env: Vec<(OsString, OsString)>, sandbox: Sandbox) -> Self {
        Self {
            env,
            how: How::Sandboxed(Box::new(sandbox)),
            shell: None,
            tracer: None,
            watcher: None,
            trace_to: None,
            seed: None,
        }
    }

    /// Command lines run with `shell` (an absolute path the gate found
    /// where the items cannot write), never a `sh` the processes' `PATH`
    /// finds first: an activated virtual environment of the workspace's
    /// could hold one that runs nothing and exits 0.
    #[must_use]
    pub fn with_shell(mut self, shell: Option<PathBuf>) -> Self {
        self.shell = shell;
        self
    }

    /// Items' processes may be traced with `tracer` ([`Launcher::traced_into`]).
    #[must_use]
    pub fn with_tracer(mut self, tracer: Option<crate::trace::Tracer>) -> Self {
        self.tracer = tracer;
        self
    }

    /// Items in a sandbox that run as the run's own uid are traced by the
    /// run's eBPF tracer `watcher` instead of `strace`, when there is one.
    #[must_use]
    pub fn with_watcher(mut self, watcher: Option<crate::bpf::Watching>) -> Self {
        self.watcher = watcher;
        self
    }

    /// The tracer, when items can be traced.
    /// Items run as the run's uid without a sandbox are not traced: the
    /// tracer would run as that uid too, within their reach.
    pub fn tracer(&self) -> Option<&crate::trace::Tracer> {
        match self.how {
            How::As(..) => None,
            How::Direct | How::Sandboxed(_) | How::Joined(_) => self.tracer.as_ref(),
        }
    }

    /// This launcher, its processes traced into `dir` (a folder of the
    /// gate's that they cannot see); unchanged when there is no tracer.
    /// With the run's eBPF tracer, the sandbox's workspace is registered
    /// with it first; if it cannot be, `strace` traces instead.
    #[must_use]
    pub fn traced_into(&self, dir: &Path) -> Self {
        let mut traced = self.clone();
        if traced.tracer().is_none() {
            return traced;
        }
        traced.trace_to = Some(dir.to_path_buf());
        if let (Some(watching), How::Sandboxed(sandbox)) = (self.watching(), &self.how) {
            let inside = sandbox.inside(&sandbox.workspace);
            if let Err(e) = watching.0.register(&sandbox.workspace, &inside) {
                tracing::warn!(error = %e, "the eBPF tracer cannot trace this item; strace does");
                traced.watcher = None;
            }
        }
        traced
    }

    /// The run's eBPF tracer, when it traces this launcher's processes:
    /// they run in a sandbox as the run's own uid.
    fn watching(&self) -> Option<&crate::bpf::Watching> {
        match &self.how {
            How::Sandboxed(sandbox) if sandbox.identity.is_some() => {
                self.tracer()?;
                self.watcher.as_ref()
            }
            How::Direct | How::As(..) | How::Sandboxed(_) | How::Joined(_) => None,
        }
    }

    /// Tells the run's eBPF tracer that the process `pid`, just started
    /// by this launcher, is one of the traced item's.
    pub(crate) fn claim(&self, pid: u32) {
        if let (Some(watching), Some(dir)) = (self.watching(), &self.trace_to) {
            watching.0.claim(dir, pid);
        }
    }

    /// What the processes traced into `dir` touched under `workspace`.
    pub fn observed(&self, dir: &Path, workspace: &Path) -> crate::trace::Accesses {
        match self.watching() {
            Some(watching) => watching.0.collect(dir, workspace),
            None => crate::trace::read(dir, workspace),
        }
    }

    /// This launcher with `private` as its processes' `/tmp`, `/var/tmp`
    /// and home: the folders shown there in a sandbox (`HOME` keeps its
    /// path inside); what `TMPDIR` and `HOME` name when they run as the
    /// run's uid without one. What the folders in `after` (those of the
    /// items this one runs after) hold is copied into them when the item
    /// starts ([`Launcher::seed`]). Processes that run as the gate's user
    /// without a sandbox, and the gate's helpers, have no private folders:
    /// unchanged.
    #[must_use]
    pub fn with_private(&self, private: &Private, after: &[Private]) -> Self {
        let mut out = self.clone();
        if matches!(self.how, How::Direct | How::Joined(_)) {
            return out;
        }
        let owner = self.owner();
        match &mut out.how {
            How::Sandboxed(sandbox) => {
                sandbox.tmp.clone_from(&private.tmp);
                sandbox.var_tmp.clone_from(&private.var_tmp);
                if let Some(home) = &mut sandbox.home {
                    home.source.clone_from(&private.home);
                }
            }
            How::As(..) => {
                for (name, value) in [("TMPDIR", &private.tmp), ("HOME", &private.home)] {
                    out.env.retain(|(n, _)| n != name);
                    out.env.push((name.into(), value.clone().into_os_string()));
                }
                out.env.sort();
            }
            How::Direct | How::Joined(_) => {}
        }
        let linked = matches!(out.how, How::As(..));
        out.seed = Some(Arc::new(crate::seed::Seed::new(
            after.to_vec(),
            private.clone(),
            owner,
            linked,
        )));
        out
    }

    /// The private folders [`Launcher::with_private`] gave, if any.
    pub fn private(&self) -> Option<&Private> {
        self.seed.as_ref().map(|s| s.folders())
    }

    /// Copies into this launcher's private folders what the items it runs
    /// after left in theirs: once, before its item's first process starts
    /// (later calls say how that copy went). Blocks on the disk.
    pub fn seed(&self) -> Result<(), String> {
        self.seed.as_ref().map_or(Ok(()), |s| s.run())
    }

    /// The shell command lines run with.
    pub fn shell(&self) -> &OsStr {
        self.shell
            .as_deref()
            .map_or_else(|| OsStr::new("sh"), Path::as_os_str)
    }

    /// The sandbox, if processes run in one.
    pub fn sandbox(&self) -> Option<&Sandbox> {
        match &self.how {
            How::Sandboxed(sandbox) => Some(sandbox),
            How::Direct | How::As(..) | How::Joined(_) => None,
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
            How::Direct | How::As(..) => None,
        }
    }

    /// The launcher of the gate's own [`Helper`]s, when processes run in a
    /// network namespace the gate's own process is outside of: the helpers
    /// join the namespace, with this environment, and nothing else.
    pub fn helpers(&self) -> Option<Self> {
        self.namespace().map(|namespace| Self {
            env: self.env.clone(),
            how: How::Joined(namespace.clone()),
            shell: self.shell.clone(),
            tracer: None,
            watcher: None,
            trace_to: None,
            seed: None,
        })
    }

    /// The environment every process gets.
    pub fn env(&self) -> &[(OsString, OsString)] {
        &self.env
    }

    /// The uid processes run as when it is not the gate's.
    pub fn uid(&self) -> Option<u32> {
        self.owner().map(|(uid, _)| uid)
    }

    /// The uid and gid processes run as when they are not the gate's.
    fn owner(&self) -> Option<(u32, u32)> {
        match &self.how {
            How::As(uid, gid) => Some((*uid, *gid)),
            How::Sandboxed(sandbox) => sandbox.identity.as_ref().map(|i| (i.uid, i.gid)),
            How::Direct | How::Joined(_) => None,
        }
    }

    /// A new folder for a process to write in, removed when dropped, and its
    /// path as the process sees it: in the sandbox's private `/tmp` when
    /// there is one, else in the system's temporary folder; owned by the
    /// identity processes run as.
    pub fn temp_dir(&self, prefix: &str) -> std::io::Result<(tempfile::TempDir, PathBuf)> {
        let mut builder = tempfile::Builder::new();
        builder.prefix(prefix);
        let (dir, inside) = match &self.how {
            How::Direct | How::As(..) | How::Joined(_) => {
                let dir = builder.tempdir()?;
                let inside = dir.path().to_path_buf();
                (dir, inside)
            }
            How::Sandboxed(sandbox) => {
                let dir = builder.tempdir_in(&sandbox.tmp)?;
                let name = dir.path().file_name().unwrap_or_default().to_owned();
                (dir, Path::new("/tmp").join(name))
            }
        };
        if let Some((uid, gid)) = self.owner() {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))?;
        }
        Ok((dir, inside))
    }

    /// How to start `program args…` in `cwd`: traced, when this launcher
    /// traces.
    pub(crate) fn argv(&self, program: &OsStr, args: &[&OsStr], cwd: &Path) -> Argv {
        let (Some(tracer), Some(dir)) = (self.tracer(), &self.trace_to) else {
            return self.argv_with(program, args, cwd, &Watch::None);
        };
        if self.watching().is_some() {
            // The eBPF tracer sees the sandbox's processes from the kernel.
            return self.argv_with(program, args, cwd, &Watch::None);
        }
        if let How::Sandboxed(sandbox) = &self.how
            && sandbox.traces_inside(tracer)
        {
            return self.argv_with(program, args, cwd, &Watch::Inside(tracer, dir));
        }
        // bubblewrap says which process set the sandbox up, so its own
        // reads of what it mounts are not taken for the item's.
        let info = dir.join(crate::trace::SANDBOX_INFO);
        let argv = self.argv_with(program, args, cwd, &Watch::Info(info));
        let (program, args) = tracer.wrap(dir, argv.program, argv.args);
        Argv {
            program,
            args,
            ..argv
        }
    }

    /// How to start `program args…` in `cwd`, with what `watch` asks of a
    /// sandbox.
    fn argv_with(&self, program: &OsStr, args: &[&OsStr], cwd: &Path, watch: &Watch) -> Argv {
        let command =
            std::iter::once(program.to_owned()).chain(args.iter().map(|a| (*a).to_owned()));
        let plain = |run_as| Argv {
            program: program.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            files: Vec::new(),
            writes: Vec::new(),
            run_as,
        };
        match &self.how {
            How::Direct => plain(None),
            How::As(uid, gid) => plain(Some((*uid, *gid))),
            How::Joined(namespace) => {
                let mut all = namespace.args();
                all.extend(command);
                Argv {
                    program: namespace.nsenter.clone().into_os_string(),
                    args: all,
                    files: Vec::new(),
                    writes: Vec::new(),
                    run_as: None,
                }
            }
            How::Sandboxed(sandbox) => {
                let mut all: Vec<OsString> = vec![
                    "--args".into(),
                    ARGS_FD.to_string().into(),
                    "--seccomp".into(),
                    SECCOMP_FD.to_string().into(),
                ];
                let mut writes = Vec::new();
                if let Watch::Info(info) = watch {
                    all.extend(["--info-fd".into(), INFO_FD.to_string().into()]);
                    writes.push((INFO_FD, info.clone()));
                }
                all.push("--".into());
                let inside = match watch {
                    Watch::Inside(tracer, dir) => {
                        all.push(tracer.strace.clone().into_os_string());
                        all.extend(tracer.options(Path::new(crate::trace::INSIDE)));
                        Some(*dir)
                    }
                    Watch::None | Watch::Info(_) => None,
                };
                all.extend(sandbox.command_prefix());
                if inside.is_some() {
                    // The tracer waits for every process it follows, and is
                    // what bubblewrap waits for: what the command left
                    // running (a daemon) is ended when the command ends, as
                    // the sandbox ends it when nothing sits between them.
                    all.extend([
                        self.shell().to_owned(),
                        "-c".into(),
                        REAP_AFTER.into(),
                        "gate-item".into(),
                    ]);
                }
                all.extend(command);
                let specials = self.seed.as_ref().map_or(&[][..], |s| s.specials());
                let inheriting;
                let sandbox = if specials.is_empty() {
                    sandbox
                } else {
                    inheriting = sandbox.inheriting(specials);
                    &inheriting
                };
                let sandbox_args = sandbox.still_there().args_traced(cwd, inside);
                let files = vec![
                    (ARGS_FD, nul_separated(&sandbox_args)),
                    (SECCOMP_FD, crate::seccomp::filter()),
                ];
                let (program, args) = match &sandbox.network {
                    Network::Join(namespace) => {
                        let mut joined = namespace.args();
                        joined.push(sandbox.bwrap.clone().into_os_string());
                        joined.extend(all);
                        (namespace.nsenter.clone().into_os_string(), joined)
                    }
                    Network::Host | Network::Private => {
                        (sandbox.bwrap.clone().into_os_string(), all)
                    }
                };
                Argv {
                    program,
                    args,
                    files,
                    writes,
                    run_as: None,
                }
            }
        }
    }
}

/// Runs `"$@"`, then kills every other process of the run's uid in the
/// sandbox, and ends as the command did (by the same signal, if one
/// killed it).
const REAP_AFTER: &str = "\"$@\"; s=$?; kill -9 -1 2>/dev/null; \
     if [ \"$s\" -gt 128 ]; then kill -$((s - 128)) $$; fi; exit \"$s\"";

/// What a sandbox is asked for a traced process.
enum Watch<'a> {
    /// Nothing: the process is not traced.
    None,
    /// The tracer runs above bubblewrap: bubblewrap writes what it tells of
    /// the sandbox (`--info-fd`) to this file.
    Info(PathBuf),
    /// The tracer runs inside, writing into this folder of the gate's.
    Inside(&'a crate::trace::Tracer, &'a Path),
}

/// Arguments as bubblewrap's `--args` reads them: each ended by a NUL.
fn nul_separated(args: &[OsString]) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    for arg in args {
        out.extend_from_slice(arg.as_bytes());
        out.push(0);
    }
    out
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
            shown: vec![
                Shown::Path("/usr".into()),
                Shown::Link {
                    path: "/bin".into(),
                    target: "usr/bin".into(),
                },
                Shown::Path("/etc".into()),
                Shown::Path("/opt/tools/bin".into()),
            ],
            run_files: vec!["/run/systemd/resolve/stub-resolv.conf".into()],
            workspace: "/srv/ci/ws".into(),
            workspace_at: None,
            read_only: vec!["/srv/ci/ws/.git".into(), "/srv/ci/ws/gate.toml".into()],
            overlays: vec![Overlay {
                source: "/var/base/e2e.sh".into(),
                target: "/srv/ci/ws/scripts/e2e.sh".into(),
            }],
            rebuilt: Vec::new(),
            hidden: vec![
                Hidden {
                    path: "/srv/ci/ws/.gate".into(),
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
                    path: "/srv/ci/ws/.gate/ledger.db".into(),
                    dir: false,
                },
                Hidden {
                    path: "/var/lib/gate/ledger.db".into(),
                    dir: false,
                },
            ],
            writable: vec!["/cache".into()],
            tmp: "/var/run-tmp".into(),
            var_tmp: "/var/run-var-tmp".into(),
            home: Some(Home {
                path: "/root".into(),
                source: "/var/run-home".into(),
                read_only: vec![Bind {
                    source: "/root/.rustup".into(),
                    target: "/root/.rustup".into(),
                }],
            }),
            network: Network::Host,
            identity: None,
            read_search: false,
            inherited: Vec::new(),
        }
    }

    #[test]
    fn the_policy_becomes_one_command_line_in_mount_order() {
        // (the run's identity, the command line)
        let identity = Identity {
            uid: 1_879_048_193,
            gid: 1_879_048_193,
            dropper: Dropper::Setpriv("/usr/bin/setpriv".into()),
            accounts: Some(("/var/run-passwd".into(), "/var/run-group".into())),
        };
        let own = Identity {
            dropper: Dropper::Own("/usr/lib/gate/gate-drop".into()),
            ..identity.clone()
        };
        let common = "--ro-bind /usr /usr --symlink usr/bin /bin --ro-bind /etc /etc \
             --perms 0755 --dir /opt --perms 0755 --dir /opt/tools \
             --ro-bind /opt/tools/bin /opt/tools/bin \
             --dev /dev --perms 1777 --tmpfs /dev/shm --proc /proc \
             --ro-bind-try /proc/sys /proc/sys --ro-bind-try /proc/sysrq-trigger /proc/sysrq-trigger \
             --ro-bind-try /proc/irq /proc/irq --ro-bind-try /proc/bus /proc/bus \
             --perms 0755 --tmpfs /run \
             --perms 0755 --dir /run/systemd --perms 0755 --dir /run/systemd/resolve \
             --ro-bind /run/systemd/resolve/stub-resolv.conf /run/systemd/resolve/stub-resolv.conf \
             --bind /var/run-tmp /tmp --perms 0755 --dir /var --bind /var/run-var-tmp /var/tmp \
             --bind /var/run-home /root --ro-bind /root/.rustup /root/.rustup \
             --bind /cache /cache \
             --perms 0755 --dir /srv --perms 0755 --dir /srv/ci --bind /srv/ci/ws /srv/ci/ws \
             --ro-bind /srv/ci/ws/.git /srv/ci/ws/.git \
             --ro-bind /srv/ci/ws/gate.toml /srv/ci/ws/gate.toml \
             --ro-bind /var/base/e2e.sh /srv/ci/ws/scripts/e2e.sh";
        let masks = "--tmpfs /srv/ci/ws/.gate --remount-ro /srv/ci/ws/.gate \
             --ro-bind /dev/null /root/.rustup/credentials \
             --ro-bind /dev/null /etc/gate/signing.key --remount-ro / --chdir /srv/ci/ws";
        let start = "--die-with-parent --new-session --unshare-pid --unshare-ipc --unshare-uts \
             --unshare-cgroup-try --cap-drop ALL";
        let caps = "--cap-add CAP_SETUID --cap-add CAP_SETGID --cap-add CAP_SETPCAP \
             --cap-add CAP_DAC_READ_SEARCH";
        let accounts = "--ro-bind /var/run-passwd /etc/passwd --ro-bind /var/run-group /etc/group";
        // The gate's own dropper is shown right after the private /run is made.
        let private_tmp = "--bind /var/run-tmp /tmp";
        let with_dropper = common.replace(
            private_tmp,
            &format!("--ro-bind /usr/lib/gate/gate-drop /run/gate-drop {private_tmp}"),
        );
        let cases = [
            (None, format!("{start} {common} {masks}")),
            (
                Some(identity),
                format!("{start} {caps} {common} {accounts} {masks}"),
            ),
            (
                Some(own),
                format!("{start} {caps} {with_dropper} {accounts} {masks}"),
            ),
        ];
        for (identity, want) in cases {
            let mut p = policy();
            p.identity = identity;
            let line = strings(&p.args(Path::new("/srv/ci/ws"))).join(" ");
            let want = want.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(line, want);
        }
    }

    #[test]
    fn the_command_line_reaches_bubblewrap_as_a_file_and_the_item_as_the_runs_uid() {
        // (the run's identity, the gate's own dropper, what runs between
        // bubblewrap and the command)
        let cases: [(Option<u32>, bool, &[&str]); 3] = [
            (None, false, &[]),
            (Some(5000), true, &["/run/gate-drop", "5000", "5000", "--"]),
            (
                Some(5000),
                false,
                &[
                    "/usr/bin/setpriv",
                    "--reuid=5000",
                    "--regid=5000",
                    "--clear-groups",
                    "--inh-caps=-all",
                    "--bounding-set=-all",
                    "--no-new-privs",
                    "--",
                ],
            ),
        ];
        for (uid, own, prefix) in cases {
            let mut p = policy_as(uid);
            if let (Some(identity), true) = (p.identity.as_mut(), own) {
                identity.dropper = Dropper::Own("/usr/lib/gate/gate-drop".into());
            }
            let bwrap = p.still_there().args(Path::new("/srv/ci/ws"));
            let l = Launcher::sandboxed(Vec::new(), p);
            assert_eq!(l.uid(), uid);
            let argv = l.argv(
                OsStr::new("sh"),
                &[OsStr::new("-c")],
                Path::new("/srv/ci/ws"),
            );
            assert_eq!(argv.program, "/usr/bin/bwrap");
            let mut want = vec!["--args", "3", "--seccomp", "4", "--"];
            want.extend(prefix);
            want.extend(["sh", "-c"]);
            assert_eq!(strings(&argv.args), want, "{uid:?}");
            // No hidden path is on the command line: they are in the file.
            assert_eq!(argv.files[0], (3, nul_separated(&bwrap)));
            assert_eq!(argv.files[1], (4, crate::seccomp::filter()));
            assert_eq!(argv.run_as, None);
        }
        let argv =
            Launcher::as_user(Vec::new(), 7, 8).argv(OsStr::new("true"), &[], Path::new("/"));
        assert_eq!(
            (argv.program.as_os_str(), argv.run_as),
            (OsStr::new("true"), Some((7, 8)))
        );
    }

    /// A traced item: the tracer runs inside the sandbox, as root before
    /// the drop to the run's uid, when there is one and the tracer is
    /// shown; else above bubblewrap, which then says which process set the
    /// sandbox up.
    #[test]
    fn the_tracer_runs_inside_the_sandbox_when_the_item_drops_to_the_runs_uid() {
        let trace = Path::new("/var/gate/trace-1");
        // (the run's identity, where strace is, whether it runs inside)
        let cases = [
            (Some(5000), "/usr/bin/strace", true),
            (None, "/usr/bin/strace", false),
            (Some(5000), "/home/me/bin/strace", false),
        ];
        for (uid, strace, inside) in cases {
            let p = policy_as(uid);
            let tracer = crate::trace::Tracer {
                strace: strace.into(),
            };
            let l = Launcher::sandboxed(Vec::new(), p.clone())
                .with_tracer(Some(tracer.clone()))
                .traced_into(trace);
            let argv = l.argv(OsStr::new("sh"), &[], Path::new("/srv/ci/ws"));
            let args = strings(&argv.args);
            let bwrap = String::from_utf8_lossy(&argv.files[0].1).replace('\0', " ");
            let shown = format!("--bind {} {} ", trace.display(), crate::trace::INSIDE);
            let case = format!("{uid:?} {strace}");
            if inside {
                assert_eq!(argv.program, "/usr/bin/bwrap", "{case}");
                let mut want = vec!["--args", "3", "--seccomp", "4", "--", strace];
                let options = strings(&tracer.options(Path::new(crate::trace::INSIDE)));
                want.extend(options.iter().map(String::as_str));
                want.extend(["/usr/bin/setpriv", "--reuid=5000"]);
                assert_eq!(args[..want.len()], want, "{case}");
                let shell = args.len() - 5;
                assert_eq!(
                    args[shell..],
                    ["sh", "-c", REAP_AFTER, "gate-item", "sh"],
                    "{case}"
                );
                assert!(bwrap.contains(&shown), "{case}: {bwrap}");
                assert!(bwrap.contains("--cap-add CAP_SYS_PTRACE "), "{case}");
                assert!(argv.writes.is_empty(), "{case}");
            } else {
                assert_eq!(argv.program, strace, "{case}");
                assert!(args.contains(&"--info-fd".to_owned()), "{case}");
                assert!(!bwrap.contains(&shown), "{case}: {bwrap}");
                assert!(!bwrap.contains("CAP_SYS_PTRACE"), "{case}");
                let info = trace.join(crate::trace::SANDBOX_INFO);
                assert_eq!(argv.writes, vec![(5, info)], "{case}");
            }
        }
    }

    #[test]
    fn a_workspace_read_only_as_a_whole_is_one_read_only_mount() {
        let mut p = policy();
        p.read_only = vec!["/srv/ci/ws".into(), "/srv/ci/ws/.git".into()];
        let line = strings(&p.args(Path::new("/srv/ci/ws"))).join(" ");
        assert!(
            line.contains("--ro-bind /srv/ci/ws /srv/ci/ws --ro-bind /srv/ci/ws/.git"),
            "{line}"
        );
        assert!(!line.contains("--bind /srv/ci/ws /srv/ci/ws"), "{line}");
    }

    /// A hidden file in a small read-only host folder is left out of a
    /// rebuilt copy of the folder; in a large one, one the items may
    /// write, or one with a mount inside, it is emptied in place.
    #[test]
    fn a_small_read_only_folder_is_rebuilt_without_its_hidden_files() {
        use std::os::unix::fs::PermissionsExt as _;
        let host = tempfile::tempdir().unwrap();
        let keys = host.path().join("keys");
        std::fs::create_dir(&keys).unwrap();
        std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o750)).unwrap();
        for name in ["signing.key", "README"] {
            std::fs::write(keys.join(name), "x").unwrap();
        }
        std::fs::create_dir(keys.join("old")).unwrap();
        std::os::unix::fs::symlink("README", keys.join("current")).unwrap();
        let many = host.path().join("many");
        std::fs::create_dir(&many).unwrap();
        for i in 0..REBUILD_AT_MOST {
            std::fs::write(many.join(format!("f{i}")), "x").unwrap();
        }
        std::fs::write(many.join("signing.key"), "x").unwrap();
        let key = |dir: &Path| Hidden {
            path: dir.join("signing.key"),
            dir: false,
        };
        let k = keys.display();
        let rebuilt = format!(
            "--perms 0750 --tmpfs {k} --ro-bind-try {k}/README {k}/README \
             --symlink README {k}/current --ro-bind-try {k}/old {k}/old --remount-ro {k}"
        );
        let emptied =
            |dir: &Path| format!("--ro-bind /dev/null {}", dir.join("signing.key").display());
        // (the folder, how the policy shows it, what masks the key)
        let cases: [(&Path, &str, String); 4] = [
            (&keys, "readable", rebuilt),
            (&many, "readable", emptied(&many)),
            (&keys, "writable", emptied(&keys)),
            (&keys, "a mount inside", emptied(&keys)),
        ];
        for (dir, shown_as, want) in cases {
            let mut p = policy();
            p.hidden = vec![key(dir)];
            match shown_as {
                "writable" => p.writable.push(dir.to_path_buf()),
                "a mount inside" => {
                    p.shown.push(Shown::Path(dir.to_path_buf()));
                    p.shown.push(Shown::Path(dir.join("old")));
                }
                _ => p.shown.push(Shown::Path(dir.to_path_buf())),
            }
            p.rebuild_hidden_parents();
            let line = strings(&p.args(Path::new("/srv/ci/ws"))).join(" ");
            let want = want.split_whitespace().collect::<Vec<_>>().join(" ");
            let case = format!("{shown_as} {}", dir.display());
            // The masks come last, before the root is made read-only.
            assert!(
                line.ends_with(&format!("{want} --remount-ro / --chdir /srv/ci/ws")),
                "{case}: {line}"
            );
            let folder_rebuilt = format!("--tmpfs {} ", dir.display());
            assert_eq!(
                line.contains(&folder_rebuilt),
                !p.rebuilt.is_empty(),
                "{case}: {line}"
            );
            if !p.rebuilt.is_empty() {
                assert!(!line.contains("signing.key"), "{case}: {line}");
            }
        }
    }

    /// The test policy, its items run as `uid` when given.
    fn policy_as(uid: Option<u32>) -> Sandbox {
        let mut p = policy();
        p.identity = uid.map(|uid| Identity {
            uid,
            gid: uid,
            dropper: Dropper::Setpriv("/usr/bin/setpriv".into()),
            accounts: None,
        });
        p
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
            let args = p.args(Path::new("/srv/ci/ws"));
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
            let l = Launcher::sandboxed(Vec::new(), p);
            let argv = l.argv(
                OsStr::new("sh"),
                &[OsStr::new("-c"), OsStr::new("true")],
                Path::new("/srv/ci/ws"),
            );
            assert_eq!(argv.program, "/usr/bin/nsenter");
            let mut want: Vec<String> = nsenter.iter().map(|a| (*a).to_owned()).collect();
            want.push("/usr/bin/bwrap".to_owned());
            want.extend(
                ["--args", "3", "--seccomp", "4", "--", "sh", "-c", "true"].map(str::to_owned),
            );
            assert_eq!(strings(&argv.args), want, "user {user}");
            assert_eq!(argv.files.len(), 2);

            // The gate's helpers join the namespace and nothing else.
            let helpers = l.helpers().expect("a joined launcher has helpers");
            assert!(helpers.sandbox().is_none());
            let argv = helpers.argv(
                OsStr::new("/usr/local/bin/gate"),
                &[OsStr::new("sandbox-helper")],
                Path::new("/srv/ci/ws"),
            );
            assert_eq!(argv.program, "/usr/bin/nsenter");
            let mut want: Vec<String> = nsenter.iter().map(|a| (*a).to_owned()).collect();
            want.extend(["/usr/local/bin/gate", "sandbox-helper"].map(str::to_owned));
            assert_eq!(strings(&argv.args), want, "user {user}");
            assert!(argv.files.is_empty());
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
            ("/run/user/0", Origin::Private),
            ("/srv/ci/ws/.gate", Origin::Host),
            ("/etc/passwd", Origin::Host),
            ("/cache/a", Origin::Host),
            ("/var/lib/postgresql", Origin::Absent),
            ("/home/ci/.aws", Origin::Absent),
            ("/srv/other", Origin::Absent),
        ];
        for (path, origin) in cases {
            assert_eq!(p.origin(Path::new(path)), origin, "{path}");
        }
    }

    #[test]
    fn a_hidden_path_gone_since_the_policy_was_made_is_not_masked() {
        let dir = tempfile::tempdir().unwrap();
        let (kept, gone) = (dir.path().join("kept"), dir.path().join("gone"));
        std::fs::write(&kept, "").unwrap();
        let mut p = policy();
        p.hidden = [&kept, &gone]
            .into_iter()
            .map(|path| Hidden {
                path: path.clone(),
                dir: false,
            })
            .collect();
        assert!(matches!(p.still_there(), std::borrow::Cow::Owned(_)));
        let paths: Vec<PathBuf> = p
            .still_there()
            .hidden
            .iter()
            .map(|h| h.path.clone())
            .collect();
        assert_eq!(paths, std::slice::from_ref(&kept));
        p.hidden.pop();
        assert!(matches!(p.still_there(), std::borrow::Cow::Borrowed(_)));
    }

    /// An item's private folders are what its sandbox binds at `/tmp`,
    /// `/var/tmp` and the home, or what `TMPDIR` and `HOME` name for a
    /// process run as the run's uid without one; the gate's own user
    /// unsandboxed has none.
    #[test]
    fn an_items_private_folders_replace_the_runs() {
        let private = Private {
            tmp: "/var/run-g1/tmp".into(),
            var_tmp: "/var/run-g1/var-tmp".into(),
            home: "/var/run-g1/home".into(),
        };
        let env = vec![
            ("HOME".into(), "/var/run-home".into()),
            ("PATH".into(), "/bin".into()),
            ("TMPDIR".into(), "/var/run-tmp".into()),
        ];
        // (launcher, the mounts wanted in its bubblewrap arguments, the
        // HOME and TMPDIR wanted)
        let cases = [
            (
                Launcher::sandboxed(env.clone(), policy()),
                vec![
                    "--bind /var/run-g1/tmp /tmp",
                    "--bind /var/run-g1/var-tmp /var/tmp",
                    "--bind /var/run-g1/home /root",
                ],
                ("/var/run-home", "/var/run-tmp"),
            ),
            (
                Launcher::as_user(env.clone(), 5000, 5000),
                vec![],
                ("/var/run-g1/home", "/var/run-g1/tmp"),
            ),
            (
                Launcher::new(env.clone()),
                vec![],
                ("/var/run-home", "/var/run-tmp"),
            ),
        ];
        for (launcher, mounts, (home, tmp)) in cases {
            let grouped = launcher.with_private(&private, &[]);
            let var = |name: &str| {
                grouped
                    .env()
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.to_str().unwrap().to_owned())
            };
            assert_eq!(var("HOME").as_deref(), Some(home), "{launcher:?}");
            assert_eq!(var("TMPDIR").as_deref(), Some(tmp), "{launcher:?}");
            assert_eq!(var("PATH").as_deref(), Some("/bin"), "{launcher:?}");
            if let Some(sandbox) = grouped.sandbox() {
                let line = strings(&sandbox.args(Path::new("/srv/ci/ws"))).join(" ");
                for mount in &mounts {
                    assert!(line.contains(mount), "{mount}: {line}");
                }
                assert!(!line.contains("/var/run-tmp"), "{line}");
            }
        }
    }

    /// A socket a service left in the `/tmp` of an item this one runs
    /// after is bound read-only over its place in this one's copy, after
    /// the copy is bound at `/tmp`; before the copy is made there is none.
    #[test]
    fn a_socket_of_an_item_before_is_shown_over_its_copy() {
        let dir = tempfile::tempdir().unwrap();
        let private = |name: &str| {
            let p = Private {
                tmp: dir.path().join(format!("{name}-tmp")),
                var_tmp: dir.path().join(format!("{name}-var-tmp")),
                home: dir.path().join(format!("{name}-home")),
            };
            for d in [&p.tmp, &p.var_tmp, &p.home] {
                std::fs::create_dir(d).unwrap();
            }
            p
        };
        let (service, item) = (private("service"), private("item"));
        std::fs::create_dir(service.tmp.join("db")).unwrap();
        let socket = service.tmp.join("db/app.sock");
        let _listening = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let launcher = Launcher::sandboxed(Vec::new(), policy())
            .with_private(&item, std::slice::from_ref(&service));
        let args = |l: &Launcher| {
            let argv = l.argv(OsStr::new("true"), &[], Path::new("/srv/ci/ws"));
            let (_, bytes) = argv.files.iter().find(|(fd, _)| *fd == ARGS_FD).unwrap();
            String::from_utf8_lossy(bytes).replace('\0', " ")
        };
        // Bound from the gate's own hard link to it, not by its path among
        // the service's files.
        let held = dir.path().join("item-tmp.held/0");
        let bind = format!("--ro-bind {} /tmp/db/app.sock", held.display());
        assert!(!args(&launcher).contains(&bind));
        launcher.seed().unwrap();
        let line = args(&launcher);
        let tmp = line
            .find(&format!("--bind {} /tmp", item.tmp.display()))
            .unwrap();
        let shown = line.find(&bind).unwrap_or_else(|| panic!("{line}"));
        assert!(tmp < shown, "{line}");
        assert!(item.tmp.join("db/app.sock").is_file());
    }

    #[test]
    fn a_launcher_without_a_sandbox_runs_the_program_itself() {
        let l = Launcher::new(vec![("PATH".into(), "/bin".into())]);
        let argv = l.argv(
            OsStr::new("sh"),
            &[OsStr::new("-c"), OsStr::new("true")],
            Path::new("/w"),
        );
        assert_eq!(argv.program, "sh");
        assert_eq!(argv.args, ["-c", "true"]);
        assert!(argv.files.is_empty());
    }
}
