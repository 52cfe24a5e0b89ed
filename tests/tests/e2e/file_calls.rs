//! A trace complete by construction, through the real binary: in one
//! series, a file read by an IA-32 call (`int 0x80` from a 64-bit
//! process), a helper run by a name spelled `//WORKSPACE/bin/helper`, a
//! data file relayed through a check's `/tmp`, an ignored file edited, an
//! ignored file probed for and made later, and a hard link in an ignored
//! folder to a tracked file are all inputs a retry compares, as root (the
//! eBPF tracer, and `strace`) and as an unprivileged user (`strace` above
//! the sandbox).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use gate_tests::{TestEnv, gate_bin, hermetic, status_of};
use serde_json::Value;

/// Reads the file named by its argument with `open` and `read` made by
/// `int 0x80`, and succeeds when it holds `good`.
const I386_READ: &str = r#"#include <string.h>
#include <sys/mman.h>
static long x86(long n, long a, long b, long c) {
    long ret;
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(n), "b"(a), "c"(b), "d"(c) : "memory");
    return (long)(int)ret;
}
int main(int argc, char **argv) {
    char *low = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    long fd, n;
    if (argc < 2 || low == MAP_FAILED)
        return 2;
    strcpy(low, argv[1]);
    fd = x86(5, (long)low, 0, 0);
    if (fd < 0)
        return 3;
    n = x86(3, fd, (long)(low + 1024), 100);
    return !(n == 5 && memcmp(low + 1024, "good\n", 5) == 0);
}
"#;

/// Compiles `source` to `out`; `false` where no C compiler is installed.
fn compile(source: &str, out: &Path) -> bool {
    let Some(cc) = ["/usr/bin/cc", "/usr/bin/clang"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
    else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI has a C compiler: scripts/test installs clang"
        );
        return false;
    };
    let src = out.with_extension("c");
    std::fs::write(&src, source).unwrap();
    #[allow(clippy::disallowed_methods)] // test set-up: the helper binaries
    let ok = Command::new(cc)
        .args(["-O1", "-o"])
        .arg(out)
        .arg(&src)
        .status()
        .unwrap()
        .success();
    std::fs::remove_file(&src).unwrap();
    assert!(ok, "{} compiles", out.display());
    true
}

/// A helper that exits with `code`.
fn helper(code: u8) -> String {
    format!("int main(void) {{ return {code}; }}\n")
}

/// Who runs the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Root,
    Nobody,
}

const NOBODY: u32 = 65534;

/// `gate verify --format json` (with `extra`) in `env`'s workspace, traced
/// by `mode`, as `who`: its exit code and document.
fn verify(env: &TestEnv, who: Who, mode: &str, extra: &[&str]) -> (Option<i32>, Value) {
    if who == Who::Root {
        let out = env
            .gate(&[&["verify", "--format", "json"], extra].concat())
            .trace(mode)
            .run();
        return (out.code, out.json());
    }
    // The workspace and the cache are the user's; the gate reads its spec
    // and writes its state there.
    for p in [env.path(), env.cache_path()] {
        #[allow(clippy::disallowed_methods)] // test set-up
        let ok = Command::new("chown")
            .args(["-R", &format!("{NOBODY}:{NOBODY}")])
            .arg(p)
            .status()
            .unwrap()
            .success();
        assert!(ok);
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    #[allow(clippy::disallowed_methods)] // the gate as an unprivileged user
    let mut cmd = Command::new("setpriv");
    hermetic(&mut cmd)
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            "--inh-caps=-all",
            "--",
        ])
        .arg(gate_bin())
        .args(["verify", "--format", "json"])
        .args(extra)
        .current_dir(env.path())
        .env("HOME", env.path())
        .env("XDG_CACHE_HOME", env.cache_path())
        .env("GATE_TRACE", mode);
    let out = cmd.output().unwrap();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), doc)
}

/// The criteria whose inputs only a complete trace sees.
const HIDDEN: [&str; 6] = ["i386", "helper", "relayed", "ign", "probe", "hard"];

/// The sequence: attempt 1 fails on `other` and passes the six criteria
/// whose inputs are read by an IA-32 call, run by a `//` name, relayed
/// through `/tmp`, ignored, probed for, or reached through a hard link;
/// attempt 2 fixes `other` and changes every one of those inputs where the
/// fingerprint does not look: all six run again and fail, as `--full` does.
fn all_of_them_in_one_series(who: Who, mode: &str) {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        r#"
[spec]
id = "calls"
[policy]
builtin_parse = false
[[check]]
id = "relay"
run = "cp data/relay.txt /tmp/relay.txt"
[[check]]
id = "maker"
run = "sh maker.sh"
[[task]]
id = "t"
paths = ["src/**"]
[[task.criterion]]
id = "i386"
text = "the data is good"
run = "bin/i386-read data/value.txt"
inputs = ["README.md"]
[[task.criterion]]
id = "helper"
text = "the helper agrees"
run = 'exec "/$PWD/bin/helper"'
inputs = ["README.md"]
[[task.criterion]]
id = "relayed"
text = "the relayed data is good"
run = "grep -qx good /tmp/relay.txt"
inputs = ["README.md"]
after = ["relay"]
[[task.criterion]]
id = "ign"
text = "the ignored setting holds"
run = "grep -qx good .cache/ign.txt"
inputs = ["README.md"]
[[task.criterion]]
id = "probe"
text = "no flag is set"
run = "sleep 1; test ! -e .cache/flag"
inputs = ["README.md"]
[[task.criterion]]
id = "hard"
text = "the linked data is good"
run = "grep -qx good .cache/hard.txt"
inputs = ["README.md"]
[[task.criterion]]
id = "other"
text = "other holds"
run = "grep -qx yes src/other.txt"
inputs = ["src/other.txt"]
"#,
    );
    env.write("README.md", "calls\n");
    env.write(".gitignore", ".gate/\n.cache/\n");
    env.write("data/value.txt", "good\n");
    env.write("data/relay.txt", "good\n");
    env.write("data/linked.txt", "good\n");
    env.write(".cache/ign.txt", "good\n");
    env.write("maker.sh", "true\n");
    std::fs::hard_link(
        env.path().join("data/linked.txt"),
        env.path().join(".cache/hard.txt"),
    )
    .unwrap();
    env.write("src/other.txt", "no\n");
    std::fs::create_dir_all(env.path().join("bin")).unwrap();
    if !compile(I386_READ, &env.path().join("bin/i386-read"))
        || !compile(&helper(0), &env.path().join("bin/helper"))
    {
        return;
    }
    let what = format!("{who:?} {mode}");

    let (code, doc) = verify(&env, who, mode, &[]);
    assert_eq!(code, Some(1), "{what}: {doc:#}");
    let tracer = if mode == "ebpf" { "ebpf" } else { "strace" };
    assert_eq!(doc["isolation"]["tracer"], tracer, "{what}");
    for id in HIDDEN {
        assert_eq!(status_of(&doc, id), "passed", "{what} {id}: {doc:#}");
    }
    assert_eq!(status_of(&doc, "other"), "failed", "{what}");

    // Attempt 2: `other` fixed; every hidden input changed.
    env.write("src/other.txt", "yes\n");
    env.write("data/value.txt", "bad!\n");
    env.write("data/relay.txt", "bad\n");
    env.write(".cache/ign.txt", "bad\n");
    env.write("maker.sh", "mkdir -p .cache && : > .cache/flag\n");
    let changed = env.path().join("bin/helper.new");
    assert!(compile(&helper(1), &changed));
    std::fs::rename(&changed, env.path().join("bin/helper")).unwrap();
    // In place: the link keeps its inode.
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(env.path().join("data/linked.txt"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"bad\n"))
        .unwrap();
    let (code, doc) = verify(&env, who, mode, &[]);
    assert_eq!(doc["attempt"], 2, "{what}");
    for id in HIDDEN {
        assert_eq!(status_of(&doc, id), "failed", "{what} {id}: {doc:#}");
    }
    assert_eq!(status_of(&doc, "other"), "passed", "{what}");
    assert_eq!(code, Some(1), "{what}");
    assert_ne!(doc["verdict"], "PASS", "{what}");
    let (full, full_doc) = verify(&env, who, mode, &["--full"]);
    assert_eq!(full, code, "{what}: the retry ends as --full does");
    for id in HIDDEN {
        assert_eq!(status_of(&full_doc, id), "failed", "{what} --full {id}");
    }
}

/// As root: the eBPF tracer (where it runs) and `strace`.
#[test]
fn all_of_them_in_one_series_as_root() {
    if !nix::unistd::geteuid().is_root() {
        all_of_them_in_one_series(Who::Root, "on");
        return;
    }
    let ebpf =
        Path::new("/usr/bin/clang").is_file() && Path::new("/sys/kernel/btf/vmlinux").is_file();
    if ebpf {
        all_of_them_in_one_series(Who::Root, "ebpf");
    }
    all_of_them_in_one_series(Who::Root, "on");
}

/// As an unprivileged user: `strace` above the sandbox.
#[test]
fn all_of_them_in_one_series_unprivileged() {
    if !nix::unistd::geteuid().is_root() {
        // Already unprivileged: the test above runs it so.
        return;
    }
    all_of_them_in_one_series(Who::Nobody, "on");
}
