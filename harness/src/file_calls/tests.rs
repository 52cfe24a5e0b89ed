use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::*;

#[test]
fn each_convention_lists_a_number_and_a_name_once() {
    for abi in ABIS {
        let mut numbers: Vec<u32> = abi.calls.iter().map(|c| c.nr).collect();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(numbers.len(), abi.calls.len(), "{}", abi.name);
        let mut names: Vec<&str> = abi.calls.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), abi.calls.len(), "{}", abi.name);
        if let Some(below) = abi.known_below {
            assert!(abi.calls.iter().all(|c| c.nr < below), "{}", abi.name);
        }
        for c in abi.calls {
            // A refused call names nothing the reader reads; a watched one
            // names a path or a descriptor, and the reader knows its x86-64
            // twin by the same name, with its names in the same places.
            match c.policy {
                Policy::Refused(errno) => {
                    assert!(c.slots.is_empty() && c.fd.is_none(), "{}", c.name);
                    assert!(errno == ENOSYS || errno == EPERM, "{}", c.name);
                }
                Policy::Watched => {
                    assert!(!c.slots.is_empty() || c.fd.is_some(), "{}", c.name);
                    if COMPLETE {
                        assert!(
                            X86_64.iter().any(|x| x.name == c.reads_as
                                && x.policy == Policy::Watched
                                && x.slots == c.slots
                                && x.fd == c.fd
                                && x.flags == c.flags),
                            "{} reads as {}",
                            c.name,
                            c.reads_as
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn the_i386_names_are_read_as_their_x86_64_twins() {
    if !COMPLETE {
        return;
    }
    for (name, want) in [
        ("stat64", "stat"),
        ("lstat64", "lstat"),
        ("fstatat64", "newfstatat"),
        ("chown32", "chown"),
        ("lchown32", "lchown"),
        ("truncate64", "truncate"),
        ("statfs64", "statfs"),
        ("utimensat_time64", "utimensat"),
        ("openat", "openat"),
        ("read", "read"),
    ] {
        assert_eq!(reads_as(name), want);
    }
    assert!(refused("io_uring_setup"));
    assert!(refused("open_by_handle_at"));
    assert!(!refused("openat"));
}

/// What the probe program does for one call of the table.
struct Probe {
    abi: &'static str,
    call: &'static FileCall,
    /// The C expression that makes the call and gives what it returned.
    expr: String,
    /// The workspace path the tracers must have seen, for a watched call.
    seen: Option<String>,
}

/// A C string literal for the probe.
fn lit(s: &str) -> String {
    format!("low(\"{s}\")")
}

/// The probes of every call of this machine's tables, and the C program
/// that makes them from the working directory (the workspace) and prints
/// `ABI NAME RETURNED` for each. Each name it gives is its own
/// (`p/ABI-NAME-SLOT`), so the traces tell every call apart; the IA-32
/// calls go through `int $0x80`, their names in memory below 4 GiB.
fn probes() -> (Vec<Probe>, String) {
    let mut probes = Vec::new();
    for abi in ABIS {
        let i386 = abi.name == "i386";
        for call in abi.calls {
            let tag = format!("{}-{}", abi.name, call.name);
            let mut args = [
                "0".to_owned(),
                "0".into(),
                "0".into(),
                "0".into(),
                "0".into(),
            ];
            let mut seen = None;
            for (i, (dfd, name)) in call.slots.iter().enumerate() {
                let rel = match call.reads_as {
                    "chdir" => format!("d/{tag}"),
                    _ => format!("p/{tag}-{i}"),
                };
                args[usize::from(*name)] = lit(&rel);
                if let Some(d) = dfd {
                    args[usize::from(*d)] = "-100".into();
                }
                if i == 0 {
                    seen = Some(rel);
                }
            }
            if matches!(call.reads_as, "symlink" | "symlinkat") {
                args[0] = lit("target");
            }
            if let Some(fd) = call.fd {
                args[usize::from(fd)] = format!("dir(\"d/{tag}\")");
                if call.reads_as.starts_with("getdents") {
                    args[1] = "(long)low(\"\") + 64".into();
                    args[2] = "1024".into();
                }
                seen = Some(format!("d/{tag}"));
            }
            let expr = format!(
                "{}({}, {})",
                if i386 { "x86" } else { "x64" },
                call.nr,
                args.join(", ")
            );
            let seen = match (call.policy, call.reads_as) {
                (Policy::Refused(_), _) => None,
                // A change of folder shows in the next relative name.
                (_, "chdir" | "fchdir") => seen.map(|s| format!("{s}/after")),
                _ => seen,
            };
            probes.push(Probe {
                abi: abi.name,
                call,
                expr,
                seen,
            });
        }
    }
    let mut c = String::from(
        r#"#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include <sys/mman.h>
static char *area;
static long used;
static long low(const char *s) {
    char *at = area + used;
    strcpy(at, s);
    used += strlen(s) + 1 + 1024;
    return (long)at;
}
static long dir(const char *s) { return open(s, O_RDONLY | O_DIRECTORY); }
static long x64(long n, long a, long b, long c, long d, long e) {
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
    return ret;
}
static long x86(long n, long a, long b, long c, long d, long e) {
    long ret;
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(n), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e)
                     : "memory");
    return (long)(int)ret;
}
int main(void) {
    long ws = dir(".");
    area = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    if (area == MAP_FAILED || ws < 0)
        return 2;
"#,
    );
    for p in &probes {
        let _ = writeln!(
            c,
            "    printf(\"{} {} %ld\\n\", {});",
            p.abi, p.call.name, p.expr
        );
        if matches!(p.call.reads_as, "chdir" | "fchdir") {
            // The next relative name is read against the new folder; then
            // back to the workspace.
            let _ = writeln!(
                c,
                "    x64(4, low(\"after\"), 0, 0, 0, 0);\n    x64(81, ws, 0, 0, 0, 0);"
            );
        }
    }
    c.push_str(
        "    printf(\"x86-64 beyond %ld\\n\", x64(470, 0, 0, 0, 0, 0));\n    \
         printf(\"i386 beyond %ld\\n\", x86(470, 0, 0, 0, 0, 0));\n    \
         printf(\"x32 open %ld\\n\", x64(0x40000002, low(\"p/x32\"), 0, 0, 0, 0));\n    \
         fflush(stdout);\n    \
         if (access(\"../probe32\", X_OK) == 0)\n        \
         execl(\"../probe32\", \"probe32\", (char *)0);\n    \
         return 0;\n}\n",
    );
    (probes, c)
}

/// A 32-bit program of its own (no C library: this machine may have no
/// 32-bit one), calling the kernel as 32-bit programs do, through the vDSO's
/// `__kernel_vsyscall` (`sysenter`): the calls glibc makes for an ordinary
/// program's opens, stats, listings and execs, each naming `w32/NAME`. It
/// exits with how many were refused (`ENOSYS` or `EPERM`).
const PROBE32: &str = r#"typedef unsigned int u32;
static u32 vsys;
static char buf[512];
static int sys(int nr, int a, int b, int c, int d, int e) {
    int ret;
    __asm__ volatile("call *%[v]" : "=a"(ret)
                     : [v] "m"(vsys), "a"(nr), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e) : "memory");
    return ret;
}
static int refused;
static void count(int ret) { refused += ret == -38 || ret == -1; }
void cmain(u32 *sp) {
    u32 *p = sp + 1 + sp[0] + 1;
    int fd;
    while (*p)
        p++;
    for (p++; p[0]; p += 2)
        if (p[0] == 32)
            vsys = p[1];
    if (!vsys)
        for (;;)
            __asm__ volatile("int $0x80" : : "a"(1), "b"(100));
    count(sys(5, (int)"w32/open", 0, 0, 0, 0));
    count(sys(295, -100, (int)"w32/openat", 0, 0, 0));
    count(sys(195, (int)"w32/stat64", (int)buf, 0, 0, 0));
    count(sys(196, (int)"w32/lstat64", (int)buf, 0, 0, 0));
    count(sys(300, -100, (int)"w32/fstatat64", (int)buf, 0, 0));
    count(sys(383, -100, (int)"w32/statx", 0, 0xfff, (int)buf));
    count(sys(33, (int)"w32/access", 0, 0, 0, 0));
    count(sys(439, -100, (int)"w32/faccessat2", 0, 0, 0));
    count(sys(85, (int)"w32/readlink", (int)buf, 64, 0, 0));
    count(sys(412, -100, (int)"w32/utimensat_time64", 0, 0, 0));
    count(sys(212, (int)"w32/chown32", 0, 0, 0, 0));
    count(sys(193, (int)"w32/truncate64", 0, 0, 0, 0));
    count(sys(268, (int)"w32/statfs64", 84, (int)buf, 0, 0));
    count(sys(39, (int)"w32", 0755, 0, 0, 0));
    count(sys(39, (int)"w32/mkdir", 0755, 0, 0, 0));
    fd = sys(5, (int)"w32", 0200000, 0, 0, 0);
    count(fd);
    count(sys(220, fd, (int)buf, sizeof buf, 0, 0));
    count(sys(11, (int)"w32/execve", 0, 0, 0, 0));
    sys(1, refused, 0, 0, 0, 0);
}
__asm__(".globl _start\n_start:\n mov %esp, %eax\n push %eax\n call cmain\n hlt\n");
"#;

/// What the 32-bit program names, and what the tracers must see.
const PROBE32_SEEN: &[&str] = &[
    "w32/open",
    "w32/openat",
    "w32/stat64",
    "w32/lstat64",
    "w32/fstatat64",
    "w32/statx",
    "w32/access",
    "w32/faccessat2",
    "w32/readlink",
    "w32/utimensat_time64",
    "w32/chown32",
    "w32/truncate64",
    "w32/statfs64",
    "w32/mkdir",
    "w32/execve",
];

/// A workspace with the folders the probes name, and the probe program
/// compiled outside it; `None` where no C compiler is installed.
#[allow(
    clippy::disallowed_methods,
    reason = "the test's own compiler, run as it is"
)]
fn workspace(probes: &[Probe], c: &str) -> Option<(tempfile::TempDir, PathBuf, PathBuf)> {
    let cc = ["/usr/bin/cc", "/usr/bin/clang"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())?;
    let top = tempfile::tempdir().unwrap();
    let ws = top.path().join("ws");
    std::fs::create_dir_all(ws.join("p")).unwrap();
    for p in probes {
        if p.call.fd.is_some() || p.call.reads_as == "chdir" {
            std::fs::create_dir_all(ws.join(format!("d/{}-{}", p.abi, p.call.name))).unwrap();
        }
    }
    let src = top.path().join("probe.c");
    let bin = top.path().join("probe");
    std::fs::write(&src, c).unwrap();
    let built = std::process::Command::new(&cc)
        .args(["-O1", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .unwrap();
    assert!(built.success(), "the probe program compiles");
    // The 32-bit program, where clang can build one: the 64-bit probe
    // executes it last.
    let src32 = top.path().join("probe32.c");
    std::fs::write(&src32, PROBE32).unwrap();
    let built32 = std::process::Command::new("/usr/bin/clang")
        .args([
            "-m32",
            "-O1",
            "-static",
            "-nostdlib",
            "-ffreestanding",
            "-fno-pic",
            "-o",
        ])
        .arg(top.path().join("probe32"))
        .arg(&src32)
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        built32 || std::env::var_os("CI").is_none(),
        "CI builds the 32-bit probe: scripts/test installs clang"
    );
    let ws = ws.canonicalize().unwrap();
    Some((top, ws, bin))
}

/// The shell line that runs `program` in a bubblewrap sandbox under the
/// gate's seccomp filter (read from `filter`), in `ws`, bubblewrap's
/// information written to `info`.
fn sandboxed(bwrap: &Path, filter: &Path, info: &Path, ws: &Path, program: &Path) -> String {
    format!(
        "exec {bwrap} --seccomp 9 --info-fd 8 --bind / / --dev /dev --proc /proc --unshare-pid \
         --chdir {ws} -- {program} 9<{filter} 8>{info}",
        bwrap = bwrap.display(),
        ws = ws.display(),
        program = program.display(),
        filter = filter.display(),
        info = info.display(),
    )
}

/// Each call's line of the probe's output checked against the table: a
/// refused call returned its errno and a watched one is in `got`.
fn judge(probes: &[Probe], out: &str, got: &crate::trace::Accesses, tracer: &str, probe32: bool) {
    assert_eq!(got.incomplete, None, "{tracer}: {got:?}");
    let mut wrong = Vec::new();
    for p in probes {
        let key = format!("{} {} ", p.abi, p.call.name);
        let Some(ret) = out
            .lines()
            .find_map(|l| l.strip_prefix(&key))
            .and_then(|r| r.trim().parse::<i64>().ok())
        else {
            wrong.push(format!("{key}: no line"));
            continue;
        };
        match (p.call.policy, &p.seen) {
            (Policy::Refused(errno), _) => {
                if ret != -i64::from(errno) {
                    wrong.push(format!("{key}returned {ret}, not -{errno}"));
                }
            }
            (Policy::Watched, Some(seen)) => {
                if ret == -i64::from(ENOSYS) {
                    wrong.push(format!("{key}was refused"));
                }
                // A write is seen as written, not read.
                if !got.paths.contains(seen)
                    && !got.listed.contains(seen)
                    && !got.written.contains(seen)
                {
                    wrong.push(format!("{key}not seen at {seen}"));
                }
            }
            (Policy::Watched, None) => wrong.push(format!("{key}names nothing")),
        }
    }
    if probe32 {
        for seen in PROBE32_SEEN {
            if !got.paths.contains(*seen) && !got.written.contains(*seen) {
                wrong.push(format!("the 32-bit program's {seen} not seen"));
            }
        }
        if !got.listed.contains("w32") {
            wrong.push("the 32-bit program's listing not seen".into());
        }
    }
    for line in ["x86-64 beyond -38", "i386 beyond -38", "x32 open -38"] {
        if !out.lines().any(|l| l == line) {
            wrong.push(format!("no `{line}`"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{tracer}:\n{}\nseen: {:?} {:?}",
        wrong.join("\n"),
        got.paths,
        got.listed
    );
}

/// The root's tools: `bwrap`, and `clang` for the eBPF tracer.
fn tools() -> Option<(PathBuf, Option<PathBuf>)> {
    let bwrap = PathBuf::from("/usr/bin/bwrap");
    if !COMPLETE || !bwrap.is_file() || !nix::unistd::geteuid().is_root() {
        return None;
    }
    let clang = PathBuf::from("/usr/bin/clang");
    Some((bwrap, clang.is_file().then_some(clang)))
}

/// Every call of the table, made by a sandboxed item in each convention,
/// is either seen by the eBPF tracer at the name it gave or refused with
/// its errno.
#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "the test's own sandbox, run as it is"
)]
fn each_call_is_seen_by_the_ebpf_tracer_or_refused() {
    let Some((bwrap, Some(clang))) = tools() else {
        return;
    };
    let (probes, c) = probes();
    let Some((top, ws, bin)) = workspace(&probes, &c) else {
        return;
    };
    let filter = top.path().join("filter");
    std::fs::write(&filter, crate::seccomp::filter()).unwrap();
    let watcher = crate::bpf::Watcher::start(&crate::bpf::Settings {
        clang,
        workspace: ws.clone(),
        launchers: vec![bwrap.clone()],
        cache: None,
    })
    .unwrap();
    watcher.register(&ws, &ws).unwrap();
    // bubblewrap first (a root is armed by the first program after it),
    // the filter on its standard input.
    let child = std::process::Command::new(&bwrap)
        .args([
            "--seccomp",
            "0",
            "--bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ])
        .args(["--unshare-pid", "--chdir"])
        .arg(&ws)
        .arg("--")
        .arg(&bin)
        .stdin(std::fs::File::open(&filter).unwrap())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let dir = Path::new("/probe");
    watcher.claim(dir, child.id());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let got = watcher.collect(dir, &ws);
    let probe32 = top.path().join("probe32").is_file();
    judge(
        &probes,
        &String::from_utf8_lossy(&out.stdout),
        &got,
        "ebpf",
        probe32,
    );
}

/// The same under `strace`, as it follows a sandbox from above it.
#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "the test's own sandbox, run as it is"
)]
fn each_call_is_seen_by_strace_or_refused() {
    let Some((bwrap, _)) = tools() else {
        return;
    };
    let strace = PathBuf::from("/usr/bin/strace");
    if !strace.is_file() {
        return;
    }
    let (probes, c) = probes();
    let Some((top, ws, bin)) = workspace(&probes, &c) else {
        return;
    };
    let filter = top.path().join("filter");
    std::fs::write(&filter, crate::seccomp::filter()).unwrap();
    let dir = top.path().join("trace");
    std::fs::create_dir(&dir).unwrap();
    let tracer = crate::trace::Tracer { strace };
    let options: Vec<String> = tracer
        .options(&dir)
        .iter()
        .map(|o| format!("'{}'", o.to_string_lossy()))
        .collect();
    let line = format!("exec {} {}", tracer.strace.display(), options.join(" "))
        + &sandboxed(
            &bwrap,
            &filter,
            &dir.join(crate::trace::SANDBOX_INFO),
            &ws,
            &bin,
        )
        .replacen("exec ", " ", 1);
    let out = std::process::Command::new("/bin/sh")
        .args(["-c", &line])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let got = crate::trace::read(&dir, &ws);
    let probe32 = top.path().join("probe32").is_file();
    judge(
        &probes,
        &String::from_utf8_lossy(&out.stdout),
        &got,
        "strace",
        probe32,
    );
}
