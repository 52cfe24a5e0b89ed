//! The trace reader on lines as strace 6 writes them, and on a real trace.

use super::*;

fn accesses(lines: &str) -> Accesses {
    let mut out = Accesses::default();
    Reader {
        workspace: Path::new("/ws"),
        out: &mut out,
    }
    .process(lines);
    out
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// Each line (or lines of one process) and what it adds: paths, listed,
/// suffixes, written.
#[test]
fn each_kind_of_call_is_read_as_an_access() {
    type Case = (
        &'static str,
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
        &'static [&'static str],
        &'static [&'static str],
    );
    let cases: Vec<Case> = vec![
        (
            "an exec by a name the kernel resolves into the workspace",
            r#"execve("//ws/bin/helper", ["//ws/bin/helper"], 0x7ffd /* 3 vars */) = 0"#,
            &["bin/helper"],
            &[],
            &[],
            &[],
        ),
        (
            "an open by `/./`, `//` and a trailing slash",
            r#"openat(AT_FDCWD</>, "/./ws//data/./x/", O_RDONLY) = -1 ENOTDIR (Not a directory)"#,
            &["data/x"],
            &[],
            &[],
            &[],
        ),
        (
            "an i386 stat and a chown, by their x86-64 twins' names",
            "stat64(\"/ws/a.txt\", 0xff8c) = 0\nchown32(\"/ws/b.txt\", 0, 0) = 0",
            &["a.txt"],
            &[],
            &[],
            &["b.txt"],
        ),
        (
            "a process switching convention, then its i386 open",
            "[ Process PID=7 runs in 32 bit mode. ]\nopen(\"/ws/c.txt\", O_RDONLY) = 3</ws/c.txt>",
            &["c.txt"],
            &[],
            &[],
            &[],
        ),
        (
            "a watch's name, against the working directory, not the watch",
            r#"chdir("/ws/sub") = 0
inotify_add_watch(3<anon_inode:inotify>, "w.txt", IN_MODIFY) = 1"#,
            &["sub/w.txt"],
            &[],
            &[],
            &[],
        ),
        (
            "an open relative to the working directory, and what it reached",
            r#"openat(AT_FDCWD</ws/sub>, "a.txt", O_RDONLY) = 3</ws/sub/a.txt>"#,
            &["sub/a.txt"],
            &[],
            &[],
            &[],
        ),
        (
            "a probe for a file that is not there",
            r#"newfstatat(AT_FDCWD</ws>, "tests/conftest.py", 0x7ffc, 0) = -1 ENOENT (No such file or directory)"#,
            &["tests/conftest.py"],
            &[],
            &[],
            &[],
        ),
        (
            "a stat of a descriptor's own file",
            r#"newfstatat(3</ws/src/lib.rs>, "", {st_mode=S_IFREG|0644, st_size=3, ...}, AT_EMPTY_PATH) = 0"#,
            &["src/lib.rs"],
            &[],
            &[],
            &[],
        ),
        (
            "a listing",
            r"getdents64(3</ws/src>, 0x55cf /* 3 entries */, 32768) = 80",
            &[],
            &["src"],
            &[],
            &[],
        ),
        (
            "a file written, with a name holding a quote and a newline",
            r#"openat(AT_FDCWD</ws>, "target/a\"b\nc", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</ws/target/a"b\nc>"#,
            &[],
            &[],
            &[],
            &["target/a\"b\nc"],
        ),
        (
            "a rename writes both names and reads neither",
            r#"renameat2(AT_FDCWD</ws>, "out.tmp", AT_FDCWD</ws>, "out", RENAME_NOREPLACE) = 0"#,
            &[],
            &[],
            &[],
            &["out", "out.tmp"],
        ),
        (
            "an append is a write, not a read",
            r#"openat(AT_FDCWD</ws>, "log/shared.log", O_WRONLY|O_CREAT|O_APPEND, 0666) = 3</ws/log/shared.log>"#,
            &[],
            &[],
            &[],
            &["log/shared.log"],
        ),
        (
            "what it appended to and read back holds others' lines too",
            "openat(AT_FDCWD</ws>, \"log\", O_WRONLY|O_CREAT|O_APPEND, 0666) = 3</ws/log>\n\
             openat(AT_FDCWD</ws>, \"log\", O_RDONLY) = 3</ws/log>",
            &["log"],
            &[],
            &[],
            &["log"],
        ),
        (
            "what it truncated or renamed into place and then read is its own",
            "openat(AT_FDCWD</ws>, \"a\", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</ws/a>\n\
             openat(AT_FDCWD</ws>, \"a\", O_RDONLY) = 3</ws/a>\n\
             rename(\"/ws/b.tmp\", \"/ws/b\") = 0\n\
             newfstatat(AT_FDCWD</ws>, \"b\", 0x1, 0) = 0",
            &[],
            &[],
            &[],
            &["a", "b", "b.tmp"],
        ),
        (
            "an open for reading and writing is both",
            r#"openat(AT_FDCWD</ws>, "db", O_RDWR|O_CREAT, 0666) = 3</ws/db>"#,
            &["db"],
            &[],
            &[],
            &["db"],
        ),
        (
            "an exec by a relative name before the working directory is known",
            r#"execve("./scripts/check.sh", [""...], 0x7ffd /* 39 vars */) = 0"#,
            &[],
            &[],
            &["scripts/check.sh"],
            &[],
        ),
        (
            "an access after a chdir",
            "chdir(\"/ws/pkg\") = 0\naccess(\"setup.cfg\", R_OK) = -1 ENOENT (No such file or directory)",
            &["pkg/setup.cfg"],
            &[],
            &[],
            &[],
        ),
        (
            "the working directory learnt from AT_FDCWD serves a later plain call",
            "newfstatat(AT_FDCWD</ws/a>, \".\", 0x1, 0) = 0\nreadlink(\"link\", 0x2, 4096) = -1 EINVAL (Invalid argument)",
            &["a", "a/link"],
            &[],
            &[],
            &[],
        ),
        (
            "files outside the workspace and in .git are not the item's inputs",
            "openat(AT_FDCWD</ws>, \"/usr/lib/x.so\", O_RDONLY) = 3</usr/lib/x.so>\nopenat(AT_FDCWD</ws>, \".git/HEAD\", O_RDONLY) = 3</ws/.git/HEAD>",
            &[],
            &[],
            &[],
            &[],
        ),
        (
            "an unfinished call still names its path",
            r#"openat(AT_FDCWD</ws>, "late.txt", O_RDONLY <unfinished ...>"#,
            &["late.txt"],
            &[],
            &[],
            &[],
        ),
        (
            "octal escapes",
            r#"openat(AT_FDCWD</ws>, "caf\303\251", O_RDONLY) = -1 ENOENT (No such file or directory)"#,
            &["café"],
            &[],
            &[],
            &[],
        ),
    ];
    for (name, lines, paths, listed, suffixes, written) in cases {
        let got = accesses(lines);
        assert_eq!(got.incomplete, None, "{name}");
        assert_eq!(got.paths, set(paths), "{name}: paths");
        assert_eq!(got.listed, set(listed), "{name}: listed");
        assert_eq!(got.suffixes, set(suffixes), "{name}: suffixes");
        assert_eq!(got.written, set(written), "{name}: written");
    }
}

/// A call the sandbox refuses that succeeded ran where no sandbox was:
/// what it reached cannot be followed.
#[test]
fn a_refused_call_that_succeeded_makes_the_trace_incomplete() {
    for line in [
        "open_by_handle_at(3</ws>, 0x7ffd, O_RDONLY) = -1 ENOSYS (Function not implemented)\n",
        "fanotify_mark(3, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD</ws>, \"x\") = -1 ENOSYS (Function not implemented)\n",
    ] {
        assert_eq!(accesses(line).incomplete, None, "{line}");
    }
    let got = accesses("open_by_handle_at(3</ws>, 0x7ffd, O_RDONLY) = 4</ws/a.txt>\n");
    assert!(
        got.incomplete
            .as_deref()
            .is_some_and(|why| why.contains("open_by_handle_at")),
        "{got:?}"
    );
}

#[test]
fn an_io_uring_the_tracer_cannot_see_into_makes_the_trace_incomplete() {
    let refused = accesses("io_uring_setup(8, 0x7ffd) = -1 ENOSYS (Function not implemented)\n");
    assert_eq!(refused.incomplete, None);
    let set_up = accesses("io_uring_setup(8, 0x7ffd) = 3<anon_inode:[io_uring]>\n");
    assert!(set_up.incomplete.is_some());
}

#[test]
fn a_line_that_is_not_a_call_makes_the_trace_incomplete() {
    let got = accesses("openat(AT_FDCWD</ws>, \"a\", O_RDONLY) = 3</ws/a>\nsomething else\n");
    assert!(got.incomplete.is_some());
    assert_eq!(got.paths, set(&["a"]));
}

/// A name that goes on past a process's working directory, root or a
/// descriptor may lead into the workspace by a way no tracer follows: the
/// trace is incomplete. The links themselves, and other `/proc` files, are
/// not.
#[test]
fn a_path_through_a_process_link_makes_the_trace_incomplete() {
    // (the name, whether the trace is incomplete)
    let cases = [
        ("/proc/self/cwd/src/x.rs", true),
        ("/proc/42/root/ws/a", true),
        ("/proc/self/task/42/cwd/a", true),
        ("/proc/thread-self/fd/3/a", true),
        ("/dev/fd/3/a", true),
        ("/proc/self/cwd", false),
        ("/proc/self/fd/3", false),
        ("/dev/fd/63", false),
        ("/proc/self/ns/user", false),
        ("/proc/cpuinfo", false),
    ];
    for (name, incomplete) in cases {
        let got = accesses(&format!(
            "newfstatat(AT_FDCWD</ws>, \"{name}\", {{st_mode=S_IFREG|0644, ...}}, 0) = 0\n"
        ));
        assert_eq!(got.incomplete.is_some(), incomplete, "{name}: {got:?}");
    }
}

/// A link an item makes: in the workspace to the workspace it is kept to
/// be followed after the run; one that may lead into the workspace by a
/// name that does not show it is reported; one into a system folder, or
/// to a private folder no earlier link leads from, is neither.
#[test]
fn links_that_may_lead_back_into_the_workspace_are_told_apart() {
    // (the line, the workspace link kept, whether it may lead back)
    let cases = [
        (r#"symlink("/ws", "/tmp/l") = 0"#, None, true),
        (r#"symlink("/ws/src", "/tmp/l") = 0"#, None, true),
        (
            r#"symlinkat("../../ws", AT_FDCWD</tmp/a>, "l") = 0"#,
            None,
            true,
        ),
        (r#"symlink("/", "/tmp/root") = 0"#, None, true),
        (r#"symlink("/proc/self/cwd", "/tmp/here") = 0"#, None, true),
        (r#"symlink("/dev/fd/3", "/tmp/fd") = 0"#, None, true),
        (r#"symlink("..", "/ws/up") = 0"#, Some("up"), true),
        (
            r#"symlink("/proc/self/cwd", "/ws/here") = 0"#,
            Some("here"),
            true,
        ),
        (r#"symlink("src", "/ws/l") = 0"#, Some("l"), false),
        (
            r#"symlinkat("../src", AT_FDCWD</ws/a>, "l") = 0"#,
            Some("a/l"),
            false,
        ),
        (
            r#"symlink("/usr/bin/python3", "/tmp/venv/bin/python") = 0"#,
            None,
            false,
        ),
        (r#"symlink("lib", "/tmp/venv/lib64") = 0"#, None, false),
        (r#"symlink("/tmp/b", "/tmp/a") = 0"#, None, false),
        (
            r#"symlink("/usr/bin/python3", "/ws/venv/bin/python") = 0"#,
            Some("venv/bin/python"),
            false,
        ),
        (
            r#"symlink("/ws", "/tmp/l") = -1 EEXIST (File exists)"#,
            None,
            false,
        ),
    ];
    for (line, kept, back) in cases {
        let got = accesses(&format!("{line}\n"));
        let want: BTreeSet<String> = kept.into_iter().map(str::to_owned).collect();
        assert_eq!(got.linked, want, "{line}");
        assert_eq!(got.leads_back.is_some(), back, "{line}: {got:?}");
        // The target is not a name the call looked up.
        assert!(!got.paths.contains("src"), "{line}");
    }
    // A relative link whose folder is not known yet.
    let unplaced = accesses("symlink(\"x\", \"l\") = 0\n");
    assert!(unplaced.leads_back.is_some(), "{unplaced:?}");
    // Made twice at one path by one item.
    let twice = accesses(
        "symlink(\"a\", \"/ws/l\") = 0\nunlink(\"/ws/l\") = 0\nsymlink(\"b\", \"/ws/l\") = 0\n",
    );
    assert!(twice.incomplete.is_some(), "{twice:?}");
}

/// A name that goes up past a folder it named is kept as given too: if
/// that folder is a link, the kernel went up from where it led.
#[test]
fn a_name_that_backs_out_of_a_folder_is_kept_as_given() {
    let got = accesses(
        "newfstatat(AT_FDCWD</ws>, \"l/../flag\", 0x7ffd, 0) = -1 ENOENT (No such file or directory)\n\
         newfstatat(AT_FDCWD</ws>, \"../ws/x\", 0x7ffd, 0) = -1 ENOENT (No such file or directory)\n\
         openat(AT_FDCWD</ws/sub>, \"/ws/a/b/../c\", O_RDONLY) = -1 ENOENT (No such file or directory)\n",
    );
    assert_eq!(
        got.paths,
        set(&["flag", "l/../flag", "x", "a/c", "a/b/../c"])
    );
}

/// A mount or a new root (where no sandbox refuses them) may show the
/// workspace at another path: the trace is incomplete. One refused is not.
#[test]
fn a_mount_or_a_new_root_makes_the_trace_incomplete() {
    for (line, incomplete) in [
        (r#"mount("/ws", "/tmp/m", NULL, MS_BIND, NULL) = 0"#, true),
        (r#"chroot("/ws") = 0"#, true),
        (
            r#"mount("/ws", "/tmp/m", NULL, MS_BIND, NULL) = -1 EPERM (Operation not permitted)"#,
            false,
        ),
    ] {
        assert_eq!(
            accesses(&format!("{line}\n")).incomplete.is_some(),
            incomplete,
            "{line}"
        );
    }
}

#[test]
fn readers_are_fed_by_the_items_that_wrote_what_they_read() {
    let build = Accesses {
        written: set(&["target/app"]),
        paths: set(&["src/main.rs", "target/app"]),
        ..Accesses::default()
    };
    let run = Accesses {
        paths: set(&["target/app"]),
        ..Accesses::default()
    };
    let alone = Accesses {
        paths: set(&["README.md"]),
        ..Accesses::default()
    };
    let later = Accesses {
        written: set(&["target/app"]),
        ..Accesses::default()
    };
    // build 0–10 ms, run 12–20, alone 0–5, later 30–40 (it wrote the same
    // file, after run had ended).
    let all = [
        ("build", &build, (0, 10)),
        ("run", &run, (12, 20)),
        ("alone", &alone, (0, 5)),
        ("later", &later, (30, 40)),
    ];
    let fed = fed_by(&all);
    assert_eq!(fed["run"], ["build"].into_iter().collect());
    assert!(
        fed["build"].is_empty(),
        "an item does not feed itself, nor a later one it"
    );
    assert!(fed["alone"].is_empty());
}

#[test]
fn a_call_that_failed_wrote_nothing() {
    let got = accesses(
        "mkdir(\"/ws/target\", 0777) = -1 EEXIST (File exists)\n\
         unlinkat(AT_FDCWD</ws>, \"gone\", 0) = -1 ENOENT (No such file or directory)\n\
         mkdir(\"/ws/out\", 0777) = 0",
    );
    assert_eq!(got.written, set(&["out"]));
    assert_eq!(got.paths, set(&["gone", "target"]));
}

/// strace itself, when installed: a shell that changes folder, reads,
/// lists, probes and writes is seen doing each.
#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "the tracer's own command line, run as it is"
)]
fn a_real_trace_of_a_shell() {
    let Some(strace) = ["/usr/bin/strace", "/bin/strace"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
    else {
        assert!(
            std::env::var_os("CI").is_none(),
            "strace is missing: scripts/test installs it"
        );
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    std::fs::create_dir(ws_path.join("sub")).unwrap();
    std::fs::write(ws_path.join("sub/a.txt"), "hi").unwrap();
    let out = tempfile::tempdir().unwrap();
    let tracer = Tracer { strace };
    let (program, args) = tracer.wrap(
        out.path(),
        "/bin/sh".into(),
        vec![
            "-c".into(),
            "cd sub && cat a.txt >/dev/null && ls >/dev/null && test -e b.txt; echo x > ../made"
                .into(),
        ],
    );
    let status = std::process::Command::new(program)
        .args(args)
        .current_dir(&ws_path)
        .status()
        .unwrap();
    assert!(status.success());
    let got = read(out.path(), &ws_path);
    assert_eq!(got.incomplete, None);
    for want in ["sub/a.txt", "sub/b.txt"] {
        assert!(got.paths.contains(want), "{want} not in {:?}", got.paths);
    }
    // Written, not read.
    assert!(!got.paths.contains("made"), "{:?}", got.paths);
    assert!(got.listed.contains("sub"), "{:?}", got.listed);
    assert_eq!(got.written, set(&["made"]));
}

/// The process bubblewrap names as the one that set the sandbox up is
/// left out: what it reads are the paths it mounts, not the item's inputs.
#[test]
fn the_sandbox_setup_process_is_not_the_item() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Path::new("/ws");
    std::fs::write(
        dir.path().join("trace.5"),
        "newfstatat(AT_FDCWD</>, \"/ws/gate.toml\", {st_mode=S_IFREG|0644, ...}, 0) = 0\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("trace.6"),
        "openat(AT_FDCWD</ws>, \"src/a.txt\", O_RDONLY) = 3</ws/src/a.txt>\n",
    )
    .unwrap();
    assert_eq!(read(dir.path(), ws).paths, set(&["gate.toml", "src/a.txt"]));
    std::fs::write(
        dir.path().join(SANDBOX_INFO),
        "{\n    \"child-pid\": 5\n}\n",
    )
    .unwrap();
    let got = read(dir.path(), ws);
    assert_eq!(got.paths, set(&["src/a.txt"]));
    assert_eq!(got.incomplete, None);
}
