//! The sandbox's contents, decided from one [`Policy`] value alone: what
//! the items see of the host, their private folders and who they run as,
//! or the [`Refusal`] that says why there is no sandbox. Nothing here
//! reads or writes the machine: `Isolation::prepare` finds what a policy
//! holds, and takes the uid, hands folders over, starts the network's
//! holder and probes around it.

use std::path::{Path, PathBuf};

use gate_harness::Sandbox;
use gate_harness::sandbox::{Bind, Dropper, Hidden, Home, Identity, Network, Shown};

/// What a run's sandbox is decided from.
#[derive(Debug)]
pub(super) struct Policy {
    /// The gate's `bwrap`, when it was found where the items cannot write.
    pub bwrap: Option<PathBuf>,
    /// What drops the items to the run's uid, when it was found.
    pub dropper: Option<Dropper>,
    /// The run's own uid, when the gate runs as root.
    pub run_uid: Option<u32>,
    /// The workspace (canonical).
    pub workspace: PathBuf,
    /// The `[sandbox] writable` paths that exist.
    pub writable: Vec<PathBuf>,
    /// The run's scratch folder, which holds the items' private `/tmp`,
    /// `/var/tmp` and home, and the accounts that name the run's uid.
    pub scratch: PathBuf,
    /// What of the host the sandbox shows and hides.
    pub host: Host,
}

/// What of the host a sandbox shows or hides, as found on the machine.
#[derive(Debug, Default)]
pub(super) struct Host {
    /// The user's home, with the folders in it shown read-only (no two
    /// showing the same thing).
    pub home: Option<(PathBuf, Vec<Bind>)>,
    /// What is shown outside the home.
    pub shown: Vec<Shown>,
    /// The host's files under `/run` shown in the private `/run`.
    pub run_files: Vec<PathBuf>,
    /// What exists of the paths to mask.
    pub hidden: Vec<Hidden>,
}

/// Why a run's items get no sandbox, or not the one the spec asks for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Refusal {
    /// No `bwrap` where the items cannot write it.
    #[error(
        "bubblewrap (`bwrap`) is not installed outside the folders the workspace's code can \
         write; install it (Debian and Ubuntu: `apt-get install bubblewrap`) to isolate what \
         the gate runs"
    )]
    NoBubblewrap,
    /// The gate runs as root and has nothing to drop the items to the
    /// run's uid with.
    #[error(
        "neither the gate's own `gate-drop` (beside the gate's executable) nor `setpriv` is \
         installed (Debian and Ubuntu: `apt-get install util-linux`): the gate runs as root \
         and cannot drop the items to a uid of the run's own"
    )]
    NoDropper,
    /// The probe could not start the sandbox (bubblewrap's first line).
    #[error("bubblewrap cannot start a sandbox here: {0}")]
    Probe(String),
    /// There is no private network for `[sandbox] network = "loopback"`:
    /// the items get the host's.
    #[error("the host's network instead of a private one ([sandbox] network = \"loopback\"): {0}")]
    Network(String),
}

/// The files shown over `/etc/passwd` and `/etc/group` in a sandbox whose
/// items run as the run's uid, in its scratch folder.
pub(super) fn account_files(scratch: &Path) -> (PathBuf, PathBuf) {
    (scratch.join("passwd"), scratch.join("group"))
}

/// The run's sandbox, on the host's network and before the folders around
/// its hidden paths are rebuilt (which reads them), or why there is none.
pub(super) fn sandbox(policy: Policy) -> Result<Sandbox, Refusal> {
    let Policy {
        bwrap,
        dropper,
        run_uid,
        workspace,
        writable,
        scratch,
        host,
    } = policy;
    let bwrap = bwrap.ok_or(Refusal::NoBubblewrap)?;
    let identity = match (run_uid, dropper) {
        (Some(uid), Some(dropper)) => Some(Identity {
            uid,
            gid: uid,
            dropper,
            accounts: Some(account_files(&scratch)),
        }),
        (Some(_), None) => return Err(Refusal::NoDropper),
        (None, _) => None,
    };
    let home = host.home.map(|(path, read_only)| Home {
        path,
        source: scratch.join("home"),
        read_only,
    });
    Ok(Sandbox {
        bwrap,
        shown: host.shown,
        run_files: host.run_files,
        workspace,
        workspace_at: None,
        read_only: Vec::new(),
        overlays: Vec::new(),
        hidden: host.hidden,
        rebuilt: Vec::new(),
        writable,
        tmp: scratch.join("tmp"),
        var_tmp: scratch.join("var-tmp"),
        home,
        network: Network::Host,
        identity,
        read_search: false,
        inherited: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy {
            bwrap: Some(PathBuf::from("/usr/bin/bwrap")),
            dropper: Some(Dropper::Setpriv(PathBuf::from("/usr/bin/setpriv"))),
            run_uid: None,
            workspace: PathBuf::from("/w"),
            writable: vec![PathBuf::from("/cache")],
            scratch: PathBuf::from("/s"),
            host: Host {
                home: Some((
                    PathBuf::from("/home/u"),
                    vec![Bind {
                        source: PathBuf::from("/home/u/.cargo"),
                        target: PathBuf::from("/home/u/.cargo"),
                    }],
                )),
                shown: vec![Shown::Path(PathBuf::from("/usr"))],
                run_files: Vec::new(),
                hidden: vec![Hidden {
                    path: PathBuf::from("/home/u/.ssh"),
                    dir: true,
                }],
            },
        }
    }

    #[test]
    fn the_sandbox_is_made_of_the_policy_alone() {
        let sandbox = sandbox(policy()).unwrap();
        assert_eq!(sandbox.bwrap, Path::new("/usr/bin/bwrap"));
        assert_eq!(sandbox.workspace, Path::new("/w"));
        assert_eq!(sandbox.writable, [PathBuf::from("/cache")]);
        assert_eq!(sandbox.tmp, Path::new("/s/tmp"));
        assert_eq!(sandbox.var_tmp, Path::new("/s/var-tmp"));
        let home = sandbox.home.unwrap();
        assert_eq!(home.path, Path::new("/home/u"));
        assert_eq!(home.source, Path::new("/s/home"));
        assert_eq!(home.read_only.len(), 1);
        assert_eq!(sandbox.shown, [Shown::Path(PathBuf::from("/usr"))]);
        assert_eq!(sandbox.hidden.len(), 1);
        assert_eq!(sandbox.network, Network::Host);
        assert!(sandbox.identity.is_none(), "no run uid, no identity");
    }

    #[test]
    fn a_run_uid_runs_the_items_as_it_with_accounts_in_the_scratch_folder() {
        let sandbox = sandbox(Policy {
            run_uid: Some(61_000),
            ..policy()
        })
        .unwrap();
        let identity = sandbox.identity.unwrap();
        assert_eq!((identity.uid, identity.gid), (61_000, 61_000));
        assert_eq!(
            identity.accounts,
            Some((PathBuf::from("/s/passwd"), PathBuf::from("/s/group")))
        );
    }

    #[test]
    fn without_bwrap_or_a_way_to_drop_there_is_no_sandbox() {
        let refused = sandbox(Policy {
            bwrap: None,
            ..policy()
        });
        assert_eq!(refused.unwrap_err(), Refusal::NoBubblewrap);
        let refused = sandbox(Policy {
            run_uid: Some(61_000),
            dropper: None,
            ..policy()
        });
        assert_eq!(refused.unwrap_err(), Refusal::NoDropper);
        // Without a run uid nothing needs dropping.
        assert!(
            sandbox(Policy {
                dropper: None,
                ..policy()
            })
            .is_ok()
        );
    }
}
