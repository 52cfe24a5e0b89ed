//! `go test PKGS`: every file of the package directories the patterns
//! name — the `_test.go` files, the non-test files built into the same
//! test binary (whose start-up code is the exam) and `testdata/` — and
//! `go.work` and go.mod's directives that swap code or the toolchain.
//! A `.go` file is taken unless the command surely does not build it: its
//! build constraints and name are evaluated (`constraint`) with the tags
//! `-tags` gives, the `GOOS`, `GOARCH`, `CGO_ENABLED` and `GOFLAGS` the
//! command line sets (else the machine's `GOOS` and `GOARCH`), and the
//! release tags up to go.mod's `go` line. A file the base's exam holds
//! that a constraint the change added leaves out is then an exam file
//! that stopped being built.

use std::collections::BTreeMap;

use super::constraint::Build;
use super::model::{ExamKind, LaunchChange, Runner, changed_keys};
use super::path::{ancestors, extension, in_dir, parent, resolve, test_side};
use super::walk::{Call, Found};

/// `go test` flags that take a value.
const VALUE_FLAGS: [&str; 27] = [
    "run",
    "bench",
    "count",
    "timeout",
    "tags",
    "p",
    "cpu",
    "parallel",
    "coverprofile",
    "o",
    "exec",
    "ldflags",
    "gcflags",
    "asmflags",
    "mod",
    "modfile",
    "covermode",
    "coverpkg",
    "benchtime",
    "shuffle",
    "skip",
    "C",
    "vet",
    "list",
    "blockprofile",
    "cpuprofile",
    "memprofile",
];

/// What a `go test` command line names.
#[derive(Default)]
struct GoTest {
    dir: String,
    patterns: Vec<String>,
    modfile: Option<String>,
    exec: Option<String>,
    /// What the command builds with, for the files' build constraints.
    build: Option<Build>,
}

/// Reads a `go` command.
pub(super) fn exam(call: &Call<'_>, out: &mut Found) {
    let Some(mut go) = parse(call, out) else {
        return;
    };
    let module_root = ancestors(&go.dir)
        .into_iter()
        .find(|d| call.ctx.exists(&in_dir(d, "go.mod")));
    let go_mod = module_root
        .as_ref()
        .and_then(|root| call.read_text(&in_dir(root, "go.mod")));
    let module_path = go_mod.as_ref().and_then(|text| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix("module "))
            .map(|m| m.trim().trim_matches('"').to_owned())
    });
    if let Some(minor) = go_mod.as_deref().and_then(go_minor) {
        go.build
            .get_or_insert_with(|| Build::host(0))
            .release(minor);
    }
    let build = go.build.clone().unwrap_or_else(|| Build::host(0));
    for dir in ancestors(&go.dir) {
        out.config(&in_dir(&dir, "go.work"), Runner::Go, None);
    }
    if let Some(root) = &module_root {
        out.config(&in_dir(root, "go.mod"), Runner::Go, None);
    }
    if let Some(modfile) = go.modfile.as_deref().and_then(|m| resolve(&go.dir, m)) {
        out.config(&modfile, Runner::Go, None);
    }
    if let Some(exec) = go
        .exec
        .as_deref()
        .filter(|e| e.contains('/'))
        .and_then(|e| resolve(&go.dir, e))
    {
        out.file(&exec, call.why(), ExamKind::File);
    }
    for pattern in &go.patterns {
        let Some((base, recursive)) = pattern_dir(
            &go.dir,
            pattern,
            module_root.as_deref(),
            module_path.as_deref(),
        ) else {
            out.unresolved(format!(
                "`{}` names the packages `{pattern}`, which are not resolved to workspace directories",
                call.text
            ));
            continue;
        };
        for dir in package_dirs(call, &base, recursive) {
            package_files(call, &dir, &build, out);
        }
    }
    if let (Some(root), Some(module)) = (&module_root, &module_path) {
        helpers(call, root, module, &build, out);
    }
}

/// The minor version of go.mod's `go 1.N` line.
fn go_minor(go_mod: &str) -> Option<u32> {
    go_mod.lines().find_map(|l| {
        let version = l.split("//").next()?.trim().strip_prefix("go ")?.trim();
        version.strip_prefix("1.")?.split('.').next()?.parse().ok()
    })
}

/// Whether the command may build the Go file `path`: false only when its
/// name or build constraints surely leave it out.
fn may_build(call: &Call<'_>, build: &Build, path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let text = call.read_text(path).unwrap_or_default();
    build.builds(name, &text) != Some(false)
}

/// The most helper packages followed from one command's tests.
const MAX_HELPERS: usize = 500;

/// The packages on the tests' side (`internal/testutil`) that the exam's
/// Go files import from their own module, transitively: their `.go` files
/// are compiled into the tests.
fn helpers(call: &Call<'_>, root: &str, module: &str, build: &Build, out: &mut Found) {
    let mut queue: Vec<String> = out
        .files
        .iter()
        .filter(|f| f.kind == ExamKind::File && extension(&f.path) == Some("go"))
        .map(|f| f.path.clone())
        .collect();
    let mut seen_dirs: Vec<String> = Vec::new();
    while let Some(file) = queue.pop() {
        if seen_dirs.len() > MAX_HELPERS {
            break;
        }
        let Some(text) = call.read_text(&file) else {
            continue;
        };
        for import in imports(&text) {
            let rest = if import == module {
                Some("")
            } else {
                import.strip_prefix(&format!("{module}/"))
            };
            let Some(dir) = rest.and_then(|r| resolve(root, r)) else {
                continue;
            };
            if seen_dirs.contains(&dir) || !test_side(&in_dir(&dir, "x.go")) {
                continue;
            }
            seen_dirs.push(dir.clone());
            for f in call.ctx.files_under(&dir) {
                let rel = f.strip_prefix(&dir).unwrap_or(&f).trim_start_matches('/');
                if !rel.contains('/')
                    && extension(rel) == Some("go")
                    && !rel.ends_with("_test.go")
                    && may_build(call, build, &f)
                {
                    let why = format!("`{file}` imports its package{}", call.scope.via);
                    out.file(&f, why, ExamKind::File);
                    queue.push(f);
                }
            }
        }
    }
}

/// The import paths of Go source (`import "x"`, `import ( a "x"; "y" )`).
fn imports(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or_default().trim();
        let quoted = || line.split('"').nth(1).map(str::to_owned);
        if in_block {
            if line.starts_with(')') {
                in_block = false;
            } else {
                out.extend(quoted());
            }
        } else if let Some(rest) = line.strip_prefix("import") {
            if rest.trim_start().starts_with('(') {
                in_block = true;
            } else {
                out.extend(quoted());
            }
        }
    }
    out
}

/// The directory and packages a `go test` command line names.
fn parse(call: &Call<'_>, out: &mut Found) -> Option<GoTest> {
    let mut args = call.args.iter();
    if args.next().is_none_or(|w| w.text != "test") {
        return None;
    }
    let mut go = GoTest {
        dir: call.dir.to_owned(),
        ..GoTest::default()
    };
    let mut build = Build::host(0);
    for w in call.before {
        if let Some((name, value)) = w.text.split_once('=') {
            build.variable(name, (!w.expands).then_some(value));
        }
    }
    while let Some(w) = args.next() {
        if w.expands {
            if w.text.trim_start_matches('-').starts_with("tags") {
                build.tags(None);
            }
            out.expanded(&call.text, &w.text);
            continue;
        }
        let Some(flag) = w
            .text
            .strip_prefix("--")
            .or_else(|| w.text.strip_prefix('-'))
        else {
            go.patterns.push(w.text.clone());
            continue;
        };
        if flag == "args" {
            break;
        }
        let (name, inline) = flag
            .split_once('=')
            .map_or((flag, None), |(n, v)| (n, Some(v.to_owned())));
        let (value, value_expands) = if VALUE_FLAGS.contains(&name) && inline.is_none() {
            args.next()
                .map_or((None, false), |v| (Some(v.text.clone()), v.expands))
        } else {
            (inline, false)
        };
        match (name, value) {
            ("tags", tags) => build.tags(tags.as_deref().filter(|_| !value_expands)),
            ("C", Some(d)) => {
                let Some(d) = resolve(call.dir, &d) else {
                    out.unresolved(format!(
                        "`{}` runs in `{d}`, outside the workspace",
                        call.text
                    ));
                    return None;
                };
                go.dir = d;
            }
            ("modfile", v) => go.modfile = v,
            ("exec", v) => go.exec = v,
            _ => {}
        }
    }
    if go.patterns.is_empty() {
        go.patterns.push(".".to_owned());
    }
    go.build = Some(build);
    Some(go)
}

/// The directory a package pattern starts at, and whether it takes the
/// packages under it (`/...`).
fn pattern_dir(
    dir: &str,
    pattern: &str,
    root: Option<&str>,
    module: Option<&str>,
) -> Option<(String, bool)> {
    let (base, recursive) = match pattern.strip_suffix("...") {
        Some(b) => (b.strip_suffix('/').unwrap_or(b), true),
        None => (pattern, false),
    };
    if base.is_empty() && recursive {
        return None;
    }
    if base == "." || base == ".." || base.starts_with("./") || base.starts_with("../") {
        return resolve(dir, base).map(|d| (d, recursive));
    }
    let (root, module) = (root?, module?);
    let rest = if base == module {
        Some("")
    } else {
        base.strip_prefix(&format!("{module}/"))
    };
    rest.and_then(|r| resolve(root, r)).map(|d| (d, recursive))
}

/// The package directories under `base` (or `base` alone): those holding
/// `.go` files, without `testdata`, `vendor`, `.`/`_` directories and
/// nested modules.
fn package_dirs(call: &Call<'_>, base: &str, recursive: bool) -> Vec<String> {
    if !recursive {
        return vec![base.to_owned()];
    }
    let files = call.ctx.files_under(base);
    let nested: Vec<&str> = files
        .iter()
        .filter(|f| f.ends_with("/go.mod") || f.as_str() == "go.mod")
        .map(|f| parent(f))
        .filter(|d| *d != base)
        .collect();
    let mut dirs: Vec<String> = Vec::new();
    for file in files.iter().filter(|f| extension(f) == Some("go")) {
        let dir = parent(file);
        let rel = dir
            .strip_prefix(base)
            .unwrap_or(dir)
            .trim_start_matches('/');
        let skipped = rel
            .split('/')
            .any(|p| p.starts_with(['.', '_']) || p == "testdata" || p == "vendor");
        let in_nested = nested
            .iter()
            .any(|n| dir == *n || dir.starts_with(&format!("{n}/")));
        if !skipped && !in_nested && !dirs.iter().any(|d| d == dir) {
            dirs.push(dir.to_owned());
        }
    }
    dirs
}

/// A package's files: its `_test.go` files and `testdata/` whole, and its
/// other `.go` files (all of them, on the tests' side of the workspace),
/// of which what runs when the test binary starts is the exam: a test
/// binary is the whole package, `init()` and package variables included.
fn package_files(call: &Call<'_>, dir: &str, build: &Build, out: &mut Found) {
    let files = call.ctx.files_under(dir);
    for file in &files {
        let rel = file
            .strip_prefix(dir)
            .unwrap_or(file)
            .trim_start_matches('/');
        if !rel.contains('/') && extension(rel) == Some("go") && !may_build(call, build, file) {
            continue;
        }
        if !rel.contains('/') && rel.ends_with("_test.go") {
            out.file(file, call.why(), ExamKind::File);
        } else if !rel.contains('/') && extension(rel) == Some("go") {
            let kind = if test_side(file) {
                ExamKind::File
            } else {
                ExamKind::PackageCode
            };
            out.file(
                file,
                format!(
                    "{} into the same test binary",
                    call.why().replacen(" runs it", " builds it", 1)
                ),
                kind,
            );
        } else if rel.starts_with("testdata/") {
            out.file(
                file,
                format!("{} as its testdata", call.why()),
                ExamKind::File,
            );
        }
    }
}

/// go.mod: `replace` (code swapped under the tests), `toolchain` and
/// `godebug` (how the tests run). `require`, `go`, `exclude`, `retract`
/// are free.
pub(super) fn mod_changes(base: Option<&[u8]>, now: Option<&[u8]>) -> Vec<LaunchChange> {
    changed_keys(&directives(base), &directives(now), |_| true)
}

/// The launch directives of a go.mod, keyed `replace PATH`, `toolchain`,
/// `godebug KEY`.
fn directives(bytes: Option<&[u8]>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(bytes) = bytes else { return out };
    let text = String::from_utf8_lossy(bytes);
    let mut block: Option<String> = None;
    for raw in text.lines() {
        let line = raw.split("//").next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        if line == ")" {
            block = None;
            continue;
        }
        let (verb, rest) = match &block {
            Some(b) => (b.as_str(), line),
            None => line.split_once(char::is_whitespace).unwrap_or((line, "")),
        };
        let rest = rest.trim();
        if block.is_none() && rest == "(" {
            block = Some(verb.to_owned());
            continue;
        }
        match verb {
            "replace" => {
                let (old, new) = rest.split_once("=>").unwrap_or((rest, ""));
                out.insert(format!("replace {}", old.trim()), new.trim().to_owned());
            }
            "toolchain" => {
                out.insert("toolchain".to_owned(), rest.to_owned());
            }
            "godebug" => {
                let (k, v) = rest.split_once('=').unwrap_or((rest, ""));
                out.insert(format!("godebug {}", k.trim()), v.trim().to_owned());
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{Mem, configs, files};
    use super::super::{Runner, RunnerConfig, exam, launch_changes};

    fn tree() -> Mem {
        Mem::new(&[
            ("go.mod", "module example.com/app\n\ngo 1.22\n"),
            ("main.go", "package main\n"),
            ("main_test.go", "package main\n"),
            ("pkg/a/a.go", "package a\n"),
            ("pkg/a/a_test.go", "package a\n"),
            ("pkg/a/testdata/golden.txt", "x\n"),
            ("pkg/a/testdata/sub/in.json", "{}\n"),
            ("pkg/b/b.go", "package b\n"),
            (
                "pkg/b/b_test.go",
                "package b\n\nimport (\n\t\"testing\"\n\tu \"example.com/app/internal/testutil\"\n\t\"example.com/app/pkg/a\"\n)\n",
            ),
            (
                "internal/testutil/util.go",
                "package testutil\nimport \"example.com/app/internal/testutil/more\"\n",
            ),
            ("internal/testutil/util_test.go", "package testutil\n"),
            ("internal/testutil/more/more.go", "package more\n"),
            ("pkg/b/internal/c_test.go", "package internal\n"),
            ("pkg/_skip/x_test.go", "package skip\n"),
            ("pkg/nested/go.mod", "module other\n"),
            ("pkg/nested/n_test.go", "package n\n"),
        ])
    }

    #[test]
    fn what_go_test_runs() {
        let tree = tree();
        const B: &[&str] = &[
            "pkg/b/b.go#code",
            "pkg/b/b_test.go",
            "internal/testutil/util.go",
            "internal/testutil/more/more.go",
        ];
        let cases: &[(&str, &[&str])] = &[
            (
                "go test ./pkg/...",
                &[
                    "pkg/a/a.go#code",
                    "pkg/a/a_test.go",
                    "pkg/a/testdata/golden.txt",
                    "pkg/a/testdata/sub/in.json",
                    "pkg/b/b.go#code",
                    "pkg/b/b_test.go",
                    "pkg/b/internal/c_test.go",
                    "internal/testutil/util.go",
                    "internal/testutil/more/more.go",
                ],
            ),
            ("go test -run TestX -count=1 ./pkg/b", B),
            ("go test", &["main.go#code", "main_test.go"]),
            (
                "go test ./internal/testutil",
                &[
                    "internal/testutil/util.go",
                    "internal/testutil/util_test.go",
                    "internal/testutil/more/more.go",
                ],
            ),
            ("cd pkg && go test -v ./b -args -x ./a", B),
            ("go test example.com/app/pkg/b", B),
            ("go build ./...", &[]),
        ];
        for (run, want) in cases {
            assert_eq!(files(&exam(run, &tree)), *want, "{run}");
        }
        let got = exam("go test ./pkg/b", &tree);
        assert_eq!(configs(&got), ["go.work", "go.mod"]);
        assert!(!exam("go test github.com/x/y", &tree).unresolved.is_empty());
    }

    #[test]
    fn files_the_command_does_not_build_are_not_its_exam() {
        let tree = Mem::new(&[
            ("go.mod", "module example.com/app\n\ngo 1.22\n"),
            ("t/a_test.go", "package t\n"),
            ("t/e2e_test.go", "//go:build e2e\n\npackage t\n"),
            (
                "t/not_e2e_test.go",
                "//go:build !e2e && go1.22\n\npackage t\n",
            ),
            ("t/new_test.go", "//go:build go1.23\n\npackage t\n"),
            ("t/cgo_test.go", "//go:build cgo\n\npackage t\n"),
            ("t/w_windows_test.go", "package t\n"),
            ("t/_off_test.go", "package t\n"),
            ("t/testdata/x_windows.go", "package x\n"),
        ]);
        // Unknown: go1.23 (newer than go.mod's line), cgo (not set).
        const ALWAYS: [&str; 4] = [
            "t/a_test.go",
            "t/cgo_test.go",
            "t/new_test.go",
            "t/testdata/x_windows.go",
        ];
        let with = |more: &[&'static str]| -> Vec<&'static str> {
            let mut all: Vec<&str> = ALWAYS.to_vec();
            all.extend(more);
            all.sort_unstable();
            all
        };
        let cases: Vec<(&str, Vec<&'static str>)> = vec![
            ("go test ./t", with(&["t/not_e2e_test.go"])),
            ("go test -tags e2e ./t", with(&["t/e2e_test.go"])),
            ("go test -tags=slow,e2e ./t", with(&["t/e2e_test.go"])),
            ("GOFLAGS=-tags=e2e go test ./t", with(&["t/e2e_test.go"])),
            (
                "go test -tags \"$TAGS\" ./t",
                // Any tag may be given, `windows` too.
                with(&["t/e2e_test.go", "t/not_e2e_test.go", "t/w_windows_test.go"]),
            ),
            (
                "GOOS=windows go test ./t",
                with(&["t/not_e2e_test.go", "t/w_windows_test.go"]),
            ),
            (
                "env GOOS=windows CGO_ENABLED=0 go test ./t",
                vec![
                    "t/a_test.go",
                    "t/new_test.go",
                    "t/not_e2e_test.go",
                    "t/testdata/x_windows.go",
                    "t/w_windows_test.go",
                ],
            ),
        ];
        for (run, want) in cases {
            let mut got = files(&exam(run, &tree));
            got.sort_unstable();
            assert_eq!(got, want, "{run}");
        }
    }

    #[test]
    fn launch_changes_of_go_files() {
        let config = |path: &str| RunnerConfig {
            path: path.to_owned(),
            runner: Runner::Go,
            section: None,
        };
        let base = "module a\n\ngo 1.22\n\nrequire x v1.0.0\n";
        let cases: &[(&str, &str, &[&str])] = &[
            (
                "go.mod",
                "module a\n\ngo 1.22\n\nrequire (\n\tx v1.0.0\n\ty v1.1.0\n)\n",
                &[],
            ),
            (
                "go.mod",
                "module a\n\ngo 1.22\n\nrequire x v1.0.0\nreplace x => ./fake\n",
                &["replace x"],
            ),
            (
                "go.mod",
                "module a\ngo 1.22\ntoolchain go1.23.1\n",
                &["toolchain"],
            ),
            ("go.work", "go 1.22\nuse .\n", &["the whole file"]),
        ];
        for (path, now, want) in cases {
            let keys: Vec<String> =
                launch_changes(&config(path), Some(base.as_bytes()), Some(now.as_bytes()))
                    .into_iter()
                    .map(|c| c.key)
                    .collect();
            assert_eq!(keys, *want, "{path}: {now}");
        }
    }
}
