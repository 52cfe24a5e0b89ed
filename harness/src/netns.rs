//! The run's private network namespace: the one process that holds it for
//! the whole run, started from a [`Launcher`] like every other process.
//!
//! bubblewrap makes the namespace (loopback up, nothing else) and runs a
//! command that only waits; what joins it does so through `nsenter` (see
//! [`Namespace`]). The holder is stopped with the run: its process group is
//! SIGKILLed when it is dropped, and it dies with the gate.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::process::{ProcessGroup, describe_status};
use crate::sandbox::{Launcher, Namespace};

/// How long the holder may take to say where its namespace is.
const HOLDER_START: Duration = Duration::from_secs(10);

/// The process that holds a run's private network namespace: bubblewrap
/// with a network namespace of its own (loopback up, nothing else), running
/// a command that only waits. It is stopped with the run: its process group
/// is SIGKILLed when it is dropped, and it dies with the gate.
#[derive(Debug)]
pub struct Holder {
    group: ProcessGroup,
    namespace: Namespace,
}

impl Holder {
    /// Starts the holder with `env` in `cwd`; processes join its namespace
    /// through `nsenter`, and `helper` runs the gate's [`Helper`](crate::sandbox::Helper)s there.
    /// The error says why the namespace could not be made.
    pub async fn start(
        bwrap: &Path,
        nsenter: &Path,
        helper: &Path,
        cwd: &Path,
        env: Vec<(OsString, OsString)>,
    ) -> Result<Self, String> {
        let program = bwrap
            .to_str()
            .ok_or_else(|| format!("the path of bubblewrap is not UTF-8: {}", bwrap.display()))?;
        let mut argv = vec![program];
        argv.extend(HOLDER_ARGS);
        // bubblewrap prints the namespace's process (`{"child-pid": N, …}`)
        // on the info descriptor, here its stdout.
        let mut group = ProcessGroup::spawn_argv(&argv, cwd, 4096, Some("}"), &Launcher::new(env))
            .map_err(|e| e.to_string())?;
        let started = Instant::now();
        while !group.saw_text() {
            if let Some(status) = group.try_status() {
                return Err(format!(
                    "bubblewrap {} before the namespace was made: {}",
                    describe_status(status),
                    first_line(&group)
                ));
            }
            if started.elapsed() > HOLDER_START {
                group.stop().await;
                return Err(format!(
                    "bubblewrap did not make the namespace within {} s",
                    HOLDER_START.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let text = String::from_utf8_lossy(&group.output().bytes).into_owned();
        let Some(pid) = child_pid(&text) else {
            group.stop().await;
            return Err(format!(
                "bubblewrap did not say where the namespace is: {text}"
            ));
        };
        let ns = |pid: &str, kind: &str| std::fs::read_link(format!("/proc/{pid}/ns/{kind}"));
        let (Ok(net), Ok(user)) = (ns(&pid.to_string(), "net"), ns(&pid.to_string(), "user"))
        else {
            group.stop().await;
            return Err(format!("the namespace's process {pid} is gone"));
        };
        if ns("self", "net").is_ok_and(|own| own == net) {
            group.stop().await;
            return Err("bubblewrap's network namespace is the host's".to_owned());
        }
        let user = ns("self", "user").map_or(true, |own| own != user);
        Ok(Self {
            group,
            namespace: Namespace {
                nsenter: nsenter.to_path_buf(),
                pid,
                user,
                helper: helper.to_path_buf(),
            },
        })
    }

    /// The namespace, for the processes that join it.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// Stops the holder: its namespace goes with it.
    pub async fn stop(mut self) {
        self.group.stop().await;
    }
}

impl Drop for Holder {
    /// Kills the holder and waits until it is gone, so that when the run
    /// ends nothing is left in its namespace (a stopped holder is already
    /// gone and this does nothing).
    fn drop(&mut self) {
        self.group.kill_and_wait(crate::process::STOP_GRACE);
    }
}

/// bubblewrap's arguments for the holder: a network namespace (bubblewrap
/// brings its loopback up) and a PID namespace of its own, every capability
/// dropped, nothing writable, and a command that waits. No `/dev` of its
/// own: for that an unprivileged bubblewrap nests a second user namespace,
/// and a process joining the holder's (the inner one) would have no right
/// over the network namespace, which belongs to the outer.
const HOLDER_ARGS: [&str; 15] = [
    "--unshare-net",
    "--unshare-pid",
    "--die-with-parent",
    "--cap-drop",
    "ALL",
    "--ro-bind",
    "/",
    "/",
    "--proc",
    "/proc",
    "--info-fd",
    "1",
    "--",
    "sleep",
    "infinity",
];

/// The `child-pid` of bubblewrap's info (`{"child-pid": 12, …}`).
fn child_pid(info: &str) -> Option<u32> {
    let start = info.find('{')?;
    let end = start + info[start..].find('}')?;
    let value: serde_json::Value = serde_json::from_str(&info[start..=end]).ok()?;
    value.get("child-pid")?.as_u64()?.try_into().ok()
}

/// The first line a process printed, or a word that it printed nothing.
fn first_line(group: &ProcessGroup) -> String {
    let text = String::from_utf8_lossy(&group.output().bytes).into_owned();
    text.lines()
        .find(|l| !l.trim().is_empty())
        .map_or_else(|| "no reason given".to_owned(), |l| l.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{bounded, gone};

    /// A dropped holder is gone when the drop returns, the process inside
    /// its namespace too: a run that ends leaves nothing in its network.
    #[tokio::test]
    async fn a_dropped_holder_leaves_nothing_behind() {
        let env: Vec<(OsString, OsString)> = std::env::var_os("PATH")
            .map(|p| vec![("PATH".into(), p)])
            .unwrap_or_default();
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..5 {
            let holder = bounded(Holder::start(
                Path::new("/usr/bin/bwrap"),
                Path::new("/usr/bin/nsenter"),
                Path::new("/bin/true"),
                dir.path(),
                env.clone(),
            ))
            .await
            .expect("bubblewrap makes a network namespace here");
            let inside = i32::try_from(holder.namespace().pid).unwrap();
            let outside = holder.group.pid();
            assert!(!gone(inside) && !gone(outside));
            drop(holder);
            assert!(
                gone(inside),
                "the namespace's process {inside} outlived its holder"
            );
            assert!(gone(outside), "bubblewrap {outside} outlived its holder");
        }
    }

    #[test]
    fn the_holder_is_a_network_namespace_that_only_waits() {
        let line = HOLDER_ARGS.join(" ");
        assert_eq!(
            line,
            "--unshare-net --unshare-pid --die-with-parent --cap-drop ALL --ro-bind / / \
             --proc /proc --info-fd 1 -- sleep infinity"
        );
        // A `/dev` of its own would nest a second user namespace.
        assert!(!HOLDER_ARGS.contains(&"--dev"));
        // (bubblewrap's info, the pid read from it)
        let cases = [
            (
                "{\n    \"child-pid\": 22043,\n    \"net-namespace\": 4026532195\n}\n",
                Some(22043),
            ),
            ("bwrap: No permissions to create a new namespace", None),
            ("{\"net-namespace\": 1}", None),
        ];
        for (info, pid) in cases {
            assert_eq!(child_pid(info), pid, "{info}");
        }
    }
}
