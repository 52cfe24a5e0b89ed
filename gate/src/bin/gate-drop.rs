//! `gate-drop UID GID -- COMMAND [ARG…]`: becomes `UID`:`GID` with no
//! supplementary group, no capability in any set, an empty bounding set and
//! no new privileges, then runs `COMMAND` in its place.
//!
//! The gate, as root, starts each item's command through this between
//! bubblewrap and the command. It does what `setpriv --reuid --regid
//! --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs` does,
//! without loading a locale or a shared library first, which is most of
//! what that switch costs per item.

use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, ExitCode};

use rustix::thread::{self, CapabilitySet, CapabilitySets, Gid, Uid};

/// What the drop failed at, said on stderr, and the status to exit with:
/// 127 when a privilege could not be dropped or the command is not there,
/// 126 when it is there but cannot run (as a shell says of a command).
type Failure = (String, u8);

const USAGE: &str = "usage: gate-drop UID GID -- COMMAND [ARG…]";

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    match drop_and_exec(&args) {
        Ok(never) => match never {},
        Err((why, status)) => {
            // Nothing more can be done when stderr is gone.
            let _ = writeln!(std::io::stderr(), "gate-drop: {why}");
            ExitCode::from(status)
        }
    }
}

/// Parses the line, drops every privilege and runs the command.
fn drop_and_exec(args: &[std::ffi::OsString]) -> Result<std::convert::Infallible, Failure> {
    let [uid, gid, dashes, command, rest @ ..] = args else {
        return Err((USAGE.to_owned(), 127));
    };
    if dashes != "--" {
        return Err((USAGE.to_owned(), 127));
    }
    let id = |s: &std::ffi::OsStr, what: &str| -> Result<u32, Failure> {
        s.to_str()
            .and_then(|s| s.parse::<u32>().ok())
            .filter(|&n| n != 0)
            .ok_or_else(|| (format!("the {what} must be a number other than 0"), 127))
    };
    let uid = id(uid, "uid")?;
    let gid = id(gid, "gid")?;

    thread::set_thread_groups(&[]).map_err(fail("cannot clear the groups"))?;
    let gid = Gid::from_raw(gid);
    thread::set_thread_res_gid(gid, gid, gid).map_err(fail("cannot switch the group"))?;
    // The bounding set is emptied while CAP_SETPCAP is still held: once the
    // uid is switched nothing could.
    for bit in 0..u64::BITS {
        let cap = CapabilitySet::from_bits_retain(1 << bit);
        match thread::capability_is_in_bounding_set(cap) {
            Ok(true) => thread::remove_capability_from_bounding_set(cap)
                .map_err(fail("cannot empty the bounding set"))?,
            Ok(false) => {}
            // Past the kernel's last capability.
            Err(_) => break,
        }
    }
    thread::clear_ambient_capability_set().map_err(fail("cannot clear the ambient set"))?;
    thread::set_no_new_privs(true).map_err(fail("cannot set no new privileges"))?;
    let uid = Uid::from_raw(uid);
    thread::set_thread_res_uid(uid, uid, uid).map_err(fail("cannot switch the user"))?;
    // Leaving uid 0 empties the permitted and effective sets, but not the
    // inheritable one.
    let none = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    thread::set_capabilities(None, none).map_err(fail("cannot clear the capabilities"))?;
    let held = thread::capabilities(None).map_err(fail("cannot read the capabilities"))?;
    if held != none {
        return Err((
            "capabilities are still held after the switch".to_owned(),
            127,
        ));
    }
    // The command takes this process's place: there is no child to time,
    // kill or read, which is what the harness's process module is for.
    #[allow(clippy::disallowed_methods)]
    let e = Command::new(command).args(rest).exec();
    let status = if e.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    };
    Err((
        format!("cannot run {}: {e}", command.to_string_lossy()),
        status,
    ))
}

/// Turns a failed call into what the drop failed at.
fn fail(what: &'static str) -> impl Fn(rustix::io::Errno) -> Failure {
    move |e| (format!("{what}: {e}"), 127)
}
