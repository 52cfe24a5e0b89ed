//! `cargo test` and `cargo nextest run`: the integration-test (and bench,
//! example) targets the command selects, the modules they pull in, and
//! the configuration cargo and rustup read.

use std::collections::BTreeMap;

use toml::{Table, Value};

use crate::verifier::Word;

use super::model::{ExamKind, LaunchChange, Runner, changed_keys, whole_file};
use super::path::{ancestors, extension, glob, in_dir, is_glob, parent, resolve, test_side};
use super::rust;
use super::walk::{Call, Found};

/// Options of `cargo test` and `cargo nextest run` that take a value
/// (the selecting ones are read apart).
const VALUE_OPTIONS: [&str; 36] = [
    "-F",
    "--features",
    "--target",
    "--profile",
    "-j",
    "--jobs",
    "--color",
    "--message-format",
    "--target-dir",
    "--config",
    "-Z",
    "--lockfile-path",
    "-E",
    "--filterset",
    "--filter-expr",
    "-P",
    "--cargo-profile",
    "--partition",
    "--test-threads",
    "--retries",
    "--status-level",
    "--final-status-level",
    "--failure-output",
    "--success-output",
    "--archive-file",
    "--workspace-remap",
    "--extract-to",
    "--run-ignored",
    "--max-fail",
    "--threads",
    "--tool-config-file",
    "--binaries-metadata",
    "--cargo-metadata",
    "--target-dir-remap",
    "--build-jobs",
    "--cargo-message-format",
];

/// Keys of `.cargo/config.toml` that change nothing of how tests are built
/// or launched: networking, the terminal, registries, `cargo new`.
const CONFIG_ALLOWED: [&str; 7] = [
    "net",
    "http",
    "term",
    "registries",
    "registry",
    "cargo-new",
    "future-incompat-report",
];

/// What the command line asks of cargo.
#[derive(Default)]
struct Selection {
    nextest: bool,
    packages: Vec<String>,
    workspace: bool,
    exclude: Vec<String>,
    manifest: Option<String>,
    /// Target kinds named (`--test NAME`), by kind.
    named: BTreeMap<&'static str, Vec<String>>,
    /// Target kinds selected whole (`--tests`), by kind.
    all: Vec<&'static str>,
    lib: bool,
    bins: bool,
    doc: bool,
    nextest_config: Option<String>,
}

impl Selection {
    /// No target flag at all: cargo's default set.
    fn default_targets(&self) -> bool {
        self.named.is_empty() && self.all.is_empty() && !self.lib && !self.bins && !self.doc
    }
}

/// A kind of target whose files live apart from the code under test.
struct Kind {
    table: &'static str,
    dir: &'static str,
    auto: &'static str,
    /// Whether `test = true` is its default (`cargo test` runs it).
    tested: bool,
}

const KINDS: [Kind; 3] = [
    Kind {
        table: "test",
        dir: "tests",
        auto: "autotests",
        tested: true,
    },
    Kind {
        table: "bench",
        dir: "benches",
        auto: "autobenches",
        tested: false,
    },
    Kind {
        table: "example",
        dir: "examples",
        auto: "autoexamples",
        tested: false,
    },
];

/// A package of the workspace.
struct Package {
    name: String,
    dir: String,
    manifest: Table,
}

/// A target of a package with its own root file.
struct Target {
    name: String,
    path: String,
    tested: bool,
}

/// Reads a `cargo` command.
pub(super) fn exam(call: &Call<'_>, out: &mut Found) {
    let Some(sel) = selection(call, out) else {
        return;
    };
    let Some(start) = start_manifest(call, &sel, out) else {
        return;
    };
    let Some(start_toml) = parse_manifest(call, &start, out) else {
        return;
    };
    let mut root = workspace_root(call, &start, &start_toml);
    let mut members = members(call, &root, out);
    if start_toml.contains_key("package") && !members.iter().any(|p| p.dir == parent(&start)) {
        // A package the workspace above does not list is a root of its own.
        parent(&start).clone_into(&mut root);
        members = self::members(call, &root, out);
    }
    let packages = selected(call, &sel, &start, &start_toml, &root, &members, out);
    configs(call, &sel, &root, &packages, out);
    let mut matched = Vec::new();
    let root_toml = call
        .read_text(&in_dir(&root, "Cargo.toml"))
        .and_then(|t| t.parse::<Table>().ok())
        .unwrap_or_default();
    for package in &packages {
        let (names, ran) = package_exam(call, &sel, package, out);
        matched.extend(names);
        if ran {
            support_crates(call, &root, &root_toml, package, out);
        }
    }
    // A name need only be in one of the packages; a glob may match none.
    for (kind, names) in &sel.named {
        for name in names {
            if !is_glob(name) && !matched.iter().any(|(k, n)| k == kind && n == name) {
                out.unresolved(format!(
                    "`{}` names the {kind} target `{name}`, which no selected package has",
                    call.text
                ));
            }
        }
    }
}

/// The selection a `cargo` command makes, `None` when it runs no tests.
fn selection(call: &Call<'_>, out: &mut Found) -> Option<Selection> {
    let mut sel = Selection::default();
    let mut args = call.args.iter().peekable();
    let mut toolchain = None;
    // Past `+toolchain` and cargo's own options, to the subcommand.
    let sub = loop {
        let w = args.next()?;
        if w.text.starts_with('+') {
            toolchain = Some(w.text.clone());
        } else if ["--color", "--config", "-Z", "-C"].contains(&w.text.as_str()) {
            args.next();
        } else if !w.text.starts_with('-') {
            break w.text.as_str();
        }
    };
    let next_is = |args: &mut std::iter::Peekable<std::slice::Iter<'_, Word>>, names: &[&str]| {
        args.peek()
            .is_some_and(|w| names.contains(&w.text.as_str()))
    };
    match sub {
        "test" | "t" => {}
        "nextest" if next_is(&mut args, &["run", "r"]) => {
            args.next();
            sel.nextest = true;
        }
        // Subcommands that run `cargo test` (or nextest) with its options.
        "miri" | "insta" if next_is(&mut args, &["test"]) => {
            args.next();
        }
        "llvm-cov" if next_is(&mut args, &["nextest"]) => {
            args.next();
            sel.nextest = true;
        }
        "llvm-cov"
            if !args
                .peek()
                .is_some_and(|w| !w.text.starts_with('-') && w.text != "test") =>
        {
            if next_is(&mut args, &["test"]) {
                args.next();
            }
        }
        _ => return None,
    }
    if let Some(t) = toolchain {
        out.unresolved(format!(
            "`{}` picks the toolchain `{t}` by name: which one that is depends on the machine",
            call.text
        ));
    }
    while let Some(w) = args.next() {
        if w.expands {
            out.expanded(&call.text, &w.text);
        }
        let (flag, inline) = match w.text.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_owned())),
            _ => (w.text.as_str(), None),
        };
        if flag == "--" {
            break;
        }
        let takes = |flag: &str| {
            [
                "-p",
                "--package",
                "--exclude",
                "--manifest-path",
                "--test",
                "--bench",
                "--example",
                "--bin",
                "--config-file",
            ]
            .contains(&flag)
                || VALUE_OPTIONS.contains(&flag)
        };
        let value = if takes(flag) && inline.is_none() {
            args.next().map(|v| v.text.clone())
        } else if let Some(p) = flag
            .strip_prefix("-p")
            .filter(|p| !p.is_empty() && !flag.starts_with("--"))
        {
            Some(p.to_owned())
        } else {
            inline
        };
        apply(&mut sel, flag, value);
    }
    Some(sel)
}

/// Records one option of the command in the selection.
fn apply(sel: &mut Selection, flag: &str, value: Option<String>) {
    let value = value.unwrap_or_default();
    let flag = if flag.starts_with("-p") && !flag.starts_with("--") {
        "-p"
    } else {
        flag
    };
    match flag {
        "-p" | "--package" => sel.packages.push(value),
        "--workspace" | "--all" => sel.workspace = true,
        "--exclude" => sel.exclude.push(value),
        "--manifest-path" => sel.manifest = Some(value),
        "--config-file" => sel.nextest_config = Some(value),
        "--test" => sel.named.entry("test").or_default().push(value),
        "--bench" => sel.named.entry("bench").or_default().push(value),
        "--example" => sel.named.entry("example").or_default().push(value),
        "--tests" => {
            sel.all.push("test");
            // `--tests` is every target with `test = true`: the lib and bins too.
            sel.lib = true;
            sel.bins = true;
        }
        "--benches" => sel.all.push("bench"),
        "--examples" => sel.all.push("example"),
        "--lib" => sel.lib = true,
        "--bins" | "--bin" => sel.bins = true,
        "--doc" => sel.doc = true,
        "--all-targets" => {
            sel.all.extend(["test", "bench", "example"]);
            sel.lib = true;
            sel.bins = true;
        }
        _ => {}
    }
}

/// The manifest cargo starts from: `--manifest-path`, or the nearest
/// `Cargo.toml` at or above the directory.
fn start_manifest(call: &Call<'_>, sel: &Selection, out: &mut Found) -> Option<String> {
    if let Some(m) = &sel.manifest {
        let path = resolve(call.dir, m);
        if path.is_none() {
            out.unresolved(format!(
                "`{}` names a manifest outside the workspace: `{m}`",
                call.text
            ));
        }
        return path;
    }
    let found = ancestors(call.dir)
        .into_iter()
        .map(|d| in_dir(&d, "Cargo.toml"))
        .find(|p| call.ctx.exists(p));
    if found.is_none() {
        out.unresolved(format!(
            "`{}` finds no Cargo.toml at or above `{}`",
            call.text,
            dir_name(call.dir)
        ));
    }
    found
}

fn dir_name(dir: &str) -> &str {
    if dir.is_empty() { "." } else { dir }
}

fn parse_manifest(call: &Call<'_>, path: &str, out: &mut Found) -> Option<Table> {
    let parsed = call.read_text(path).and_then(|t| t.parse::<Table>().ok());
    if parsed.is_none() {
        out.unresolved(format!(
            "`{path}`, which `{}` reads, is absent or not TOML",
            call.text
        ));
    }
    parsed
}

/// The directory of the workspace root manifest for the start manifest.
fn workspace_root(call: &Call<'_>, start: &str, start_toml: &Table) -> String {
    let start_dir = parent(start);
    if start_toml.contains_key("workspace") {
        return start_dir.to_owned();
    }
    if let Some(ws) = start_toml
        .get("package")
        .and_then(|p| p.get("workspace"))
        .and_then(Value::as_str)
        && let Some(dir) = resolve(start_dir, ws)
    {
        return dir;
    }
    let above = ancestors(start_dir).into_iter().skip(1).find(|d| {
        call.read_text(&in_dir(d, "Cargo.toml"))
            .and_then(|t| t.parse::<Table>().ok())
            .is_some_and(|t| t.contains_key("workspace"))
    });
    above.unwrap_or_else(|| start_dir.to_owned())
}

/// The workspace's packages: the root's, its `members` (globs expanded),
/// and the path dependencies inside the workspace, less `exclude`.
fn members(call: &Call<'_>, root: &str, out: &mut Found) -> Vec<Package> {
    let Some(root_toml) = parse_manifest(call, &in_dir(root, "Cargo.toml"), out) else {
        return Vec::new();
    };
    let ws = root_toml.get("workspace");
    let strings = |key: &str| -> Vec<String> {
        ws.and_then(|w| w.get(key))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let exclude: Vec<String> = strings("exclude")
        .iter()
        .filter_map(|e| resolve(root, e))
        .collect();
    let mut dirs: Vec<String> = Vec::new();
    if root_toml.contains_key("package") {
        dirs.push(root.to_owned());
    }
    for pattern in strings("members") {
        dirs.extend(member_dirs(call, root, &pattern));
    }
    let mut packages: Vec<Package> = Vec::new();
    let mut i = 0;
    while i < dirs.len() {
        let dir = dirs[i].clone();
        i += 1;
        if exclude
            .iter()
            .any(|e| dir == *e || dir.starts_with(&format!("{e}/")))
            || packages.iter().any(|p| p.dir == dir)
        {
            continue;
        }
        let path = in_dir(&dir, "Cargo.toml");
        let Some(manifest) = call.read_text(&path).and_then(|t| t.parse::<Table>().ok()) else {
            continue;
        };
        // Path dependencies inside the workspace are members too.
        for dep in path_dependencies(&manifest) {
            if let Some(d) = resolve(&dir, &dep)
                && (root.is_empty() || d == root || d.starts_with(&format!("{root}/")))
            {
                dirs.push(d);
            }
        }
        let Some(name) = manifest
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            continue;
        };
        packages.push(Package {
            name,
            dir,
            manifest,
        });
    }
    packages
}

/// The directories a `members` entry names (a glob matches directories
/// that hold a Cargo.toml).
fn member_dirs(call: &Call<'_>, root: &str, pattern: &str) -> Vec<String> {
    let Some(full) = resolve(root, pattern) else {
        return Vec::new();
    };
    if !is_glob(&full) {
        return vec![full];
    }
    let literal: Vec<&str> = full.split('/').take_while(|p| !is_glob(p)).collect();
    let Some(matcher) = glob(&full) else {
        return Vec::new();
    };
    call.ctx
        .files_under(&literal.join("/"))
        .iter()
        .filter_map(|f| f.strip_suffix("/Cargo.toml"))
        .filter(|d| matcher.is_match(d))
        .map(str::to_owned)
        .collect()
}

fn path_dependencies(manifest: &Table) -> Vec<String> {
    let mut tables: Vec<&Value> = ["dependencies", "dev-dependencies", "build-dependencies"]
        .iter()
        .filter_map(|k| manifest.get(*k))
        .collect();
    if let Some(targets) = manifest.get("target").and_then(Value::as_table) {
        for t in targets.values() {
            tables.extend(
                ["dependencies", "dev-dependencies", "build-dependencies"]
                    .iter()
                    .filter_map(|k| t.get(*k)),
            );
        }
    }
    tables
        .into_iter()
        .filter_map(Value::as_table)
        .flat_map(|t| t.values())
        .filter_map(|d| d.get("path").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// The packages the command tests.
fn selected<'a>(
    call: &Call<'_>,
    sel: &Selection,
    start: &str,
    start_toml: &Table,
    root: &str,
    members: &'a [Package],
    out: &mut Found,
) -> Vec<&'a Package> {
    if !sel.packages.is_empty() {
        let mut chosen: Vec<&Package> = Vec::new();
        for spec in &sel.packages {
            // `name@1.0` and `name:1.0` name a version too.
            let name = spec.split(['@', ':']).next().unwrap_or(spec);
            let matcher = glob(name);
            let found: Vec<&Package> = members
                .iter()
                .filter(|p| p.name == name || matcher.as_ref().is_some_and(|m| m.is_match(&p.name)))
                .collect();
            if found.is_empty() {
                out.unresolved(format!(
                    "`{}` names the package `{spec}`, which is not in the workspace",
                    call.text
                ));
            }
            chosen.extend(found);
        }
        return chosen;
    }
    let excluded = |p: &&Package| !sel.exclude.contains(&p.name);
    if sel.workspace {
        return members.iter().filter(excluded).collect();
    }
    let start_dir = parent(start);
    if start_dir == root {
        let defaults: Option<Vec<String>> = start_toml
            .get("workspace")
            .and_then(|w| w.get("default-members"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .filter_map(|d| resolve(root, d))
                    .collect()
            });
        if let Some(defaults) = defaults {
            return members
                .iter()
                .filter(|p| defaults.contains(&p.dir))
                .collect();
        }
        if !start_toml.contains_key("package") {
            return members.iter().collect();
        }
    }
    members.iter().filter(|p| p.dir == start_dir).collect()
}

/// The configuration cargo, rustup and nextest read for the command.
fn configs(call: &Call<'_>, sel: &Selection, root: &str, packages: &[&Package], out: &mut Found) {
    let mut dirs = ancestors(call.dir);
    for p in packages {
        dirs.extend(ancestors(&p.dir));
    }
    dirs.extend(ancestors(root));
    let mut seen = Vec::new();
    for dir in dirs {
        if seen.contains(&dir) {
            continue;
        }
        out.config(&in_dir(&dir, ".cargo/config.toml"), Runner::Cargo, None);
        out.config(&in_dir(&dir, ".cargo/config"), Runner::Cargo, None);
        seen.push(dir);
    }
    for dir in ancestors(call.dir).iter().chain(ancestors(root).iter()) {
        out.config(&in_dir(dir, "rust-toolchain.toml"), Runner::Rustup, None);
        out.config(&in_dir(dir, "rust-toolchain"), Runner::Rustup, None);
    }
    out.config(&in_dir(root, "Cargo.toml"), Runner::Cargo, None);
    for p in packages {
        out.config(&in_dir(&p.dir, "Cargo.toml"), Runner::Cargo, None);
    }
    if sel.nextest {
        out.config(&in_dir(root, ".config/nextest.toml"), Runner::Nextest, None);
        if let Some(path) = sel
            .nextest_config
            .as_ref()
            .and_then(|c| resolve(call.dir, c))
        {
            out.config(&path, Runner::Nextest, None);
        }
    }
}

/// The targets of one package the command selects, their files, and what
/// runs in the package's own code.
/// Returns the `--test NAME` (and bench, example) names it has, and
/// whether any test of it runs.
fn package_exam(
    call: &Call<'_>,
    sel: &Selection,
    package: &Package,
    out: &mut Found,
) -> (Vec<(&'static str, String)>, bool) {
    let mut matched = Vec::new();
    let mut ran = false;
    for kind in &KINDS {
        let targets = targets(call, package, kind);
        let chosen: Vec<&Target> = match sel.named.get(kind.table) {
            Some(names) => names
                .iter()
                .flat_map(|n| {
                    let found = named_targets(&targets, n);
                    if !found.is_empty() {
                        matched.push((kind.table, n.clone()));
                    }
                    found
                })
                .collect(),
            // `--tests` is the test targets with `test = true`.
            None if sel.all.contains(&kind.table) => targets
                .iter()
                .filter(|t| t.tested || !kind.tested)
                .collect(),
            None if sel.default_targets() && kind.tested => {
                targets.iter().filter(|t| t.tested).collect()
            }
            None => Vec::new(),
        };
        for target in chosen {
            ran = true;
            out.file(&target.path, call.why(), ExamKind::File);
            let (pulled, unresolved) = rust::pulled_in(call.ctx, &target.path, &package.dir);
            for (path, why) in pulled {
                out.file(&path, format!("{why}{}", call.scope.via), ExamKind::File);
            }
            for u in unresolved {
                out.unresolved(u);
            }
        }
    }
    ran |= in_code(call, sel, package, out);
    if ran {
        build_script(call, package, out);
    }
    (matched, ran)
}

/// A sentence for the build script of a package whose tests run.
fn build_script(call: &Call<'_>, package: &Package, out: &mut Found) {
    let (ctx, m) = (call.ctx, &package.manifest);
    let build = m
        .get("package")
        .and_then(|p| p.get("build"))
        .and_then(Value::as_str)
        .map_or_else(
            || in_dir(&package.dir, "build.rs"),
            |b| in_dir(&package.dir, b),
        );
    if ctx.exists(&build) {
        out.in_code(format!(
            "`{build}` runs before the tests of `{}` and can change how they are compiled: it is code under test",
            package.name
        ));
    }
}

/// The sources of the workspace's test-support crates a package's tests
/// depend on (a path dev-dependency on the tests' side, such as
/// `crates/test-support`): they are compiled into the tests.
fn support_crates(
    call: &Call<'_>,
    root: &str,
    root_toml: &Table,
    package: &Package,
    out: &mut Found,
) {
    let Some(dev) = package
        .manifest
        .get("dev-dependencies")
        .and_then(Value::as_table)
    else {
        return;
    };
    let inherited = root_toml
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(Value::as_table);
    for (name, dep) in dev {
        let dir = if dep.get("workspace").and_then(Value::as_bool) == Some(true) {
            inherited
                .and_then(|d| d.get(name))
                .and_then(|d| d.get("path"))
                .and_then(Value::as_str)
                .and_then(|p| resolve(root, p))
        } else {
            dep.get("path")
                .and_then(Value::as_str)
                .and_then(|p| resolve(&package.dir, p))
        };
        let Some(dir) = dir.filter(|d| test_side(&in_dir(d, "Cargo.toml"))) else {
            continue;
        };
        for file in call.ctx.files_under(&in_dir(&dir, "src")) {
            if extension(&file) == Some("rs") {
                let why = format!(
                    "the tests of `{}` depend on the crate `{name}`{}",
                    package.name, call.scope.via
                );
                out.file(&file, why, ExamKind::File);
            }
        }
    }
}

/// The targets of `--test NAME` (a glob may match many).
fn named_targets<'t>(targets: &'t [Target], name: &str) -> Vec<&'t Target> {
    let matcher = glob(name);
    targets
        .iter()
        .filter(|t| t.name == name || matcher.as_ref().is_some_and(|m| m.is_match(&t.name)))
        .collect()
}

/// The `[[test]]` (or bench, example) targets of a package: those found
/// in its directory unless `autotests = false`, and those declared.
fn targets(call: &Call<'_>, package: &Package, kind: &Kind) -> Vec<Target> {
    let auto = package
        .manifest
        .get("package")
        .and_then(|p| p.get(kind.auto))
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let base = in_dir(&package.dir, kind.dir);
    let mut out: Vec<Target> = Vec::new();
    if auto {
        for file in call.ctx.files_under(&base) {
            let rel = file.strip_prefix(&format!("{base}/")).unwrap_or(&file);
            let name = match rel.split('/').collect::<Vec<_>>()[..] {
                [f] => f.strip_suffix(".rs"),
                [d, "main.rs"] => Some(d),
                _ => None,
            };
            if let Some(name) = name {
                out.push(Target {
                    name: name.to_owned(),
                    path: file.clone(),
                    tested: kind.tested,
                });
            }
        }
    }
    let declared = package
        .manifest
        .get(kind.table)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for entry in declared {
        let Some(name) = entry.get("name").and_then(Value::as_str) else {
            continue;
        };
        let path = if let Some(p) = entry.get("path").and_then(Value::as_str) {
            resolve(&package.dir, p)
        } else {
            let file = in_dir(&base, &format!("{name}.rs"));
            let main = in_dir(&base, &format!("{name}/main.rs"));
            Some(if call.ctx.exists(&main) && !call.ctx.exists(&file) {
                main
            } else {
                file
            })
        };
        let Some(path) = path else { continue };
        let tested = entry
            .get("test")
            .and_then(Value::as_bool)
            .unwrap_or(kind.tested);
        out.retain(|t| t.name != name);
        out.push(Target {
            name: name.to_owned(),
            path,
            tested,
        });
    }
    out
}

/// Sentences for the tests the command runs inside the package's own code;
/// whether there are any.
fn in_code(call: &Call<'_>, sel: &Selection, package: &Package, out: &mut Found) -> bool {
    let ctx = call.ctx;
    let m = &package.manifest;
    let has_lib = m.contains_key("lib") || ctx.exists(&in_dir(&package.dir, "src/lib.rs"));
    let has_bins = m.contains_key("bin")
        || ctx.exists(&in_dir(&package.dir, "src/main.rs"))
        || ctx.is_dir(&in_dir(&package.dir, "src/bin"));
    let default = sel.default_targets();
    let mut what = Vec::new();
    if has_lib && (default || sel.lib) {
        what.push("the unit tests of its library");
    }
    if has_bins && (default || sel.bins) {
        what.push("the unit tests of its binaries");
    }
    if has_lib && !sel.nextest && (default || sel.doc) {
        what.push("its doctests");
    }
    let runs = !what.is_empty();
    if runs {
        out.in_code(format!(
            "`{}` runs tests inside the code of `{}` ({}): they live in the code under test and cannot be told apart from it",
            call.text,
            package.name,
            what.join(", ")
        ));
    }
    runs
}

/// A TOML document's leaves by dotted key (array-of-tables entries keyed by
/// their `name`, other arrays whole).
pub(super) fn flatten(value: &Value, prefix: &str, out: &mut BTreeMap<String, String>) {
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_owned()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match value {
        Value::Table(t) => {
            for (k, v) in t {
                flatten(v, &key(k), out);
            }
        }
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_table) => {
            for (i, item) in items.iter().enumerate() {
                let name = item
                    .get("name")
                    .and_then(Value::as_str)
                    .map_or_else(|| i.to_string(), str::to_owned);
                flatten(item, &key(&name), out);
            }
        }
        leaf => {
            out.insert(prefix.to_owned(), leaf.to_string());
        }
    }
}

/// The flattened keys of a TOML file, empty when it is absent or not TOML.
fn flat_toml(bytes: Option<&[u8]>) -> (BTreeMap<String, String>, Option<Table>) {
    let table = bytes
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|t| t.parse::<Table>().ok());
    let mut out = BTreeMap::new();
    if let Some(t) = &table {
        flatten(&Value::Table(t.clone()), "", &mut out);
    }
    (out, table)
}

/// A file that is present but not TOML counts as a whole: what cargo makes
/// of it is not known.
fn unreadable(bytes: Option<&[u8]>, table: Option<&Table>) -> bool {
    bytes.is_some() && table.is_none()
}

/// `.cargo/config.toml`: every key but [`CONFIG_ALLOWED`]'s tables and
/// `build.jobs` (how many compile at once).
pub(super) fn config_changes(base: Option<&[u8]>, now: Option<&[u8]>) -> Vec<LaunchChange> {
    let (was, was_t) = flat_toml(base);
    let (is, is_t) = flat_toml(now);
    if unreadable(now, is_t.as_ref()) || unreadable(base, was_t.as_ref()) {
        return whole_file(base, now);
    }
    changed_keys(&was, &is, |k| {
        let top = k.split('.').next().unwrap_or(k);
        !CONFIG_ALLOWED.contains(&top) && k != "build.jobs"
    })
}

/// Keys of a target table (`[lib]`, `[[test]]`, …) that change what runs.
const TARGET_KEYS: [&str; 6] = [
    "harness",
    "path",
    "test",
    "doctest",
    "required-features",
    "proc-macro",
];

/// Profile keys that change how tests behave.
const PROFILE_KEYS: [&str; 3] = ["debug-assertions", "overflow-checks", "panic"];

/// Whether a flattened Cargo.toml key changes what `cargo test` runs.
///
/// `package.build` counts: re-pointing or dropping the build script
/// changes what is compiled with the tests. Dependencies, members added,
/// lints and features do not.
fn manifest_key_counts(key: &str) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    match parts[..] {
        // Any change to a declared test target (name, path, harness, edition).
        ["patch" | "replace" | "test", ..] | ["workspace", "default-members"] => true,
        ["package", k] => [
            "build",
            "autotests",
            "autobenches",
            "autoexamples",
            "autobins",
            "autolib",
        ]
        .contains(&k),
        ["lib", k] | ["bin" | "bench" | "example", _, k] => TARGET_KEYS.contains(&k),
        ["profile", "test" | "dev" | "release" | "bench", .., k] => PROFILE_KEYS.contains(&k),
        _ => false,
    }
}

/// Cargo.toml: patches, target tables, profiles' checks, default members,
/// and members removed or excluded.
pub(super) fn manifest_changes(base: Option<&[u8]>, now: Option<&[u8]>) -> Vec<LaunchChange> {
    let (was, was_t) = flat_toml(base);
    let (is, is_t) = flat_toml(now);
    if unreadable(now, is_t.as_ref()) {
        return whole_file(base, now);
    }
    let mut out = changed_keys(&was, &is, manifest_key_counts);
    // A new `[[test]]` that only names itself adds a test; what else it
    // sets may re-point or re-harness one found in `tests/`, and counts.
    out.retain(|c| {
        let parts: Vec<&str> = c.key.split('.').collect();
        !(parts.len() == 3 && parts[0] == "test" && parts[2] == "name" && c.was.is_none())
    });
    let list = |t: Option<&Table>, key: &str| -> Vec<String> {
        t.and_then(|t| t.get("workspace"))
            .and_then(|w| w.get(key))
            .and_then(Value::as_array)
            .map(|a| a.iter().map(Value::to_string).collect())
            .unwrap_or_default()
    };
    let (members_was, members_now) = (
        list(was_t.as_ref(), "members"),
        list(is_t.as_ref(), "members"),
    );
    for gone in members_was.iter().filter(|m| !members_now.contains(m)) {
        out.push(LaunchChange {
            key: "workspace.members".to_owned(),
            was: Some(gone.clone()),
            now: None,
        });
    }
    let (exclude_was, exclude_now) = (
        list(was_t.as_ref(), "exclude"),
        list(is_t.as_ref(), "exclude"),
    );
    for new in exclude_now.iter().filter(|m| !exclude_was.contains(m)) {
        out.push(LaunchChange {
            key: "workspace.exclude".to_owned(),
            was: None,
            now: Some(new.clone()),
        });
    }
    out
}

/// `rust-toolchain.toml` or `rust-toolchain`: `path` always, `channel`
/// when it is no standard name, and any key but `components`, `targets`,
/// `profile`.
pub(super) fn toolchain_changes(base: Option<&[u8]>, now: Option<&[u8]>) -> Vec<LaunchChange> {
    let was = toolchain_keys(base);
    let is = toolchain_keys(now);
    changed_keys(&was, &is, |k| {
        let key = k.strip_prefix("toolchain.").unwrap_or(k);
        match key {
            "components" | "targets" | "profile" => false,
            "channel" => is
                .get(k)
                .is_some_and(|c| !standard_channel(c.trim_matches('"'))),
            _ => true,
        }
    })
}

/// A toolchain file's keys; the legacy one-line form is its channel.
fn toolchain_keys(bytes: Option<&[u8]>) -> BTreeMap<String, String> {
    let (flat, table) = flat_toml(bytes);
    if table.is_some() {
        return flat;
    }
    let mut out = BTreeMap::new();
    if let Some(b) = bytes {
        let text = String::from_utf8_lossy(b).trim().to_owned();
        out.insert("toolchain.channel".to_owned(), format!("\"{text}\""));
    }
    out
}

/// `stable`, `beta`, `nightly` or `1.x[.y]`, optionally dated
/// (`-YYYY-MM-DD`) and for a host (`-x86_64-unknown-linux-gnu`).
fn standard_channel(channel: &str) -> bool {
    let (name, mut rest) = channel.split_once('-').unwrap_or((channel, ""));
    let version = |v: &str| {
        let parts: Vec<&str> = v.split('.').collect();
        (2..=3).contains(&parts.len())
            && parts[0] == "1"
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
    };
    if !["stable", "beta", "nightly"].contains(&name) && !version(name) {
        return false;
    }
    let date = rest.get(..10).filter(|d| {
        d.char_indices().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }
        })
    });
    if date.is_some() {
        rest = rest.get(10..).unwrap_or_default();
        rest = rest.strip_prefix('-').unwrap_or(rest);
        if rest.is_empty() {
            return true;
        }
    }
    rest.is_empty() || host_triple(rest)
}

/// Two to four `-`-joined parts of lowercase letters, digits, `_` and `.`.
fn host_triple(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    (2..=4).contains(&parts.len())
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.')
        })
}

#[cfg(test)]
mod tests;
