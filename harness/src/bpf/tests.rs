use std::path::{Path, PathBuf};

use super::{Settings, Watcher, cache_name, compiled, read_kept, source};

/// The tracer's tools when this machine can run it: root, `clang` and
/// `bwrap` installed. In CI (root, where scripts/test installs them) it
/// must.
fn tools() -> Option<(PathBuf, PathBuf)> {
    let found = |names: &[&str]| names.iter().map(PathBuf::from).find(|p| p.is_file());
    let clang = found(&["/usr/bin/clang"]);
    let bwrap = found(&["/usr/bin/bwrap"]);
    let root = nix::unistd::geteuid().is_root();
    if let (Some(b), Some(w), true) = (clang, bwrap, root) {
        return Some((b, w));
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI runs as root with clang and bubblewrap: scripts/test installs them"
    );
    None
}

/// A shell in a bubblewrap sandbox whose working directory is `ws`.
#[allow(
    clippy::disallowed_methods,
    reason = "the sandbox's own command line, run as it is"
)]
fn sandboxed(bwrap: &Path, ws: &Path, script: &str) -> std::process::Child {
    std::process::Command::new(bwrap)
        .args([
            "--bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-pid",
        ])
        .arg("--chdir")
        .arg(ws)
        .args(["--", "/bin/sh", "-c", script])
        .spawn()
        .unwrap()
}

/// A tracer for the workspace `ws`, registered.
fn watcher(clang: PathBuf, bwrap: &Path, ws: &Path) -> Watcher {
    let watcher = Watcher::start(&Settings {
        clang,
        workspace: ws.to_path_buf(),
        launchers: vec![bwrap.to_path_buf()],
        cache: None,
    })
    .unwrap();
    watcher.register(ws, ws).unwrap();
    watcher
}

/// What `line`, run by a sandboxed shell in `ws`, touched, as `watcher`
/// saw it (collected for `dir`); the shell must succeed.
fn traced(
    watcher: &Watcher,
    bwrap: &Path,
    ws: &Path,
    dir: &Path,
    line: &str,
) -> crate::trace::Accesses {
    let mut child = sandboxed(bwrap, ws, line);
    watcher.claim(dir, child.id());
    assert!(child.wait().unwrap().success());
    watcher.collect(dir, ws)
}

/// One tracer, one sandboxed shell that reads, lists, probes, climbs into
/// a folder and writes, by relative and absolute names and through a
/// link: each is seen, and nothing outside the workspace is.
#[test]
fn a_sandboxed_shell_is_seen_doing_each_thing() {
    let Some((clang, bwrap)) = tools() else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join("sub/deep")).unwrap();
    std::fs::write(ws.join("sub/a.txt"), "a").unwrap();
    std::fs::write(ws.join("sub/deep/b.txt"), "b").unwrap();
    std::fs::write(ws.join("abs.txt"), "c").unwrap();
    std::fs::write(ws.join("sub/deep/linked.txt"), "d").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(ws.join("sub/deep"), outside.path().join("link")).unwrap();
    let watcher = watcher(clang, &bwrap, &ws);
    let line = format!(
        "cat sub/a.txt >/dev/null; cd sub; ls >/dev/null; test -e nope.txt; \
         cd deep && cat b.txt >/dev/null; cat {abs} >/dev/null; cat {link}/linked.txt >/dev/null; \
         echo x > {ws}/made.txt; cat /etc/hostname >/dev/null",
        abs = ws.join("abs.txt").display(),
        link = outside.path().join("link").display(),
        ws = ws.display(),
    );
    let dir = Path::new("/trace-1");
    let got = traced(&watcher, &bwrap, &ws, dir, &line);
    assert_eq!(got.incomplete, None, "{got:?}");
    for want in [
        "sub/a.txt",
        "sub/nope.txt",
        "sub/deep/b.txt",
        "abs.txt",
        "sub/deep/linked.txt",
    ] {
        assert!(got.paths.contains(want), "{want} not in {:?}", got.paths);
    }
    // Written, not read.
    assert!(!got.paths.contains("made.txt"), "{:?}", got.paths);
    assert!(got.listed.contains("sub"), "{:?}", got.listed);
    assert!(got.written.contains("made.txt"), "{:?}", got.written);
    assert!(
        got.paths.iter().all(|p| !p.contains("hostname")),
        "{:?}",
        got.paths
    );
}

/// A name holding a line break cannot pass for a line of the tracer's:
/// the rest of it stays part of the name.
#[test]
fn a_name_with_a_line_break_forges_nothing() {
    let Some((clang, bwrap)) = tools() else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    let watcher = watcher(clang, &bwrap, &ws);
    let dir = Path::new("/trace-2");
    let mut child = sandboxed(
        &bwrap,
        &ws,
        "test -e \"$(printf 'x\\nEND 1\\nREADY')\"; true",
    );
    watcher.claim(dir, child.id());
    assert!(child.wait().unwrap().success());
    let got = watcher.collect(dir, &ws);
    assert_eq!(got.incomplete, None, "{got:?}");
    assert!(got.paths.contains("x\nEND 1\nREADY"), "{:?}", got.paths);
}

/// A name through a process's link (`/proc/self/cwd/…`) makes the trace
/// incomplete, as with `strace`.
#[test]
fn a_name_through_a_process_link_makes_the_trace_incomplete() {
    let Some((clang, bwrap)) = tools() else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    std::fs::write(ws.join("a.txt"), "a").unwrap();
    let watcher = watcher(clang, &bwrap, &ws);
    let dir = Path::new("/trace-3");
    let got = traced(&watcher, &bwrap, &ws, dir, "test -e /proc/self/cwd/a.txt");
    assert!(
        got.incomplete
            .as_deref()
            .is_some_and(|why| why.contains("/proc")),
        "{got:?}"
    );
}

/// Names spelled otherwise than the kernel resolves them (`//`, `/./`,
/// `..`, a trailing `/`) are read as it resolves them, for an exec as for
/// an open; one that leads through a process's link that way still makes
/// the trace incomplete.
#[test]
fn names_are_read_as_the_kernel_resolves_them() {
    let Some((clang, bwrap)) = tools() else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join("bin")).unwrap();
    std::fs::write(ws.join("bin/helper"), "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(
        ws.join("bin/helper"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(ws.join("a.txt"), "a").unwrap();
    let watcher = watcher(clang, &bwrap, &ws);
    let parent = ws.parent().unwrap().display().to_string();
    let name = ws.file_name().unwrap().to_string_lossy().into_owned();
    let line = format!(
        "/{ws}/bin/helper; cat /.{ws}/./a.txt >/dev/null; test -e {ws}//b.txt/; \
         test -e {parent}/../{parent}/{name}/c.txt; true",
        ws = ws.display(),
    );
    let got = traced(&watcher, &bwrap, &ws, Path::new("/trace-slashes"), &line);
    assert_eq!(got.incomplete, None, "{got:?}");
    for want in ["bin/helper", "a.txt", "b.txt", "c.txt"] {
        assert!(got.paths.contains(want), "{want} not in {:?}", got.paths);
    }
    let got = traced(
        &watcher,
        &bwrap,
        &ws,
        Path::new("/trace-slashes-proc"),
        "test -e //proc/self/cwd/a.txt",
    );
    assert!(
        got.incomplete
            .as_deref()
            .is_some_and(|why| why.contains("/proc")),
        "{got:?}"
    );
}

/// The program's source holds the table of every watched call, with
/// where its names are.
#[test]
fn the_source_watches_the_calls_it_reads() {
    let text = source();
    assert!(!text.contains("@CALLS@"));
    for (key, call) in super::keyed() {
        assert!(text.contains(&format!("case {key}:")), "{}", call.name);
    }
    assert!(text.contains("case 257: c->n1 = a[1]; c->d1 = (s32)a[0]; c->fl = a[2]; break;"));
    // i386's `openat` and `stat64`, by their keys.
    assert!(text.contains("case 1048871: c->n1 = a[1]; c->d1 = (s32)a[0]; c->fl = a[2]; break;"));
    assert!(text.contains("case 1048771: c->n1 = a[0]; c->d1 = AT_FDCWD; break;"));
    assert!(text.contains("case 266: c->n1 = a[2]; c->d1 = (s32)a[1]; c->tg = a[0]; break;"));
    assert!(text.contains("case 217: c->d1 = (s32)a[0]; c->fdonly = 1; break;"));
}

/// Links an item makes: one in the workspace is kept with its target,
/// as `strace` shows it; one outside it that leads back in is reported.
#[test]
fn links_made_are_seen_with_their_targets() {
    let Some((clang, bwrap)) = tools() else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    std::fs::create_dir(ws.join("src")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let watcher = watcher(clang, &bwrap, &ws);
    let dir = Path::new("/trace-4");
    let line = format!(
        "ln -s src l && test ! -e l/flag && ln -s /usr/bin inside-usr && \
         ln -s {ws} {out}/back && test ! -e {out}/back/flag2",
        ws = ws.display(),
        out = outside.path().display(),
    );
    let got = traced(&watcher, &bwrap, &ws, dir, &line);
    assert_eq!(got.incomplete, None, "{got:?}");
    let linked: Vec<&str> = got.linked.iter().map(String::as_str).collect();
    assert_eq!(linked, ["inside-usr", "l"], "{got:?}");
    assert!(got.paths.contains("l/flag"), "{:?}", got.paths);
    assert!(
        got.leads_back
            .as_deref()
            .is_some_and(|what| what.contains(&ws.display().to_string())),
        "{got:?}"
    );
}

/// The kernel's count of skipped runs is read for every program, and is
/// nothing on a quiet start.
#[test]
fn skipped_runs_are_counted_from_the_programs_descriptors() {
    let Some((clang, bwrap)) = tools() else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let watcher = watcher(clang, &bwrap, &ws.path().canonicalize().unwrap());
    assert_eq!(watcher.program_fds.len(), 5);
    assert_eq!(watcher.skipped(), Some(0));
}

/// A record's bytes: the header's fields at their offsets, the name after
/// it and a link's target `STRLEN` bytes later.
fn record_bytes(
    kind: u8,
    nr: i32,
    ret: i64,
    hit: u64,
    k: i64,
    name: &str,
    target: &str,
) -> Vec<u8> {
    let mut out = vec![0_u8; super::HEAD];
    out[0..4].copy_from_slice(&u32::from(kind).to_le_bytes());
    out[4..8].copy_from_slice(&7_u32.to_le_bytes());
    out[8..12].copy_from_slice(&9_u32.to_le_bytes());
    out[12..16].copy_from_slice(&nr.to_le_bytes());
    out[16..24].copy_from_slice(&ret.to_le_bytes());
    out[24..32].copy_from_slice(&(-100_i64).to_le_bytes());
    out[32..40].copy_from_slice(&0o100_i64.to_le_bytes());
    out[40..48].copy_from_slice(&hit.to_le_bytes());
    out[48..56].copy_from_slice(&k.to_le_bytes());
    let len = |s: &str| {
        if s.is_empty() {
            0
        } else {
            u32::try_from(s.len() + 1).unwrap()
        }
    };
    out[56..60].copy_from_slice(&len(name).to_le_bytes());
    out[60..64].copy_from_slice(&len(target).to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    if !target.is_empty() {
        out.resize(super::HEAD + super::STRLEN, 0);
        out.extend_from_slice(target.as_bytes());
        out.push(0);
    }
    out
}

/// Each kind of record becomes the line the reader takes; a link made in
/// the workspace is announced before its call, one outside on its own.
#[test]
fn records_become_the_readers_lines() {
    let cases: &[(Vec<u8>, &[&str])] = &[
        (
            record_bytes(b'E', 257, 3, 0xffff_8881, 2, "a b\nc", ""),
            &["E 7 9 257 3 -100 64 ffff8881 2 a b\nc"],
        ),
        (
            record_bytes(b'E', 88, 0, 1, 0, "/ws/l", "src"),
            &["L 7 9 1 src", "E 7 9 88 0 -100 64 1 0 /ws/l"],
        ),
        (
            record_bytes(b'E', 88, -17, 1, 0, "/ws/l", "src"),
            &["E 7 9 88 -17 -100 64 1 0 /ws/l"],
        ),
        (
            record_bytes(b'E', 88, 0, 0, 0, "l", "/ws"),
            &["L 7 9 0 /ws", "E 7 9 88 0 -100 64 0 0 l"],
        ),
        (
            record_bytes(b'L', 88, 0, 0, 0, "/tmp/l", "/ws"),
            &["L 7 9 0 /ws"],
        ),
        (
            record_bytes(b'R', 257, 4, 0xab, 3, "", ""),
            &["R 7 9 257 4 64 ab 3"],
        ),
        (record_bytes(b'C', 0, 0, 0, 0, "src", ""), &["C 7 9 src"]),
        (record_bytes(b'W', 0, 3, 0xab, 0, "/ws", ""), &["W ab /ws"]),
        (record_bytes(b'Z', 0, -2, 0, 0, "/.b-1", ""), &["Z /.b-1"]),
        (record_bytes(b'N', 0, 0, 0, 0, "", ""), &["END 7"]),
        (
            record_bytes(b'X', 1, 0, 0, 0, "", ""),
            &["X 7 9 a name's folder lies deeper below the workspace than the tracer walks"],
        ),
        (
            record_bytes(b'X', 2, 0, 0, 0, "", ""),
            &["X 7 9 the tracer could not read a name or a link's target"],
        ),
        (
            record_bytes(b'Q', 0, 0, 0, 0, "", ""),
            &["X 7 9 the tracer wrote an unknown record"],
        ),
        (
            vec![b'E'; 10],
            &["X 0 0 a record was shorter than its header"],
        ),
    ];
    for (bytes, want) in cases {
        let mut lines = Vec::new();
        super::record(bytes, &mut lines);
        assert_eq!(lines, *want);
    }
}

/// A call whose folder lies deeper below the workspace than the walk goes
/// cannot be placed: the trace is incomplete, not silently short.
#[test]
fn a_folder_deeper_than_the_walk_makes_the_trace_incomplete() {
    let Some((clang, bwrap)) = tools() else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    let deep: PathBuf = std::iter::repeat_n("d", 70).collect();
    std::fs::create_dir_all(ws.join(&deep)).unwrap();
    let watcher = watcher(clang, &bwrap, &ws);
    let dir = Path::new("/trace-5");
    let line = format!("cd {} && test ! -e flag", deep.display());
    let got = traced(&watcher, &bwrap, &ws, dir, &line);
    assert!(
        got.incomplete
            .as_deref()
            .is_some_and(|why| why.contains("deeper")),
        "{got:?}"
    );
}

/// An item's process that ends before its launcher claims it is still
/// collected whole, though another item's collection came in between.
#[test]
fn a_root_that_ended_before_its_claim_is_kept_for_it() {
    let Some((clang, bwrap)) = tools() else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    std::fs::write(ws.join("early.txt"), "e").unwrap();
    let watcher = watcher(clang, &bwrap, &ws);
    let mut early = sandboxed(&bwrap, &ws, "cat early.txt >/dev/null");
    assert!(early.wait().unwrap().success());
    // Another item runs and is collected meanwhile.
    let other = traced(&watcher, &bwrap, &ws, Path::new("/trace-6"), "true");
    assert_eq!(other.incomplete, None, "{other:?}");
    let dir = Path::new("/trace-7");
    watcher.claim(dir, early.id());
    let got = watcher.collect(dir, &ws);
    assert_eq!(got.incomplete, None, "{got:?}");
    assert!(got.paths.contains("early.txt"), "{:?}", got.paths);
}

/// A compiler that fails gives its words in the error.
#[test]
fn a_failing_compiler_is_quoted() {
    let dir = tempfile::tempdir().unwrap();
    let clang = dir.path().join("clang");
    std::fs::write(&clang, "#!/bin/sh\necho 'no target bpf' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&clang, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let err = super::compile(&clang).unwrap_err().to_string();
    assert!(err.contains("no target bpf"), "{err}");
}

/// The compiled programs are kept by source and compiler, and a kept file
/// is taken only from a folder and a file of the gate's user that no one
/// else may write.
#[test]
fn the_compiled_programs_are_kept_where_only_the_gate_writes() {
    use std::os::unix::fs::PermissionsExt as _;
    let Some(clang) = ["/usr/bin/clang"]
        .map(PathBuf::from)
        .into_iter()
        .find(|p| p.is_file())
    else {
        assert!(
            std::env::var_os("CI").is_none(),
            "scripts/test installs clang"
        );
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("ebpf");
    let first = compiled(&clang, Some(&dir)).unwrap();
    let name = cache_name(&clang).unwrap();
    let kept = dir.join(&name);
    assert!(std::fs::read(&kept).unwrap() == first, "the object is kept");
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    // What is kept is what a later run loads.
    std::fs::write(&kept, b"kept").unwrap();
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(compiled(&clang, Some(&dir)).unwrap(), b"kept");
    // One anyone may write is compiled afresh, and so is one through a link.
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o666)).unwrap();
    let again = compiled(&clang, Some(&dir)).unwrap();
    assert!(again.starts_with(b"\x7fELF"), "compiled afresh");
    std::fs::remove_file(&kept).unwrap();
    let elsewhere = cache.path().join("elsewhere.o");
    std::fs::write(&elsewhere, b"planted").unwrap();
    std::os::unix::fs::symlink(&elsewhere, &kept).unwrap();
    assert_eq!(read_kept(&dir, &kept), None);
}
