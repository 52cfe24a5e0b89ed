//! Test support for the end-to-end tests: a fixture workspace in a temporary
//! directory and a builder around the real `gate` binary.
//!
//! ```no_run
//! let env = gate_tests::TestEnv::new();
//! env.write("gate.toml", "[spec]\nid = \"x\"\n");
//! let out = env.gate(&["verify", "--format", "json"]).run();
//! out.assert_exit(4);
//! ```
#![allow(clippy::missing_panics_doc, clippy::print_stderr)]

pub mod agents;
pub mod chromium;
pub mod house_rules;
pub mod local_model;
pub mod model_server;
pub mod peers;
pub mod postgres;
pub mod private_postgres;
pub mod s3;
pub mod tls;

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// The `gate` binary under test: `GATE_BIN` if set, else the one Cargo built
/// next to this test binary.
pub fn gate_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("GATE_BIN") {
        return PathBuf::from(p);
    }
    // <target>/<profile>/deps/<test binary> → <target>/<profile>/gate
    let exe = std::env::current_exe().expect("the test binary's own path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test binary lives in <target>/<profile>/deps");
    let bin = profile_dir.join("gate");
    assert!(
        bin.is_file(),
        "{} is missing: build it first (`cargo build -p gate`; the README's test command does)",
        bin.display()
    );
    bin
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A fixture workspace in a temporary directory.
pub struct TestEnv {
    dir: tempfile::TempDir,
    /// The gate's user cache (`XDG_CACHE_HOME`), this workspace's own.
    cache: tempfile::TempDir,
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    /// An empty workspace.
    pub fn new() -> Self {
        let temp = |prefix| {
            tempfile::Builder::new()
                .prefix(prefix)
                .tempdir()
                .expect("a temporary directory")
        };
        Self {
            dir: temp("gate-e2e-"),
            cache: temp("gate-e2e-cache-"),
        }
    }

    /// A copy of a directory of the repository (e.g. `examples/shop`).
    pub fn copy_of(repo_relative: &str) -> Self {
        let env = Self::new();
        let src = repo_root().join(repo_relative);
        copy_dir(&src, env.path());
        env
    }

    /// The workspace.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file (creating folders), returning its path.
    pub fn write(&self, rel: &str, contents: &str) -> PathBuf {
        let path = self.path().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create folders");
        }
        std::fs::write(&path, contents).expect("write fixture file");
        path
    }

    /// Writes an executable script.
    pub fn script(&self, rel: &str, contents: &str) -> PathBuf {
        let path = self.write(rel, contents);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod +x");
        path
    }

    /// Reads a file of the workspace.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).expect("read workspace file")
    }

    /// Runs git in the workspace as a fixed author (tests make repositories
    /// for `--base`), failing the test when git fails; returns its stdout.
    pub fn git(&self, args: &[&str]) -> String {
        #[allow(clippy::disallowed_methods)] // tests set up a repository
        let out = Command::new("git")
            .args(args)
            .current_dir(self.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .expect("run git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The user cache folder the gate runs with (`XDG_CACHE_HOME`).
    pub fn cache_path(&self) -> &Path {
        self.cache.path()
    }

    /// A `gate` command with `args`, run in the workspace, with a user
    /// cache folder of this workspace's own.
    pub fn gate(&self, args: &[&str]) -> GateCommand {
        GateCommand::new(self.path(), args).env("XDG_CACHE_HOME", self.cache.path())
    }

    /// What `run`'s bundle records (`gate evidence show RUN --format
    /// predicate`, which must succeed).
    pub fn shown(&self, run: &str) -> Value {
        let out = self
            .gate(&["evidence", "show", run, "--format", "predicate"])
            .run();
        out.assert_exit(0);
        out.json()
    }
}

/// The in-toto statement a run's bundle signs (`verify --format json`'s
/// `bundle`, a file in the workspace's state directory).
pub fn statement(env: &TestEnv, run: &Value) -> Value {
    let path = run["bundle"].as_str().expect("the run has a bundle");
    statement_of(&env.path().join(path))
}

/// The in-toto statement the bundle at `path` signs.
pub fn statement_of(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read the bundle {}: {e}", path.display()));
    let bundle: Value = serde_json::from_str(&text).expect("a bundle is JSON");
    let payload = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        bundle["payload"].as_str().expect("a bundle has a payload"),
    )
    .expect("the payload is base64");
    serde_json::from_slice(&payload).expect("the payload is a statement")
}

/// A run's findings (`verify --format json`) but the warning that names
/// criteria whose command runs no file of the workspace, which most test
/// specs' one-line criteria (`test -f …`) raise.
pub fn findings(run: &Value) -> Vec<&Value> {
    run["findings"]
        .as_array()
        .map(|all| all.iter().filter(|f| !unprotected(f)).collect())
        .unwrap_or_default()
}

/// Whether `finding` is the warning on criteria nothing protects.
pub fn unprotected(finding: &Value) -> bool {
    finding["title"]
        .as_str()
        .is_some_and(|t| t.contains("no file of the workspace: nothing protects"))
}

/// The check or criterion `id` of a run's JSON (`verify --format json`,
/// or the `run` of `evidence show`), if the run has it.
pub fn item<'a>(run: &'a Value, id: &str) -> Option<&'a Value> {
    ["checks", "criteria"]
        .iter()
        .filter_map(|list| run[*list].as_array())
        .flatten()
        .find(|i| i["id"] == id)
}

/// The status of item `id` of a run's JSON; panics when the run lacks it.
pub fn status_of(run: &Value, id: &str) -> String {
    item(run, id).map_or_else(
        || panic!("no item {id} in {run}"),
        |i| i["status"].as_str().unwrap_or_default().to_owned(),
    )
}

/// The lines of an execution log a test's scripts append to: one per
/// command that really ran (none when it was never written).
pub fn ran(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The real `gate` binary as a hermetic command.
pub fn gate_command() -> Command {
    #[allow(clippy::disallowed_methods)] // tests drive the real binary
    let mut cmd = Command::new(gate_bin());
    hermetic(&mut cmd);
    cmd
}

/// The CI's variables the gate names a run's series and branch by: the
/// CI the suite itself runs in must not put every test's runs in its pull
/// request.
const CI_SERIES: [&str; 11] = [
    "GITHUB_REF",
    "GITHUB_HEAD_REF",
    "GITHUB_REF_NAME",
    "CI_MERGE_REQUEST_IID",
    "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
    "CI_COMMIT_REF_NAME",
    "BUILDKITE_PULL_REQUEST",
    "BUILDKITE_BRANCH",
    "CIRCLE_BRANCH",
    "BRANCH_NAME",
    "GIT_BRANCH",
];

/// Takes out of `cmd`'s environment everything of the developer's or CI's
/// that changes what the gate does: CI demands a signing key, a
/// developer's provider keys would call out, the CI's pull request names
/// the series.
pub fn hermetic(cmd: &mut Command) -> &mut Command {
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if key.starts_with("GATE_")
            || key.starts_with("AWS_")
            || key.ends_with("_API_KEY")
            || key == "CI"
            || key == "GITHUB_STEP_SUMMARY"
            || key == "RUST_LOG"
            || CI_SERIES.contains(&key)
        {
            cmd.env_remove(key);
        }
    }
    cmd.env("NO_COLOR", "1")
}

/// A `gate` invocation being built.
pub struct GateCommand {
    cmd: Command,
    timeout: Duration,
    display: String,
    input: Option<Vec<u8>>,
}

impl GateCommand {
    fn new(cwd: &Path, args: &[&str]) -> Self {
        let mut cmd = gate_command();
        // `strace` traces, as root too, unless a test asks for a tracer:
        // the tests that name one run it (and without `GATE_TRACE`, the
        // default) on purpose.
        cmd.args(args)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .env("GATE_TRACE", "on");
        Self {
            cmd,
            timeout: Duration::from_secs(120),
            display: format!("gate {}", args.join(" ")),
            input: None,
        }
    }

    /// Writes `text` to the run's stdin (by default stdin is empty).
    #[must_use]
    pub fn stdin(mut self, text: &str) -> Self {
        self.input = Some(text.as_bytes().to_vec());
        self
    }

    /// Sets an environment variable for the run.
    #[must_use]
    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }

    /// Runs in `dir` rather than the workspace (a subdirectory, say).
    #[must_use]
    pub fn current_dir(mut self, dir: &Path) -> Self {
        self.cmd.current_dir(dir);
        self
    }

    /// Runs with `GATE_TRACE=mode`, or without it (the default) for
    /// `default`.
    #[must_use]
    pub fn trace(self, mode: &str) -> Self {
        if mode == "default" {
            self.env_remove("GATE_TRACE")
        } else {
            self.env("GATE_TRACE", mode)
        }
    }

    /// Removes an environment variable for the run.
    #[must_use]
    pub fn env_remove(mut self, key: &str) -> Self {
        self.cmd.env_remove(key);
        self
    }

    /// Starts the run with stdout and stderr piped, for tests that read
    /// while it goes; the caller waits for it.
    pub fn spawn(mut self) -> std::process::Child {
        self.cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn gate")
    }

    /// Fails the test if the run takes longer than `t` (default 120 s).
    #[must_use]
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// Runs to completion.
    pub fn run(mut self) -> RunOutput {
        if self.input.is_some() {
            self.cmd.stdin(Stdio::piped());
        }
        let mut child = self
            .cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn gate");
        if let (Some(input), Some(mut stdin)) = (self.input.take(), child.stdin.take()) {
            std::thread::spawn(move || {
                use std::io::Write as _;
                let _ = stdin.write_all(&input);
            });
        }
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let Ok(output) = rx.recv_timeout(self.timeout) else {
            #[allow(clippy::disallowed_methods)] // a hung run must not hang the suite
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!(
                "`{}` did not finish within {:?}",
                self.display, self.timeout
            );
        };
        let output = output.expect("wait for gate");
        RunOutput {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            display: self.display,
        }
    }
}

/// What a finished run printed and returned.
#[derive(Debug)]
pub struct RunOutput {
    /// Exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// Everything on stdout.
    pub stdout: String,
    /// Everything on stderr.
    pub stderr: String,
    display: String,
}

impl RunOutput {
    /// Waits for a run started with [`GateCommand::spawn`] (`display` names
    /// it in failure messages).
    pub fn wait(child: std::process::Child, display: &str) -> Self {
        let output = child.wait_with_output().expect("wait for gate");
        Self {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            display: display.to_owned(),
        }
    }

    /// Asserts the exit code, showing both streams when it differs.
    pub fn assert_exit(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "`{}` exited {:?}, expected {code}\n--- stdout\n{}\n--- stderr\n{}",
            self.display,
            self.code,
            self.stdout,
            self.stderr
        );
        self
    }

    /// stdout parsed as one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "`{}` did not print one JSON document: {e}\n--- stdout\n{}\n--- stderr\n{}",
                self.display, self.stdout, self.stderr
            )
        })
    }

    /// Asserts stdout holds `needle`.
    pub fn stdout_has(&self, needle: &str) -> &Self {
        assert!(
            self.stdout.contains(needle),
            "stdout of `{}` lacks {needle:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.display,
            self.stdout,
            self.stderr
        );
        self
    }

    /// Asserts stderr holds `needle`.
    pub fn stderr_has(&self, needle: &str) -> &Self {
        assert!(
            self.stderr.contains(needle),
            "stderr of `{}` lacks {needle:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.display,
            self.stdout,
            self.stderr
        );
        self
    }
}

/// The repository's root folder.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository root")
        .to_path_buf()
}

/// Whether a process is still alive (zombies count as gone).
/// A word no other process holds: put it in a test process's command line
/// (a script's file name) to find the process from outside, whatever PID
/// namespace it runs in.
pub fn unique_token(what: &str) -> String {
    let mut bytes = [0_u8; 6];
    getrandom::fill(&mut bytes).expect("random bytes");
    format!("{what}-{}", hex::encode(bytes))
}

/// The pids (as the test sees them) of running processes whose command line
/// holds `token`.
pub fn pids_with(token: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(token))
        })
        .filter(|pid| pid_alive(*pid))
        .collect()
}

/// Waits up to 30 s for a process whose command line holds `token`, and
/// returns its pid.
pub fn pid_with(token: &str) -> u32 {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(pid) = pids_with(token).first() {
            return *pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no process with `{token}` started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` is running (a zombie is not).
pub fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the field after the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

fn copy_dir(src: &Path, dst: &Path) {
    for entry in std::fs::read_dir(src).expect("read fixture folder") {
        let entry = entry.expect("fixture entry");
        let name = entry.file_name();
        if name == ".gate" || name == "__pycache__" {
            continue;
        }
        let from = entry.path();
        let to = dst.join(&name);
        let kind = entry.file_type().expect("fixture file type");
        if kind.is_dir() {
            std::fs::create_dir_all(&to).expect("create folder");
            copy_dir(&from, &to);
        } else if kind.is_file() {
            std::fs::copy(&from, &to).expect("copy fixture file");
        }
    }
}
