//! Helpers shared by the tests: scripts, pid files, free ports, fixtures.

use std::future::Future;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::RunOptions;

/// Every test with processes is over within this, or fails.
pub(crate) const LIMIT: Duration = Duration::from_secs(60);

/// Awaits `what`, failing the test if it takes longer than [`LIMIT`].
pub(crate) async fn bounded<T>(what: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, what)
        .await
        .expect("test ran past its time limit")
}

/// A launcher for tests: unisolated, with only `PATH` from the test's environment.
pub(crate) fn launcher() -> crate::sandbox::Launcher {
    crate::sandbox::Launcher::new(
        std::env::var_os("PATH")
            .map(|p| vec![("PATH".into(), p)])
            .unwrap_or_default(),
    )
}

/// Writes an executable `sh` script and returns its absolute path.
pub(crate) fn write_script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// The pids written (whitespace-separated) to `path`; none if it is missing.
pub(crate) fn pids_in(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

/// Whether `pid` no longer runs: gone from /proc, or a zombie (nothing
/// reaps orphans in some containers; a zombie holds nothing).
pub(crate) fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => crate::process::parse_stat(&stat).is_none_or(|(state, _)| state == 'Z'),
    }
}

/// Waits up to `limit` for `path` to exist (a service writing its pid).
pub(crate) fn wait_for_file(path: &Path, limit: Duration) -> bool {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    path.exists()
}

/// A loopback port nothing listens on right now.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Writes `text` to `rel` under `root` (creating folders) with mtime `mtime`.
pub(crate) fn write_file(root: &Path, rel: &str, text: &[u8], mtime: SystemTime) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
}

/// A time `secs` seconds ago (positive) or ahead (negative).
pub(crate) fn ago(secs: i64) -> SystemTime {
    let now = SystemTime::now();
    if secs >= 0 {
        now - Duration::from_secs(secs.unsigned_abs())
    } else {
        now + Duration::from_secs(secs.unsigned_abs())
    }
}

/// Secret-shaped strings are assembled at run time so no source file looks
/// like it holds a secret.
pub(crate) fn fake(prefix: &str, body: &str) -> String {
    format!("{prefix}{body}")
}

/// Options for a run in `workspace` over `files`.
pub(crate) fn options(workspace: &Path, concurrency: usize) -> RunOptions {
    RunOptions {
        workspace: workspace.to_path_buf(),
        concurrency,
        output_cap: 1 << 20,
        files: Arc::new(Vec::new()),
        satisfied: std::collections::HashSet::new(),
        redact: Arc::new(Vec::new()),
        launcher: Arc::new(launcher()),
        launchers: Arc::default(),
        requires: Arc::default(),
    }
}
