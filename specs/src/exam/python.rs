//! pytest and unittest: the test files the command names or discovers,
//! the `conftest.py` files pytest loads on the way to them, and the
//! configuration file pytest picks (in its order of precedence).

use std::collections::BTreeMap;

use super::ini;
use super::model::{ExamKind, LaunchChange, Runner, changed_keys, whole_file};
use super::path::{
    ancestors, extension, file_name, glob, in_dir, is_glob, parent, resolve, test_side,
};
use super::walk::{Call, Found};
use crate::verifier::Word;

/// Options of pytest that take a value.
const PYTEST_VALUE_OPTIONS: [&str; 34] = [
    "-k",
    "-m",
    "-o",
    "--override-ini",
    "-p",
    "--confcutdir",
    "--deselect",
    "--ignore",
    "--ignore-glob",
    "-n",
    "--numprocesses",
    "--dist",
    "--tb",
    "--maxfail",
    "--junitxml",
    "--junit-xml",
    "--cov",
    "--cov-report",
    "--cov-config",
    "-W",
    "--log-level",
    "--log-cli-level",
    "--basetemp",
    "--durations",
    "-r",
    "--capture",
    "--import-mode",
    "--timeout",
    "--reruns",
    "--html",
    "--color",
    "--alluredir",
    "--json-report-file",
    "--cache-dir",
];

/// Directories pytest does not recurse into by default (`norecursedirs`).
const NORECURSE: [&str; 8] = [
    "build",
    "dist",
    "node_modules",
    "venv",
    "CVS",
    "_darcs",
    "{arch}",
    "__pycache__",
];

/// The configuration files pytest looks for in each directory, in its
/// order, with the section each is read from.
const PYTEST_CONFIGS: [(&str, &str); 5] = [
    ("pytest.ini", "pytest"),
    (".pytest.ini", "pytest"),
    ("pyproject.toml", "tool.pytest"),
    ("tox.ini", "pytest"),
    ("setup.cfg", "tool:pytest"),
];

/// The modules `python -m pytest` imports before it reads anything of the
/// workspace: a workspace module of one of these names in the working
/// directory (first on `sys.path`) is run in their place.
const PYTEST_MODULES: [&str; 6] = [
    "pytest",
    "_pytest",
    "pluggy",
    "iniconfig",
    "packaging",
    "py",
];

/// The workspace files that would shadow `modules` for a `python -m` run
/// in `dir`: a module file or a package, each a configuration of the run.
fn shadows(call: &Call<'_>, modules: &[&str], out: &mut Found) {
    for module in modules {
        out.config(
            &in_dir(call.dir, &format!("{module}.py")),
            Runner::Module,
            None,
        );
        out.config(
            &in_dir(&in_dir(call.dir, module), "__init__.py"),
            Runner::Module,
            None,
        );
    }
}

/// Reads `python … -m pytest` or `python … -m unittest`.
pub(super) fn interpreter(call: &Call<'_>, out: &mut Found) {
    let mut args = call.args.iter();
    while let Some(w) = args.next() {
        match w.text.as_str() {
            "-m" => {
                let rest: Vec<Word> = args.clone().skip(1).cloned().collect();
                let module = args.clone().next().map(|m| m.text.as_str());
                // `-I` and `-P` keep the working directory off `sys.path`.
                let isolated = call
                    .args
                    .iter()
                    .take_while(|a| a.text != "-m")
                    .any(|a| a.text == "-I" || a.text == "-P");
                match module.filter(|_| !isolated) {
                    Some("pytest" | "py.test") => shadows(call, &PYTEST_MODULES, out),
                    Some("unittest") => shadows(call, &["unittest"], out),
                    _ => {}
                }
                match args.next().map(|m| m.text.as_str()) {
                    Some("pytest" | "py.test") => pytest(call, &rest, out),
                    Some("unittest") => unittest(call, &rest, out),
                    Some("doctest") => out.in_code(format!(
                        "`{}` runs doctests: they live in the code under test and cannot be told apart from it",
                        call.text
                    )),
                    _ => {}
                }
                return;
            }
            "-X" | "-W" => {
                args.next();
            }
            t if t.starts_with('-') => {}
            // A script: the verifier's to read.
            _ => return,
        }
    }
}

/// What a pytest command line names.
#[derive(Default)]
struct PytestArgs {
    paths: Vec<String>,
    config: Option<String>,
    rootdir: Option<String>,
    doctests: bool,
}

/// Reads a pytest command with the words after `pytest`.
pub(super) fn pytest(call: &Call<'_>, args: &[Word], out: &mut Found) {
    let before = out.files.len();
    let Some(args) = pytest_args(call, args, out) else {
        return;
    };
    let targets: Vec<String> = args
        .paths
        .iter()
        .filter_map(|p| resolve(call.dir, p))
        .collect();
    // Where pytest looks for its configuration: the targets' common ancestor.
    let start = if targets.is_empty() {
        call.dir.to_owned()
    } else {
        common_ancestor(call, &targets)
    };
    let winner = pytest_configs(call, &start, args.config.as_deref(), out);
    let rootdir = args
        .rootdir
        .as_deref()
        .and_then(|r| resolve(call.dir, r))
        .or_else(|| winner.as_ref().map(|(p, _)| parent(p).to_owned()))
        .unwrap_or_else(|| start.clone());
    let settings = winner.as_ref().map(|(_, s)| s.clone()).unwrap_or_default();
    let addopts = settings.get("addopts").map_or("", String::as_str);
    if args.doctests || addopts.contains("--doctest-modules") {
        out.in_code(format!(
            "`{}` runs the doctests of the Python modules it collects: they live in the code under test and cannot be told apart from it",
            call.text
        ));
    }
    let patterns = settings.get("python_files").map_or_else(
        || vec!["test_*.py".to_owned(), "*_test.py".to_owned()],
        |v| v.split_whitespace().map(str::to_owned).collect(),
    );
    let mut targets = targets;
    if targets.is_empty() {
        let testpaths = settings.get("testpaths").filter(|_| call.dir == rootdir);
        targets = match testpaths {
            Some(t) => t
                .split_whitespace()
                .filter_map(|p| resolve(&rootdir, p))
                .flat_map(|p| expand(call, &p))
                .collect(),
            None => vec![call.dir.to_owned()],
        };
    }
    for target in &targets {
        conftests(call, target, out);
        if call.ctx.exists(target) {
            out.file(target, call.why(), ExamKind::File);
        } else {
            for file in test_files(call, target, &patterns) {
                out.file(&file, call.why(), ExamKind::File);
            }
        }
    }
    helpers(call, &rootdir, before, out);
}

/// The most helper modules followed from one command's tests.
const MAX_HELPERS: usize = 2_000;

/// The modules on the tests' side that the exam's Python files (from
/// `out.files[from..]`) import, transitively, with the packages'
/// `__init__.py` files importing them runs.
fn helpers(call: &Call<'_>, root: &str, from: usize, out: &mut Found) {
    let mut queue: Vec<String> = out.files[from..]
        .iter()
        .filter(|f| f.kind == ExamKind::File && extension(&f.path) == Some("py"))
        .map(|f| f.path.clone())
        .collect();
    let mut seen: std::collections::HashSet<String> = queue.iter().cloned().collect();
    let mut added = 0usize;
    while let Some(file) = queue.pop() {
        if added > MAX_HELPERS {
            break;
        }
        // syrupy's snapshots: `__snapshots__/<test file stem>…` beside it.
        let stem = file_name(&file).trim_end_matches(".py");
        let snapshots = in_dir(parent(&file), "__snapshots__");
        for snap in call.ctx.files_under(&snapshots) {
            let rel = snap.strip_prefix(&snapshots).unwrap_or(&snap);
            if rel.trim_start_matches('/').starts_with(stem) && seen.insert(snap.clone()) {
                out.file(&snap, format!("`{file}` compares with it"), ExamKind::File);
                added += 1;
            }
        }
        let Some(text) = call.read_text(&file) else {
            continue;
        };
        let mut found = package_inits(call, &file);
        for (level, module, names) in imports(&text) {
            found.extend(import_files(call, root, &file, level, &module, &names));
        }
        for path in found {
            if test_side(&path) && seen.insert(path.clone()) {
                let why = format!("`{file}` imports it{}", call.scope.via);
                out.file(&path, why, ExamKind::File);
                added += 1;
                queue.push(path);
            }
        }
    }
}

/// The `__init__.py` files of the packages a file is in: its folder's and
/// each one's above, while the folder has one. A module in a package is
/// imported with its packages, which run first, wherever the rootdir lies
/// (pytest's `prepend` mode takes the first folder without one as the base).
fn package_inits(call: &Call<'_>, file: &str) -> Vec<String> {
    ancestors(parent(file))
        .into_iter()
        .map(|d| in_dir(&d, "__init__.py"))
        .take_while(|p| call.ctx.exists(p))
        .collect()
}

/// The imports of Python source: `(dots, module, names)` for `from
/// ..a.b import c, d` and `(0, "a.b", [])` for `import a.b` and each
/// module of a conftest's `pytest_plugins = ["a.b"]` (a one-line list).
/// The names of a `from` import may run on over lines, in parentheses or
/// after a backslash.
fn imports(text: &str) -> Vec<(usize, String, Vec<String>)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("pytest_plugins") {
            for (i, part) in rest.split(['"', '\'']).enumerate() {
                if i % 2 == 1 {
                    out.push((0, part.to_owned(), Vec::new()));
                }
            }
        } else if let Some(rest) = line.strip_prefix("from ") {
            let Some((module, names)) = rest.split_once(" import ") else {
                continue;
            };
            let module = module.trim();
            let level = module.chars().take_while(|c| *c == '.').count();
            let uncommented = |l: &str| {
                l.split_once('#')
                    .map_or(l, |(code, _)| code)
                    .trim()
                    .to_owned()
            };
            let mut names = uncommented(names);
            // The names run on while a parenthesis is open or a line ends in `\`.
            while names.ends_with('\\') || (names.contains('(') && !names.contains(')')) {
                let Some(next) = lines.next() else { break };
                names = format!("{},{}", names.trim_end_matches('\\'), uncommented(next));
            }
            let names = names
                .split([',', '(', ')'])
                .filter_map(|n| n.split_whitespace().next())
                .map(str::to_owned)
                .collect();
            out.push((level, module[level..].to_owned(), names));
        } else if let Some(rest) = line.strip_prefix("import ") {
            for m in rest.split(',') {
                if let Some(m) = m.split_whitespace().next() {
                    out.push((0, m.to_owned(), Vec::new()));
                }
            }
        }
    }
    out
}

/// The workspace files an import may load: relative to the importing
/// file's package, or absolute from `root` or a directory above the file.
fn import_files(
    call: &Call<'_>,
    root: &str,
    file: &str,
    level: usize,
    module: &str,
    names: &[String],
) -> Vec<String> {
    let bases: Vec<String> = if level > 0 {
        let mut base = parent(file).to_owned();
        for _ in 1..level {
            // The parent is a prefix of the path.
            let up = parent(&base).len();
            base.truncate(up);
        }
        vec![base]
    } else {
        ancestors(parent(file))
            .into_iter()
            .take_while(|d| d.len() >= root.len())
            .chain(std::iter::once(root.to_owned()))
            .collect()
    };
    let module_path = module.replace('.', "/");
    let mut out = Vec::new();
    for base in bases {
        let mut candidates = Vec::new();
        let stem = if module_path.is_empty() {
            base.clone()
        } else {
            let stem = in_dir(&base, &module_path);
            candidates.push(format!("{stem}.py"));
            stem
        };
        // The package itself: `from . import helper` may take `helper`
        // from `__init__.py`, which runs whatever else it imports.
        candidates.push(in_dir(&stem, "__init__.py"));
        // `from pkg import sub` may import the module `pkg/sub.py` or the
        // package `pkg/sub/`.
        for n in names {
            candidates.push(in_dir(&stem, &format!("{n}.py")));
            candidates.push(in_dir(&in_dir(&stem, n), "__init__.py"));
        }
        out.extend(candidates.into_iter().filter(|c| call.ctx.exists(c)));
    }
    out
}

/// The paths and options of a pytest command line.
fn pytest_args(call: &Call<'_>, args: &[Word], out: &mut Found) -> Option<PytestArgs> {
    let mut found = PytestArgs::default();
    let mut words = args.iter();
    while let Some(w) = words.next() {
        if w.expands && (w.text.contains('$') || w.text.contains('`')) {
            out.expanded(&call.text, &w.text);
            continue;
        }
        if !w.text.starts_with('-') {
            let text = w.text.split("::").next().unwrap_or_default();
            if w.expands && is_glob(text) {
                found.paths.extend(expand(call, text));
            } else {
                found.paths.push(text.to_owned());
            }
            continue;
        }
        let (flag, inline) = w
            .text
            .split_once('=')
            .map_or((w.text.as_str(), None), |(f, v)| (f, Some(v.to_owned())));
        let takes = ["-c", "--config-file", "--rootdir"].contains(&flag)
            || PYTEST_VALUE_OPTIONS.contains(&flag);
        let value = if takes && inline.is_none() {
            words.next().map(|v| v.text.clone())
        } else {
            inline
        };
        match flag {
            "-c" | "--config-file" => found.config = value,
            "--rootdir" => found.rootdir = value,
            "--doctest-modules" => found.doctests = true,
            "--pyargs" => {
                out.unresolved(format!(
                    "`{}` names its tests as Python packages (`--pyargs`), which are not resolved",
                    call.text
                ));
                return None;
            }
            _ => {}
        }
    }
    Some(found)
}

/// The workspace paths a glob matches (relative to the command's directory).
fn expand(call: &Call<'_>, pattern: &str) -> Vec<String> {
    let Some(full) = resolve(call.dir, pattern) else {
        return Vec::new();
    };
    if !is_glob(&full) {
        return vec![full];
    }
    let Some(m) = glob(&full) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for file in call.ctx.files_under("") {
        // A directory matches when one of its files lies under it.
        for dir in ancestors(&file) {
            if !dir.is_empty() && m.is_match(&dir) && !out.contains(&dir) {
                out.push(dir);
            }
        }
    }
    out
}

/// The deepest directory holding every target.
fn common_ancestor(call: &Call<'_>, targets: &[String]) -> String {
    let dir_of = |t: &String| {
        if call.ctx.exists(t) {
            parent(t).to_owned()
        } else {
            t.clone()
        }
    };
    let mut common: Vec<String> = ancestors(&dir_of(&targets[0]));
    for t in &targets[1..] {
        let theirs = ancestors(&dir_of(t));
        common.retain(|d| theirs.contains(d));
    }
    common.into_iter().next().unwrap_or_default()
}

/// Lists pytest's configuration candidates from `start` up, in its order,
/// until the one it would pick; returns that one's path and settings.
fn pytest_configs(
    call: &Call<'_>,
    start: &str,
    explicit: Option<&str>,
    out: &mut Found,
) -> Option<(String, BTreeMap<String, String>)> {
    if let Some(path) = explicit.and_then(|c| resolve(call.dir, c)) {
        let section = PYTEST_CONFIGS
            .iter()
            .find(|(n, _)| *n == file_name(&path))
            .map_or("pytest", |(_, s)| s);
        out.config(&path, Runner::Pytest, Some(section));
        let settings = call.read_text(&path).map(|t| settings(&path, section, &t));
        return Some((path, settings.unwrap_or_default()));
    }
    for dir in ancestors(start) {
        for (name, section) in PYTEST_CONFIGS {
            let path = in_dir(&dir, name);
            out.config(&path, Runner::Pytest, Some(section));
            let Some(text) = call.read_text(&path) else {
                continue;
            };
            let picked = match name {
                "pytest.ini" | ".pytest.ini" => true,
                "pyproject.toml" => pyproject_section(&text).is_some(),
                _ => ini::has_section(&text, section),
            };
            if picked {
                return Some((path.clone(), settings(&path, section, &text)));
            }
        }
    }
    None
}

/// The `[tool.pytest]` table of a pyproject.toml.
fn pyproject_section(text: &str) -> Option<toml::Table> {
    let table: toml::Table = text.parse().ok()?;
    table.get("tool")?.get("pytest")?.as_table().cloned()
}

/// A pytest configuration's settings as `key → value` (lists joined by
/// spaces, as ini files write them).
fn settings(path: &str, section: &str, text: &str) -> BTreeMap<String, String> {
    if file_name(path) != "pyproject.toml" {
        return ini::keys(text, Some(section));
    }
    let Some(table) = pyproject_section(text) else {
        return BTreeMap::new();
    };
    let options = table
        .get("ini_options")
        .and_then(toml::Value::as_table)
        .cloned()
        .unwrap_or(table);
    options
        .iter()
        .map(|(k, v)| {
            let text = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Array(items) => items
                    .iter()
                    .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(" "),
                other => other.to_string(),
            };
            (k.clone(), text)
        })
        .collect()
}

/// The `conftest.py` files pytest loads on the way to `target`, and those
/// under a directory target: present ones are exam files, every candidate
/// a configuration (one added is code that runs in pytest). pytest stops at
/// its confcutdir, which versions place differently: every directory from
/// the root down counts.
fn conftests(call: &Call<'_>, target: &str, out: &mut Found) {
    let dir = if call.ctx.exists(target) {
        parent(target)
    } else {
        target
    };
    let chain = ancestors(dir);
    for d in chain.iter().rev() {
        let path = in_dir(d, "conftest.py");
        out.config(&path, Runner::Pytest, None);
        if call.ctx.exists(&path) {
            out.file(
                &path,
                format!("{} and loads it", call.why()),
                ExamKind::File,
            );
        }
    }
    if !call.ctx.exists(target) {
        for file in call.ctx.files_under(target) {
            if file_name(&file) == "conftest.py" && !skipped(target, &file) {
                out.config(&file, Runner::Pytest, None);
                out.file(
                    &file,
                    format!("{} and loads it", call.why()),
                    ExamKind::File,
                );
            }
        }
    }
}

/// Whether pytest skips a file under `base` for a directory it does not
/// recurse into.
fn skipped(base: &str, file: &str) -> bool {
    let rel = file
        .strip_prefix(base)
        .unwrap_or(file)
        .trim_start_matches('/');
    let dirs: Vec<&str> = rel.split('/').collect();
    dirs[..dirs.len().saturating_sub(1)]
        .iter()
        .any(|d| d.starts_with('.') || extension(d) == Some("egg") || NORECURSE.contains(d))
}

/// The test files under a directory whose names match `patterns`.
fn test_files(call: &Call<'_>, dir: &str, patterns: &[String]) -> Vec<String> {
    let matchers: Vec<globset::GlobMatcher> = patterns.iter().filter_map(|p| glob(p)).collect();
    call.ctx
        .files_under(dir)
        .into_iter()
        .filter(|f| !skipped(dir, f) && matchers.iter().any(|m| m.is_match(file_name(f))))
        .collect()
}

/// Reads `python -m unittest` with the words after `unittest`.
fn unittest(call: &Call<'_>, args: &[Word], out: &mut Found) {
    let before = out.files.len();
    unittest_files(call, args, out);
    helpers(call, call.dir, before, out);
}

/// The test files `python -m unittest` runs.
fn unittest_files(call: &Call<'_>, args: &[Word], out: &mut Found) {
    let positional: Vec<&Word> = {
        let mut words = args.iter();
        let mut kept = Vec::new();
        while let Some(w) = words.next() {
            if ["-k", "--durations"].contains(&w.text.as_str()) {
                words.next();
            } else if !w.text.starts_with('-') || ["-s", "-p", "-t"].contains(&w.text.as_str()) {
                kept.push(w);
            }
        }
        kept
    };
    if positional.first().is_none_or(|w| w.text == "discover") {
        discover(call, positional.get(1..).unwrap_or_default(), out);
        return;
    }
    for name in positional {
        if name.expands {
            out.unresolved(format!(
                "`{}` has `{}`, which the shell expands",
                call.text, name.text
            ));
            continue;
        }
        let path = if name.text.contains('/') || extension(&name.text) == Some("py") {
            resolve(call.dir, &name.text)
        } else {
            module_file(call, &name.text)
        };
        match path {
            Some(p) if call.ctx.exists(&p) => out.file(&p, call.why(), ExamKind::File),
            _ => out.unresolved(format!(
                "`{}` names `{}`, which is no test module of the workspace",
                call.text, name.text
            )),
        }
    }
}

/// The file of a dotted test name (`tests.test_x.TestC.test_m`): its
/// longest prefix that is a module of the workspace.
fn module_file(call: &Call<'_>, dotted: &str) -> Option<String> {
    let parts: Vec<&str> = dotted.split('.').collect();
    (1..=parts.len()).rev().find_map(|n| {
        let path = resolve(call.dir, &format!("{}.py", parts[..n].join("/")))?;
        call.ctx.exists(&path).then_some(path)
    })
}

/// `python -m unittest discover [-s DIR] [-p PATTERN] [-t TOP]`.
fn discover(call: &Call<'_>, args: &[&Word], out: &mut Found) {
    let mut start = ".".to_owned();
    let mut pattern = "test*.py".to_owned();
    let mut operands = 0;
    let mut words = args.iter();
    while let Some(w) = words.next() {
        match w.text.as_str() {
            "-s" => start = words.next().map_or(start, |v| v.text.clone()),
            "-p" => pattern = words.next().map_or(pattern, |v| v.text.clone()),
            "-t" => {
                words.next();
            }
            _ => {
                // Positional: start, pattern, top.
                match operands {
                    0 => start.clone_from(&w.text),
                    1 => pattern.clone_from(&w.text),
                    _ => {}
                }
                operands += 1;
            }
        }
    }
    let Some(dir) = resolve(call.dir, &start) else {
        out.unresolved(format!(
            "`{}` discovers tests outside the workspace",
            call.text
        ));
        return;
    };
    let Some(m) = glob(&pattern) else { return };
    for file in call.ctx.files_under(&dir) {
        let name = file_name(&file);
        // A package's `__init__.py` may steer discovery (`load_tests`).
        if !skipped(&dir, &file) && (m.is_match(name) || name == "__init__.py") {
            out.file(&file, call.why(), ExamKind::File);
        }
    }
}

/// A pytest configuration: any change within its section, and the section
/// appearing or going (which changes the file pytest picks); a
/// `conftest.py` (code run inside pytest) counts as a whole.
pub(super) fn pytest_changes(
    name: &str,
    section: Option<&str>,
    base: Option<&[u8]>,
    now: Option<&[u8]>,
) -> Vec<LaunchChange> {
    let Some(section) = section.filter(|_| name != "conftest.py") else {
        return whole_file(base, now);
    };
    let read = |b: Option<&[u8]>| -> Option<BTreeMap<String, String>> {
        let Some(b) = b else {
            return Some(BTreeMap::new());
        };
        let text = String::from_utf8_lossy(b);
        let mut keys = if name == "pyproject.toml" {
            // A file that is not TOML counts as a whole.
            text.parse::<toml::Table>().ok()?;
            let mut flat = BTreeMap::new();
            if let Some(t) = pyproject_section(&text) {
                super::cargo::flatten(&toml::Value::Table(t), section, &mut flat);
            }
            flat
        } else {
            ini::keys(&text, Some(section))
        };
        let present = match name {
            "pytest.ini" | ".pytest.ini" => true,
            "pyproject.toml" => pyproject_section(&text).is_some(),
            _ => ini::has_section(&text, section),
        };
        if present {
            keys.insert(format!("[{section}]"), "present".to_owned());
        }
        Some(keys)
    };
    match (read(base), read(now)) {
        (Some(w), Some(n)) => changed_keys(&w, &n, |_| true),
        _ => whole_file(base, now),
    }
}

#[cfg(test)]
mod tests;
