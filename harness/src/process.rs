//! One subprocess, in its own process group, that cannot wedge the gate.
//!
//! Every command runs as the leader of a new process group, with the
//! workspace as working directory, a null stdin, and exactly the environment
//! its [`Launcher`] gives (nothing of the gate's own is inherited), inside
//! the launcher's sandbox when it has one.
//! stdout and stderr are read concurrently into capped buffers while the
//! process runs. Stopping a process means stopping its group: SIGTERM, a short
//! grace, then SIGKILL. After the leader exits, whatever it left behind in its
//! group is stopped too, and reading ends once the group is dead: a
//! grandchild that escaped the group and keeps a pipe open delays the result
//! by at most [`DRAIN`], never forever.

use std::collections::{BTreeSet, VecDeque};
use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::task::JoinSet;

use crate::HarnessError;
use crate::sandbox::Launcher;

/// How long a stopped group has between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// How long the pipes may stay open once nothing we can kill holds them.
pub const DRAIN: Duration = Duration::from_millis(500);

/// How long the leader's own output may keep arriving after it exits before
/// what it left running is stopped.
const SETTLE: Duration = Duration::from_millis(200);

/// How often a stopping group is looked at.
const POLL: Duration = Duration::from_millis(10);

/// What a plain argv run produced (for the gate's own tools, e.g. `git`).
#[derive(Debug, Clone, Default)]
pub struct ProcessOutput {
    /// Exit code, when the process exited on its own.
    pub exit_code: Option<i32>,
    /// Whether the timeout killed the process group.
    pub timed_out: bool,
    /// stdout, at most the cap (its head).
    pub stdout: Vec<u8>,
    /// stderr, at most the cap (its tail).
    pub stderr: Vec<u8>,
    /// Whether stdout or stderr was longer than the cap.
    pub truncated: bool,
}

/// Marks every descriptor the process inherited above 2 close-on-exec, so
/// nothing the gate was started with (a key passed as `/dev/fd/9`, a pipe
/// into a root-only file) reaches a process it starts; the descriptors it
/// passes on purpose are mapped in explicitly at spawn. Called first
/// thing, before any thread exists; the gate keeps its own use of them.
pub fn keep_inherited_descriptors() {
    close_fds::set_fds_cloexec(3, &[]);
}

/// Runs `argv` (no shell) in `cwd` with a timeout and output cap.
pub async fn run_argv(
    argv: &[&str],
    cwd: &Path,
    timeout: Duration,
    cap: usize,
    launcher: &Launcher,
) -> Result<ProcessOutput, HarnessError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(HarnessError::Spawn {
            command: String::new(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty argv"),
        });
    };
    let stdout = Capture::shared(Keep::Head, cap);
    let stderr = Capture::shared(Keep::Tail, cap);
    let mut command =
        new_command(launcher, program, args, cwd).map_err(|source| HarnessError::Spawn {
            command: argv.join(" "),
            source,
        })?;
    let mut group = ProcessGroup::spawn(
        &mut command,
        &argv.join(" "),
        Arc::clone(&stdout),
        Arc::clone(&stderr),
    )?;
    launcher.claim(group.pid().unsigned_abs());
    let status = tokio::select! {
        status = group.wait() => Some(status),
        () = tokio::time::sleep(timeout) => None,
    };
    let timed_out = status.is_none();
    let status = match status {
        Some(Ok(status)) => Some(status),
        Some(Err(source)) => {
            group.stop().await;
            return Err(HarnessError::Spawn {
                command: argv.join(" "),
                source,
            });
        }
        None => {
            group.stop().await;
            None
        }
    };
    group.finish().await;
    let stdout = stdout.lock().unwrap_or_else(PoisonError::into_inner).take();
    let stderr = stderr.lock().unwrap_or_else(PoisonError::into_inner).take();
    Ok(ProcessOutput {
        exit_code: status.and_then(|s| s.code()),
        timed_out,
        truncated: stdout.dropped_bytes > 0 || stderr.dropped_bytes > 0,
        stdout: stdout.bytes,
        stderr: stderr.bytes,
    })
}

/// How a shell command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The process exited (or was killed by someone else).
    Exited(ExitStatus),
    /// The timeout stopped its group.
    TimedOut,
    /// Cancellation stopped its group.
    Cancelled,
}

/// What a shell command produced.
#[derive(Debug, Clone)]
pub struct ShellRun {
    /// How it ended.
    pub ending: Ending,
    /// Its combined stdout and stderr.
    pub output: Captured,
    /// Wall time from spawn until its group was gone.
    pub duration: Duration,
}

/// Runs `sh -c <run>` in `cwd`: the group is stopped on timeout or when
/// `cancel` resolves.
pub async fn run_shell(
    run: &str,
    cwd: &Path,
    timeout: Duration,
    cap: usize,
    cancel: impl Future<Output = ()>,
    launcher: &Launcher,
) -> Result<ShellRun, HarnessError> {
    let started = Instant::now();
    let mut group = ProcessGroup::spawn_shell(run, cwd, cap, None, launcher)?;
    let ending = tokio::select! {
        status = group.wait() => status.map(Ending::Exited),
        () = tokio::time::sleep(timeout) => Ok(Ending::TimedOut),
        () = cancel => Ok(Ending::Cancelled),
    };
    let ending = match ending {
        Ok(Ending::Exited(status)) => Ending::Exited(status),
        Ok(ending) => {
            group.stop().await;
            ending
        }
        Err(source) => {
            group.stop().await;
            return Err(HarnessError::Spawn {
                command: run.to_owned(),
                source,
            });
        }
    };
    let output = group.finish().await;
    Ok(ShellRun {
        ending,
        output,
        duration: started.elapsed(),
    })
}

/// Captured bytes, how many there were, and a digest of all of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The bytes kept (at most the cap).
    pub bytes: Vec<u8>,
    /// Bytes written in all.
    pub total_bytes: u64,
    /// Bytes not kept.
    pub dropped_bytes: u64,
    /// blake3 (hex) over every byte written, in arrival order.
    pub digest: String,
}

/// Which end of a stream a capped capture keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    Head,
    Tail,
}

/// A capped buffer fed by the pipe readers.
#[derive(Debug)]
struct Capture {
    keep: Keep,
    cap: usize,
    buf: VecDeque<u8>,
    total: u64,
    dropped: u64,
    hasher: blake3::Hasher,
    needle: Option<Needle>,
}

/// Text watched for in a stream, across chunk boundaries and the cap.
#[derive(Debug)]
struct Needle {
    text: Vec<u8>,
    /// The last `text.len() - 1` bytes seen, for matches across chunks.
    carry: Vec<u8>,
    found: bool,
}

impl Needle {
    fn scan(&mut self, chunk: &[u8]) {
        if self.found || self.text.is_empty() {
            self.found = true;
            return;
        }
        let mut window = std::mem::take(&mut self.carry);
        window.extend_from_slice(chunk);
        self.found = window.windows(self.text.len()).any(|w| w == self.text);
        let keep = self.text.len() - 1;
        self.carry = window.split_off(window.len().saturating_sub(keep));
    }
}

impl Capture {
    fn new(keep: Keep, cap: usize) -> Self {
        Self {
            keep,
            cap,
            buf: VecDeque::new(),
            total: 0,
            dropped: 0,
            hasher: blake3::Hasher::new(),
            needle: None,
        }
    }

    fn shared(keep: Keep, cap: usize) -> Arc<Mutex<Self>> {
        Arc::new(Mutex::new(Self::new(keep, cap)))
    }

    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        self.hasher.update(chunk);
        if let Some(needle) = &mut self.needle {
            needle.scan(chunk);
        }
        match self.keep {
            Keep::Head => {
                let room = self.cap.saturating_sub(self.buf.len());
                let taken = room.min(chunk.len());
                self.buf.extend(&chunk[..taken]);
                self.dropped += (chunk.len() - taken) as u64;
            }
            Keep::Tail => {
                if chunk.len() >= self.cap {
                    self.dropped += (self.buf.len() + chunk.len() - self.cap) as u64;
                    self.buf.clear();
                    self.buf.extend(&chunk[chunk.len() - self.cap..]);
                } else {
                    self.buf.extend(chunk);
                    let excess = self.buf.len().saturating_sub(self.cap);
                    self.buf.drain(..excess);
                    self.dropped += excess as u64;
                }
            }
        }
    }

    fn snapshot(&self) -> Captured {
        Captured {
            bytes: self.buf.iter().copied().collect(),
            total_bytes: self.total,
            dropped_bytes: self.dropped,
            digest: self.hasher.finalize().to_hex().to_string(),
        }
    }

    fn take(&mut self) -> Captured {
        let captured = self.snapshot();
        self.buf = VecDeque::new();
        captured
    }
}

/// A running command and its process group.
///
/// Dropping it without [`ProcessGroup::stop`] or [`ProcessGroup::finish`]
/// SIGKILLs the group, so an abandoned run (a dropped future, a panic) leaves
/// nothing behind.
#[derive(Debug)]
pub struct ProcessGroup {
    child: Child,
    pgid: Pid,
    command: String,
    status: Option<ExitStatus>,
    readers: JoinSet<()>,
    combined: Arc<Mutex<Capture>>,
    done: bool,
    /// The byte-code folder of its own (`own_pycache`), removed when it is
    /// dropped (inside a sandbox the path is not the host's, and the run's
    /// `/tmp` goes with the run).
    pycache: Option<PathBuf>,
}

/// Every group started and not yet stopped or dropped, by group id: what
/// [`kill_all_groups`] kills when the gate must end at once.
static LIVE_GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn live_groups() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    LIVE_GROUPS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Kills (SIGKILL) every process group started and not yet stopped, for a
/// gate that must end now rather than wait out a stop's grace period (a
/// second interrupt): nothing it started outlives it.
pub fn kill_all_groups() {
    for pgid in live_groups().iter() {
        signal_group(Pid::from_raw(*pgid), Signal::SIGKILL);
    }
}

/// The one place a command is built; everything else goes through here.
/// The process gets exactly the launcher's environment, so nothing of the
/// gate's own (its signing key, its ledger's URL, a provider's key) reaches
/// code the agent wrote; a sandbox launcher is started with that same clean
/// environment, since whatever starts the sandbox shows its own environment
/// inside.
#[allow(
    clippy::disallowed_methods,
    reason = "the process module is where subprocesses are made, with a process group and capture"
)]
fn new_command(
    launcher: &Launcher,
    program: &str,
    args: &[&str],
    cwd: &Path,
) -> std::io::Result<Command> {
    use command_fds::{CommandFdExt, FdMapping};
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    let argv = launcher.argv(std::ffi::OsStr::new(program), &args, cwd);
    let mut command = Command::new(argv.program);
    command
        .args(argv.args)
        .env_clear()
        .envs(launcher.env().iter().map(|(k, v)| (k, v)))
        .current_dir(cwd);
    if let Some(prefix) = own_pycache(launcher.env()) {
        command.env(PYCACHE_PREFIX, prefix);
    }
    if let Some((uid, gid)) = argv.run_as {
        // The standard library drops the supplementary groups too.
        command.uid(uid).gid(gid);
    }
    if !argv.files.is_empty() || !argv.writes.is_empty() {
        let mut mappings = Vec::new();
        for (fd, content) in argv.files {
            mappings.push(FdMapping {
                parent_fd: unlinked_file(&content)?.into(),
                child_fd: fd,
            });
        }
        for (fd, path) in argv.writes {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)?;
            mappings.push(FdMapping {
                parent_fd: file.into(),
                child_fd: fd,
            });
        }
        command
            .fd_mappings(mappings)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    Ok(command)
}

/// Python's variable for where byte-code is read and written instead of
/// the `__pycache__` folders beside the sources.
pub const PYCACHE_PREFIX: &str = "PYTHONPYCACHEPREFIX";

/// Where this process's Python keeps its byte-code, when the environment
/// names a folder for it: a folder of its own under that one, named with a
/// word no earlier process can guess. Python then reads no byte-code the
/// workspace or an earlier item left (a `.pyc` whose header matches its
/// source but whose code does not) and only what this process and its
/// children wrote.
fn own_pycache(env: &[(OsString, OsString)]) -> Option<OsString> {
    let (_, base) = env.iter().find(|(n, _)| n == PYCACHE_PREFIX)?;
    let mut seed = [0_u8; 16];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut seed))
        .is_err()
    {
        // Never in practice; a time is still not the items' to read.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        seed.copy_from_slice(&t.as_nanos().to_le_bytes());
    }
    let mut own = base.clone();
    own.push(format!("/{}", hex::encode(seed)));
    Some(own)
}

/// A file nobody can open by name, holding `content`, read from its start.
fn unlinked_file(content: &[u8]) -> std::io::Result<std::fs::File> {
    use std::io::{Seek, Write};
    let mut file = tempfile::tempfile()?;
    file.write_all(content)?;
    file.rewind()?;
    Ok(file)
}

impl ProcessGroup {
    /// Starts `sh -c <run>` (the launcher's shell) in `cwd`, keeping the last `cap` bytes of its
    /// combined output; with `watch_for`, notes when that text appears.
    pub fn spawn_shell(
        run: &str,
        cwd: &Path,
        cap: usize,
        watch_for: Option<&str>,
        launcher: &Launcher,
    ) -> Result<Self, HarnessError> {
        let combined = Self::combined(cap, watch_for);
        let shell = launcher.shell().to_string_lossy().into_owned();
        let mut command = new_command(launcher, &shell, &["-c", run], cwd).map_err(|source| {
            HarnessError::Spawn {
                command: crate::secrets::redact(run, &[] as &[&str]),
                source,
            }
        })?;
        let group = Self::spawn(&mut command, run, Arc::clone(&combined), combined)?;
        launcher.claim(group.pid().unsigned_abs());
        Ok(group)
    }

    /// Starts `argv` (no shell) in `cwd`, like [`ProcessGroup::spawn_shell`].
    pub fn spawn_argv(
        argv: &[&str],
        cwd: &Path,
        cap: usize,
        watch_for: Option<&str>,
        launcher: &Launcher,
    ) -> Result<Self, HarnessError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(HarnessError::Spawn {
                command: String::new(),
                source: std::io::Error::other("an empty command line"),
            });
        };
        let combined = Self::combined(cap, watch_for);
        let mut command =
            new_command(launcher, program, args, cwd).map_err(|source| HarnessError::Spawn {
                command: argv.join(" "),
                source,
            })?;
        let group = Self::spawn(
            &mut command,
            &argv.join(" "),
            Arc::clone(&combined),
            combined,
        )?;
        launcher.claim(group.pid().unsigned_abs());
        Ok(group)
    }

    /// The combined output's capture, watching for `watch_for`.
    fn combined(cap: usize, watch_for: Option<&str>) -> Arc<Mutex<Capture>> {
        let combined = Capture::shared(Keep::Tail, cap);
        if let Some(text) = watch_for {
            combined
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .needle = Some(Needle {
                text: text.as_bytes().to_vec(),
                carry: Vec::new(),
                found: false,
            });
        }
        combined
    }

    fn spawn(
        command: &mut Command,
        description: &str,
        stdout_sink: Arc<Mutex<Capture>>,
        stderr_sink: Arc<Mutex<Capture>>,
    ) -> Result<Self, HarnessError> {
        // The description is logged and may end up in an error message: a
        // key pasted into a command line must not.
        let description = crate::secrets::redact(description, &[] as &[&str]);
        let pycache = command
            .as_std()
            .get_envs()
            .find(|(k, _)| *k == PYCACHE_PREFIX)
            .and_then(|(_, v)| v)
            .map(PathBuf::from);
        let spawn_error = |source| HarnessError::Spawn {
            command: description.clone(),
            source,
        };
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(spawn_error)?;
        let pid = child.id().ok_or_else(|| {
            spawn_error(std::io::Error::other(
                "the process exited before it had an id",
            ))
        })?;
        let pgid =
            Pid::from_raw(i32::try_from(pid).map_err(|_| {
                spawn_error(std::io::Error::other(format!("pid {pid} out of range")))
            })?);
        let mut readers = JoinSet::new();
        if let Some(out) = child.stdout.take() {
            readers.spawn(pump(out, Arc::clone(&stdout_sink)));
        }
        if let Some(err) = child.stderr.take() {
            readers.spawn(pump(err, stderr_sink));
        }
        tracing::debug!(pid, command = %description, "spawned");
        live_groups().insert(pgid.as_raw());
        Ok(Self {
            child,
            pgid,
            command: description,
            status: None,
            readers,
            combined: stdout_sink,
            done: false,
            pycache,
        })
    }

    /// The leader's pid, which is also the group id.
    pub fn pid(&self) -> i32 {
        self.pgid.as_raw()
    }

    /// The command line it runs.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The leader's exit status, if it has exited.
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Waits for the leader to exit. Cancel-safe.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let status = self.child.wait().await?;
        self.status = Some(status);
        Ok(status)
    }

    /// Whether the text given at spawn has appeared.
    pub fn saw_text(&self) -> bool {
        self.combined
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .needle
            .as_ref()
            .is_some_and(|n| n.found)
    }

    /// The output captured so far.
    pub fn output(&self) -> Captured {
        self.combined
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .snapshot()
    }

    /// Stops the whole group: SIGTERM, up to [`STOP_GRACE`] for it to go,
    /// then SIGKILL; reaps the leader and stops reading.
    pub async fn stop(&mut self) {
        if self.done {
            return;
        }
        signal_group(self.pgid, Signal::SIGTERM);
        let deadline = Instant::now() + STOP_GRACE;
        loop {
            self.try_status();
            if !group_alive(self.pgid) {
                break;
            }
            if Instant::now() >= deadline {
                tracing::debug!(pgid = self.pid(), "grace over, SIGKILL");
                signal_group(self.pgid, Signal::SIGKILL);
                // SIGKILL is not instant: a process in its exit path still
                // holds what it held (a port, a namespace) until it is gone.
                let killed = Instant::now() + STOP_GRACE;
                while group_alive(self.pgid) && Instant::now() < killed {
                    self.try_status();
                    tokio::time::sleep(POLL).await;
                }
                break;
            }
            tokio::time::sleep(POLL).await;
        }
        if self.status.is_none() {
            // The leader got SIGKILL at the latest: it cannot take long.
            if let Ok(Ok(status)) = tokio::time::timeout(STOP_GRACE, self.child.wait()).await {
                self.status = Some(status);
            }
        }
        self.drain(DRAIN).await;
        self.settled();
    }

    /// After the leader exited: stops what it left in its group, ends
    /// reading, and returns the combined output.
    pub async fn finish(mut self) -> Captured {
        if !self.done {
            // The leader's last output may still be in the pipes.
            let settled = self.drain_for(SETTLE).await;
            if !settled || group_alive(self.pgid) {
                self.stop().await;
            }
            self.settled();
        }
        self.output()
    }

    /// Kills the whole group at once and waits, blocking, up to `limit` for
    /// every process of it to be gone: for a drop, where nothing can be
    /// awaited and what the group held must not outlive its owner.
    pub fn kill_and_wait(&mut self, limit: Duration) {
        if self.done {
            return;
        }
        signal_group(self.pgid, Signal::SIGKILL);
        let deadline = Instant::now() + limit;
        while group_alive(self.pgid) && Instant::now() < deadline {
            self.try_status();
            std::thread::sleep(POLL);
        }
        self.try_status();
        self.readers.abort_all();
        self.settled();
    }

    /// The group is stopped or ended: nothing to kill at exit any more.
    fn settled(&mut self) {
        self.done = true;
        live_groups().remove(&self.pgid.as_raw());
    }

    /// Waits up to `limit` for the readers to reach end of file, then gives up
    /// on them (a process outside the group may hold the pipes).
    async fn drain(&mut self, limit: Duration) {
        if !self.drain_for(limit).await {
            tracing::debug!(pgid = self.pid(), "pipes still open; reading stopped");
            self.readers.abort_all();
        }
    }

    /// Whether the readers reached end of file within `limit` (a reader that
    /// finished is gone from the set, so a later call waits for the rest).
    async fn drain_for(&mut self, limit: Duration) -> bool {
        let readers = &mut self.readers;
        tokio::time::timeout(limit, async {
            while readers.join_next().await.is_some() {}
        })
        .await
        .is_ok()
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if !self.done {
            // The readers are aborted as their set drops.
            signal_group(self.pgid, Signal::SIGKILL);
        }
        live_groups().remove(&self.pgid.as_raw());
        if let Some(dir) = &self.pycache {
            // Not a link's target: std removes a link, not what it names.
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Copies one pipe into its capture until end of file.
async fn pump(mut pipe: impl AsyncRead + Unpin, sink: Arc<Mutex<Capture>>) {
    let mut buf = vec![0_u8; 64 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => sink
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(&buf[..n]),
        }
    }
}

/// Sends `signal` to the group; a group that is already gone is fine.
fn signal_group(pgid: Pid, signal: Signal) {
    match killpg(pgid, signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(e) => tracing::warn!(pgid = pgid.as_raw(), %e, "cannot signal process group"),
    }
}

/// Whether any process of the group is still running (zombies do not count:
/// where nothing reaps orphans they linger, but they hold nothing open).
fn group_alive(pgid: Pid) -> bool {
    if matches!(killpg(pgid, None), Err(Errno::ESRCH)) {
        return false;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // No /proc to look closer: trust the kernel's answer.
        return true;
    };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            return false;
        };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
        std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|stat| parse_stat(&stat))
            .is_some_and(|(state, pgrp)| pgrp == pgid.as_raw() && state != 'Z' && state != 'X')
    })
}

/// State and process group from `/proc/<pid>/stat` (`pid (comm) S ppid pgrp …`).
pub(crate) fn parse_stat(stat: &str) -> Option<(char, i32)> {
    // comm may hold spaces and parentheses: the fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// One line for how a process ended ("exited with status 2", "killed by signal 9").
pub fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => match Signal::try_from(signal) {
            Ok(name) => format!("killed by signal {signal} ({name})"),
            Err(_) => format!("killed by signal {signal}"),
        },
        (None, None) => "ended without a status".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{bounded, gone, launcher, pids_in, write_script};

    #[test]
    fn each_process_gets_a_byte_code_folder_of_its_own() {
        let env = |pairs: &[(&str, &str)]| -> Vec<(OsString, OsString)> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect()
        };
        assert_eq!(own_pycache(&env(&[("PATH", "/usr/bin")])), None);
        let named = env(&[(PYCACHE_PREFIX, "/tmp/.pycache")]);
        let (a, b) = (own_pycache(&named).unwrap(), own_pycache(&named).unwrap());
        assert_ne!(a, b);
        for own in [a, b] {
            let own = own.into_string().unwrap();
            let word = own.strip_prefix("/tmp/.pycache/").unwrap();
            assert_eq!(word.len(), 32, "{own}");
            assert!(word.bytes().all(|c| c.is_ascii_hexdigit()), "{own}");
        }
    }

    #[test]
    fn tail_capture_keeps_the_last_bytes() {
        // (cap, chunks, kept, dropped)
        type Case<'a> = (usize, &'a [&'a [u8]], &'a [u8], u64);
        let cases: &[Case<'_>] = &[
            (4, &[b"ab", b"cd"], b"abcd", 0),
            (4, &[b"abc", b"def"], b"cdef", 2),
            (4, &[b"abcdefgh"], b"efgh", 4),
            (4, &[b"ab", b"cdefghij"], b"ghij", 6),
            (0, &[b"ab"], b"", 2),
        ];
        for (cap, chunks, kept, dropped) in cases {
            let mut c = Capture::new(Keep::Tail, *cap);
            for chunk in *chunks {
                c.push(chunk);
            }
            let all: Vec<u8> = chunks.concat();
            let got = c.snapshot();
            assert_eq!(got.bytes, *kept, "cap {cap} {chunks:?}");
            assert_eq!(got.dropped_bytes, *dropped);
            assert_eq!(got.total_bytes, all.len() as u64);
            assert_eq!(got.digest, blake3::hash(&all).to_hex().to_string());
        }
        let mut head = Capture::new(Keep::Head, 3);
        head.push(b"ab");
        head.push(b"cdef");
        assert_eq!(head.snapshot().bytes, b"abc");
        assert_eq!(head.snapshot().dropped_bytes, 3);
    }

    #[test]
    fn needle_is_found_across_chunks() {
        let mut n = Needle {
            text: b"listening".to_vec(),
            carry: Vec::new(),
            found: false,
        };
        for chunk in [&b"server lis"[..], b"te", b"ning on 80"] {
            n.scan(chunk);
        }
        assert!(n.found);
        let mut n = Needle {
            text: b"ready".to_vec(),
            carry: Vec::new(),
            found: false,
        };
        n.scan(b"rea");
        n.scan(b"xdy");
        assert!(!n.found);
    }

    #[test]
    fn parses_proc_stat() {
        assert_eq!(parse_stat("42 (a) b (c)) S 1 40 40 0 -1"), Some(('S', 40)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[tokio::test]
    async fn a_process_byte_code_folder_goes_when_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join(".pycache");
        let mut env = launcher().env().to_vec();
        env.push((PYCACHE_PREFIX.into(), base.clone().into_os_string()));
        let launcher = crate::sandbox::Launcher::new(env);
        let group = ProcessGroup::spawn_shell(
            "mkdir -p \"$PYTHONPYCACHEPREFIX/x\" && echo \"$PYTHONPYCACHEPREFIX\"",
            dir.path(),
            1024,
            None,
            &launcher,
        )
        .unwrap();
        let out = bounded(group.finish()).await;
        let own = String::from_utf8_lossy(&out.bytes).trim().to_owned();
        assert!(own.starts_with(&base.display().to_string()), "{own}");
        assert!(!std::path::Path::new(&own).exists(), "{own} is left");
        assert!(base.exists());
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let script = write_script(
            dir.path(),
            "spawner.sh",
            &format!(
                "sleep 300 &\necho $! > {p}.tmp\necho $$ >> {p}.tmp\nmv {p}.tmp {p}\nsleep 300\n",
                p = pids.display()
            ),
        );
        let started = Instant::now();
        let run = bounded(run_shell(
            &script,
            dir.path(),
            // Long enough for the script to have written its pids on a
            // loaded two-core machine.
            Duration::from_secs(3),
            1024,
            std::future::pending(),
            &launcher(),
        ))
        .await
        .unwrap();
        assert_eq!(run.ending, Ending::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(15));
        let pids = pids_in(&pids);
        assert_eq!(pids.len(), 2, "background sleep and the script");
        for pid in pids {
            assert!(gone(pid), "pid {pid} survived the timeout");
        }
    }

    #[tokio::test]
    async fn leftovers_are_stopped_and_do_not_wedge() {
        // The leader exits at once; what it left behind either keeps stdout
        // open or not: either way it is stopped and the run ends.
        let cases = [
            ("holding the pipes", "sleep 300 &"),
            ("holding stderr only", "sleep 300 >/dev/null &"),
            ("pipes closed", "sleep 300 >/dev/null 2>&1 &"),
        ];
        for (case, leftover) in cases {
            let dir = tempfile::tempdir().unwrap();
            let pids = dir.path().join("pids");
            let run = bounded(run_shell(
                &format!("{leftover} echo $! > {}; echo done", pids.display()),
                dir.path(),
                Duration::from_secs(30),
                1024,
                std::future::pending(),
                &launcher(),
            ))
            .await
            .unwrap();
            assert!(
                matches!(run.ending, Ending::Exited(s) if s.success()),
                "{case}"
            );
            assert!(
                run.duration < Duration::from_secs(5),
                "{case}: {:?}",
                run.duration
            );
            assert_eq!(
                String::from_utf8_lossy(&run.output.bytes),
                "done\n",
                "{case}"
            );
            let pids = pids_in(&pids);
            assert_eq!(pids.len(), 1, "{case}");
            assert!(gone(pids[0]), "{case}: leftover {} survived", pids[0]);
        }
    }

    #[tokio::test]
    async fn escaped_grandchild_holding_the_pipes_delays_at_most_the_drain() {
        // setsid leaves the group, so only giving up on the pipe ends the run.
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let started = Instant::now();
        let run = bounded(run_shell(
            &format!(
                "setsid sh -c 'echo $$ > {}; exec sleep 5' & echo out",
                pids.display()
            ),
            dir.path(),
            Duration::from_secs(30),
            1024,
            std::future::pending(),
            &launcher(),
        ))
        .await
        .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
        assert!(String::from_utf8_lossy(&run.output.bytes).contains("out"));
        // Clean up the escaped process ourselves.
        for pid in pids_in(&pids) {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }

    #[tokio::test]
    async fn output_cap_keeps_the_tail_and_digests_everything() {
        let dir = tempfile::tempdir().unwrap();
        // 3 MiB of distinct lines on stdout, so the kept tail is checkable.
        let script = "seq -f '%07.0f' 0 8 3145727";
        let run = bounded(run_shell(
            script,
            dir.path(),
            Duration::from_secs(120),
            1 << 20,
            std::future::pending(),
            &launcher(),
        ))
        .await
        .unwrap();
        let mut all = Vec::new();
        let mut i = 0;
        while i < 3_145_728 {
            all.extend_from_slice(format!("{i:07}\n").as_bytes());
            i += 8;
        }
        assert_eq!(all.len(), 3 << 20);
        assert_eq!(run.output.total_bytes, 3 << 20);
        assert_eq!(run.output.dropped_bytes, 2 << 20);
        assert_eq!(run.output.bytes.len(), 1 << 20);
        assert_eq!(run.output.bytes, all[2 << 20..]);
        assert_eq!(run.output.digest, blake3::hash(&all).to_hex().to_string());
    }

    #[tokio::test]
    async fn combines_stdout_and_stderr_and_reports_status() {
        let dir = tempfile::tempdir().unwrap();
        let run = bounded(run_shell(
            "echo out; sleep 0.1; echo err >&2; exit 3",
            dir.path(),
            Duration::from_secs(30),
            1024,
            std::future::pending(),
            &launcher(),
        ))
        .await
        .unwrap();
        let Ending::Exited(status) = run.ending else {
            panic!("{:?}", run.ending)
        };
        assert_eq!(describe_status(status), "exited with status 3");
        assert_eq!(run.output.bytes, b"out\nerr\n");
    }

    #[tokio::test]
    async fn cancellation_stops_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let cancel = tokio::time::sleep(Duration::from_millis(300));
        let run = bounded(run_shell(
            &format!("echo $$ > {}; sleep 300", pids.display()),
            dir.path(),
            Duration::from_secs(60),
            1024,
            cancel,
            &launcher(),
        ))
        .await
        .unwrap();
        assert_eq!(run.ending, Ending::Cancelled);
        for pid in pids_in(&pids) {
            assert!(gone(pid));
        }
    }

    #[tokio::test]
    async fn run_argv_separates_streams_and_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let out = bounded(run_argv(
            &["sh", "-c", "printf abcdef; printf xyz123 >&2; exit 4"],
            dir.path(),
            Duration::from_secs(30),
            4,
            &launcher(),
        ))
        .await
        .unwrap();
        assert_eq!(out.exit_code, Some(4));
        assert!(!out.timed_out);
        assert_eq!(out.stdout, b"abcd", "stdout keeps its head");
        assert_eq!(out.stderr, b"z123", "stderr keeps its tail");
        assert!(out.truncated);

        let out = bounded(run_argv(
            &["sleep", "300"],
            dir.path(),
            Duration::from_millis(200),
            4,
            &launcher(),
        ))
        .await
        .unwrap();
        assert!(out.timed_out);
        assert_eq!(out.exit_code, None);

        let err = bounded(run_argv(
            &["/no/such/program"],
            dir.path(),
            Duration::from_secs(5),
            4,
            &launcher(),
        ))
        .await
        .unwrap_err();
        assert!(err.to_string().contains("/no/such/program"), "{err}");
        assert!(
            bounded(run_argv(
                &[],
                dir.path(),
                Duration::from_secs(5),
                4,
                &launcher()
            ))
            .await
            .is_err()
        );
    }
}
