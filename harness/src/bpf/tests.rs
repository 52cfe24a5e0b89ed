use std::path::{Path, PathBuf};

use super::{Settings, Watcher, pages_per_cpu, script};

/// The tracer's tools when this machine can run it: root, `bpftrace` and
/// `bwrap` installed. In CI (root, where scripts/test installs them) it
/// must.
fn tools() -> Option<(PathBuf, PathBuf)> {
    let found = |names: &[&str]| names.iter().map(PathBuf::from).find(|p| p.is_file());
    let bpftrace = found(&["/usr/bin/bpftrace", "/usr/sbin/bpftrace"]);
    let bwrap = found(&["/usr/bin/bwrap"]);
    let root = nix::unistd::geteuid().is_root();
    if let (Some(b), Some(w), true) = (bpftrace, bwrap, root) {
        return Some((b, w));
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI runs as root with bpftrace and bubblewrap: scripts/test installs them"
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
fn watcher(bpftrace: PathBuf, bwrap: &Path, ws: &Path) -> Watcher {
    let watcher = Watcher::start(&Settings {
        bpftrace,
        workspace: ws.to_path_buf(),
        launchers: vec![bwrap.to_path_buf()],
    })
    .unwrap();
    watcher.register(ws, ws).unwrap();
    watcher
}

/// One tracer, one sandboxed shell that reads, lists, probes, climbs into
/// a folder and writes, by relative and absolute names and through a
/// link: each is seen, and nothing outside the workspace is.
#[test]
fn a_sandboxed_shell_is_seen_doing_each_thing() {
    let Some((bpftrace, bwrap)) = tools() else {
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
    let watcher = watcher(bpftrace, &bwrap, &ws);
    let line = format!(
        "cat sub/a.txt >/dev/null; cd sub; ls >/dev/null; test -e nope.txt; \
         cd deep && cat b.txt >/dev/null; cat {abs} >/dev/null; cat {link}/linked.txt >/dev/null; \
         echo x > {ws}/made.txt; cat /etc/hostname >/dev/null",
        abs = ws.join("abs.txt").display(),
        link = outside.path().join("link").display(),
        ws = ws.display(),
    );
    let dir = Path::new("/trace-1");
    let mut child = sandboxed(&bwrap, &ws, &line);
    watcher.claim(dir, child.id());
    assert!(child.wait().unwrap().success());
    let got = watcher.collect(dir, &ws);
    assert_eq!(got.incomplete, None, "{got:?}");
    for want in [
        "sub/a.txt",
        "sub/nope.txt",
        "sub/deep/b.txt",
        "abs.txt",
        "made.txt",
        "sub/deep/linked.txt",
    ] {
        assert!(got.paths.contains(want), "{want} not in {:?}", got.paths);
    }
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
    let Some((bpftrace, bwrap)) = tools() else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    let watcher = watcher(bpftrace, &bwrap, &ws);
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
    let Some((bpftrace, bwrap)) = tools() else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    std::fs::write(ws.join("a.txt"), "a").unwrap();
    let watcher = watcher(bpftrace, &bwrap, &ws);
    let dir = Path::new("/trace-3");
    let mut child = sandboxed(&bwrap, &ws, "test -e /proc/self/cwd/a.txt");
    watcher.claim(dir, child.id());
    assert!(child.wait().unwrap().success());
    let got = watcher.collect(dir, &ws);
    assert!(
        got.incomplete
            .as_deref()
            .is_some_and(|why| why.contains("/proc")),
        "{got:?}"
    );
}

/// The script names every watched call and the workspace it was given,
/// and refuses a path it could not quote.
#[test]
fn the_script_watches_the_calls_it_reads() {
    let settings = |workspace: &str| Settings {
        bpftrace: "/usr/bin/bpftrace".into(),
        workspace: workspace.into(),
        launchers: vec!["/usr/bin/bwrap".into()],
    };
    let text = script("gabc", 42, &settings("/srv/ws")).unwrap();
    assert!(text.contains("\"/srv/ws/\", 8)"), "{text}");
    assert!(text.contains("$id == 257"));
    assert!(text.contains("str(args->filename) != \"/usr/bin/bwrap\""));
    assert!(script("g", 1, &settings("/srv/\"ws")).is_err());
}

/// Links an item makes: one in the workspace is kept with its target,
/// as `strace` shows it; one outside it that leads back in is reported.
#[test]
fn links_made_are_seen_with_their_targets() {
    let Some((bpftrace, bwrap)) = tools() else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    std::fs::create_dir(ws.join("src")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let watcher = watcher(bpftrace, &bwrap, &ws);
    let dir = Path::new("/trace-4");
    let line = format!(
        "ln -s src l && test ! -e l/flag && ln -s /usr/bin inside-usr && \
         ln -s {ws} {out}/back && test ! -e {out}/back/flag2",
        ws = ws.display(),
        out = outside.path().display(),
    );
    let mut child = sandboxed(&bwrap, &ws, &line);
    watcher.claim(dir, child.id());
    assert!(child.wait().unwrap().success());
    let got = watcher.collect(dir, &ws);
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

/// Each CPU's buffer is a power of two, the whole about 32 MiB, never
/// under bpftrace's default nor over 8 MiB a CPU.
#[test]
fn the_buffers_share_a_budget_in_powers_of_two() {
    for (cpus, pages) in [
        (1, 2_048),
        (2, 2_048),
        (4, 2_048),
        (8, 1_024),
        (6, 1_024),
        (64, 128),
        (512, 64),
        (0, 2_048),
    ] {
        assert_eq!(pages_per_cpu(cpus), pages, "{cpus} CPUs");
    }
}
