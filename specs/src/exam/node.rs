//! npm, pnpm and yarn scripts, and the Vitest, Jest and Mocha runners: the
//! package.json script entries a command runs (and their `pre`/`post`
//! hooks), the command lines in them, the test files the runner selects,
//! and the configuration of the package manager and the runner.

use std::collections::BTreeMap;

use super::fate::script_entry;
use super::ini;
use super::model::{ExamKind, LaunchChange, Runner, changed_keys, whole_file};
use super::path::{
    ancestors, extension, file_name, glob, in_dir, is_glob, looks_like_path, parent, resolve,
    test_side,
};
use super::walk::{Call, Found};
use crate::verifier::Word;

/// The package manager's own commands (not scripts) that run no tests.
const BUILTINS: [&str; 24] = [
    "install",
    "i",
    "ci",
    "add",
    "remove",
    "rm",
    "uninstall",
    "update",
    "up",
    "upgrade",
    "link",
    "unlink",
    "publish",
    "pack",
    "init",
    "create",
    "audit",
    "outdated",
    "list",
    "ls",
    "why",
    "config",
    "set",
    "cache",
];

/// Keys of `.npmrc` that change nothing of how a script is launched.
const NPMRC_ALLOWED: [&str; 16] = [
    "registry",
    "fund",
    "audit",
    "audit-level",
    "engine-strict",
    "package-lock",
    "legacy-peer-deps",
    "strict-peer-dependencies",
    "auto-install-peers",
    "lockfile-version",
    "progress",
    "loglevel",
    "update-notifier",
    "always-auth",
    "email",
    "_auth",
];

/// Keys of `.yarnrc.yml` (yarn 2+) that change nothing of how a script is launched.
const YARNRC_YML_ALLOWED: [&str; 20] = [
    "npmRegistryServer",
    "npmScopes",
    "npmAuthToken",
    "npmAuthIdent",
    "npmAlwaysAuth",
    "npmPublishRegistry",
    "enableTelemetry",
    "enableProgressBars",
    "enableGlobalCache",
    "enableColors",
    "enableHyperlinks",
    "enableMessageNames",
    "cacheFolder",
    "globalFolder",
    "httpProxy",
    "httpsProxy",
    "httpTimeout",
    "httpRetry",
    "networkConcurrency",
    "enableImmutableInstalls",
];

/// Keys of `.yarnrc` (yarn 1) that change nothing of how a script is launched.
const YARNRC_ALLOWED: [&str; 10] = [
    "registry",
    "network-timeout",
    "network-concurrency",
    "disable-self-update-check",
    "email",
    "username",
    "always-auth",
    "strict-ssl",
    "lastUpdateCheck",
    "yarn-offline-mirror",
];

/// Keys of `pnpm-workspace.yaml` that change nothing of how a script is launched.
const PNPM_WORKSPACE_ALLOWED: [&str; 6] = [
    "packages",
    "catalog",
    "catalogs",
    "onlyBuiltDependencies",
    "ignoredBuiltDependencies",
    "neverBuiltDependencies",
];

/// Keys of package.json, besides the scripts (exam entries) and the
/// runners' sections, that change how a script runs: `type` (how `.js`
/// files, configs among them, are loaded), `packageManager` (which package
/// manager corepack runs), and the overrides and pnpm settings that swap
/// the packages the runner itself is made of.
const PACKAGE_JSON_KEYS: [&str; 5] = ["type", "packageManager", "pnpm", "overrides", "resolutions"];

/// Test file extensions of Vitest's and Jest's default match.
const TEST_EXTENSIONS: [&str; 8] = ["js", "ts", "jsx", "tsx", "mjs", "cjs", "mts", "cts"];

/// Reads an `npm`, `pnpm` or `yarn` command.
pub(super) fn package_manager(pm: &str, call: &Call<'_>, out: &mut Found) {
    let mut dir = call.dir.to_owned();
    let mut args = call.args.iter();
    let sub = loop {
        let Some(w) = args.next() else { return };
        match w.text.as_str() {
            "--prefix" | "-C" | "--dir" | "--cwd" => {
                let Some(d) = args.next().and_then(|d| resolve(call.dir, &d.text)) else {
                    out.unresolved(format!(
                        "`{}` runs in a directory outside the workspace",
                        call.text
                    ));
                    return;
                };
                dir = d;
            }
            // One package of the workspace, by name or directory.
            "-w" | "--workspace" | "--filter" | "-F" | "workspace"
                if args
                    .clone()
                    .next()
                    .is_some_and(|n| !n.expands && !n.text.contains('*')) =>
            {
                let name = args.next().map(|n| n.text.clone()).unwrap_or_default();
                let Some(d) = workspace_package(call, &dir, &name) else {
                    out.unresolved(format!(
                        "`{}` runs in the workspace package `{name}`, which is not found",
                        call.text
                    ));
                    return;
                };
                dir = d;
            }
            t if t.starts_with("--workspace=") || t.starts_with("--filter=") => {
                let name = t.split_once('=').map(|(_, n)| n).unwrap_or_default();
                let Some(d) = workspace_package(call, &dir, name) else {
                    out.unresolved(format!(
                        "`{}` runs in the workspace package `{name}`, which is not found",
                        call.text
                    ));
                    return;
                };
                dir = d;
            }
            "-w" | "--workspace" | "-ws" | "--workspaces" | "--filter" | "-F" | "-r"
            | "--recursive" | "workspace" | "workspaces" => {
                out.unresolved(format!(
                    "`{}` runs in the workspace's packages (`{}`), which are not resolved",
                    call.text, w.text
                ));
                return;
            }
            t if t.starts_with('-') => {}
            _ => break w,
        }
    };
    let rest: Vec<Word> = args.cloned().collect();
    let (script, after) = match sub.text.as_str() {
        "test" | "t" | "tst" => ("test".to_owned(), &rest[..]),
        "start" | "stop" | "restart" => (sub.text.clone(), &rest[..]),
        "run" | "run-script" | "rum" | "urn" => {
            let Some(at) = rest.iter().position(|w| !w.text.starts_with('-')) else {
                return;
            };
            (rest[at].text.clone(), &rest[at + 1..])
        }
        "exec" | "x" | "dlx" => {
            // The rest is a command run with the package's binaries on PATH.
            let skip = rest
                .iter()
                .take_while(|w| w.text.starts_with('-') && w.text != "--")
                .count();
            let words: Vec<Word> = rest[skip..]
                .iter()
                .skip_while(|w| w.text == "--")
                .cloned()
                .collect();
            call.run_command(&words, &dir, out);
            return;
        }
        b if BUILTINS.contains(&b) => return,
        _ if pm == "npm" => return,
        other => (other.to_owned(), &rest[..]),
    };
    if sub.expands {
        out.unresolved(format!(
            "`{}` names its script through an expansion",
            call.text
        ));
        return;
    }
    let Some(after) = workspace_options(call, &mut dir, after, out) else {
        return;
    };
    run_script(pm, call, &dir, &script, &after, out);
}

/// The words after a script's name without the package manager's own
/// workspace options (`npm test -w app`), which move `dir` to the package
/// they name; `None` when they name many packages or an unknown one.
fn workspace_options(
    call: &Call<'_>,
    dir: &mut String,
    after: &[Word],
    out: &mut Found,
) -> Option<Vec<Word>> {
    let mut kept = Vec::new();
    let mut words = after.iter();
    while let Some(w) = words.next() {
        if w.text == "--" {
            kept.push(w.clone());
            kept.extend(words.cloned());
            break;
        }
        let name = match w.text.as_str() {
            "-w" | "--workspace" | "--filter" | "-F" => words.next().map(|n| n.text.clone()),
            t if t.starts_with("--workspace=") || t.starts_with("--filter=") => {
                t.split_once('=').map(|(_, n)| n.to_owned())
            }
            "-ws" | "--workspaces" | "-r" | "--recursive" => {
                out.unresolved(format!(
                    "`{}` runs in every package of the workspace (`{}`), which are not resolved",
                    call.text, w.text
                ));
                return None;
            }
            _ => {
                kept.push(w.clone());
                continue;
            }
        };
        let found = name
            .as_deref()
            .filter(|n| !n.contains('*'))
            .and_then(|n| workspace_package(call, dir, n));
        let Some(found) = found else {
            out.unresolved(format!(
                "`{}` runs in the workspace package `{}`, which is not found",
                call.text,
                name.unwrap_or_default()
            ));
            return None;
        };
        *dir = found;
    }
    Some(kept)
}

/// The directory of a workspace package named `name` (or at the directory
/// `name`), among the `workspaces` of the package.json or the `packages`
/// of the pnpm-workspace.yaml at or above `dir`.
fn workspace_package(call: &Call<'_>, dir: &str, name: &str) -> Option<String> {
    if let Some(d) = resolve(dir, name).filter(|d| call.ctx.exists(&in_dir(d, "package.json"))) {
        return Some(d);
    }
    for root in ancestors(dir) {
        let mut patterns: Vec<String> = call
            .read_text(&in_dir(&root, "package.json"))
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| {
                let w = v.get("workspaces")?;
                let list = w.get("packages").unwrap_or(w).as_array()?;
                Some(
                    list.iter()
                        .filter_map(|p| p.as_str().map(str::to_owned))
                        .collect(),
                )
            })
            .unwrap_or_default();
        if let Some(yaml) = call.read_text(&in_dir(&root, "pnpm-workspace.yaml")) {
            patterns.extend(yaml.lines().filter_map(|l| {
                let item = l.trim().strip_prefix('-')?.trim().trim_matches(['\'', '"']);
                (!item.starts_with('!')).then(|| item.to_owned())
            }));
        }
        for pattern in patterns {
            let Some(m) = resolve(&root, &pattern).and_then(|p| glob(&p)) else {
                continue;
            };
            for file in call.ctx.files_under(&root) {
                let Some(pkg_dir) = file.strip_suffix("/package.json") else {
                    continue;
                };
                if !m.is_match(pkg_dir) || pkg_dir.contains("node_modules") {
                    continue;
                }
                let named = call
                    .read_text(&file)
                    .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                    .is_some_and(|v| v.get("name").and_then(|n| n.as_str()) == Some(name));
                if named {
                    return Some(pkg_dir.to_owned());
                }
            }
        }
    }
    None
}

/// A package script and what it runs, with the words after its name.
fn run_script(pm: &str, call: &Call<'_>, dir: &str, name: &str, after: &[Word], out: &mut Found) {
    let Some(package) = ancestors(dir)
        .into_iter()
        .map(|d| in_dir(&d, "package.json"))
        .find(|p| call.ctx.exists(p))
    else {
        out.unresolved(format!(
            "`{}` finds no package.json at or above `{dir}`",
            call.text
        ));
        return;
    };
    let pkg_dir = parent(&package).to_owned();
    manager_configs(pm, call, &pkg_dir, &package, out);
    let bytes = call.ctx.tree.read(&package).unwrap_or_default();
    let args: Vec<&Word> = after.iter().skip_while(|w| w.text == "--").collect();
    let line = script_entry(&bytes, name);
    if line.is_none() {
        if (pm == "pnpm" || pm == "yarn") && matches!(name, "vitest" | "jest" | "mocha") {
            // `pnpm vitest`: no script of that name runs the package's binary.
            let words: Vec<Word> = std::iter::once(Word {
                text: name.to_owned(),
                expands: false,
            })
            .chain(args.iter().map(|w| (*w).clone()))
            .collect();
            call.run_command(&words, dir, out);
            return;
        }
        out.unresolved(format!(
            "`{package}` has no `scripts.{name}`, which `{}` runs",
            call.text
        ));
    }
    for hook in [format!("pre{name}"), name.to_owned(), format!("post{name}")] {
        out.file(
            &package,
            call.why(),
            ExamKind::ScriptEntry {
                key: format!("scripts.{hook}"),
            },
        );
        let Some(mut text) = script_entry(&bytes, &hook) else {
            continue;
        };
        if hook == name {
            // The words after the script's name are appended to its line (an
            // expansion stays one), and the script runs in the package's
            // directory, where the runner finds them.
            for w in &args {
                text.push(' ');
                text.push_str(&if w.expands {
                    w.text.clone()
                } else {
                    quoted(&w.text)
                });
                if !w.expands
                    && looks_like_path(&w.text)
                    && let Some(path) = resolve(&pkg_dir, &w.text)
                    && call.ctx.exists(&path)
                {
                    out.file(
                        &path,
                        format!("{} hands it to the script", call.why()),
                        ExamKind::File,
                    );
                }
            }
        }
        call.run_line(&text, &pkg_dir, out);
    }
}

/// A word quoted for `sh`.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The package manager's configuration for a package.
fn manager_configs(pm: &str, call: &Call<'_>, pkg_dir: &str, package: &str, out: &mut Found) {
    let dirs = ancestors(pkg_dir);
    for d in &dirs {
        out.config(&in_dir(d, ".npmrc"), Runner::Npm, None);
    }
    for d in &dirs {
        match pm {
            "yarn" => {
                out.config(&in_dir(d, ".yarnrc.yml"), Runner::Npm, None);
                out.config(&in_dir(d, ".yarnrc"), Runner::Npm, None);
            }
            "pnpm" => out.config(&in_dir(d, "pnpm-workspace.yaml"), Runner::Npm, None),
            _ => {}
        }
    }
    out.config(package, Runner::Npm, None);
    // A workspace root's package.json above says which manager runs.
    for d in dirs.iter().skip(1) {
        let root = in_dir(d, "package.json");
        if call.ctx.exists(&root) {
            out.config(&root, Runner::Npm, None);
        }
    }
}

/// What one runner invocation names.
#[derive(Default)]
struct RunnerArgs {
    operands: Vec<String>,
    config: Option<String>,
    root: Option<String>,
    recursive: bool,
    /// Files the runner loads before the tests (`mocha --require x.js`).
    required: Vec<String>,
}

/// Options of the runners that take a value.
const RUNNER_VALUE_OPTIONS: [&str; 34] = [
    "-t",
    "--testNamePattern",
    "--reporter",
    "--reporters",
    "--outputFile",
    "--environment",
    "--testEnvironment",
    "--pool",
    "--project",
    "--selectProjects",
    "--shard",
    "--exclude",
    "--mode",
    "--maxWorkers",
    "--minWorkers",
    "--testTimeout",
    "--hookTimeout",
    "--retry",
    "--retries",
    "-w",
    "--testPathPattern",
    "--testPathIgnorePatterns",
    "--seed",
    "--ui",
    "-u",
    "--timeout",
    "--grep",
    "-g",
    "--fgrep",
    "-f",
    "--slow",
    "-s",
    "--jobs",
    "-j",
];

/// Reads a `vitest`, `jest` or `mocha` command.
pub(super) fn runner(name: &str, call: &Call<'_>, out: &mut Found) {
    let args = runner_args(name, call, out);
    let base = if let Some(r) = &args.root {
        let Some(d) = resolve(call.dir, r) else {
            out.unresolved(format!("`{}` has a root outside the workspace", call.text));
            return;
        };
        d
    } else {
        call.dir.to_owned()
    };
    let configs = runner_configs(name, call, &base, args.config.as_deref(), out);
    for config in &configs {
        named_in_config(call, config, out);
    }
    let mut selected: Vec<String> = args
        .required
        .iter()
        .filter_map(|r| resolve(call.dir, r).filter(|p| call.ctx.exists(p)))
        .collect();
    if args.operands.is_empty() {
        if let Some(config) = configs.first() {
            out.unresolved(format!(
                "`{config}` may change the files `{}` selects, which is not read but for its literal patterns: its default match is listed with what they match",
                call.text
            ));
        }
        selected.extend(default_match(name, call, &base, args.recursive));
        for config in &configs {
            for file in config_matches(name, call, config) {
                if !selected.contains(&file) {
                    selected.push(file);
                }
            }
        }
    }
    for operand in &args.operands {
        selected.extend(operand_files(name, call, &base, operand, args.recursive));
    }
    for file in &selected {
        out.file(file, call.why(), ExamKind::File);
    }
    helpers(call, selected, out);
}

/// The most helper files followed from one runner's tests.
const MAX_HELPERS: usize = 2_000;

/// Extensions a relative import may leave out, in the resolvers' order.
const IMPORT_EXTENSIONS: [&str; 8] = ["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"];

/// The files on the tests' side that the tests name by a relative path
/// (`import { db } from '../support/db'`, `readFileSync('./fixtures/x.json')`),
/// transitively: the helpers and fixtures they are judged by.
fn helpers(call: &Call<'_>, mut queue: Vec<String>, out: &mut Found) {
    let mut seen: std::collections::HashSet<String> = queue.iter().cloned().collect();
    let mut added = 0usize;
    while let Some(file) = queue.pop() {
        if added > MAX_HELPERS {
            break;
        }
        if !extension(&file).is_some_and(|e| IMPORT_EXTENSIONS.contains(&e)) {
            continue;
        }
        // Jest's and Vitest's snapshots: `__snapshots__/<file>.snap` beside it.
        let snapshot = in_dir(
            &in_dir(parent(&file), "__snapshots__"),
            &format!("{}.snap", file_name(&file)),
        );
        if call.ctx.exists(&snapshot) && seen.insert(snapshot.clone()) {
            out.file(
                &snapshot,
                format!("`{file}` compares with it"),
                ExamKind::File,
            );
            added += 1;
        }
        let Some(text) = call.read_text(&file) else {
            continue;
        };
        for literal in string_literals(&text) {
            if !(literal.starts_with("./") || literal.starts_with("../")) {
                continue;
            }
            let Some(found) = import_target(call, parent(&file), &literal) else {
                continue;
            };
            if test_side(&found) && seen.insert(found.clone()) {
                let why = format!("`{file}` names it{}", call.scope.via);
                out.file(&found, why, ExamKind::File);
                added += 1;
                queue.push(found);
            }
        }
    }
}

/// The file a relative import names, as Node and TypeScript resolve it:
/// as written, with an extension added, as a directory's index, or a
/// `.js` written for its `.ts` source.
fn import_target(call: &Call<'_>, dir: &str, spec: &str) -> Option<String> {
    let path = resolve(dir, spec)?;
    let mut candidates = vec![path.clone()];
    candidates.extend(IMPORT_EXTENSIONS.iter().map(|e| format!("{path}.{e}")));
    candidates.extend(
        IMPORT_EXTENSIONS
            .iter()
            .map(|e| in_dir(&path, &format!("index.{e}"))),
    );
    if let Some(stem) = path.strip_suffix(".js") {
        candidates.extend(["ts", "tsx"].iter().map(|e| format!("{stem}.{e}")));
    }
    candidates.into_iter().find(|c| call.ctx.exists(c))
}

/// The operands and options of a runner's command line.
fn runner_args(name: &str, call: &Call<'_>, out: &mut Found) -> RunnerArgs {
    let mut args = RunnerArgs::default();
    let mut words = call.args.iter().peekable();
    if name == "vitest"
        && words
            .peek()
            .is_some_and(|w| matches!(w.text.as_str(), "run" | "watch" | "dev" | "related"))
    {
        words.next();
    }
    let mut operands_only = false;
    while let Some(w) = words.next() {
        if w.expands && (w.text.contains('$') || w.text.contains('`')) {
            out.expanded(&call.text, &w.text);
            continue;
        }
        if operands_only || !w.text.starts_with('-') {
            args.operands.push(w.text.clone());
            continue;
        }
        let (flag, inline) = w
            .text
            .split_once('=')
            .map_or((w.text.as_str(), None), |(f, v)| (f, Some(v.to_owned())));
        let takes = [
            "-c",
            "--config",
            "-r",
            "--root",
            "--rootDir",
            "--dir",
            "--require",
            "--file",
            "--spec",
        ]
        .contains(&flag)
            || RUNNER_VALUE_OPTIONS.contains(&flag);
        let value = if takes && inline.is_none() {
            words.next().map(|v| v.text.clone())
        } else {
            inline
        };
        match flag {
            "--" => operands_only = true,
            "-c" | "--config" => args.config = value,
            // Mocha's `-r` is `--require`.
            "-r" if name == "mocha" => args.required.extend(value),
            "-r" | "--root" | "--rootDir" | "--dir" => args.root = value,
            "--require" | "--file" => args.required.extend(value),
            "--spec" => args.operands.extend(value),
            "--recursive" => args.recursive = true,
            _ => {}
        }
    }
    args
}

/// The runner's configuration files, listed whether present or not; the
/// present ones are returned.
fn runner_configs(
    name: &str,
    call: &Call<'_>,
    base: &str,
    explicit: Option<&str>,
    out: &mut Found,
) -> Vec<String> {
    let (runner, stems, extensions): (Runner, &[&str], &[&str]) = match name {
        "vitest" => (
            Runner::Vitest,
            &["vitest.config", "vite.config", "vitest.workspace"],
            &["ts", "mts", "cts", "js", "mjs", "cjs", "json"],
        ),
        "jest" => (
            Runner::Jest,
            &["jest.config", "babel.config", ".babelrc"],
            &["js", "ts", "mjs", "cjs", "json"],
        ),
        _ => (
            Runner::Mocha,
            &[".mocharc"],
            &["js", "cjs", "yaml", "yml", "json", "jsonc"],
        ),
    };
    let mut present = Vec::new();
    let mut add = |path: String, section: Option<&str>, out: &mut Found| {
        out.config(&path, runner, section);
        if call.ctx.exists(&path) && section.is_none() {
            present.push(path);
        }
    };
    if let Some(path) = explicit.and_then(|c| resolve(call.dir, c)) {
        add(path, None, out);
    }
    for stem in stems {
        for ext in extensions {
            add(in_dir(base, &format!("{stem}.{ext}")), None, out);
        }
    }
    if name == "jest" {
        add(in_dir(base, ".babelrc"), None, out);
    }
    if name != "vitest" {
        let package = in_dir(base, "package.json");
        out.config(&package, runner, Some(name));
        let has_section = call
            .ctx
            .tree
            .read(&package)
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| v.get(name).is_some());
        if has_section {
            present.push(format!("{package}#{name}"));
        }
    }
    present
}

/// The files a runner's configuration names by a literal path
/// (`setupFiles: ['./tests/setup.ts']`, `require: test/hooks.js`): code
/// the runner loads with the tests. `config` may be `package.json#jest`.
fn named_in_config(call: &Call<'_>, config: &str, out: &mut Found) {
    let (path, section) = config
        .split_once('#')
        .map_or((config, None), |(p, s)| (p, Some(s)));
    let Some(text) = call.read_text(path) else {
        return;
    };
    let text = match section {
        Some(s) => serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get(s).map(ToString::to_string))
            .unwrap_or_default(),
        None => text,
    };
    let yaml = matches!(extension(path), Some("yml" | "yaml"));
    let mut words = string_literals(&text);
    if yaml {
        words.extend(
            text.split(|c: char| c.is_whitespace() || matches!(c, '[' | ']' | ',' | ':'))
                .map(str::to_owned),
        );
    }
    let dir = parent(path);
    for word in words {
        let word = word.replace("<rootDir>", ".");
        if !looks_like_path(&word) || is_glob(&word) || word.contains("node_modules") {
            continue;
        }
        if let Some(found) = resolve(dir, &word)
            && found != path
            && call.ctx.exists(&found)
        {
            let why = format!("`{path}`, which `{}` reads, names it", call.text);
            out.file(&found, why, ExamKind::File);
        }
    }
}

/// Keys of a runner's configuration whose values select test files.
const SELECTING_KEYS: [&str; 3] = ["include", "testMatch", "spec"];

/// The test files the literal glob patterns of a configuration's
/// selecting keys (`include: ['e2e/**/*.e2e.ts']`) match. Only files that
/// look like tests or lie on the tests' side count, since the same key
/// names the code under test elsewhere (`coverage.include`).
fn config_matches(name: &str, call: &Call<'_>, config: &str) -> Vec<String> {
    let (path, _) = config.split_once('#').unwrap_or((config, ""));
    let Some(text) = call.read_text(path) else {
        return Vec::new();
    };
    let dir = parent(path);
    let mut patterns = Vec::new();
    for key in SELECTING_KEYS {
        let mut rest = text.as_str();
        while let Some(at) = rest.find(key) {
            rest = &rest[at + key.len()..];
            let value = rest.trim_start_matches(['"', '\'', ' ']);
            let Some(value) = value.strip_prefix(':') else {
                continue;
            };
            let value = value.trim_start();
            // An array up to its `]`, or one string.
            let end = if value.starts_with('[') {
                value.find(']')
            } else {
                value.find([',', '\n', '}'])
            };
            patterns.extend(string_literals(&value[..end.unwrap_or(value.len())]));
        }
    }
    let files = call.ctx.files_under(dir);
    let mut out = Vec::new();
    for pattern in patterns {
        let pattern = pattern.replace("<rootDir>/", "");
        let Some(m) = resolve(dir, &pattern).and_then(|p| glob(&p)) else {
            continue;
        };
        out.extend(
            files
                .iter()
                .filter(|f| {
                    m.is_match(f.as_str())
                        && !f.contains("node_modules")
                        && (default_test(name, f, None) || test_side(f))
                        && !out.contains(*f)
                })
                .cloned()
                .collect::<Vec<_>>(),
        );
    }
    out
}

/// The contents of the quoted strings of JS or JSON text (`'…'`, `"…"`,
/// `` `…` ``), each on one line.
fn string_literals(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if !matches!(c, '\'' | '"' | '`') {
            continue;
        }
        let mut s = String::new();
        let mut escaped = false;
        for n in chars.by_ref() {
            if n == '\n' || (n == c && !escaped) {
                break;
            }
            escaped = n == '\\' && !escaped;
            s.push(n);
        }
        out.push(s);
    }
    out
}

/// Whether a file is one the runner's default match selects.
fn default_test(name: &str, path: &str, recursive_base: Option<&str>) -> bool {
    if path
        .split('/')
        .any(|p| matches!(p, "node_modules" | ".git" | "dist"))
    {
        return false;
    }
    let file = file_name(path);
    let Some((stem, ext)) = file.rsplit_once('.') else {
        return false;
    };
    if name == "mocha" {
        return matches!(ext, "js" | "cjs" | "mjs")
            && recursive_base.is_none_or(|b| {
                !path
                    .strip_prefix(b)
                    .unwrap_or(path)
                    .trim_start_matches('/')
                    .contains('/')
            });
    }
    if !TEST_EXTENSIONS.contains(&ext) {
        return false;
    }
    // `a.test.ts`, `a.spec.ts` (and Jest's bare `test.ts`).
    let marker = stem.rsplit('.').next().unwrap_or(stem);
    let marked = (stem.contains('.') && (marker == "test" || marker == "spec"))
        || (name == "jest" && (stem == "test" || stem == "spec"));
    marked || (name == "jest" && path.split('/').any(|p| p == "__tests__"))
}

/// The files the runner selects with no operand.
fn default_match(name: &str, call: &Call<'_>, base: &str, recursive: bool) -> Vec<String> {
    let (dir, only_top) = if name == "mocha" {
        (in_dir(base, "test"), !recursive)
    } else {
        (base.to_owned(), false)
    };
    let top = only_top.then_some(dir.as_str());
    call.ctx
        .files_under(&dir)
        .into_iter()
        .filter(|f| default_test(name, f, top))
        .collect()
}

/// The files one operand selects: a glob, a file, a directory, or (for
/// Vitest and Jest) a filter on the default match's paths.
fn operand_files(
    name: &str,
    call: &Call<'_>,
    base: &str,
    operand: &str,
    recursive: bool,
) -> Vec<String> {
    let text = operand.split("::").next().unwrap_or(operand);
    if is_glob(text) {
        let Some(full) = resolve(call.dir, text) else {
            return Vec::new();
        };
        let Some(m) = glob(&full) else {
            return Vec::new();
        };
        return call
            .ctx
            .files_under(base)
            .into_iter()
            .filter(|f| m.is_match(f))
            .collect();
    }
    if let Some(path) = resolve(call.dir, text) {
        if call.ctx.exists(&path) {
            return vec![path];
        }
        if call.ctx.is_dir(&path) {
            let top = (name == "mocha" && !recursive).then_some(path.as_str());
            return call
                .ctx
                .files_under(&path)
                .into_iter()
                .filter(|f| default_test(name, f, top))
                .collect();
        }
    }
    if name == "mocha" {
        return Vec::new();
    }
    default_match(name, call, base, recursive)
        .into_iter()
        .filter(|f| f.contains(text))
        .collect()
}

/// `.npmrc`, `.yarnrc`, `.yarnrc.yml`, `pnpm-workspace.yaml` and
/// package.json: every key but the allow-listed ones (for package.json,
/// [`PACKAGE_JSON_KEYS`] only).
pub(super) fn npm_changes(
    name: &str,
    base: Option<&[u8]>,
    now: Option<&[u8]>,
) -> Vec<LaunchChange> {
    let text = |b: Option<&[u8]>| {
        b.map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    let (was, is) = (text(base), text(now));
    match name {
        ".npmrc" => changed_keys(&ini::keys(&was, None), &ini::keys(&is, None), |k| {
            !npmrc_allowed(k)
        }),
        ".yarnrc" => changed_keys(&yarnrc(&was), &yarnrc(&is), |k| {
            !YARNRC_ALLOWED.contains(&k) && !k.ends_with(":registry")
        }),
        ".yarnrc.yml" => changed_keys(&yaml_top(&was), &yaml_top(&is), |k| {
            !YARNRC_YML_ALLOWED.contains(&k)
        }),
        "pnpm-workspace.yaml" => changed_keys(&yaml_top(&was), &yaml_top(&is), |k| {
            !PNPM_WORKSPACE_ALLOWED.contains(&k)
        }),
        "package.json" => match (json_keys(base, None), json_keys(now, None)) {
            (Some(w), Some(n)) => changed_keys(&w, &n, |k| PACKAGE_JSON_KEYS.contains(&k)),
            _ => whole_file(base, now),
        },
        _ => whole_file(base, now),
    }
}

fn npmrc_allowed(key: &str) -> bool {
    NPMRC_ALLOWED.contains(&key)
        || key.starts_with("//")
        || key.ends_with(":registry")
        || key == "save"
        || key.starts_with("save-")
}

/// A runner's configuration: package.json's section (`jest`, `mocha`),
/// or a whole file (a JS config is code: any change counts).
pub(super) fn runner_changes(
    section: Option<&str>,
    base: Option<&[u8]>,
    now: Option<&[u8]>,
) -> Vec<LaunchChange> {
    let Some(section) = section else {
        return whole_file(base, now);
    };
    match (
        json_keys(base, Some(section)),
        json_keys(now, Some(section)),
    ) {
        (Some(w), Some(n)) => changed_keys(&w, &n, |_| true),
        _ => whole_file(base, now),
    }
}

/// A JSON file's top-level values (or one key's), as text; `None` when a
/// present file is not JSON; an absent file has none.
fn json_keys(bytes: Option<&[u8]>, only: Option<&str>) -> Option<BTreeMap<String, String>> {
    let Some(bytes) = bytes else {
        return Some(BTreeMap::new());
    };
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let object = value.as_object()?;
    Some(
        object
            .iter()
            .filter(|(k, _)| only.is_none_or(|o| o == k.as_str()))
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect(),
    )
}

/// `.yarnrc` (yarn 1): `key value` lines.
fn yarnrc(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            (k.trim_matches('"').to_owned(), v.trim().to_owned())
        })
        .collect()
}

/// A YAML file's top-level keys, each with the text of its block (what
/// follows the key and the indented lines under it).
fn yaml_top(text: &str) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t', '-']) {
            if let Some(value) = current.as_ref().and_then(|k| out.get_mut(k)) {
                value.push('\n');
                value.push_str(line.trim_end());
            }
            continue;
        }
        let (key, value) = line.split_once(':').unwrap_or((line, ""));
        let key = key.trim().trim_matches(['"', '\'']).to_owned();
        out.insert(key.clone(), value.trim().to_owned());
        current = Some(key);
    }
    out
}

#[cfg(test)]
mod tests;
