//! Observed inputs: what an item's processes touched in the workspace.
//!
//! `strace` (found by the gate where the items cannot write) follows every
//! process of the item with a seccomp filter, so only file system calls
//! stop. It writes one file per process into a folder of the gate's that
//! the items cannot read (`-ff`, so no two processes' lines interleave),
//! and `-y` decodes every descriptor, the working directory (`AT_FDCWD`)
//! included, into its path.
//!
//! Where it runs depends on who the items run as. When they run as the
//! run's own uid in a sandbox (the gate as root), `strace` runs inside the
//! sandbox as root, between bubblewrap and the drop to that uid: the items
//! can neither signal it nor read its folder (shown at [`INSIDE`], the
//! gate's own and mode 0700), and bubblewrap's set-up, some 150 calls that
//! would each stop, is not traced at all. Otherwise it runs above
//! bubblewrap, outside the items' reach, and bubblewrap's set-up process
//! is told apart by what bubblewrap says of it ([`SANDBOX_INFO`]).
//!
//! An access is any open, exec, stat-family call, `access`, `readlink` or
//! directory listing: build tools decide freshness by `stat`, so a command
//! that found its build fresh still depends on every source it looked at.
//! A relative name used where a process's working directory is not known
//! yet is kept as a suffix: any workspace file ending so may be the one.
//! A symbolic link the item makes is noted: one in the workspace to be
//! followed once the run is over, one that may lead back into the
//! workspace by a name that does not show it as a reason no trace of the
//! run can be relied on. Whatever cannot be read in full makes the trace
//! incomplete, and an incomplete trace carries nothing.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Bytes of trace read at most per item: past that the trace is cut.
const TRACE_CAP: u64 = 512 * 1024 * 1024;

/// The name each process's file starts with (`trace.PID`).
const PREFIX: &str = "trace";

/// The file bubblewrap writes its `--info-fd` JSON to, in a trace's folder:
/// it names the process that set the sandbox up (`child-pid`), whose
/// reads of what it mounts are bubblewrap's, not the item's.
pub const SANDBOX_INFO: &str = "sandbox-info.json";

/// Where a trace's folder is shown inside a sandbox whose tracer runs
/// inside it (under the sandbox's private `/run`).
pub const INSIDE: &str = "/run/gate-trace";

/// What one item's processes did to the workspace, by workspace-relative
/// `/`-separated path. `.git` is left out: the gate reads the repository
/// itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accesses {
    /// Paths opened, executed, stat'ed, probed or read as links, whether
    /// or not they existed.
    pub paths: BTreeSet<String>,
    /// Folders listed (`""` for the workspace's root).
    pub listed: BTreeSet<String>,
    /// Relative names used where the working directory was not known: any
    /// workspace path that is this one or ends with `/` and this one.
    pub suffixes: BTreeSet<String>,
    /// Paths created, written, renamed, linked or removed.
    pub written: BTreeSet<String>,
    /// Workspace paths it made symbolic links at: what is read through
    /// them is found by following them once the run is over.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub linked: BTreeSet<String>,
    /// A symbolic link it made that may lead into the workspace by a name
    /// the tracer cannot place (`/tmp/l -> /work/repo`): any item of the
    /// same run may have read through it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leads_back: Option<String>,
    /// Why the trace cannot be relied on in full, when it cannot.
    pub incomplete: Option<String>,
}

/// The tracer: `strace` at a path the gate trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracer {
    /// The `strace` executable.
    pub strace: PathBuf,
}

impl Tracer {
    /// The command line that runs `program args…` traced into `dir`.
    pub fn wrap(
        &self,
        dir: &Path,
        program: OsString,
        args: Vec<OsString>,
    ) -> (OsString, Vec<OsString>) {
        let mut all = self.options(dir);
        all.push(program);
        all.extend(args);
        (self.strace.clone().into_os_string(), all)
    }

    /// `strace`'s own arguments, writing into `dir` (as the tracer sees
    /// it), up to the `--` the traced command follows.
    pub fn options(&self, dir: &Path) -> Vec<OsString> {
        let mut all: Vec<OsString> = [
            "-f",
            "-ff",
            "-qq",
            "--seccomp-bpf",
            "-y",
            "-s",
            "0",
            "-e",
            &traced_calls(),
            "-e",
            "signal=none",
            "-o",
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        all.push(dir.join(PREFIX).into_os_string());
        all.push("--".into());
        all
    }
}

/// `strace`'s `-e trace=` list: every file call of every convention
/// ([`crate::file_calls`]), by the names `strace` gives them. A refused call
/// is asked for with `?` (no error when this `strace` does not know it:
/// the sandbox refuses it anyway); a watched one it must know. Where the
/// tables do not list every file call, `strace`'s own `%file` class.
pub fn traced_calls() -> String {
    let mut names: Vec<String> = Vec::new();
    if !crate::file_calls::COMPLETE {
        names.extend(
            ["%file", "getdents", "getdents64", "fchdir"]
                .iter()
                .map(|s| (*s).to_owned()),
        );
    }
    for call in crate::file_calls::ABIS.iter().flat_map(|a| a.calls) {
        let name = match call.policy {
            crate::file_calls::Policy::Watched => call.name.to_owned(),
            crate::file_calls::Policy::Refused(_) => format!("?{}", call.name),
        };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    format!("trace={}", names.join(","))
}

/// Reads the per-process files `strace` left in `dir`, keeping what lies
/// under `workspace`.
pub fn read(dir: &Path, workspace: &Path) -> Accesses {
    let mut accesses = Accesses::default();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            accesses.incomplete = Some(format!("the trace could not be read: {e}"));
            return accesses;
        }
    };
    let setup = sandbox_setup(dir).map(|pid| format!("{PREFIX}.{pid}"));
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(PREFIX) && Some(n) != setup.as_deref())
        })
        .collect();
    files.sort();
    if files.is_empty() {
        accesses.incomplete = Some("the tracer wrote nothing".to_owned());
        return accesses;
    }
    let mut total = 0_u64;
    let mut reader = Reader {
        workspace,
        out: &mut accesses,
    };
    for file in files {
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) => {
                reader.out.incomplete = Some(format!("a trace file could not be read: {e}"));
                break;
            }
        };
        total += bytes.len() as u64;
        if total > TRACE_CAP {
            reader.out.incomplete = Some(format!(
                "the trace was cut at {} MiB",
                TRACE_CAP / 1024 / 1024
            ));
            break;
        }
        reader.process(&String::from_utf8_lossy(&bytes));
    }
    accesses
}

/// The pid of the process that set the sandbox up, as bubblewrap wrote it
/// (before any item's code ran); `None` outside a sandbox.
fn sandbox_setup(dir: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join(SANDBOX_INFO)).ok()?;
    let info: serde_json::Value = serde_json::from_str(&text).ok()?;
    info.get("child-pid")?.as_u64()
}

/// Reads one process's lines into `out`.
pub(crate) struct Reader<'a> {
    pub(crate) workspace: &'a Path,
    pub(crate) out: &'a mut Accesses,
}

/// What a call does with the paths it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    Read,
    /// Changes what is there without looking at what was: an open for
    /// writing or appending only, a `mkdir`, a `rename` into place.
    Write,
    /// An open for reading and writing.
    ReadWrite,
    Chdir,
    List,
}

/// What the reader knows of one process while it reads its calls in
/// order: its working directory, and the paths whose content it replaced
/// (truncated, renamed into place, made), whose reads after that read
/// only what it wrote itself.
#[derive(Debug, Default)]
pub(crate) struct Process {
    /// The process's working directory, once a call has shown it.
    pub(crate) cwd: Option<PathBuf>,
    replaced: BTreeSet<String>,
}

/// Calls that show a folder at another path, or make another root.
const MOUNTS: [&str; 6] = [
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
];

/// Calls that change what is at the paths they name.
const WRITES: [&str; 27] = [
    "creat",
    "mkdir",
    "mkdirat",
    "unlink",
    "unlinkat",
    "rmdir",
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "truncate",
    "mknod",
    "mknodat",
    "chmod",
    "fchmodat",
    "fchmodat2",
    "chown",
    "lchown",
    "fchownat",
    "utime",
    "utimes",
    "utimensat",
    "futimesat",
    "setxattr",
];

impl Reader<'_> {
    fn process(&mut self, text: &str) {
        let mut process = Process::default();
        for line in text.lines() {
            let line = line.trim_end();
            // `strace`'s own notes: an exit, a signal, a process switching
            // convention (`[ Process PID=7 runs in 32 bit mode. ]`): the
            // calls after it are printed by their names in that convention.
            if line.is_empty()
                || line.starts_with("+++")
                || line.starts_with("---")
                || (line.starts_with("[ Process PID=") && line.ends_with(" mode. ]"))
            {
                continue;
            }
            let Some(call) = Call::parse(line) else {
                self.out.incomplete =
                    Some(format!("a trace line could not be read: {}", shorten(line)));
                continue;
            };
            self.call(&call, &mut process);
        }
    }

    pub(crate) fn call(&mut self, call: &Call, process: &mut Process) {
        // A ring's reads and opens happen in the kernel, out of the
        // tracer's sight (the sandbox refuses it; outside one it may work).
        if call.name == "io_uring_setup" && !call.failed {
            self.out.incomplete =
                Some("a process set up io_uring, whose file access the tracer cannot see".into());
            return;
        }
        // Any other call the sandbox refuses that succeeded ran where no
        // sandbox was: what it reached, the tracer cannot follow.
        if crate::file_calls::refused(&call.name)
            && !MOUNTS.contains(&call.name.as_str())
            && !call.failed
        {
            self.out.incomplete = Some(format!(
                "a process called {}, which the sandbox refuses and the tracer cannot follow",
                call.name
            ));
            return;
        }
        // A mount or a new root (in a user namespace of the item's own, where
        // no sandbox refuses them) names the workspace by other paths.
        if MOUNTS.contains(&call.name.as_str()) && !call.failed {
            self.out.incomplete = Some(format!(
                "a process called {}: names may lead into the workspace by another path",
                call.name
            ));
            return;
        }
        // A call that failed changed nothing (a `mkdir` of a folder that is
        // there): what it named was only looked for.
        let effect = match call.name.as_str() {
            "chdir" | "fchdir" => Effect::Chdir,
            "getdents" | "getdents64" => Effect::List,
            _ if call.failed => Effect::Read,
            n if WRITES.contains(&n) => Effect::Write,
            "open" | "openat" | "openat2" | "creat" => call.open_effect(),
            _ => Effect::Read,
        };
        let cwd = &mut process.cwd;
        // Every descriptor decoded as AT_FDCWD names the working directory.
        for arg in &call.args {
            if let Arg::Fd { cwd: true, path } = arg {
                *cwd = Some(path.clone());
            }
        }

        let link = matches!(call.name.as_str(), "symlink" | "symlinkat");
        let mut named: Vec<Named> = Vec::new();
        // Names that go up (`..`) past a folder, as given: lexically that
        // folder is undone, but the kernel goes up from where a link there
        // led, which only the files after the run can tell.
        let mut unresolved: Vec<PathBuf> = Vec::new();
        for (i, arg) in call.args.iter().enumerate() {
            match arg {
                // A link's target is not looked up when the link is made.
                Arg::Str(_) if link && i == 0 => {}
                Arg::Str(name) => {
                    let base = match i.checked_sub(1).map(|j| &call.args[j]) {
                        Some(Arg::Fd { path, .. }) => Some(path.as_path()),
                        _ => cwd.as_deref(),
                    };
                    named.push(resolve(base, name));
                    if backs_out(name) {
                        let path = Path::new(name);
                        unresolved.extend(if path.is_absolute() {
                            Some(path.to_path_buf())
                        } else {
                            base.map(|b| b.join(path))
                        });
                    }
                }
                Arg::Fd { path, cwd: false } if matches!(effect, Effect::List | Effect::Chdir) => {
                    named.push(Named::At(path.clone()));
                }
                Arg::Fd { .. } | Arg::Other => {}
            }
        }
        // A successful open's descriptor names the file it reached.
        if let Some(path) = &call.returned {
            named.push(Named::At(path.clone()));
        }
        if link
            && !call.failed
            && let Some(Arg::Str(target)) = call.args.first()
        {
            self.made_link(named.last(), target);
        }
        match effect {
            Effect::Chdir => {
                if call.failed {
                    return;
                }
                *cwd = match named.first() {
                    Some(Named::At(path)) => Some(path.clone()),
                    _ => None,
                };
            }
            Effect::List => {
                for n in &named {
                    if let Named::At(path) = n
                        && let Some(rel) = self.relative(path)
                    {
                        self.out.listed.insert(rel);
                    }
                }
            }
            Effect::Read | Effect::Write | Effect::ReadWrite => {
                self.touched(call, effect, (named, unresolved), process);
            }
        }
    }

    /// Notes what a call that reads or writes named: `named` as resolved,
    /// `unresolved` the names that went up (`..`) past a folder.
    fn touched(
        &mut self,
        call: &Call,
        effect: Effect,
        (named, unresolved): (Vec<Named>, Vec<PathBuf>),
        process: &mut Process,
    ) {
        // What it makes anew holds only what it writes, from here on.
        let replaces = !call.failed
            && match call.name.as_str() {
                "mkdir" | "mkdirat" | "rename" | "renameat" | "renameat2" | "creat" => true,
                "open" | "openat" | "openat2" => call.flags.contains("O_TRUNC"),
                _ => false,
            };
        let reads = effect != Effect::Write;
        let writes = effect != Effect::Read;
        for path in unresolved {
            if let Some(rel) = self.relative(&path) {
                self.out.paths.insert(rel);
            }
        }
        // A rename's source is gone, not read: only where it lands
        // is made anew.
        let last = named.len().saturating_sub(1);
        for (i, n) in named.into_iter().enumerate() {
            match n {
                Named::At(path) => {
                    let Some(rel) = self.relative(&path) else {
                        continue;
                    };
                    if writes {
                        self.out.written.insert(rel.clone());
                    }
                    if replaces && (i == last || !call.name.starts_with("rename")) {
                        process.replaced.insert(rel.clone());
                    } else if reads && !process.replaced.contains(&rel) {
                        self.out.paths.insert(rel);
                    }
                }
                Named::Suffix(rel) => {
                    if writes {
                        self.out.written.insert(format!("*/{rel}"));
                    }
                    if reads {
                        self.out.suffixes.insert(rel);
                    }
                }
                Named::Nothing => {}
            }
        }
    }

    /// Notes a symbolic link the item made at `at`, to `target`: one in
    /// the workspace is followed once the run is over, and one that may
    /// lead into the workspace by another name makes the run's traces
    /// incomplete.
    fn made_link(&mut self, at: Option<&Named>, target: &str) {
        let at = match at {
            Some(Named::At(path)) => Some(path.as_path()),
            _ => None,
        };
        let inside = at.and_then(|p| p.strip_prefix(self.workspace).ok().map(|_| p));
        if let Some(rel) = inside.and_then(|p| self.relative(p))
            && !self.out.linked.insert(rel.clone())
        {
            self.out.incomplete = Some(format!("a link was made twice at {rel}"));
        }
        if link_leads_back(self.workspace, at, target) {
            let at = at.map_or_else(
                || "a name the tracer could not place".into(),
                |p| p.display().to_string(),
            );
            self.out.leads_back = Some(format!("{at} -> {target}"));
        }
    }

    /// `path` relative to the workspace, when it lies there and outside
    /// `.git`; a path through a process's link (`/proc/self/cwd/…`) makes
    /// the trace incomplete, as it may lead anywhere.
    fn relative(&mut self, path: &Path) -> Option<String> {
        if through_process_link(path) {
            self.out.incomplete = Some(THROUGH_PROCESS_LINK.into());
            return None;
        }
        let rest = path.strip_prefix(self.workspace).ok()?;
        let rel = rest
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if rel == ".git" || rel.starts_with(".git/") {
            return None;
        }
        Some(rel)
    }
}

/// Whether a symbolic link made at `at` (absolute, when known) to
/// `target` may lead into `workspace` by a name that does not show it:
/// a target in the workspace from outside it, one of the workspace's
/// ancestors (`/`, `..`), a process's links (`/proc`, `/dev`), or a
/// relative target whose folder is not known. A link in the workspace to
/// the workspace is followed once the run is over; one into a system
/// folder ([`crate::system::FOLDERS`]) leads nowhere an item could change,
/// and one elsewhere leads where only a link made in the run (judged in
/// turn) could lead on.
pub(crate) fn link_leads_back(workspace: &Path, at: Option<&Path>, target: &str) -> bool {
    let target = Path::new(target);
    let resolved = if target.is_absolute() {
        normalize(target)
    } else {
        match at.and_then(Path::parent) {
            Some(folder) => normalize(&folder.join(target)),
            None => return true,
        }
    };
    if crate::system::FOLDERS
        .iter()
        .any(|s| resolved.starts_with(s))
    {
        return false;
    }
    let at_inside = at.is_some_and(|p| p.starts_with(workspace));
    if resolved.starts_with(workspace) {
        return !at_inside;
    }
    workspace.starts_with(&resolved)
        || resolved.starts_with("/proc")
        || resolved.starts_with("/dev")
}

/// Why a trace with a path through a process's link is incomplete.
pub(crate) const THROUGH_PROCESS_LINK: &str =
    "a path led through a process's working directory, root or descriptor under /proc";

/// Whether `path` goes on past a process's working directory, root or a
/// descriptor (`/proc/self/cwd/src/lib.rs`, `/proc/7/root/…`,
/// `/dev/fd/3/x`): the link may lead into the workspace by a name the
/// tracer cannot place.
pub(crate) fn through_process_link(path: &Path) -> bool {
    let parts: Vec<&str> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => p.to_str(),
            _ => None,
        })
        .collect();
    // Past the link at `parts[at]`: a name follows it (and the number, for
    // a descriptor).
    let past = |at: usize| -> bool {
        match parts.get(at).copied() {
            Some("cwd" | "root") => parts.len() > at + 1,
            Some("fd") => parts.len() > at + 2,
            _ => false,
        }
    };
    match parts.as_slice() {
        ["proc", _, "task", _, ..] => past(4),
        ["proc", ..] => past(2),
        ["dev", "fd", ..] => parts.len() > 3,
        _ => false,
    }
}

/// A path a call names, resolved as far as the trace allows.
#[derive(Debug, PartialEq, Eq)]
enum Named {
    /// An absolute path.
    At(PathBuf),
    /// A relative name whose base is unknown.
    Suffix(String),
    /// Nothing a file could be found by (a name going above its unknown base).
    Nothing,
}

/// Whether `name` goes up (`..`) from a folder it named: `a/../b`.
fn backs_out(name: &str) -> bool {
    let mut named = false;
    for c in Path::new(name).components() {
        match c {
            Component::Normal(_) => named = true,
            Component::ParentDir if named => return true,
            _ => {}
        }
    }
    false
}

/// `name` against `base`, lexically.
fn resolve(base: Option<&Path>, name: &str) -> Named {
    let path = Path::new(name);
    if path.is_absolute() {
        return Named::At(normalize(path));
    }
    if let Some(base) = base {
        return Named::At(normalize(&base.join(path)));
    }
    // Unknown base: what is left after any leading `..` may be any path's tail.
    let mut parts: Vec<String> = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::ParentDir => {
                if parts.pop().is_none() {
                    parts.clear();
                }
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    if parts.is_empty() {
        Named::Nothing
    } else {
        Named::Suffix(parts.join("/"))
    }
}

/// `path` with `.` and `..` taken out.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// One argument of a traced call.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Arg {
    /// A quoted string: a path.
    Str(String),
    /// A descriptor decoded by `-y`; `cwd` when it was `AT_FDCWD`.
    Fd { path: PathBuf, cwd: bool },
    /// Anything else.
    Other,
}

/// One line of a trace: `name(args) = result`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Call {
    pub(crate) name: String,
    pub(crate) args: Vec<Arg>,
    /// The text of the arguments outside strings (`O_WRONLY|O_CREAT`…),
    /// for the opens.
    pub(crate) flags: String,
    /// The path a returned descriptor was decoded to.
    pub(crate) returned: Option<PathBuf>,
    /// Whether it returned an error.
    pub(crate) failed: bool,
}

impl Call {
    /// What an open does, by its flags: one for writing only (`O_WRONLY`,
    /// appending or not) never looks at what was there.
    fn open_effect(&self) -> Effect {
        if self.name == "creat" || self.flags.contains("O_WRONLY") {
            Effect::Write
        } else if ["O_RDWR", "O_CREAT", "O_TRUNC"]
            .iter()
            .any(|f| self.flags.contains(f))
        {
            Effect::ReadWrite
        } else {
            Effect::Read
        }
    }

    /// Parses a line; `None` when it is not a call.
    fn parse(line: &str) -> Option<Self> {
        let open = line.find('(')?;
        let name = &line[..open];
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return None;
        }
        let mut s = Scanner {
            bytes: line.as_bytes(),
            at: open + 1,
        };
        let mut args = Vec::new();
        let mut depth = 0_usize;
        let mut current_other = String::new();
        let mut raw = String::new();
        // Arguments, split on top-level commas; nested braces and brackets
        // (a stat buffer, an argv) are skipped whole.
        // A line that ends before its `)` is an unfinished call (its process
        // was killed): what it named counts, whatever it returned.
        while let Some(b) = s.peek() {
            match b {
                b'"' if depth == 0 => {
                    args.push(Arg::Str(s.quoted()?));
                    if s.rest().starts_with("...") {
                        s.at += 3;
                    }
                }
                b'"' => {
                    s.quoted()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    s.at += 1;
                }
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    s.at += 1;
                }
                b'<' if depth == 0 && !current_other.is_empty() => {
                    let path = s.angled()?;
                    let cwd = current_other.trim() == "AT_FDCWD";
                    current_other.clear();
                    args.push(Arg::Fd {
                        path: PathBuf::from(path),
                        cwd,
                    });
                }
                b',' if depth == 0 => {
                    if !current_other.trim().is_empty() {
                        args.push(Arg::Other);
                    }
                    current_other.clear();
                    s.at += 1;
                }
                b')' if depth == 0 => {
                    if !current_other.trim().is_empty() {
                        args.push(Arg::Other);
                    }
                    s.at += 1;
                    break;
                }
                _ => {
                    if depth == 0 {
                        current_other.push(char::from(b));
                    }
                    raw.push(char::from(b));
                    s.at += 1;
                }
            }
        }
        // `inotify_add_watch`'s descriptor is the watch's, not a folder
        // its name is relative to.
        if name == "inotify_add_watch"
            && let Some(first) = args.first_mut()
            && matches!(first, Arg::Fd { .. })
        {
            *first = Arg::Other;
        }
        let rest = s.rest();
        let (returned, failed) = match rest.find(" = ") {
            None => (None, false),
            Some(eq) => {
                let ret = &rest[eq + 3..];
                let failed = ret.starts_with('-');
                let returned = ret.find('<').and_then(|lt| {
                    let mut r = Scanner {
                        bytes: ret.as_bytes(),
                        at: lt,
                    };
                    r.angled().map(PathBuf::from)
                });
                (returned, failed)
            }
        };
        Some(Self {
            // An i386 call by the name of its x86-64 twin (`stat64` is
            // `stat`), so that both are read alike.
            name: crate::file_calls::reads_as(name).to_owned(),
            args,
            flags: raw,
            returned,
            failed,
        })
    }
}

/// A cursor over one line.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn rest(&self) -> &str {
        std::str::from_utf8(&self.bytes[self.at.min(self.bytes.len())..]).unwrap_or("")
    }

    /// A `"…"` string with strace's C escapes, as text.
    fn quoted(&mut self) -> Option<String> {
        self.at += 1;
        let bytes = self.until(b'"')?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// A `<…>` decoded path.
    fn angled(&mut self) -> Option<String> {
        self.at += 1;
        let bytes = self.until(b'>')?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Bytes up to the unescaped `end`, which is consumed.
    fn until(&mut self, end: u8) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let b = self.peek()?;
            self.at += 1;
            if b == end {
                return Some(out);
            }
            if b != b'\\' {
                out.push(b);
                continue;
            }
            let e = self.peek()?;
            self.at += 1;
            match e {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'v' => out.push(0x0b),
                b'f' => out.push(0x0c),
                b'x' => {
                    let hex = self.bytes.get(self.at..self.at + 2)?;
                    out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
                    self.at += 2;
                }
                b'0'..=b'7' => {
                    let mut value = u32::from(e - b'0');
                    for _ in 0..2 {
                        match self.peek() {
                            Some(d @ b'0'..=b'7') => {
                                value = value * 8 + u32::from(d - b'0');
                                self.at += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push(u8::try_from(value).ok()?);
                }
                other => out.push(other),
            }
        }
    }
}

/// A line cut for a message.
fn shorten(line: &str) -> String {
    line.chars().take(120).collect()
}

/// One traced item of a run: its id, what it touched, and when it ran (in
/// milliseconds from any common start: its start and its end).
pub type Traced<'a> = (&'a str, &'a Accesses, (u64, u64));

/// For each item, the items whose written files it read: `reader →
/// writers`. A writer that started only after the reader ended cannot
/// have written what it read.
pub fn fed_by<'a>(all: &[Traced<'a>]) -> HashMap<&'a str, BTreeSet<&'a str>> {
    let mut writers: HashMap<&str, Vec<(&str, u64)>> = HashMap::new();
    for (id, a, (start, _)) in all {
        for path in &a.written {
            writers.entry(path.as_str()).or_default().push((id, *start));
        }
    }
    let mut out: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for (id, a, (_, end)) in all {
        let mut from = BTreeSet::new();
        for path in a.paths.iter().chain(&a.suffixes) {
            if let Some(ws) = writers.get(path.as_str()) {
                from.extend(
                    ws.iter()
                        .filter(|(w, start)| w != id && start <= end)
                        .map(|(w, _)| *w),
                );
            }
        }
        out.insert(id, from);
    }
    out
}

#[cfg(test)]
mod tests;
