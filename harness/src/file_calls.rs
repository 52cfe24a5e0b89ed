//! Every system call that names or reaches a file, in each calling
//! convention of this machine, and what becomes of it: *watched* (both
//! tracers follow it and read the names it gives) or *refused* (the
//! sandbox's seccomp filter fails it with an errno, and a tracer that sees
//! one succeed, where no sandbox refused it, makes the trace incomplete).
//!
//! One table per convention, the one value the rest is derived from: the
//! eBPF tracer's watched calls ([`crate::bpf`]), `strace`'s `-e trace=`
//! list ([`crate::trace::Tracer`]) and the filter ([`crate::seccomp`]).
//! A call that reaches a file only through a descriptor (`read`, `fstat`,
//! `fchmod`) is not listed: the open that made the descriptor is.
//!
//! Refused with `ENOSYS` (what glibc and language runtimes fall back on):
//! the calls no ordinary build or test makes that a tracer cannot follow
//! by name (`open_by_handle_at`, `uselib`, `fanotify_mark`, `quotactl`,
//! `acct`, `swapon`, `swapoff`, `lookup_dcookie`, the i386 `oldstat`,
//! `oldlstat` and `readdir`), `io_uring` (its operations run in the kernel
//! out of any tracer's sight), the calls newer than the oldest `strace`
//! the gate reads (`fchmodat2`, the `*xattrat` calls, `file_getattr`,
//! `file_setattr`), and every number above the newest call listed
//! ([`Abi::known_below`]): a call a later kernel adds cannot open a way
//! round the trace. Mounting and changing root are refused with `EPERM`,
//! as unprivileged callers meet them.

/// A call's path arguments: `(dirfd argument, name argument)`; `None` for
/// the descriptor means the working directory.
pub type Slot = (Option<u8>, u8);

/// What the sandbox does with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Let through; both tracers follow it.
    Watched,
    /// Refused with this errno.
    Refused(u32),
}

/// `ENOSYS`: the call does not exist, as far as the caller can tell.
pub const ENOSYS: u32 = 38;
/// `EPERM`: the caller may not.
pub const EPERM: u32 = 1;

/// One system call of one convention.
#[derive(Debug, Clone, Copy)]
pub struct FileCall {
    /// Its number in the convention.
    pub nr: u32,
    /// Its name in the convention, as `strace` prints it.
    pub name: &'static str,
    /// The name the trace reader knows it by: the x86-64 call it does the
    /// same as (`stat64` is read as `stat`).
    pub reads_as: &'static str,
    /// The paths it names.
    pub slots: &'static [Slot],
    /// A call on a descriptor alone (`getdents64`, `fchdir`): its argument.
    pub fd: Option<u8>,
    /// The argument holding `open` flags.
    pub flags: Option<u8>,
    /// Watched or refused.
    pub policy: Policy,
}

/// A watched call named `name` in its convention and read as `reads_as`.
const fn w(
    nr: u32,
    name: &'static str,
    reads_as: &'static str,
    slots: &'static [Slot],
) -> FileCall {
    FileCall {
        nr,
        name,
        reads_as,
        slots,
        fd: None,
        flags: None,
        policy: Policy::Watched,
    }
}

/// A watched call with its own name in every convention.
const fn same(nr: u32, name: &'static str, slots: &'static [Slot]) -> FileCall {
    w(nr, name, name, slots)
}

/// A call on a descriptor alone, its argument 0.
const fn fd0(nr: u32, name: &'static str, reads_as: &'static str) -> FileCall {
    FileCall {
        fd: Some(0),
        ..w(nr, name, reads_as, &[])
    }
}

/// A refused call.
const fn no(nr: u32, name: &'static str, errno: u32) -> FileCall {
    FileCall {
        policy: Policy::Refused(errno),
        ..w(nr, name, name, &[])
    }
}

const AT1: &[Slot] = &[(Some(0), 1)];
const PLAIN0: &[Slot] = &[(None, 0)];
const PLAIN1: &[Slot] = &[(None, 1)];
const TWO_AT: &[Slot] = &[(Some(0), 1), (Some(2), 3)];
const TWO_PLAIN: &[Slot] = &[(None, 0), (None, 1)];
const SYMLINKAT: &[Slot] = &[(Some(1), 2)];

/// One calling convention: its audit architecture (as seccomp sees it),
/// its file calls, and the number from which on every call is refused.
#[derive(Debug)]
pub struct Abi {
    /// A short name (`x86-64`, `i386`).
    pub name: &'static str,
    /// `AUDIT_ARCH_*`.
    pub audit_arch: u32,
    /// Its file calls.
    pub calls: &'static [FileCall],
    /// Calls numbered this or above are refused with `ENOSYS`, when set.
    pub known_below: Option<u32>,
}

impl Abi {
    /// The call numbered `nr`.
    pub fn call(&self, nr: u32) -> Option<&'static FileCall> {
        self.calls.iter().find(|c| c.nr == nr)
    }

    /// The calls the sandbox lets through.
    pub fn watched(&self) -> impl Iterator<Item = &'static FileCall> {
        self.calls.iter().filter(|c| c.policy == Policy::Watched)
    }
}

/// The calls of the x86-64 convention.
pub const X86_64: &[FileCall] = &[
    FileCall {
        flags: Some(1),
        ..same(2, "open", PLAIN0)
    },
    same(4, "stat", PLAIN0),
    same(6, "lstat", PLAIN0),
    same(21, "access", PLAIN0),
    same(59, "execve", PLAIN0),
    same(76, "truncate", PLAIN0),
    fd0(78, "getdents", "getdents"),
    same(80, "chdir", PLAIN0),
    fd0(81, "fchdir", "fchdir"),
    same(82, "rename", TWO_PLAIN),
    same(83, "mkdir", PLAIN0),
    same(84, "rmdir", PLAIN0),
    same(85, "creat", PLAIN0),
    same(86, "link", TWO_PLAIN),
    same(87, "unlink", PLAIN0),
    same(88, "symlink", PLAIN1),
    same(89, "readlink", PLAIN0),
    same(90, "chmod", PLAIN0),
    same(92, "chown", PLAIN0),
    same(94, "lchown", PLAIN0),
    same(132, "utime", PLAIN0),
    same(133, "mknod", PLAIN0),
    no(134, "uselib", ENOSYS),
    same(137, "statfs", PLAIN0),
    no(155, "pivot_root", EPERM),
    no(161, "chroot", EPERM),
    no(163, "acct", ENOSYS),
    no(165, "mount", EPERM),
    no(166, "umount2", EPERM),
    no(167, "swapon", ENOSYS),
    no(168, "swapoff", ENOSYS),
    no(179, "quotactl", ENOSYS),
    same(188, "setxattr", PLAIN0),
    same(189, "lsetxattr", PLAIN0),
    same(191, "getxattr", PLAIN0),
    same(192, "lgetxattr", PLAIN0),
    same(194, "listxattr", PLAIN0),
    same(195, "llistxattr", PLAIN0),
    same(197, "removexattr", PLAIN0),
    same(198, "lremovexattr", PLAIN0),
    no(212, "lookup_dcookie", ENOSYS),
    fd0(217, "getdents64", "getdents64"),
    same(235, "utimes", PLAIN0),
    same(254, "inotify_add_watch", PLAIN1),
    FileCall {
        flags: Some(2),
        ..same(257, "openat", AT1)
    },
    same(258, "mkdirat", AT1),
    same(259, "mknodat", AT1),
    same(260, "fchownat", AT1),
    same(261, "futimesat", AT1),
    same(262, "newfstatat", AT1),
    same(263, "unlinkat", AT1),
    same(264, "renameat", TWO_AT),
    same(265, "linkat", TWO_AT),
    same(266, "symlinkat", SYMLINKAT),
    same(267, "readlinkat", AT1),
    same(268, "fchmodat", AT1),
    same(269, "faccessat", AT1),
    same(280, "utimensat", AT1),
    no(301, "fanotify_mark", ENOSYS),
    same(303, "name_to_handle_at", AT1),
    no(304, "open_by_handle_at", ENOSYS),
    same(316, "renameat2", TWO_AT),
    same(322, "execveat", AT1),
    same(332, "statx", AT1),
    no(425, "io_uring_setup", ENOSYS),
    no(426, "io_uring_enter", ENOSYS),
    no(427, "io_uring_register", ENOSYS),
    no(428, "open_tree", EPERM),
    no(429, "move_mount", EPERM),
    no(430, "fsopen", EPERM),
    no(431, "fsconfig", EPERM),
    no(432, "fsmount", EPERM),
    no(433, "fspick", EPERM),
    // `openat2`'s flags are in a structure: its opens count as writes.
    same(437, "openat2", AT1),
    same(439, "faccessat2", AT1),
    no(442, "mount_setattr", EPERM),
    no(452, "fchmodat2", ENOSYS),
    no(463, "setxattrat", ENOSYS),
    no(464, "getxattrat", ENOSYS),
    no(465, "listxattrat", ENOSYS),
    no(466, "removexattrat", ENOSYS),
    no(467, "open_tree_attr", EPERM),
    no(468, "file_getattr", ENOSYS),
    no(469, "file_setattr", ENOSYS),
];

/// The calls of the IA-32 convention (`int 0x80`, `sysenter`), by the
/// names `strace` gives them there; a 64-bit process may make them too.
pub const I386: &[FileCall] = &[
    FileCall {
        flags: Some(1),
        ..same(5, "open", PLAIN0)
    },
    same(8, "creat", PLAIN0),
    same(9, "link", TWO_PLAIN),
    same(10, "unlink", PLAIN0),
    same(11, "execve", PLAIN0),
    same(12, "chdir", PLAIN0),
    same(14, "mknod", PLAIN0),
    same(15, "chmod", PLAIN0),
    same(16, "lchown", PLAIN0),
    no(18, "oldstat", ENOSYS),
    no(21, "mount", EPERM),
    no(22, "umount", EPERM),
    same(30, "utime", PLAIN0),
    same(33, "access", PLAIN0),
    same(38, "rename", TWO_PLAIN),
    same(39, "mkdir", PLAIN0),
    same(40, "rmdir", PLAIN0),
    no(51, "acct", ENOSYS),
    no(52, "umount2", EPERM),
    no(61, "chroot", EPERM),
    same(83, "symlink", PLAIN1),
    no(84, "oldlstat", ENOSYS),
    same(85, "readlink", PLAIN0),
    no(86, "uselib", ENOSYS),
    no(87, "swapon", ENOSYS),
    no(89, "readdir", ENOSYS),
    same(92, "truncate", PLAIN0),
    same(99, "statfs", PLAIN0),
    same(106, "stat", PLAIN0),
    same(107, "lstat", PLAIN0),
    no(115, "swapoff", ENOSYS),
    no(131, "quotactl", ENOSYS),
    fd0(133, "fchdir", "fchdir"),
    fd0(141, "getdents", "getdents"),
    same(182, "chown", PLAIN0),
    w(193, "truncate64", "truncate", PLAIN0),
    w(195, "stat64", "stat", PLAIN0),
    w(196, "lstat64", "lstat", PLAIN0),
    w(198, "lchown32", "lchown", PLAIN0),
    w(212, "chown32", "chown", PLAIN0),
    no(217, "pivot_root", EPERM),
    fd0(220, "getdents64", "getdents64"),
    same(226, "setxattr", PLAIN0),
    same(227, "lsetxattr", PLAIN0),
    same(229, "getxattr", PLAIN0),
    same(230, "lgetxattr", PLAIN0),
    same(232, "listxattr", PLAIN0),
    same(233, "llistxattr", PLAIN0),
    same(235, "removexattr", PLAIN0),
    same(236, "lremovexattr", PLAIN0),
    no(253, "lookup_dcookie", ENOSYS),
    w(268, "statfs64", "statfs", PLAIN0),
    same(271, "utimes", PLAIN0),
    same(292, "inotify_add_watch", PLAIN1),
    FileCall {
        flags: Some(2),
        ..same(295, "openat", AT1)
    },
    same(296, "mkdirat", AT1),
    same(297, "mknodat", AT1),
    same(298, "fchownat", AT1),
    same(299, "futimesat", AT1),
    w(300, "fstatat64", "newfstatat", AT1),
    same(301, "unlinkat", AT1),
    same(302, "renameat", TWO_AT),
    same(303, "linkat", TWO_AT),
    same(304, "symlinkat", SYMLINKAT),
    same(305, "readlinkat", AT1),
    same(306, "fchmodat", AT1),
    same(307, "faccessat", AT1),
    same(320, "utimensat", AT1),
    no(339, "fanotify_mark", ENOSYS),
    same(341, "name_to_handle_at", AT1),
    no(342, "open_by_handle_at", ENOSYS),
    same(353, "renameat2", TWO_AT),
    same(358, "execveat", AT1),
    same(383, "statx", AT1),
    w(412, "utimensat_time64", "utimensat", AT1),
    no(425, "io_uring_setup", ENOSYS),
    no(426, "io_uring_enter", ENOSYS),
    no(427, "io_uring_register", ENOSYS),
    no(428, "open_tree", EPERM),
    no(429, "move_mount", EPERM),
    no(430, "fsopen", EPERM),
    no(431, "fsconfig", EPERM),
    no(432, "fsmount", EPERM),
    no(433, "fspick", EPERM),
    same(437, "openat2", AT1),
    same(439, "faccessat2", AT1),
    no(442, "mount_setattr", EPERM),
    no(452, "fchmodat2", ENOSYS),
    no(463, "setxattrat", ENOSYS),
    no(464, "getxattrat", ENOSYS),
    no(465, "listxattrat", ENOSYS),
    no(466, "removexattrat", ENOSYS),
    no(467, "open_tree_attr", EPERM),
    no(468, "file_getattr", ENOSYS),
    no(469, "file_setattr", ENOSYS),
];

/// The calls of the AArch64 convention the sandbox refuses; the eBPF
/// tracer is not offered there and `strace` follows its `%file` class.
pub const AARCH64: &[FileCall] = &[
    no(39, "umount2", EPERM),
    no(40, "mount", EPERM),
    no(41, "pivot_root", EPERM),
    no(51, "chroot", EPERM),
    no(425, "io_uring_setup", ENOSYS),
    no(426, "io_uring_enter", ENOSYS),
    no(427, "io_uring_register", ENOSYS),
    no(428, "open_tree", EPERM),
    no(429, "move_mount", EPERM),
    no(430, "fsopen", EPERM),
    no(431, "fsconfig", EPERM),
    no(432, "fsmount", EPERM),
    no(433, "fspick", EPERM),
    no(442, "mount_setattr", EPERM),
];

/// The calls of the 32-bit Arm convention the sandbox refuses, as for
/// AArch64.
pub const ARM: &[FileCall] = &[
    no(21, "mount", EPERM),
    no(52, "umount2", EPERM),
    no(61, "chroot", EPERM),
    no(218, "pivot_root", EPERM),
    no(425, "io_uring_setup", ENOSYS),
    no(426, "io_uring_enter", ENOSYS),
    no(427, "io_uring_register", ENOSYS),
    no(428, "open_tree", EPERM),
    no(429, "move_mount", EPERM),
    no(430, "fsopen", EPERM),
    no(431, "fsconfig", EPERM),
    no(432, "fsmount", EPERM),
    no(433, "fspick", EPERM),
    no(442, "mount_setattr", EPERM),
];

/// The first number after the newest call of x86-64 and i386 listed: from
/// it on, every call is refused.
const NEWEST_KNOWN: u32 = 470;

/// The conventions a process of this machine can call the kernel with
/// (x32, on x86-64, is refused whole by the filter).
#[cfg(target_arch = "x86_64")]
pub const ABIS: &[Abi] = &[
    Abi {
        name: "x86-64",
        audit_arch: 0xC000_003E,
        calls: X86_64,
        known_below: Some(NEWEST_KNOWN),
    },
    Abi {
        name: "i386",
        audit_arch: 0x4000_0003,
        calls: I386,
        known_below: Some(NEWEST_KNOWN),
    },
];

/// The conventions a process of this machine can call the kernel with.
#[cfg(target_arch = "aarch64")]
pub const ABIS: &[Abi] = &[
    Abi {
        name: "aarch64",
        audit_arch: 0xC000_00B7,
        calls: AARCH64,
        known_below: None,
    },
    Abi {
        name: "arm",
        audit_arch: 0x4000_0028,
        calls: ARM,
        known_below: None,
    },
];

/// The conventions a process of this machine can call the kernel with.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const ABIS: &[Abi] = &[];

/// Whether the tables of this machine list its file calls in full (and
/// not only those the sandbox refuses): x86-64 and i386 do.
pub const COMPLETE: bool = cfg!(target_arch = "x86_64");

/// The name the trace reader knows the call `name` (as `strace` prints it
/// in any convention) by.
pub fn reads_as(name: &str) -> &str {
    ABIS.iter()
        .flat_map(|a| a.calls)
        .find(|c| c.name == name)
        .map_or(name, |c| c.reads_as)
}

/// Whether the call `name` (as the reader knows it) is refused by the
/// sandbox: a tracer that sees it succeed was not in a sandbox, and cannot
/// follow what it did.
pub fn refused(name: &str) -> bool {
    ABIS.iter()
        .flat_map(|a| a.calls)
        .any(|c| c.reads_as == name && matches!(c.policy, Policy::Refused(_)))
}

#[cfg(test)]
mod tests;
