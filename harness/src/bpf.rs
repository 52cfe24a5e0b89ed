//! The eBPF tracer: programs of the gate's own, loaded once for the whole
//! run by a gate that runs as root. Nothing stops: the kernel runs them at
//! each file system call and writes only what concerns the workspace into a
//! ring buffer the gate reads in batches, so a build that makes thousands
//! of calls costs little more than the calls.
//!
//! Their source (`bpf/tracer.bpf.c`, and the table of calls written from
//! [`crate::file_calls`]'s x86-64 and i386 tables) is compiled with `clang`
//! when the run starts and loaded with its settings (the gate's pid, the
//! workspace, the sandbox's own programs) in read-only globals; the few
//! kernel structures it reads are relocated against the kernel's BTF.
//!
//! Which processes are an item's is decided in the kernel: every process
//! the gate itself forks is a root, and every process or thread a root's
//! processes fork belongs to it. A root is *armed* from the first program
//! it executes that is not the sandbox (`bwrap`) or `nsenter`: what
//! bubblewrap does while it builds the sandbox is not the item's. When a
//! root's last task ends the tracer says so, and a barrier (a marked call
//! of the gate's own, written after everything before it) tells the gate it
//! has read all that root's records.
//!
//! Where a call names a path relative to a folder (the working directory
//! or a descriptor), the program walks that folder's dentries up to one the
//! gate registered as a workspace (by opening it with a marked set of
//! flags and keeping it open), and writes the names on the way. An absolute
//! name counts when it starts with the workspace's path as the items see it.
//! A successful open is also followed to the file it reached, so a link out
//! of the workspace and back is seen. The target of each link an item
//! makes is written, with whether the link lies in the workspace, so the
//! reader can tell one that may lead back in by another name. A relative name whose folder is not
//! in a workspace counts only when it climbs (`..`): then the trace is
//! incomplete, as it cannot be resolved there. So is one whose folder lies
//! deeper below the workspace than the walk goes.
//!
//! A call's convention is the task's (`TS_COMPAT` in its `thread_info`,
//! which the kernel sets for an IA-32 call, `int 0x80` from a 64-bit
//! process among them): an i386 call is read by the i386 table, from the
//! IA-32 registers, and reaches the reader by the name of its x86-64 twin.
//! An absolute name spelled otherwise than the kernel resolves it (`//`,
//! `/./`, `/../`) is passed on whole, for the reader to resolve. An x32 call
//! (the sandbox refuses them) makes the trace incomplete.
//!
//! The programs are the gate's: they are detached when its process ends,
//! however it ends. The items cannot write into the ring buffer, so a name
//! holding a line break or looking like a record forges nothing. A full
//! buffer, a name as long as the tracer reads, a root whose end never
//! came, or a reader that stopped make the affected traces incomplete.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::file_calls::{FileCall, Policy};
use crate::trace::{Accesses, Arg, Call, Process, Reader};

/// How long a name the tracer reads may be, with its end: a name this
/// long or longer may have been cut (`NAME` in the program).
const STRLEN: usize = 1024;

/// Where a record's name starts (`HEAD` in the program); a link's target
/// starts `STRLEN` bytes later.
const HEAD: usize = 64;

/// How often the reader looks at the ring buffer when nothing woke it:
/// records of calls do not wake it, so a build's burst costs no wake-up per
/// call.
const POLL: Duration = Duration::from_millis(5);

/// The kernel side, before the generated table of calls.
const PROGRAM: &str = include_str!("bpf/tracer.bpf.c");

/// How many programs of the sandbox's own the tracer can be told about
/// (`LAUNCHERS` in the program).
const LAUNCHERS: usize = 4;

/// How long `clang` may take to compile the programs.
const COMPILE_LIMIT: Duration = Duration::from_secs(60);

/// How long after an item's process ended its last task may take to end.
const END_LIMIT: Duration = Duration::from_secs(10);

/// How long a root that ended is kept for a claim that has not come yet.
const UNCLAIMED_KEPT: Duration = Duration::from_secs(60);

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

/// Added to an i386 call's number in the program's keys (`COMPAT` in the
/// program).
const COMPAT: u32 = 0x10_0000;

/// The calls the tracer reads, by the key the program gives them: every
/// call [`crate::file_calls`] lists for x86-64 and i386, its number (plus
/// [`COMPAT`] for an i386 one). A watched call's names are read; a refused
/// one is only reported with what it returned.
#[cfg(target_arch = "x86_64")]
const TABLES: &[(u32, &[FileCall])] = &[
    (0, crate::file_calls::X86_64),
    (COMPAT, crate::file_calls::I386),
];

/// No table for this architecture: the eBPF tracer is not offered.
#[cfg(not(target_arch = "x86_64"))]
const TABLES: &[(u32, &[FileCall])] = &[];

/// Every call the program knows, with its key.
fn keyed() -> impl Iterator<Item = (u32, &'static FileCall)> {
    TABLES
        .iter()
        .flat_map(|(bit, calls)| calls.iter().map(move |c| (bit | c.nr, c)))
}

/// The call of key `key`, watched or refused.
fn known(key: u32) -> Option<&'static FileCall> {
    let (bit, calls) = TABLES.iter().find(|(bit, _)| key & COMPAT == *bit)?;
    calls.iter().find(|c| c.nr == key & !bit)
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
    /// The `clang` executable that compiles the programs.
    pub clang: PathBuf,
    /// The workspace's path as the items see it: absolute names under it
    /// count.
    pub workspace: PathBuf,
    /// Programs whose execution does not arm a root (the sandbox's own).
    pub launchers: Vec<PathBuf>,
    /// A folder of the gate user's where compiled programs are kept, by
    /// their source and compiler, so a run need not compile them again.
    pub cache: Option<PathBuf>,
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
    /// Its folder or source could not be written.
    #[error("the tracer's source could not be written: {0}")]
    Script(#[source] std::io::Error),
    /// `clang` could not compile the programs.
    #[error("clang could not compile the tracer: {0}")]
    Compile(String),
    /// The kernel refused the programs or their maps.
    #[error("the kernel refused the tracer: {0}")]
    Load(String),
    /// The tracer stopped or did not answer.
    #[error("the tracer {0}")]
    Tracer(String),
}

/// A line a root's processes produced, or the tracer's own.
#[derive(Debug, Default)]
struct Root {
    /// Calls read in full.
    calls: Vec<Call>,
    /// Calls waiting for their folder's names, by thread.
    pending: HashMap<u64, Pending>,
    /// When the root's last task ended.
    ended: Option<Instant>,
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
    /// Why traces cannot be relied on since events were lost.
    lost: Option<String>,
}

/// The eBPF tracer of one run.
pub struct Watcher {
    nonce: String,
    shared: Arc<(Mutex<State>, Condvar)>,
    /// The loaded programs: attached while this lives.
    _programs: aya::Ebpf,
    /// Their descriptors, whose `fdinfo` counts the runs the kernel skipped.
    program_fds: Vec<i32>,
    /// Tells the reader to stop.
    stop: Arc<std::sync::atomic::AtomicBool>,
    /// Folders registered: kept open so their dentries stay what they were.
    pinned: Mutex<Vec<(PathBuf, std::fs::File)>>,
    /// Claimed roots by the trace folder they are collected for.
    claims: Mutex<BTreeMap<PathBuf, Vec<u32>>>,
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
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Watcher {
    /// Compiles the programs, loads and attaches them, and starts reading
    /// what they write.
    pub fn start(settings: &Settings) -> Result<Self, BpfError> {
        if TABLES.is_empty() {
            return Err(BpfError::Architecture);
        }
        let begun = Instant::now();
        let object = compiled(&settings.clang, settings.cache.as_deref())?;
        let (mut programs, program_fds) = load(&object, std::process::id(), settings)?;
        let ring = programs
            .take_map("events")
            .ok_or_else(|| BpfError::Load("the program has no ring buffer".into()))
            .and_then(|m| {
                aya::maps::RingBuf::try_from(m).map_err(|e| BpfError::Load(e.to_string()))
            })?;
        let lost = programs
            .take_map("lost")
            .ok_or_else(|| BpfError::Load("the program has no count of lost records".into()))
            .and_then(|m| {
                aya::maps::Array::<_, u64>::try_from(m).map_err(|e| BpfError::Load(e.to_string()))
            })?;
        let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        spawn_reader(ring, lost, Arc::clone(&shared), Arc::clone(&stop));
        Ok(Self {
            nonce: nonce(),
            shared,
            _programs: programs,
            program_fds,
            stop,
            pinned: Mutex::new(Vec::new()),
            claims: Mutex::new(BTreeMap::new()),
            barrier: std::sync::atomic::AtomicU64::new(0),
            started: begun.elapsed(),
        })
    }

    /// How many times the kernel skipped one of the programs (a run that
    /// would have nested in another on its CPU), as each descriptor's
    /// `fdinfo` counts them; `None` when that cannot be read.
    fn skipped(&self) -> Option<u64> {
        let mut total = 0;
        for fd in &self.program_fds {
            let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
            let misses = info
                .lines()
                .find_map(|l| l.strip_prefix("recursion_misses:"))?;
            total += misses.trim().parse::<u64>().ok()?;
        }
        Some(total)
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
        // The claim stays until the roots are taken: another item's
        // collection drops the ended roots nobody claims.
        let pids = self
            .claims
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(dir)
            .cloned()
            .unwrap_or_default();
        let mut accesses = Accesses::default();
        if pids.is_empty() {
            self.unclaim(dir);
            accesses.incomplete = Some("no process of the item was seen".into());
            return accesses;
        }
        let ended = self.wait_for(END_LIMIT, |s| {
            pids.iter()
                .all(|p| s.roots.get(p).is_some_and(|r| r.ended.is_some()))
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
            let mut process = Process::default();
            for call in &root.calls {
                reader.call(call, &mut process);
            }
        }
        if let Some(why) = &state.stopped {
            accesses.incomplete = Some(format!("the tracer stopped: {why}"));
        }
        match self.skipped() {
            Some(0) => {}
            Some(n) => {
                accesses.incomplete = Some(format!(
                    "the kernel skipped the tracer's programs {n} times"
                ));
            }
            None => {
                accesses.incomplete =
                    Some("the tracer's programs' skipped runs could not be read".into());
            }
        }
        if let Some(why) = &state.lost {
            accesses.incomplete = Some(why.clone());
        }
        // Roots nobody claimed are dropped a while after they ended (the
        // gate's own threads are roots too); not at once, as an item's
        // process may end before the launcher claims it.
        let mut claims = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        claims.remove(dir);
        state.roots.retain(|pid, r| {
            r.ended.is_none_or(|t| t.elapsed() < UNCLAIMED_KEPT)
                || claims.values().any(|p| p.contains(pid))
        });
        accesses
    }

    /// Forgets the claims for `dir`.
    fn unclaim(&self, dir: &Path) {
        self.claims
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(dir);
    }

    /// Returns once every record written before now has been read.
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

/// The program's source: the kernel side and the table of calls.
fn source() -> String {
    PROGRAM.replace("@CALLS@", &calls_table())
}

/// The compiled programs: kept in `cache` under a name that digests the
/// source and the compiler (its resolved path, size, times and inode), else
/// compiled and kept there. A kept object is taken only from a folder and
/// a file the gate's user owns that no one else may write, never through
/// a link; anything else is compiled afresh.
fn compiled(clang: &Path, cache: Option<&Path>) -> Result<Vec<u8>, BpfError> {
    let Some(cache) = cache else {
        return compile(clang);
    };
    let Some(name) = cache_name(clang) else {
        return compile(clang);
    };
    let kept = cache.join(&name);
    if let Some(bytes) = read_kept(cache, &kept) {
        return Ok(bytes);
    }
    let object = compile(clang)?;
    if let Err(e) = keep(cache, &kept, &object) {
        tracing::debug!(error = %e, "the compiled tracer was not kept");
    }
    Ok(object)
}

/// The kept object's file name for this source and `clang`.
fn cache_name(clang: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    let real = std::fs::canonicalize(clang).ok()?;
    let meta = std::fs::metadata(&real).ok()?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(source().as_bytes());
    hasher.update(real.as_os_str().as_encoded_bytes());
    for n in [
        meta.size(),
        meta.ino(),
        meta.dev(),
        u64::try_from(meta.mtime_nsec()).unwrap_or(0),
        u64::try_from(meta.mtime()).unwrap_or(0),
        u64::try_from(meta.ctime()).unwrap_or(0),
    ] {
        hasher.update(&n.to_le_bytes());
    }
    Some(format!("tracer-{}.o", &hasher.finalize().to_hex()[..32]))
}

/// Whether `path` is the gate user's and writable by no one else.
fn owned(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    meta.uid() == nix::unistd::geteuid().as_raw() && meta.mode() & 0o022 == 0
}

/// A kept object, when the folder and the file may be trusted.
fn read_kept(cache: &Path, kept: &Path) -> Option<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let dir = std::fs::symlink_metadata(cache).ok()?;
    if !dir.is_dir() || !owned(&dir) {
        return None;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(kept)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || !owned(&meta) {
        return None;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// Keeps `object` at `kept`, in a folder of mode 0700 made if missing.
fn keep(cache: &Path, kept: &Path, object: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(cache)?;
    let dir = std::fs::symlink_metadata(cache)?;
    if !dir.is_dir() || !owned(&dir) {
        return Err(std::io::Error::other(
            "the cache folder is not the gate's own",
        ));
    }
    std::fs::set_permissions(cache, std::fs::Permissions::from_mode(0o700))?;
    let mut file = tempfile::NamedTempFile::new_in(cache)?;
    std::io::Write::write_all(&mut file, object)?;
    file.persist(kept).map_err(|e| e.error)?;
    Ok(())
}

/// Compiles the programs with `clang` into a folder of the gate's (mode
/// 0700), with nothing of the gate's environment: it runs no code of the
/// workspace's.
#[allow(
    clippy::disallowed_methods,
    reason = "the gate's own compiler on its own source: no item runs through here"
)]
fn compile(clang: &Path) -> Result<Vec<u8>, BpfError> {
    let folder = tempfile::Builder::new()
        .prefix("gate-bpf-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .map_err(BpfError::Script)?;
    let src = folder.path().join("tracer.bpf.c");
    let obj = folder.path().join("tracer.bpf.o");
    let said = folder.path().join("clang.err");
    std::fs::write(&src, source()).map_err(BpfError::Script)?;
    // What clang says goes to a file, so that waiting for it is bounded.
    let err = std::fs::File::create(&said).map_err(BpfError::Script)?;
    let mut child = std::process::Command::new(clang)
        .args([
            "-O2",
            "-g",
            "-target",
            "bpf",
            "-mcpu=v3",
            "-Wno-unused-function",
            "-c",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(err)
        .spawn()
        .map_err(|e| BpfError::Compile(format!("cannot start {}: {e}", clang.display())))?;
    let deadline = Instant::now() + COMPILE_LIMIT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(BpfError::Compile(format!(
                    "it took over {} s",
                    COMPILE_LIMIT.as_secs()
                )));
            }
            Err(e) => return Err(BpfError::Compile(e.to_string())),
        }
    };
    if !status.success() {
        let said = std::fs::read_to_string(&said).unwrap_or_default();
        let tail: String = said.lines().take(20).collect::<Vec<_>>().join("\n");
        return Err(BpfError::Compile(format!("{status}: {tail}")));
    }
    std::fs::read(&obj).map_err(BpfError::Script)
}

/// A path as the program's fixed-size string: its bytes, then zeros.
fn fixed(path: &Path) -> Result<([u8; STRLEN], u32), BpfError> {
    let bytes = path.as_os_str().as_encoded_bytes();
    if bytes.is_empty() || bytes.len() >= STRLEN - 1 || bytes.contains(&0) {
        return Err(BpfError::Path(path.display().to_string()));
    }
    let mut out = [0_u8; STRLEN];
    out[..bytes.len()].copy_from_slice(bytes);
    let len = u32::try_from(bytes.len()).map_err(|_| BpfError::Path(path.display().to_string()))?;
    Ok((out, len))
}

/// Loads the programs with their settings and attaches them; returns them
/// with their descriptors.
fn load(object: &[u8], gate: u32, settings: &Settings) -> Result<(aya::Ebpf, Vec<i32>), BpfError> {
    let (workspace, workspace_len) = fixed(&settings.workspace)?;
    if settings.launchers.len() > LAUNCHERS {
        return Err(BpfError::Path(format!(
            "{} programs of the sandbox's own (at most {LAUNCHERS})",
            settings.launchers.len()
        )));
    }
    let mut launchers = [[0_u8; STRLEN]; LAUNCHERS];
    let mut launcher_lens = [0_u32; LAUNCHERS];
    for (i, launcher) in settings.launchers.iter().enumerate() {
        (launchers[i], launcher_lens[i]) = fixed(launcher)?;
    }
    let mut programs = aya::EbpfLoader::new()
        .override_global("GATE", &gate, true)
        .override_global("MARK_FLAGS", &MARK_FLAGS, true)
        .override_global("WORKSPACE", &workspace, true)
        .override_global("WORKSPACE_LEN", &workspace_len, true)
        .override_global("LAUNCHER", &launchers, true)
        .override_global("LAUNCHER_LEN", &launcher_lens, true)
        .load(object)
        .map_err(|e| BpfError::Load(error_chain(&e)))?;
    let mut fds = Vec::new();
    for (name, point) in [
        ("on_fork", "sched_process_fork"),
        ("on_exec", "sched_process_exec"),
        ("on_task_exit", "sched_process_exit"),
        ("on_enter", "sys_enter"),
        ("on_exit", "sys_exit"),
    ] {
        let program: &mut aya::programs::RawTracePoint = programs
            .program_mut(name)
            .ok_or_else(|| BpfError::Load(format!("no program {name}")))?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| BpfError::Load(e.to_string()))?;
        program
            .load()
            .map_err(|e| BpfError::Load(format!("{name}: {}", error_chain(&e))))?;
        program
            .attach(point)
            .map_err(|e| BpfError::Load(format!("{name} at {point}: {}", error_chain(&e))))?;
        let fd = program
            .fd()
            .map_err(|e| BpfError::Load(format!("{name}: {e}")))?;
        fds.push(std::os::fd::AsRawFd::as_raw_fd(&std::os::fd::AsFd::as_fd(
            fd,
        )));
    }
    Ok((programs, fds))
}

/// An error with its sources, the verifier's log among them.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
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

/// Reads the ring buffer into `shared` until told to stop: in batches,
/// woken by the records that end a wait (a registration, a barrier, a
/// root's end) or every [`POLL`].
fn spawn_reader(
    mut ring: aya::maps::RingBuf<aya::maps::MapData>,
    lost: aya::maps::Array<aya::maps::MapData, u64>,
    shared: Arc<(Mutex<State>, Condvar)>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) {
    std::thread::spawn(move || {
        let mut lines = Vec::new();
        let mut lost_seen = 0;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            while let Some(item) = ring.next() {
                record(&item, &mut lines);
            }
            let now_lost = lost.get(&0, 0).unwrap_or(0);
            if !lines.is_empty() || now_lost != lost_seen {
                let (lock, cond) = &*shared;
                let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
                for line in lines.drain(..) {
                    state.line(&line);
                }
                if now_lost != lost_seen {
                    lost_seen = now_lost;
                    state.lost(&format!("{now_lost} records found the buffer full"));
                }
                cond.notify_all();
            }
            let fd = std::os::fd::AsFd::as_fd(&ring);
            let mut fds = [nix::poll::PollFd::new(fd, nix::poll::PollFlags::POLLIN)];
            let wait = u16::try_from(POLL.as_millis()).unwrap_or(u16::MAX);
            let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(wait));
        }
        let (lock, cond) = &*shared;
        let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
        state.stopped.get_or_insert_with(|| "it was stopped".into());
        cond.notify_all();
    });
}

/// One record as the line the reader takes: `KIND FIELDS… NAME`.
fn record(item: &[u8], lines: &mut Vec<String>) {
    let Some(head) = item.get(..HEAD) else {
        lines.push("X 0 0 a record was shorter than its header".into());
        return;
    };
    let u32_at = |i: usize| u32::from_le_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
    let i64_at = |i: usize| {
        let mut b = [0_u8; 8];
        b.copy_from_slice(&head[i..i + 8]);
        i64::from_le_bytes(b)
    };
    let text = |from: usize, len: u32| -> String {
        let len = usize::try_from(len).unwrap_or(0).saturating_sub(1);
        let bytes = item.get(from..from + len.min(STRLEN)).unwrap_or(&[]);
        String::from_utf8_lossy(bytes).into_owned()
    };
    let kind = u8::try_from(u32_at(0)).unwrap_or(0);
    let (root, tid) = (u32_at(4), u32_at(8));
    let nr = i32::from_le_bytes([head[12], head[13], head[14], head[15]]);
    let (ret, dfd, flags, k) = (i64_at(16), i64_at(24), i64_at(32), i64_at(48));
    let hit = u64::from_le_bytes([
        head[40], head[41], head[42], head[43], head[44], head[45], head[46], head[47],
    ]);
    let (len, tlen) = (u32_at(56), u32_at(60));
    let name = text(HEAD, len);
    match kind {
        b'E' => {
            if tlen > 0 && ret == 0 {
                let inside = u8::from(hit != 0);
                lines.push(format!(
                    "L {root} {tid} {inside} {}",
                    text(HEAD + STRLEN, tlen)
                ));
            }
            lines.push(format!(
                "E {root} {tid} {nr} {ret} {dfd} {flags} {hit:x} {k} {name}"
            ));
        }
        b'L' => lines.push(format!("L {root} {tid} 0 {}", text(HEAD + STRLEN, tlen))),
        b'R' => lines.push(format!("R {root} {tid} {nr} {ret} {flags} {hit:x} {k}")),
        b'C' => lines.push(format!("C {root} {tid} {name}")),
        b'W' => lines.push(format!("W {hit:x} {name}")),
        b'Z' => lines.push(format!("Z {name}")),
        b'N' => lines.push(format!("END {root}")),
        b'X' => {
            let why = match nr {
                1 => "a name's folder lies deeper below the workspace than the tracer walks",
                2 => "the tracer could not read a name or a link's target",
                3 => "a process made an x32 call, which the tracer does not read",
                _ => "the tracer could not place a call",
            };
            lines.push(format!("X {root} {tid} {why}"));
        }
        _ => lines.push(format!("X {root} {tid} the tracer wrote an unknown record")),
    }
}

/// The generated part of the program, by key: `watched(key)`, whether a
/// call is read; `setup(key, call, args)`, where its names are;
/// `exec_kind(key)`, 1 for an `execve` and 2 for an `execveat`;
/// `opens(key)`, whether it opens a file; `refused(key)`, whether the
/// sandbox refuses it.
fn calls_table() -> String {
    use std::fmt::Write as _;
    let predicate = |s: &mut String, name: &str, pick: &dyn Fn(&FileCall) -> u8| {
        let _ = writeln!(s, "INLINE int {name}(long id) {{\n    switch (id) {{");
        for (key, c) in keyed() {
            let v = pick(c);
            if v != 0 {
                let _ = writeln!(s, "    case {key}:\n        return {v};");
            }
        }
        s.push_str("    default:\n        return 0;\n    }\n}\n\n");
    };
    let mut s = String::new();
    predicate(&mut s, "watched", &|_| 1);
    predicate(&mut s, "exec_kind", &|c| match c.reads_as {
        "execve" => 1,
        "execveat" => 2,
        _ => 0,
    });
    predicate(&mut s, "opens", &|c| {
        u8::from(matches!(
            c.reads_as,
            "open" | "openat" | "openat2" | "creat"
        ))
    });
    predicate(&mut s, "refused", &|c| {
        u8::from(matches!(c.policy, Policy::Refused(_)))
    });
    s.push_str("INLINE void setup(long id, struct call *c, const u64 *a) {\n    switch (id) {\n");
    for (key, c) in keyed().filter(|(_, c)| c.policy == Policy::Watched) {
        let _ = write!(s, "    case {key}:");
        for (i, (dfd, name)) in c.slots.iter().enumerate() {
            let slot = i + 1;
            let _ = write!(s, " c->n{slot} = a[{name}];");
            match dfd {
                Some(d) => {
                    let _ = write!(s, " c->d{slot} = (s32)a[{d}];");
                }
                None => {
                    let _ = write!(s, " c->d{slot} = AT_FDCWD;");
                }
            }
        }
        if let Some(fd) = c.fd {
            let _ = write!(s, " c->d1 = (s32)a[{fd}]; c->fdonly = 1;");
        }
        if let Some(f) = c.flags {
            let _ = write!(s, " c->fl = a[{f}];");
        }
        if matches!(c.reads_as, "symlink" | "symlinkat") {
            s.push_str(" c->tg = a[0];");
        }
        s.push_str(" break;\n");
    }
    s.push_str("    default:\n        break;\n    }\n}\n");
    s
}

impl State {
    /// Events were lost: which root's cannot be told, so every trace
    /// collected from now on is incomplete.
    fn lost(&mut self, said: &str) {
        self.lost = Some(format!("the tracer lost events ({said})"));
    }

    /// One line of the tracer's, its word taken off.
    fn line(&mut self, rest: &str) {
        let (kind, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        match kind {
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
                    self.roots.entry(pid).or_default().ended = Some(Instant::now());
                }
            }
            "E" | "R" => self.call(kind == "R", rest),
            "C" => self.component(rest),
            "L" => self.link(rest),
            "X" => self.unplaced(rest),
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
        let Some(call_info) = u32::try_from(nr).ok().and_then(known) else {
            entry.incomplete = Some(format!("the tracer printed an unknown call {nr}"));
            return;
        };
        if name.as_ref().is_some_and(|n| n.len() >= STRLEN - 1) {
            entry.incomplete = Some("a name as long as the tracer reads may have been cut".into());
        }
        let mut call = Call {
            name: call_info.reads_as.to_owned(),
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
        if matches!(call_info.policy, Policy::Refused(_)) {
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
                }
            }
            (None, None) => {}
        }
    }

    /// A root's call the tracer could not place: `ROOT TID WHY`.
    fn unplaced(&mut self, rest: &str) {
        let mut fields = rest.splitn(3, ' ');
        let Some(root) = fields.next().and_then(|f| f.parse::<u32>().ok()) else {
            return;
        };
        let why = fields.nth(1).unwrap_or("the tracer could not place a call");
        if root == 0 {
            self.lost(why);
            return;
        }
        self.roots.entry(root).or_default().incomplete = Some(why.to_owned());
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
fn open_flags(call: &FileCall, flags: Option<i64>) -> String {
    // `openat2`'s flags are in a structure the program does not read: it
    // may read and write.
    if call.reads_as == "openat2" {
        return "O_RDWR|O_CREAT".into();
    }
    if call.reads_as == "creat" {
        return "O_WRONLY|O_CREAT|O_TRUNC".into();
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

#[cfg(test)]
mod tests;
