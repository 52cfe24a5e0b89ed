//! The eBPF tracer: one `bpftrace` for the whole run, for a gate that runs
//! as root. Nothing stops: the kernel runs a small program at each file
//! system call and prints only what concerns the workspace, so a build that
//! makes thousands of calls costs what printing them costs.
//!
//! Which processes are an item's is decided in the kernel: every process
//! the gate itself forks is a root, and every process or thread a root's
//! processes fork belongs to it. A root is *armed* from the first program
//! it executes that is not the sandbox (`bwrap`) or `nsenter`: what
//! bubblewrap does while it builds the sandbox is not the item's. When a
//! root's last task ends the tracer says so, and a barrier (a marked call
//! of the gate's own, printed after everything before it) tells the gate it
//! has read all that root's lines.
//!
//! Where a call names a path relative to a folder (the working directory
//! or a descriptor), the program walks that folder's dentries up to one the
//! gate registered as a workspace (by opening it with a marked set of
//! flags and keeping it open), and prints the names on the way. An absolute
//! name counts when it starts with the workspace's path as the items see it.
//! A successful open is also followed to the file it reached, so a link out
//! of the workspace and back is seen. The target of each link an item
//! makes is printed, with whether the link lies in the workspace, so the
//! reader can tell one that may lead back in by another name. A relative name whose folder is not
//! in a workspace counts only when it climbs (`..`): then the trace is
//! incomplete, as it cannot be resolved there.
//!
//! The tracer ends itself when the gate's process does, however it ends.
//!
//! Every line starts with a random word the items never see, so a file name
//! holding a line break cannot pass for a line of the tracer's. Lost
//! events, a name as long as the tracer's strings, a root whose end never
//! came, or a tracer that stopped make the affected traces incomplete.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::trace::{Accesses, Arg, Call, Reader};

/// How long a string the tracer reads may be; a name this long or longer
/// may have been cut.
const STRLEN: usize = 200;

/// How many tasks (and calls in flight) the tracer's maps hold at once.
const MAP_KEYS: usize = 16_384;

/// Pages of the buffers the kernel writes the tracer's lines into, across
/// all CPUs (32 MiB): a build's burst of calls must not outrun the reader,
/// or events are lost and every trace from then on is incomplete.
const BUFFER_PAGES: usize = 8_192;

/// The pages of each CPU's buffer: a power of two, from bpftrace's default
/// up to 8 MiB.
fn pages_per_cpu(cpus: usize) -> usize {
    let share = (BUFFER_PAGES / cpus.max(1)).max(1);
    // The largest power of two not above the share.
    let floor = 1_usize << (usize::BITS - 1 - share.leading_zeros());
    floor.clamp(64, 2_048)
}

/// How long the tracer may take to compile and attach its programs.
const START_LIMIT: Duration = Duration::from_secs(60);

/// How long after an item's process ended its last task may take to end.
const END_LIMIT: Duration = Duration::from_secs(10);

/// How long a barrier or a registration may take to come back.
const ROUND_TRIP_LIMIT: Duration = Duration::from_secs(10);

/// `AT_FDCWD`.
const AT_FDCWD: i64 = -100;

/// The flags the gate asks for in its marked opens: `O_PATH |
/// O_DIRECTORY | O_NOFOLLOW | O_NOATIME`.
const MARK_ASKED: i32 = 0o10_000_000 | 0o200_000 | 0o400_000 | 0o1_000_000;

/// What the kernel sees of them: the standard library adds `O_CLOEXEC`. A
/// set nothing else uses.
const MARK_FLAGS: i64 = MARK_ASKED as i64 | 0o2_000_000;

/// Where a call's path comes from: `(dirfd argument, name argument)`;
/// `None` for the descriptor means the working directory.
type Slot = (Option<u8>, u8);

/// One system call the tracer watches.
struct Watched {
    nr: u32,
    name: &'static str,
    /// The paths it names.
    slots: &'static [Slot],
    /// A call on a descriptor alone (`getdents64`, `fchdir`): its argument.
    fd: Option<u8>,
    /// The argument holding `open` flags.
    flags: Option<u8>,
}

const fn w(nr: u32, name: &'static str, slots: &'static [Slot]) -> Watched {
    Watched {
        nr,
        name,
        slots,
        fd: None,
        flags: None,
    }
}

const AT1: &[Slot] = &[(Some(0), 1)];
const PLAIN0: &[Slot] = &[(None, 0)];
const PLAIN1: &[Slot] = &[(None, 1)];
const TWO_AT: &[Slot] = &[(Some(0), 1), (Some(2), 3)];
const TWO_PLAIN: &[Slot] = &[(None, 0), (None, 1)];

/// The calls watched on x86-64, by number: every call the `strace` tracer's
/// `%file` class holds that names a path an item could depend on, the
/// directory listings, and `io_uring_setup`, which makes a trace incomplete.
#[cfg(target_arch = "x86_64")]
const CALLS: &[Watched] = &[
    Watched {
        flags: Some(1),
        ..w(2, "open", PLAIN0)
    },
    w(4, "stat", PLAIN0),
    w(6, "lstat", PLAIN0),
    w(21, "access", PLAIN0),
    w(59, "execve", PLAIN0),
    w(76, "truncate", PLAIN0),
    Watched {
        fd: Some(0),
        ..w(78, "getdents", &[])
    },
    w(80, "chdir", PLAIN0),
    Watched {
        fd: Some(0),
        ..w(81, "fchdir", &[])
    },
    w(82, "rename", TWO_PLAIN),
    w(83, "mkdir", PLAIN0),
    w(84, "rmdir", PLAIN0),
    w(85, "creat", PLAIN0),
    w(86, "link", TWO_PLAIN),
    w(87, "unlink", PLAIN0),
    w(88, "symlink", PLAIN1),
    w(89, "readlink", PLAIN0),
    w(90, "chmod", PLAIN0),
    w(92, "chown", PLAIN0),
    w(94, "lchown", PLAIN0),
    w(132, "utime", PLAIN0),
    w(133, "mknod", PLAIN0),
    w(137, "statfs", PLAIN0),
    w(188, "setxattr", PLAIN0),
    w(189, "lsetxattr", PLAIN0),
    w(191, "getxattr", PLAIN0),
    w(192, "lgetxattr", PLAIN0),
    w(194, "listxattr", PLAIN0),
    w(195, "llistxattr", PLAIN0),
    w(197, "removexattr", PLAIN0),
    w(198, "lremovexattr", PLAIN0),
    Watched {
        fd: Some(0),
        ..w(217, "getdents64", &[])
    },
    w(235, "utimes", PLAIN0),
    w(254, "inotify_add_watch", PLAIN1),
    Watched {
        flags: Some(2),
        ..w(257, "openat", AT1)
    },
    w(258, "mkdirat", AT1),
    w(259, "mknodat", AT1),
    w(260, "fchownat", AT1),
    w(261, "futimesat", AT1),
    w(262, "newfstatat", AT1),
    w(263, "unlinkat", AT1),
    w(264, "renameat", TWO_AT),
    w(265, "linkat", TWO_AT),
    w(266, "symlinkat", &[(Some(1), 2)]),
    w(267, "readlinkat", AT1),
    w(268, "fchmodat", AT1),
    w(269, "faccessat", AT1),
    w(280, "utimensat", AT1),
    w(303, "name_to_handle_at", AT1),
    w(316, "renameat2", TWO_AT),
    w(322, "execveat", AT1),
    w(332, "statx", AT1),
    w(425, "io_uring_setup", &[]),
    // `openat2`'s flags are in a structure: its opens count as writes.
    w(437, "openat2", AT1),
    w(439, "faccessat2", AT1),
    w(452, "fchmodat2", AT1),
];

/// No table for this architecture: the eBPF tracer is not offered.
#[cfg(not(target_arch = "x86_64"))]
const CALLS: &[Watched] = &[];

/// The watched call numbered `nr`.
fn watched(nr: u32) -> Option<&'static Watched> {
    CALLS.iter().find(|c| c.nr == nr)
}

/// A shared handle on the run's eBPF tracer; two are equal when they are
/// the same tracer.
#[derive(Debug, Clone)]
pub struct Watching(pub Arc<Watcher>);

impl PartialEq for Watching {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Watching {}

/// What the gate tells the tracer's script when it writes it.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The `bpftrace` executable.
    pub bpftrace: PathBuf,
    /// The workspace's path as the items see it: absolute names under it
    /// count.
    pub workspace: PathBuf,
    /// Programs whose execution does not arm a root (the sandbox's own).
    pub launchers: Vec<PathBuf>,
}

/// Why the eBPF tracer cannot run.
#[derive(Debug, thiserror::Error)]
pub enum BpfError {
    /// No table of calls for this architecture.
    #[error("the eBPF tracer knows no system calls of this architecture")]
    Architecture,
    /// A path it cannot write into its script.
    #[error("the path {0} cannot be written into the tracer's script")]
    Path(String),
    /// Its folder or script could not be made.
    #[error("the tracer's script could not be written: {0}")]
    Script(#[source] std::io::Error),
    /// `bpftrace` could not start or stopped.
    #[error("bpftrace {0}")]
    Tracer(String),
}

/// A line a root's processes produced, or the tracer's own.
#[derive(Debug, Default)]
struct Root {
    /// Calls read in full.
    calls: Vec<Call>,
    /// Calls waiting for their folder's names, by thread.
    pending: HashMap<u64, Pending>,
    /// The root's last task ended.
    ended: bool,
    /// Why its trace cannot be relied on.
    incomplete: Option<String>,
    /// The targets of links made in the workspace, by thread, until the
    /// call that made the link is read.
    link_targets: HashMap<u64, String>,
    /// The targets of links made outside the workspace.
    outside_links: Vec<String>,
}

impl Root {
    /// Keeps a call read in full; a link's target goes first, as `strace`
    /// shows it.
    fn push(&mut self, tid: u64, mut call: Call) {
        if matches!(call.name.as_str(), "symlink" | "symlinkat")
            && let Some(target) = self.link_targets.remove(&tid)
        {
            call.args.insert(0, Arg::Str(target));
        }
        self.calls.push(call);
    }
}

/// A call whose folder's names are still coming.
#[derive(Debug)]
struct Pending {
    call: Call,
    /// The registered folder the names lead down from.
    top: PathBuf,
    /// The names, the innermost first.
    names: Vec<String>,
    /// How many are expected.
    expected: usize,
    /// Whether the folder is the result itself (an open's file), not the
    /// base of the call's name.
    result: bool,
}

/// What the reader has seen.
#[derive(Debug, Default)]
struct State {
    ready: bool,
    /// Why the tracer stopped, once it has.
    stopped: Option<String>,
    roots: HashMap<u32, Root>,
    /// Registered folders: the dentry's address, as printed, to the path
    /// the items see it at.
    folders: HashMap<String, PathBuf>,
    /// Names the gate's marked opens succeeded on, with the dentry.
    registered: HashMap<String, String>,
    /// Barrier names seen.
    barriers: std::collections::HashSet<String>,
    /// Where a continuation line (a name holding a line break) belongs.
    last: Last,
    /// Why traces cannot be relied on since events were lost.
    lost: Option<String>,
}

/// The string a continuation line extends.
#[derive(Debug, Default, Clone, Copy)]
enum Last {
    #[default]
    Nothing,
    /// The name of the last call read for this root and thread.
    Name(u32, u64),
    /// The last folder name read for this root and thread.
    Component(u32, u64),
    /// A link's target read for this root.
    Link(u32),
}

/// The eBPF tracer of one run.
pub struct Watcher {
    nonce: String,
    shared: Arc<(Mutex<State>, Condvar)>,
    child: Mutex<std::process::Child>,
    /// Folders registered: kept open so their dentries stay what they were.
    pinned: Mutex<Vec<(PathBuf, std::fs::File)>>,
    /// Claimed roots by the trace folder they are collected for.
    claims: Mutex<BTreeMap<PathBuf, Vec<u32>>>,
    /// Where the script lives (the gate's, mode 0700).
    _folder: tempfile::TempDir,
    barrier: std::sync::atomic::AtomicU64,
    started: Duration,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher").finish_non_exhaustive()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Watcher {
    /// Writes the script, starts `bpftrace` and waits until its programs
    /// are attached.
    pub fn start(settings: &Settings) -> Result<Self, BpfError> {
        if CALLS.is_empty() {
            return Err(BpfError::Architecture);
        }
        let nonce = nonce();
        let folder = tempfile::Builder::new()
            .prefix("gate-bpf-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .map_err(BpfError::Script)?;
        let text = script(&nonce, std::process::id(), settings)?;
        let path = folder.path().join("trace.bt");
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(BpfError::Script)?;
        let begun = Instant::now();
        let mut child = spawn(&settings.bpftrace, &path)
            .map_err(|e| BpfError::Tracer(format!("cannot start: {e}")))?;
        let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(BpfError::Tracer("has no output to read".into()));
        };
        spawn_reader(stdout, format!("{nonce} "), Arc::clone(&shared));
        spawn_errors(stderr, Arc::clone(&shared));
        let mut watcher = Self {
            nonce,
            shared,
            child: Mutex::new(child),
            pinned: Mutex::new(Vec::new()),
            claims: Mutex::new(BTreeMap::new()),
            _folder: folder,
            barrier: std::sync::atomic::AtomicU64::new(0),
            started: Duration::ZERO,
        };
        watcher
            .wait_for(START_LIMIT, |s| s.ready.then_some(()))
            .map_err(|why| BpfError::Tracer(format!("did not attach its programs: {why}")))?;
        watcher.started = begun.elapsed();
        Ok(watcher)
    }

    /// How long the tracer took to start.
    pub fn startup(&self) -> Duration {
        self.started
    }

    /// Registers `host` (a folder of the host's) as a workspace the items
    /// see at `inside`, before any item runs in it.
    pub fn register(&self, host: &Path, inside: &Path) -> Result<(), BpfError> {
        let mut pinned = self.pinned.lock().unwrap_or_else(PoisonError::into_inner);
        if pinned.iter().any(|(p, _)| p == host) {
            return Ok(());
        }
        let name = host
            .to_str()
            .filter(|s| !s.contains('\n') && s.len() < STRLEN - 1)
            .ok_or_else(|| BpfError::Path(host.display().to_string()))?
            .to_owned();
        let file = marked_open(host)
            .map_err(|e| BpfError::Tracer(format!("cannot register {}: {e}", host.display())))?;
        let dentry = self
            .wait_for(ROUND_TRIP_LIMIT, |s| s.registered.get(&name).cloned())
            .map_err(|why| BpfError::Tracer(format!("did not see {name} registered: {why}")))?;
        {
            let (lock, _) = &*self.shared;
            let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
            state.folders.insert(dentry, inside.to_path_buf());
        }
        pinned.push((host.to_path_buf(), file));
        Ok(())
    }

    /// Takes the process `pid` (a child of the gate's) as one of the
    /// processes traced into `dir`.
    pub fn claim(&self, dir: &Path, pid: u32) {
        self.claims
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(dir.to_path_buf())
            .or_default()
            .push(pid);
    }

    /// What the processes claimed for `dir` touched under `workspace`
    /// (as the items see it), once they have all ended.
    pub fn collect(&self, dir: &Path, workspace: &Path) -> Accesses {
        let pids = self
            .claims
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(dir)
            .unwrap_or_default();
        let mut accesses = Accesses::default();
        if pids.is_empty() {
            accesses.incomplete = Some("no process of the item was seen".into());
            return accesses;
        }
        let ended = self.wait_for(END_LIMIT, |s| {
            pids.iter()
                .all(|p| s.roots.get(p).is_some_and(|r| r.ended))
                .then_some(())
        });
        if let Err(why) = ended {
            accesses.incomplete = Some(format!(
                "the tracer did not see the item's processes end: {why}"
            ));
        } else if let Err(why) = self.barrier() {
            accesses.incomplete = Some(format!(
                "the tracer's lines could not be read to the end: {why}"
            ));
        }
        let (lock, _) = &*self.shared;
        let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
        let mut reader = Reader {
            workspace,
            out: &mut accesses,
        };
        for pid in pids {
            let Some(root) = state.roots.remove(&pid) else {
                reader.out.incomplete = Some("a process of the item was not seen".into());
                continue;
            };
            if let Some(why) = root.incomplete {
                reader.out.incomplete = Some(why);
            }
            if let Some(target) = root
                .outside_links
                .iter()
                .find(|t| crate::trace::link_leads_back(workspace, None, t))
            {
                reader.out.leads_back = Some(format!("a link outside the workspace -> {target}"));
            }
            if !root.pending.is_empty() {
                reader.out.incomplete = Some("a call's folder was not read in full".to_owned());
            }
            let mut cwd = None;
            for call in &root.calls {
                reader.call(call, &mut cwd);
            }
        }
        if let Some(why) = &state.stopped {
            accesses.incomplete = Some(format!("the tracer stopped: {why}"));
        }
        if let Some(why) = &state.lost {
            accesses.incomplete = Some(why.clone());
        }
        // Roots nobody claimed are dropped once ended.
        let claims = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .roots
            .retain(|pid, r| !r.ended || claims.values().any(|p| p.contains(pid)));
        accesses
    }

    /// Returns once every line printed before now has been read.
    fn barrier(&self) -> Result<(), String> {
        let k = self
            .barrier
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("/.gate-barrier-{}-{k}", self.nonce);
        // The open fails (nothing is there): the tracer prints it anyway.
        let _ = marked_open(Path::new(&name));
        self.wait_for(ROUND_TRIP_LIMIT, |s| s.barriers.remove(&name).then_some(()))
    }

    /// Waits until `ready` gives a value, for at most `limit`.
    fn wait_for<T>(
        &self,
        limit: Duration,
        mut ready: impl FnMut(&mut State) -> Option<T>,
    ) -> Result<T, String> {
        let (lock, cond) = &*self.shared;
        let deadline = Instant::now() + limit;
        let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(value) = ready(&mut state) {
                return Ok(value);
            }
            if let Some(why) = &state.stopped {
                return Err(format!("the tracer stopped: {why}"));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(format!("nothing within {} s", limit.as_secs()));
            }
            state = cond
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// Starts `bpftrace` on `script`, its output piped, with only the
/// settings it reads for environment: it runs no code of the workspace's,
/// and nothing of the gate's own environment is its to read.
#[allow(
    clippy::disallowed_methods,
    reason = "the gate's own tool, started as it is: no item runs through here"
)]
fn spawn(bpftrace: &Path, script: &Path) -> std::io::Result<std::process::Child> {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    std::process::Command::new(bpftrace)
        .args(["-B".as_ref(), "line".as_ref(), script.as_os_str()])
        .env_clear()
        .env("BPFTRACE_STRLEN", STRLEN.to_string())
        .env("BPFTRACE_MAP_KEYS_MAX", MAP_KEYS.to_string())
        .env("BPFTRACE_PERF_RB_PAGES", pages_per_cpu(cpus).to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
}

/// Opens `path` with the marked flags the tracer registers.
fn marked_open(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(MARK_ASKED)
        .open(path)
}

/// A word the items cannot guess.
fn nonce() -> String {
    let mut seed = [0_u8; 16];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut seed))
        .is_err()
    {
        // Never in practice; a time is still not the items' to read.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        seed[..16].copy_from_slice(&t.as_nanos().to_le_bytes());
    }
    format!("g{}", hex::encode(seed))
}

/// Reads the tracer's output into `shared`.
fn spawn_reader(
    stdout: std::process::ChildStdout,
    prefix: String,
    shared: Arc<(Mutex<State>, Condvar)>,
) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            let text = String::from_utf8_lossy(&line);
            let (lock, cond) = &*shared;
            let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
            match text.strip_prefix(&prefix) {
                Some(rest) => state.line(rest),
                // bpftrace's own word that the kernel dropped events.
                None if text.starts_with("Lost ") && text.ends_with(" events") => {
                    state.lost(&text);
                }
                None => state.continued(&text),
            }
            cond.notify_all();
        }
        let (lock, cond) = &*shared;
        let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .stopped
            .get_or_insert_with(|| "its output ended".into());
        cond.notify_all();
    });
}

/// Reads the tracer's warnings: lost events make every trace still open
/// incomplete.
fn spawn_errors(stderr: std::process::ChildStderr, shared: Arc<(Mutex<State>, Condvar)>) {
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if line.contains("Lost") {
                let (lock, _) = &*shared;
                lock.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .lost(&line);
            } else if !line.contains("RLIMIT_MEMLOCK") {
                tracing::debug!(%line, "bpftrace");
            }
        }
    });
}

impl State {
    /// Events were lost: which root's cannot be told, so every trace
    /// collected from now on is incomplete.
    fn lost(&mut self, said: &str) {
        self.lost = Some(format!("the tracer lost events ({said})"));
    }

    /// One line of the tracer's, its word taken off.
    fn line(&mut self, rest: &str) {
        self.last = Last::Nothing;
        let (kind, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        match kind {
            "READY" => self.ready = true,
            "W" => {
                if let Some((dentry, name)) = rest.split_once(' ') {
                    self.registered.insert(name.to_owned(), dentry.to_owned());
                }
            }
            "Z" => {
                self.barriers.insert(rest.to_owned());
            }
            "END" => {
                if let Ok(pid) = rest.trim().parse() {
                    self.roots.entry(pid).or_default().ended = true;
                }
            }
            "E" | "R" => self.call(kind == "R", rest),
            "C" => self.component(rest),
            "L" => self.link(rest),
            _ => {}
        }
    }

    /// A call: `ROOT TID NR RET DFD FLAGS HIT K NAME` (`E`, the call's
    /// name against its folder) or `ROOT TID NR RET FLAGS HIT K` (`R`,
    /// the file an open reached).
    fn call(&mut self, result: bool, rest: &str) {
        let fields: Vec<&str> = if result {
            rest.splitn(7, ' ').collect()
        } else {
            rest.splitn(9, ' ').collect()
        };
        let num = |i: usize| fields.get(i).and_then(|f| f.parse::<i64>().ok());
        let (Some(root), Some(tid), Some(nr), Some(ret)) = (num(0), num(1), num(2), num(3)) else {
            return;
        };
        let Ok(root) = u32::try_from(root) else {
            return;
        };
        let tid = tid.unsigned_abs();
        let (dfd, flags, hit, k, name) = if result {
            (None, num(4), fields.get(5).copied(), num(6), None)
        } else {
            (
                num(4),
                num(5),
                fields.get(6).copied(),
                num(7),
                Some(fields.get(8).copied().unwrap_or("").to_owned()),
            )
        };
        let entry = self.roots.entry(root).or_default();
        let Some(call_info) = u32::try_from(nr).ok().and_then(watched) else {
            entry.incomplete = Some(format!("the tracer printed an unknown call {nr}"));
            return;
        };
        if name.as_ref().is_some_and(|n| n.len() >= STRLEN - 1) {
            entry.incomplete = Some("a name as long as the tracer reads may have been cut".into());
        }
        let mut call = Call {
            name: call_info.name.to_owned(),
            args: Vec::new(),
            flags: open_flags(call_info, flags),
            returned: None,
            failed: ret < 0,
        };
        let k = usize::try_from(k.unwrap_or(0)).unwrap_or(0);
        let folders = &self.folders;
        let top = match hit {
            Some("0") => {
                // A relative name from a folder outside every workspace, or
                // an absolute one under `/proc` or `/dev/fd`.
                if name.as_deref().is_some_and(climbs) {
                    entry.incomplete =
                        Some("a relative name climbed from a folder outside the workspace".into());
                }
                if name
                    .as_deref()
                    .is_some_and(|n| crate::trace::through_process_link(Path::new(n)))
                {
                    entry.incomplete = Some(crate::trace::THROUGH_PROCESS_LINK.into());
                }
                return;
            }
            Some("1") => None,
            Some(dentry) => {
                let Some(path) = folders.get(dentry) else {
                    entry.incomplete = Some("a call named an unregistered folder".into());
                    return;
                };
                Some(path.clone())
            }
            None => return,
        };
        if call_info.name == "io_uring_setup" {
            entry.push(tid, call);
            return;
        }
        match (top, name) {
            (None, Some(name)) => {
                call.args.push(Arg::Str(name));
                entry.push(tid, call);
            }
            (Some(top), name) => {
                if let Some(name) = name
                    && call_info.fd.is_none()
                {
                    call.args.push(Arg::Str(name));
                }
                let cwd = dfd == Some(AT_FDCWD);
                let pending = Pending {
                    call,
                    top,
                    names: Vec::new(),
                    expected: k,
                    result,
                };
                if k == 0 {
                    entry.push(tid, pending.finish(cwd, call_info.fd.is_some()));
                } else {
                    entry.pending.insert(tid, pending);
                    self.last = Last::Name(root, tid);
                    return;
                }
            }
            (None, None) => return,
        }
        if !result {
            self.last = Last::Name(root, tid);
        }
    }

    /// A folder's name for the pending call of a thread: `ROOT TID NAME`.
    fn component(&mut self, rest: &str) {
        let mut fields = rest.splitn(3, ' ');
        let (Some(root), Some(tid)) = (
            fields.next().and_then(|f| f.parse::<u32>().ok()),
            fields.next().and_then(|f| f.parse::<u64>().ok()),
        ) else {
            return;
        };
        let name = fields.next().unwrap_or("").to_owned();
        let entry = self.roots.entry(root).or_default();
        if name.len() >= STRLEN - 1 {
            entry.incomplete = Some("a folder's name may have been cut".into());
        }
        let Some(pending) = entry.pending.get_mut(&tid) else {
            entry.incomplete = Some("a folder's name came without its call".into());
            return;
        };
        pending.names.push(name);
        if pending.names.len() >= pending.expected
            && let Some(done) = entry.pending.remove(&tid)
        {
            let fd_only = done.call.args.is_empty();
            entry.push(tid, done.finish(false, fd_only));
        }
        self.last = Last::Component(root, tid);
    }

    /// A link made by a thread: `ROOT TID IN TARGET`, `IN` 1 when the link
    /// is in the workspace (its call's line follows).
    fn link(&mut self, rest: &str) {
        let mut fields = rest.splitn(4, ' ');
        let (Some(root), Some(tid), Some(inside)) = (
            fields.next().and_then(|f| f.parse::<u32>().ok()),
            fields.next().and_then(|f| f.parse::<u64>().ok()),
            fields.next(),
        ) else {
            return;
        };
        let target = fields.next().unwrap_or("").to_owned();
        let entry = self.roots.entry(root).or_default();
        if target.len() >= STRLEN - 1 {
            entry.incomplete = Some("a link's target may have been cut".into());
        }
        if inside == "1" {
            entry.link_targets.insert(tid, target);
        } else {
            entry.outside_links.push(target);
        }
        self.last = Last::Link(root);
    }

    /// A line without the word: the rest of a name that held a line break.
    fn continued(&mut self, text: &str) {
        let extend = |s: &mut String| {
            s.push('\n');
            s.push_str(text);
        };
        match self.last {
            Last::Name(root, tid) => {
                if let Some(r) = self.roots.get_mut(&root) {
                    let name = match r.pending.get_mut(&tid) {
                        Some(p) => p.call.args.iter_mut().find_map(|a| match a {
                            Arg::Str(s) => Some(s),
                            _ => None,
                        }),
                        None => r.calls.last_mut().and_then(|c| {
                            c.args.iter_mut().find_map(|a| match a {
                                Arg::Str(s) => Some(s),
                                _ => None,
                            })
                        }),
                    };
                    if let Some(name) = name {
                        extend(name);
                    }
                }
            }
            Last::Component(root, tid) => {
                if let Some(r) = self.roots.get_mut(&root) {
                    match r.pending.get_mut(&tid).and_then(|p| p.names.last_mut()) {
                        Some(name) => extend(name),
                        None => {
                            r.incomplete = Some("a folder's name held a line break".into());
                        }
                    }
                }
            }
            Last::Link(root) => {
                if let Some(r) = self.roots.get_mut(&root) {
                    r.incomplete = Some("a link's target held a line break".into());
                }
            }
            Last::Nothing => {}
        }
    }
}

impl Pending {
    /// The call, its folder's path put together.
    fn finish(mut self, cwd: bool, fd_only: bool) -> Call {
        let mut path = self.top;
        for name in self.names.iter().rev() {
            path.push(name);
        }
        if self.result {
            self.call.returned = Some(path);
        } else if fd_only {
            self.call.args.insert(0, Arg::Fd { path, cwd: false });
        } else {
            self.call.args.insert(0, Arg::Fd { path, cwd });
        }
        self.call
    }
}

/// Whether a relative name goes up a folder.
fn climbs(name: &str) -> bool {
    Path::new(name)
        .components()
        .any(|c| c == std::path::Component::ParentDir)
}

/// An open's flags as `strace` spells the ones the reader looks at.
fn open_flags(call: &Watched, flags: Option<i64>) -> String {
    if call.name == "openat2" || call.name == "creat" {
        return "O_WRONLY|O_CREAT".into();
    }
    let Some(flags) = flags.filter(|_| call.flags.is_some()) else {
        return String::new();
    };
    let mut out = Vec::new();
    for (bit, name) in [
        (0o1, "O_WRONLY"),
        (0o2, "O_RDWR"),
        (0o100, "O_CREAT"),
        (0o1000, "O_TRUNC"),
    ] {
        if flags & bit != 0 {
            out.push(name);
        }
    }
    out.join("|")
}

/// The tracer's script.
fn script(nonce: &str, gate: u32, settings: &Settings) -> Result<String, BpfError> {
    let quoted = |p: &Path| -> Result<String, BpfError> {
        let s = p
            .to_str()
            .ok_or_else(|| BpfError::Path(p.display().to_string()))?;
        if s.chars().any(|c| c == '"' || c == '\\' || c.is_control()) || s.len() >= STRLEN - 1 {
            return Err(BpfError::Path(s.to_owned()));
        }
        Ok(s.to_owned())
    };
    let workspace = quoted(&settings.workspace)?;
    let mut not_armed = Vec::new();
    for launcher in &settings.launchers {
        not_armed.push(format!("str(args->filename) != \"{}\"", quoted(launcher)?));
    }
    let arms = if not_armed.is_empty() {
        "1".to_owned()
    } else {
        not_armed.join(" && ")
    };
    let n = nonce;
    let probe = |slot: &str, ids: &str, at: &str, ret: &str| Probe {
        n,
        gate,
        slot: slot.to_owned(),
        ids: ids.to_owned(),
        at: at.to_owned(),
        ret: ret.to_owned(),
        between: String::new(),
    };
    let exec = "(args->id == 59 || args->id == 322)";
    let parts = [
        tasks(n, gate, &arms),
        enter(gate),
        marked(n, gate),
        // Each name a call gives, then the file an open reached; an exec's
        // name is gone once it succeeds, so it is read on the way in.
        resolve(&probe("1", exec, "sys_enter", "0")),
        resolve(&Probe {
            between: links(n, gate),
            ..probe(
                "1",
                "@nr[tid] != 59 && @nr[tid] != 322",
                "sys_exit",
                "args->ret",
            )
        }),
        resolve(&probe("2", "@nr[tid]", "sys_exit", "args->ret")),
        returned(n, gate),
        format!(
            "tracepoint:raw_syscalls:sys_exit /@nr[tid]/ {{\n  {FORGET}\n}}\n\
             END {{ clear(@root); clear(@live); clear(@armed); clear(@nr); clear(@n1); \
             clear(@d1); clear(@n2); clear(@d2); clear(@fl); clear(@fdonly); clear(@ws); \
             clear(@h); clear(@k); clear(@b); clear(@tg); }}\n"
        ),
    ];
    Ok(parts
        .concat()
        .replace("@WSLEN1@", &(workspace.len() + 1).to_string())
        .replace("@WORKSPACE@", &workspace))
}

/// What a call kept is forgotten once it has returned.
const FORGET: &str = "delete(@h[tid]); delete(@k[tid]); delete(@b[tid]); delete(@nr[tid]); \
                      delete(@n1[tid]); delete(@d1[tid]); delete(@n2[tid]); delete(@d2[tid]); \
                      delete(@fl[tid]); delete(@fdonly[tid]); delete(@tg[tid]);";

/// The probes that follow roots and their tasks: the gate's children are
/// roots, their tasks belong to them, a root is armed by the first program
/// it runs that `arms` (not the sandbox), and its end is printed.
fn tasks(n: &str, gate: u32, arms: &str) -> String {
    format!(
        r#"BEGIN {{ printf("{n} READY\n"); }}
tracepoint:sched:sched_process_fork /pid == {gate}/ {{
  @root[args->child_pid] = args->child_pid; @live[args->child_pid] = 1;
}}
tracepoint:sched:sched_process_fork /pid != {gate} && @root[tid]/ {{
  $r = @root[tid];
  @root[args->child_pid] = $r; @live[$r] = @live[$r] + 1;
  if (@armed[tid]) {{ @armed[args->child_pid] = 1; }}
}}
tracepoint:sched:sched_process_exec /@root[args->old_pid]/ {{
  if (args->old_pid != args->pid) {{
    @root[args->pid] = @root[args->old_pid]; delete(@root[args->old_pid]);
    if (@armed[args->old_pid]) {{ @armed[args->pid] = 1; delete(@armed[args->old_pid]); }}
  }}
  if ({arms}) {{
    if (@root[args->pid] == args->pid && !@armed[args->pid]) {{
      delete(@root[args->pid]); delete(@live[args->pid]);
    }} else {{
      @armed[args->pid] = 1;
    }}
  }}
}}
tracepoint:sched:sched_process_exit /tid == {gate}/ {{ exit(); }}
tracepoint:sched:sched_process_exit /@root[tid]/ {{
  $r = @root[tid];
  delete(@root[tid]); delete(@armed[tid]);
  @live[$r] = @live[$r] - 1;
  if (@live[$r] == 0) {{ delete(@live[$r]); printf("{n} END %d\n", $r); }}
}}
"#
    )
}

/// The probe that keeps what each watched call names until it returns.
/// Long chains of comparisons on the context are lowered to what the
/// verifier refuses: the call is compared once read into a variable, and
/// the later probes go by what this one kept (`@nr`).
fn enter(gate: u32) -> String {
    use std::fmt::Write as _;
    let all: Vec<String> = CALLS.iter().map(|c| format!("$id == {}", c.nr)).collect();
    let mut s = format!(
        "tracepoint:raw_syscalls:sys_enter /@armed[tid] || pid == {gate}/ {{\n  $id = args->id;\n  \
         if ({}) {{\n  @nr[tid] = $id;\n  \
         $a0 = args->args[0]; $a1 = args->args[1]; $a2 = args->args[2]; $a3 = args->args[3];\n",
        all.join(" || ")
    );
    for c in CALLS {
        let _ = write!(s, "  if ($id == {}) {{", c.nr);
        for (i, (dfd, name)) in c.slots.iter().enumerate() {
            let slot = i + 1;
            let _ = write!(s, " @n{slot}[tid] = $a{name};");
            match dfd {
                Some(d) => {
                    let _ = write!(s, " @d{slot}[tid] = $a{d};");
                }
                None => {
                    let _ = write!(s, " @d{slot}[tid] = {AT_FDCWD};");
                }
            }
        }
        if let Some(fd) = c.fd {
            let _ = write!(s, " @d1[tid] = $a{fd}; @fdonly[tid] = 1;");
        }
        if let Some(f) = c.flags {
            let _ = write!(s, " @fl[tid] = $a{f};");
        }
        if matches!(c.name, "symlink" | "symlinkat") {
            s.push_str(" @tg[tid] = $a0;");
        }
        s.push_str(" }\n");
    }
    s.push_str("  }\n}\n");
    s
}

/// The probes of the gate's own marked opens (registrations and
/// barriers), and of `io_uring_setup`, printed whatever it names.
fn marked(n: &str, gate: u32) -> String {
    format!(
        r#"tracepoint:raw_syscalls:sys_exit /pid == {gate} && @nr[tid]/ {{
  if (@nr[tid] == 257 && @fl[tid] == {MARK_FLAGS}) {{
    if (args->ret >= 0) {{
      $w = (*(curtask->files->fdt->fd + args->ret))->f_path.dentry;
      @ws[$w] = 1;
      printf("{n} W %llx %s\n", $w, str(uptr(@n1[tid])));
    }} else {{
      printf("{n} Z %s\n", str(uptr(@n1[tid])));
    }}
  }}
  {FORGET}
}}
tracepoint:raw_syscalls:sys_exit /@nr[tid] == 425 && pid != {gate}/ {{
  printf("{n} E %d %d 425 %d -100 0 1 0 \n", @root[tid], tid, args->ret);
}}
"#
    )
}

/// Where a [`resolve`] runs: the nonce, the gate's pid, the slot (`1` or
/// `2`), the calls, the tracepoint (`sys_enter` for an exec, whose name is
/// gone once it succeeds), what the call returned there, and probes to
/// run once the slot's name is placed, before it is printed.
struct Probe<'a> {
    n: &'a str,
    gate: u32,
    slot: String,
    ids: String,
    at: String,
    ret: String,
    between: String,
}

/// The probe that prints the target of each link an item made, with
/// whether the link is in the workspace (then its call's line follows):
/// a link outside it may lead back in by a name the tracer cannot place.
fn links(n: &str, gate: u32) -> String {
    format!(
        r#"tracepoint:raw_syscalls:sys_exit /@tg[tid]/ {{
  if (args->ret == 0 && pid != {gate}) {{
    $in = 1;
    if (@h[tid] == 0 || @h[tid] == 2) {{ $in = 0; }}
    printf("{n} L %d %d %d %s\n", @root[tid], tid, $in, str(uptr(@tg[tid])));
  }}
}}
"#
    )
}

/// The probes that resolve a slot's name against its folder and print it
/// when it lies in a workspace: one decides, one prints the call, one
/// prints the folder's names, one forgets (each program within the
/// kernel's stack limit).
fn resolve(p: &Probe<'_>) -> String {
    let Probe {
        n,
        gate,
        slot,
        ids,
        at,
        ret,
        between,
    } = p;
    let name = format!("str(uptr(@n{slot}[tid]))");
    let fd_only = if slot == "1" { "@fdonly[tid]" } else { "0" };
    format!(
        r#"tracepoint:raw_syscalls:{at} /@nr[tid]/ {{
  $hit = (uint64)0;
  $abs = 0;
  $k = 0;
  if (!({ids} && pid != {gate} && (@n{slot}[tid] || {fd_only}))) {{ $abs = 2; }}
  if ($abs == 0 && @n{slot}[tid]) {{
    $s = {name};
    if (strncmp($s, "/", 1) == 0) {{
      $abs = 1;
      if (strncmp($s, "@WORKSPACE@/", @WSLEN1@) == 0 || $s == "@WORKSPACE@") {{ $hit = 1; }}
      else {{ if (strncmp($s, "/proc/", 6) == 0 || strncmp($s, "/dev/fd/", 8) == 0) {{ $hit = 2; }} }}
    }}
  }}
  if ($abs == 0) {{
    if ((int32)@d{slot}[tid] == {AT_FDCWD}) {{ $d = curtask->fs->pwd.dentry; }}
    else {{ $d = (*(curtask->files->fdt->fd + @d{slot}[tid]))->f_path.dentry; }}
    @b[tid] = $d;
    unroll(32) {{
      if ($hit == 0 && $k >= 0) {{
        if (@ws[$d]) {{ $hit = (uint64)$d; }}
        else {{ if ($d == $d->d_parent) {{ $k = -1; }} else {{ $d = $d->d_parent; $k++; }} }}
      }}
    }}
    if ($hit == 0) {{ $k = 0; $hit = 2; }}
  }}
  @h[tid] = $hit; @k[tid] = $k;
}}
{between}tracepoint:raw_syscalls:{at} /@h[tid]/ {{
  if (@h[tid] == 2) {{
    if (@n{slot}[tid]) {{ printf("{n} E %d %d %d %d %d %d 0 0 %s\n", @root[tid], tid, @nr[tid], {ret}, (int32)@d{slot}[tid], @fl[tid], {name}); }}
  }} else {{
    printf("{n} E %d %d %d %d %d %d %llx %d %s\n", @root[tid], tid, @nr[tid], {ret}, (int32)@d{slot}[tid], @fl[tid], @h[tid], @k[tid], {name});
  }}
}}
tracepoint:raw_syscalls:{at} /@k[tid]/ {{
  $d = (struct dentry *)@b[tid]; $k = @k[tid]; $j = 0;
  while ($j < 32) {{ if ($j < $k) {{ printf("{n} C %d %d %s\n", @root[tid], tid, str($d->d_name.name)); $d = $d->d_parent; }} $j++; }}
}}
"#
    )
}

/// The probes that follow a successful open to the file it reached.
fn returned(n: &str, gate: u32) -> String {
    format!(
        r#"tracepoint:raw_syscalls:sys_exit /@nr[tid]/ {{
  @h[tid] = 0; @k[tid] = 0;
  $n = @nr[tid];
  if (($n == 2 || $n == 257 || $n == 437 || $n == 85) && pid != {gate} && args->ret >= 0) {{
  $d = (*(curtask->files->fdt->fd + args->ret))->f_path.dentry;
  @b[tid] = $d;
  $hit = (uint64)0; $k = 0;
  unroll(32) {{
    if ($hit == 0 && $k >= 0) {{
      if (@ws[$d]) {{ $hit = (uint64)$d; }}
      else {{ if ($d == $d->d_parent) {{ $k = -1; }} else {{ $d = $d->d_parent; $k++; }} }}
    }}
  }}
  if ($hit != 0 && $k > 0) {{
    @h[tid] = $hit; @k[tid] = $k;
    printf("{n} R %d %d %d %d %d %llx %d\n", @root[tid], tid, @nr[tid], args->ret, @fl[tid], $hit, $k);
  }}
  }}
}}
tracepoint:raw_syscalls:sys_exit /@k[tid]/ {{
  $d = (struct dentry *)@b[tid]; $k = @k[tid]; $j = 0;
  while ($j < 32) {{ if ($j < $k) {{ printf("{n} C %d %d %s\n", @root[tid], tid, str($d->d_name.name)); $d = $d->d_parent; }} $j++; }}
}}
"#
    )
}

#[cfg(test)]
mod tests;
