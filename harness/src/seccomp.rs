//! The seccomp filter every sandboxed process runs under, as the classic
//! BPF program bubblewrap's `--seccomp` loads.
//!
//! It refuses what namespaces do not contain:
//!
//! - the kernel's keyrings (`add_key`, `request_key`, `keyctl`): keys are
//!   not namespaced, and a process that inherits the gate's session
//!   keyring possesses every key linked there (the user's keyring among
//!   them), whatever its uid. Refused with `EPERM`, as Docker's and
//!   Flatpak's default profiles do.
//! - `io_uring` (`io_uring_setup`, `io_uring_enter`, `io_uring_register`):
//!   its operations run in the kernel without passing through the system
//!   calls a filter or a tracer sees. Refused with `ENOSYS`, so runtimes
//!   that try it (libuv) fall back to ordinary calls.
//! - mounting and changing root (`mount`, `umount2`, `pivot_root`,
//!   `chroot`, and the new mount calls `open_tree` to `mount_setattr`): in
//!   a user namespace of its own a process may do them, and a bind mount
//!   or a root elsewhere names the workspace by a path no tracer can tell
//!   is the workspace's. Refused with `EPERM`, as unprivileged callers
//!   meet them.
//!
//! On x86-64 the x32 ABI's calls (numbers with bit 30 set) are refused
//! too, and 32-bit calls are filtered by their own numbers.

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
const EPERM: u32 = 1;
const ENOSYS: u32 = 38;

/// The x32 ABI's marker bit on x86-64 call numbers.
const X32_BIT: u32 = 0x4000_0000;

/// One calling convention: its audit architecture, and the numbers of the
/// keyring, `io_uring` and mount calls in it.
struct Abi {
    arch: u32,
    keyrings: [u32; 3],
    io_uring: [u32; 3],
    mounts: &'static [u32],
    x32: bool,
}

/// The conventions a process of this machine can call the kernel with.
#[cfg(target_arch = "x86_64")]
const ABIS: &[Abi] = &[
    Abi {
        arch: 0xC000_003E, // AUDIT_ARCH_X86_64
        keyrings: [248, 249, 250],
        io_uring: [425, 426, 427],
        // mount, umount2, pivot_root, chroot, open_tree to fspick,
        // mount_setattr
        mounts: &[165, 166, 155, 161, 428, 429, 430, 431, 432, 433, 442],
        x32: true,
    },
    Abi {
        arch: 0x4000_0003, // AUDIT_ARCH_I386
        keyrings: [286, 287, 288],
        io_uring: [425, 426, 427],
        // mount, umount, umount2, pivot_root, chroot, open_tree to
        // fspick, mount_setattr
        mounts: &[21, 22, 52, 217, 61, 428, 429, 430, 431, 432, 433, 442],
        x32: false,
    },
];

/// The conventions a process of this machine can call the kernel with.
#[cfg(target_arch = "aarch64")]
const ABIS: &[Abi] = &[
    Abi {
        arch: 0xC000_00B7, // AUDIT_ARCH_AARCH64
        keyrings: [217, 218, 219],
        io_uring: [425, 426, 427],
        // mount, umount2, pivot_root, chroot, open_tree to fspick,
        // mount_setattr
        mounts: &[40, 39, 41, 51, 428, 429, 430, 431, 432, 433, 442],
        x32: false,
    },
    Abi {
        arch: 0x4000_0028, // AUDIT_ARCH_ARM
        keyrings: [309, 310, 311],
        io_uring: [425, 426, 427],
        // mount, umount2, pivot_root, chroot, open_tree to fspick,
        // mount_setattr
        mounts: &[21, 52, 218, 61, 428, 429, 430, 431, 432, 433, 442],
        x32: false,
    },
];

/// The conventions a process of this machine can call the kernel with.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ABIS: &[Abi] = &[];

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
    checks.extend(abi.keyrings.iter().map(|nr| (JUMP_EQ, *nr, EPERM)));
    checks.extend(abi.mounts.iter().map(|nr| (JUMP_EQ, *nr, EPERM)));
    checks.extend(abi.io_uring.iter().map(|nr| (JUMP_EQ, *nr, ENOSYS)));
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
        insn(JUMP_EQ, 0, short(body.len()), abi.arch),
    ];
    out.extend(body);
    out
}

/// A jump offset; the program is a few dozen instructions long.
fn short(n: usize) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}

fn program() -> Vec<Insn> {
    let mut out: Vec<Insn> = ABIS.iter().flat_map(section).collect();
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
    fn keyrings_io_uring_and_mounts_are_refused_in_every_convention_and_nothing_else() {
        assert!(!ABIS.is_empty(), "this machine's conventions are listed");
        for abi in ABIS {
            for nr in abi.keyrings.iter().chain(abi.mounts) {
                assert_eq!(decide(*nr, abi.arch), RET_ERRNO | EPERM, "{nr}");
            }
            for nr in abi.io_uring {
                assert_eq!(decide(nr, abi.arch), RET_ERRNO | ENOSYS, "{nr}");
            }
            // Ordinary calls around them go through.
            for nr in [0, 1, 2, 59, 60, 231, 247, 251, 272, 424, 434, 441] {
                if !abi.keyrings.contains(&nr)
                    && !abi.io_uring.contains(&nr)
                    && !abi.mounts.contains(&nr)
                {
                    assert_eq!(decide(nr, abi.arch), RET_ALLOW, "{nr} on {:#x}", abi.arch);
                }
            }
            if abi.x32 {
                assert_eq!(
                    decide(X32_BIT | abi.keyrings[2], abi.arch),
                    RET_ERRNO | ENOSYS
                );
            }
        }
        assert_eq!(decide(250, 0x1234), RET_ALLOW);
        assert_eq!(filter().len(), program().len() * 8);
    }
}
