//! The seccomp filter every sandboxed process runs under, as the classic
//! BPF program bubblewrap's `--seccomp` loads.
//!
//! It refuses what namespaces do not contain, and what a tracer could not
//! follow:
//!
//! - every file call [`crate::file_calls`] lists as refused: those no
//!   tracer follows by name and `io_uring` with `ENOSYS` (so glibc and
//!   runtimes that try them fall back to ordinary calls), mounting and
//!   changing root with `EPERM`, as unprivileged callers meet them. Where
//!   the table is complete (x86-64 and i386), every number above its
//!   newest call is refused with `ENOSYS` too.
//! - the kernel's keyrings (`add_key`, `request_key`, `keyctl`): keys are
//!   not namespaced, and a process that inherits the gate's session
//!   keyring possesses every key linked there (the user's keyring among
//!   them), whatever its uid. Refused with `EPERM`, as Docker's and
//!   Flatpak's default profiles do.
//!
//! On x86-64 the x32 ABI's calls (numbers with bit 30 set) are refused
//! with `ENOSYS` too, and 32-bit calls are filtered by their own numbers.

use crate::file_calls::{self, ENOSYS, EPERM, Policy};

/// `BPF_LD | BPF_W | BPF_ABS`.
const LOAD: u16 = 0x20;
/// `BPF_JMP | BPF_JEQ | BPF_K`.
const JUMP_EQ: u16 = 0x15;
/// `BPF_JMP | BPF_JGE | BPF_K`.
const JUMP_GE: u16 = 0x35;
/// `BPF_RET | BPF_K`.
const RETURN: u16 = 0x06;

/// Where `struct seccomp_data` holds the call's number.
const NR: u32 = 0;
/// Where it holds the calling convention's architecture.
const ARCH: u32 = 4;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;

/// The x32 ABI's marker bit on x86-64 call numbers.
const X32_BIT: u32 = 0x4000_0000;

/// One calling convention: its file calls, and the numbers of the keyring
/// calls in it.
struct Abi {
    files: &'static file_calls::Abi,
    keyrings: [u32; 3],
    x32: bool,
}

/// The keyring calls by audit architecture, and whether x32 is there.
const KEYRINGS: &[(u32, [u32; 3], bool)] = &[
    (0xC000_003E, [248, 249, 250], true),  // x86-64
    (0x4000_0003, [286, 287, 288], false), // i386
    (0xC000_00B7, [217, 218, 219], false), // aarch64
    (0x4000_0028, [309, 310, 311], false), // arm
];

/// The conventions a process of this machine can call the kernel with.
fn abis() -> Vec<Abi> {
    file_calls::ABIS
        .iter()
        .filter_map(|files| {
            let (_, keyrings, x32) = KEYRINGS.iter().find(|k| k.0 == files.audit_arch)?;
            Some(Abi {
                files,
                keyrings: *keyrings,
                x32: *x32,
            })
        })
        .collect()
}

/// One `struct sock_filter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Insn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

const fn insn(code: u16, jt: u8, jf: u8, k: u32) -> Insn {
    Insn { code, jt, jf, k }
}

/// The instructions of one convention's section: when the architecture is
/// not `abi`'s, it jumps past them.
fn section(abi: &Abi) -> Vec<Insn> {
    // After the checks: allow, refuse with EPERM, refuse with ENOSYS.
    let mut checks: Vec<(u16, u32, u32)> = Vec::new();
    if abi.x32 {
        checks.push((JUMP_GE, X32_BIT, ENOSYS));
    }
    if let Some(below) = abi.files.known_below {
        checks.push((JUMP_GE, below, ENOSYS));
    }
    checks.extend(abi.keyrings.iter().map(|nr| (JUMP_EQ, *nr, EPERM)));
    checks.extend(abi.files.calls.iter().filter_map(|c| match c.policy {
        Policy::Refused(errno) => Some((JUMP_EQ, c.nr, errno)),
        Policy::Watched => None,
    }));
    let n = checks.len();
    let mut body = vec![insn(LOAD, 0, 0, NR)];
    for (i, (code, k, errno)) in checks.iter().enumerate() {
        // From check i, the returns follow the n - i - 1 checks after it.
        let to_allow = n - i - 1;
        let jt = to_allow + if *errno == EPERM { 1 } else { 2 };
        body.push(insn(*code, short(jt), 0, *k));
    }
    body.push(insn(RETURN, 0, 0, RET_ALLOW));
    body.push(insn(RETURN, 0, 0, RET_ERRNO | EPERM));
    body.push(insn(RETURN, 0, 0, RET_ERRNO | ENOSYS));
    let mut out = vec![
        insn(LOAD, 0, 0, ARCH),
        insn(JUMP_EQ, 0, short(body.len()), abi.files.audit_arch),
    ];
    out.extend(body);
    out
}

/// A jump offset; a section is well under 255 instructions long (a test
/// holds it so).
fn short(n: usize) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}

fn program() -> Vec<Insn> {
    let mut out: Vec<Insn> = abis().iter().flat_map(section).collect();
    // An architecture this machine does not have cannot call it.
    out.push(insn(RETURN, 0, 0, RET_ALLOW));
    out
}

/// The filter as the bytes bubblewrap reads: `struct sock_filter`s in the
/// machine's byte order.
pub fn filter() -> Vec<u8> {
    let mut out = Vec::new();
    for i in program() {
        out.extend_from_slice(&i.code.to_ne_bytes());
        out.push(i.jt);
        out.push(i.jf);
        out.extend_from_slice(&i.k.to_ne_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the kernel would decide for a call: the program run as the
    /// kernel runs it, on `(nr, arch)`.
    fn decide(nr: u32, arch: u32) -> u32 {
        let program = program();
        let mut acc = 0;
        let mut pc = 0;
        loop {
            let i = program[pc];
            pc += 1;
            match i.code {
                LOAD => acc = if i.k == NR { nr } else { arch },
                JUMP_EQ => pc += usize::from(if acc == i.k { i.jt } else { i.jf }),
                JUMP_GE => pc += usize::from(if acc >= i.k { i.jt } else { i.jf }),
                RETURN => return i.k,
                other => panic!("unknown instruction {other:#x}"),
            }
        }
    }

    #[test]
    fn each_call_is_decided_as_the_table_says_in_every_convention() {
        let abis = abis();
        assert!(!abis.is_empty(), "this machine's conventions are listed");
        for abi in &abis {
            let arch = abi.files.audit_arch;
            assert!(section(abi).len() < 255, "{}", abi.files.name);
            for nr in abi.keyrings {
                assert_eq!(decide(nr, arch), RET_ERRNO | EPERM, "{nr}");
            }
            for c in abi.files.calls {
                let want = match c.policy {
                    Policy::Watched => RET_ALLOW,
                    Policy::Refused(errno) => RET_ERRNO | errno,
                };
                assert_eq!(decide(c.nr, arch), want, "{} on {}", c.name, abi.files.name);
            }
            // Ordinary calls around them go through: read, write, close,
            // exit, fstat, mmap, and the unlisted numbers below the newest.
            let listed = |nr: u32| abi.files.calls.iter().any(|c| c.nr == nr);
            for nr in (0..abi.files.known_below.unwrap_or(450)).filter(|nr| !listed(*nr)) {
                if !abi.keyrings.contains(&nr) {
                    assert_eq!(decide(nr, arch), RET_ALLOW, "{nr} on {}", abi.files.name);
                }
            }
            if let Some(below) = abi.files.known_below {
                for nr in [below, below + 1, 1000, 0x3fff_ffff] {
                    assert_eq!(decide(nr, arch), RET_ERRNO | ENOSYS, "{nr}");
                }
            }
            if abi.x32 {
                for nr in [0, 2, 257] {
                    assert_eq!(decide(X32_BIT | nr, arch), RET_ERRNO | ENOSYS);
                }
            }
        }
        // An architecture this machine does not have cannot call it.
        assert_eq!(decide(250, 0x1234), RET_ALLOW);
        assert_eq!(filter().len(), program().len() * 8);
    }

    /// The calls an ordinary 32-bit program makes (glibc's and Go's opens,
    /// stats and listings, `cargo test --target i686-…`, `gcc -m32`) go
    /// through, and the tracers follow them.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn an_i386_programs_ordinary_calls_go_through() {
        let i386 = 0x4000_0003;
        for name in [
            "open",
            "openat",
            "stat64",
            "lstat64",
            "fstatat64",
            "statx",
            "access",
            "faccessat2",
            "execve",
            "getdents64",
            "readlink",
            "mkdir",
            "unlink",
            "rename",
            "chdir",
            "fchdir",
            "utimensat_time64",
            "chown32",
            "truncate64",
            "statfs64",
        ] {
            let c = file_calls::I386
                .iter()
                .find(|c| c.name == name)
                .unwrap_or_else(|| panic!("{name} is listed"));
            assert_eq!(c.policy, Policy::Watched, "{name}");
            assert_eq!(decide(c.nr, i386), RET_ALLOW, "{name}");
        }
        // read, write, close, mmap2, fstat64, exit_group, set_thread_area.
        for nr in [3, 4, 6, 192, 197, 252, 243] {
            assert_eq!(decide(nr, i386), RET_ALLOW, "{nr}");
        }
    }
}
