//! `make T`: the makefile make picks and the files it includes, and what
//! the recipes of `T` and its prerequisites (transitively) run, each
//! recipe line read as a command line of its own.

use std::collections::{BTreeMap, BTreeSet};

use super::model::{ExamKind, LaunchChange, Runner, changed_keys};
use super::path::{glob, in_dir, is_glob, resolve};
use super::walk::{Call, Found};

/// The makefiles make looks for, in its order.
const MAKEFILES: [&str; 3] = ["GNUmakefile", "makefile", "Makefile"];

/// How deep a variable's value is expanded.
const MAX_EXPANSION: usize = 10;

/// How many files `include` is followed into.
const MAX_INCLUDES: usize = 64;

/// A rule: its prerequisites and recipe lines.
#[derive(Default)]
struct Rule {
    prereqs: Vec<String>,
    recipe: Vec<String>,
}

/// What is read of a makefile and what it includes.
#[derive(Default)]
struct Makefile {
    rules: BTreeMap<String, Rule>,
    vars: BTreeMap<String, String>,
    first: Option<String>,
    /// The files read, with the first.
    read: Vec<String>,
}

/// What a make command line names.
#[derive(Default)]
struct MakeArgs {
    dir: String,
    files: Vec<String>,
    include_dirs: Vec<String>,
    targets: Vec<String>,
    vars: BTreeMap<String, String>,
}

/// Reads a `make` command.
pub(super) fn exam(call: &Call<'_>, out: &mut Found) {
    let Some(args) = make_args(call, out) else {
        return;
    };
    let dir = args.dir.clone();
    let mut files: Vec<String> = args.files.iter().filter_map(|f| resolve(&dir, f)).collect();
    if files.is_empty() {
        // A makefile ahead of the one used in make's order would replace it.
        for name in MAKEFILES {
            let path = in_dir(&dir, name);
            if call.ctx.exists(&path) {
                files.push(path);
                break;
            }
            out.config(&path, Runner::Make, None);
        }
    }
    if files.is_empty() {
        out.unresolved(format!(
            "`{}` finds no makefile in `{}`",
            call.text,
            if dir.is_empty() { "." } else { &dir }
        ));
        return;
    }
    let mut make = Makefile {
        vars: args.vars.clone(),
        ..Makefile::default()
    };
    for file in &files {
        read_makefile(call, &args, file, &mut make, out);
    }
    let goals = if args.targets.is_empty() {
        make.vars
            .get(".DEFAULT_GOAL")
            .cloned()
            .or_else(|| make.first.clone())
            .into_iter()
            .collect()
    } else {
        args.targets.clone()
    };
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for goal in &goals {
        let wanted = args.targets.contains(goal);
        visit(call, &make, &dir, goal, wanted, &mut seen, out);
    }
    // Each makefile read is also a configuration: what it says of these
    // targets and the variables their recipes read (see `make_changes`).
    let section = format!(
        "{} | {}",
        seen.iter().cloned().collect::<Vec<_>>().join(" "),
        referenced(&make, &seen).join(" ")
    );
    for file in &make.read {
        out.config(file, Runner::Make, Some(&section));
    }
}

/// The variables the recipes and prerequisites of `targets` read,
/// through the values of the variables they read.
fn referenced(make: &Makefile, targets: &BTreeSet<String>) -> Vec<String> {
    let mut texts: Vec<String> = targets
        .iter()
        .filter_map(|t| make.rules.get(t))
        .flat_map(|r| {
            r.recipe
                .iter()
                .cloned()
                .chain(std::iter::once(r.prereqs.join(" ")))
        })
        .collect();
    let mut names: BTreeSet<String> = BTreeSet::new();
    while let Some(text) = texts.pop() {
        for name in variable_names(&text) {
            if names.insert(name.clone())
                && let Some(value) = make.vars.get(&name)
            {
                texts.push(value.clone());
            }
        }
    }
    names.into_iter().collect()
}

/// The names in `$(NAME)` and `${NAME}` of a text (a function's name, as
/// in `$(shell …)`, is read as one too: it is no variable any file sets).
fn variable_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let Some(close) = rest
            .strip_prefix('(')
            .map(|_| ')')
            .or_else(|| rest.strip_prefix('{').map(|_| '}'))
        else {
            continue;
        };
        let name: String = rest[1..]
            .chars()
            .take_while(|c| *c != close && !c.is_whitespace() && *c != ':' && *c != '$')
            .collect();
        if !name.is_empty() {
            out.push(name);
        }
    }
    out
}

/// Variables and special targets that change how every recipe runs.
const SPECIAL: [&str; 8] = [
    "SHELL",
    ".SHELLFLAGS",
    "MAKEFLAGS",
    ".DEFAULT_GOAL",
    ".RECIPEPREFIX",
    ".ONESHELL",
    ".IGNORE",
    ".POSIX",
];

/// A makefile the command reads, as a configuration: the recipes and
/// prerequisites of the targets it makes, the variables they read
/// (`section` is `TARGETS | VARIABLES`, as [`exam`] writes it), and the
/// special variables and targets that change how recipes run. A recipe
/// that only gained lines, or a rule for the target added later in the
/// file (make runs the last), changes what runs as much as an edit.
pub(super) fn make_changes(
    section: &str,
    base: Option<&[u8]>,
    now: Option<&[u8]>,
) -> Vec<LaunchChange> {
    let (targets, vars) = section.split_once('|').unwrap_or((section, ""));
    let keys = |bytes: Option<&[u8]>| -> BTreeMap<String, String> {
        let mut make = Makefile::default();
        if let Some(b) = bytes {
            parse_lines(&String::from_utf8_lossy(b), &mut make, &mut |_, _| {});
        }
        let mut out = BTreeMap::new();
        for t in targets.split_whitespace().chain(SPECIAL.iter().copied()) {
            if let Some(rule) = make.rules.get(t) {
                out.insert(format!("recipe of `{t}`"), rule.recipe.join("\n"));
                out.insert(format!("prerequisites of `{t}`"), rule.prereqs.join(" "));
            }
        }
        for v in vars.split_whitespace().chain(SPECIAL.iter().copied()) {
            if let Some(value) = make.vars.get(v) {
                out.insert(format!("variable `{v}`"), value.clone());
            }
        }
        out
    };
    changed_keys(&keys(base), &keys(now), |_| true)
}

/// Reads what making `target` runs: its prerequisites' recipes, then its own.
fn visit(
    call: &Call<'_>,
    make: &Makefile,
    dir: &str,
    target: &str,
    wanted: bool,
    seen: &mut BTreeSet<String>,
    out: &mut Found,
) {
    if !seen.insert(target.to_owned()) {
        return;
    }
    let Some(rule) = make.rules.get(target) else {
        if wanted && !call.ctx.exists(&in_dir(dir, target)) {
            out.unresolved(format!(
                "`{}`: the makefile has no rule for `{target}`",
                call.text
            ));
        }
        return;
    };
    for prereq in &rule.prereqs {
        visit(call, make, dir, prereq, false, seen, out);
    }
    let lines: Vec<String> = rule
        .recipe
        .iter()
        .map(|l| {
            let line = expand(&make.vars, l, target, rule, 0);
            line.trim_start_matches(['@', '-', '+', ' ', '\t'])
                .to_owned()
        })
        .collect();
    if make.rules.contains_key(".ONESHELL") {
        // One shell runs the whole recipe: a `cd` holds for what follows.
        call.run_line(&lines.join("\n"), dir, out);
    } else {
        for line in &lines {
            call.run_line(line, dir, out);
        }
    }
}

/// The directory, makefiles, targets and variables of a make command line.
fn make_args(call: &Call<'_>, out: &mut Found) -> Option<MakeArgs> {
    let mut args = MakeArgs {
        dir: call.dir.to_owned(),
        ..MakeArgs::default()
    };
    let mut words = call.args.iter().peekable();
    while let Some(w) = words.next() {
        let t = w.text.as_str();
        let mut value = |short: &str, long: &str| -> Option<String> {
            if t == short || t == long {
                words.next().map(|v| v.text.clone())
            } else if let Some(v) = t.strip_prefix(&format!("{long}=")) {
                Some(v.to_owned())
            } else {
                t.strip_prefix(short)
                    .filter(|v| !v.is_empty() && !t.starts_with("--"))
                    .map(str::to_owned)
            }
        };
        if let Some(d) = value("-C", "--directory") {
            let Some(d) = resolve(&args.dir, &d) else {
                out.unresolved(format!(
                    "`{}` runs make in a directory outside the workspace",
                    call.text
                ));
                return None;
            };
            args.dir = d;
        } else if let Some(f) =
            value("-f", "--file").or_else(|| t.strip_prefix("--makefile=").map(str::to_owned))
        {
            args.files.push(f);
        } else if let Some(i) = value("-I", "--include-dir") {
            args.include_dirs.push(i);
        } else if ["-o", "-W", "-l"].contains(&t) {
            words.next();
        } else if t == "-j" {
            // `-j` takes an optional count.
            if words
                .peek()
                .is_some_and(|n| n.text.chars().all(|c| c.is_ascii_digit()))
            {
                words.next();
            }
        } else if t.starts_with('-') {
        } else if w.expands {
            out.unresolved(format!(
                "`{}` names a target through an expansion: `{t}`",
                call.text
            ));
        } else if let Some((k, v)) = t
            .split_once('=')
            .filter(|_| crate::verifier::is_assignment(t))
        {
            args.vars.insert(k.to_owned(), v.to_owned());
        } else {
            args.targets.push(t.to_owned());
        }
    }
    Some(args)
}

/// Reads one makefile into `make`: its rules, variables and includes.
fn read_makefile(
    call: &Call<'_>,
    args: &MakeArgs,
    path: &str,
    make: &mut Makefile,
    out: &mut Found,
) {
    if make.read.iter().any(|r| r == path) || make.read.len() >= MAX_INCLUDES {
        return;
    }
    let Some(text) = call.read_text(path) else {
        return;
    };
    make.read.push(path.to_owned());
    out.file(
        path,
        format!("`{}` reads it{}", call.text, call.scope.via),
        ExamKind::File,
    );
    parse_lines(&text, make, &mut |make, rest| {
        includes(call, args, path, rest, make, out);
    });
}

/// Reads a makefile's text into `make`; `include` reads what an include
/// line names (its words as written) at the point it is named.
fn parse_lines(text: &str, make: &mut Makefile, include: &mut dyn FnMut(&mut Makefile, &str)) {
    // The rules a recipe line belongs to.
    let mut current: Vec<String> = Vec::new();
    let mut in_define = false;
    for line in logical_lines(text) {
        if in_define {
            in_define = line.trim() != "endef";
            continue;
        }
        if let Some(recipe) = line.strip_prefix('\t') {
            for t in &current {
                if let Some(rule) = make.rules.get_mut(t) {
                    rule.recipe.push(recipe.to_owned());
                }
            }
            continue;
        }
        let code = strip_comment(&line);
        let trimmed = code.trim();
        if trimmed.is_empty() {
            continue;
        }
        current.clear();
        let first = trimmed.split_whitespace().next().unwrap_or_default();
        match first {
            "define" => in_define = true,
            "include" | "-include" | "sinclude" => {
                include(make, trimmed[first.len()..].trim());
            }
            "ifeq" | "ifneq" | "ifdef" | "ifndef" | "else" | "endif" | "export" | "unexport"
            | "override" | "vpath"
                if !is_assignment(trimmed) =>
            {
                // Conditionals are read through: both branches count.
            }
            _ => current = statement(trimmed, make),
        }
    }
}

/// The files an `include` line names, read in turn; an absent one is a
/// configuration (adding it changes the rules).
fn includes(
    call: &Call<'_>,
    args: &MakeArgs,
    from: &str,
    rest: &str,
    make: &mut Makefile,
    out: &mut Found,
) {
    let expanded = expand(&make.vars, rest, "", &Rule::default(), 0);
    for word in expanded.split_whitespace() {
        if word.contains('$') {
            out.unresolved(format!(
                "`{from}` includes `{word}`, a make variable or function not known from the text"
            ));
            continue;
        }
        let candidates: Vec<String> = std::iter::once(args.dir.clone())
            .chain(
                args.include_dirs
                    .iter()
                    .filter_map(|d| resolve(&args.dir, d)),
            )
            .filter_map(|d| resolve(&d, word))
            .collect();
        if is_glob(word) {
            for c in &candidates {
                let Some(m) = glob(c) else { continue };
                for file in call
                    .ctx
                    .files_under(&args.dir)
                    .into_iter()
                    .filter(|f| m.is_match(f))
                {
                    read_makefile(call, args, &file, make, out);
                }
            }
            continue;
        }
        match candidates.iter().find(|c| call.ctx.exists(c)) {
            Some(found) => read_makefile(call, args, &found.clone(), make, out),
            None => {
                if let Some(first) = candidates.first() {
                    out.config(first, Runner::Make, None);
                }
            }
        }
    }
}

/// Reads a variable assignment or a rule line; returns the targets whose
/// recipe lines follow.
fn statement(code: &str, make: &mut Makefile) -> Vec<String> {
    if is_assignment(code) {
        let (name, value) = assignment(code);
        let value = match make.vars.get(&name) {
            Some(old) if code.contains("+=") => format!("{old} {value}"),
            Some(_) if code.contains("?=") => return Vec::new(),
            _ => value,
        };
        make.vars.insert(name, value);
        return Vec::new();
    }
    let Some((targets, rest)) = code.split_once(':') else {
        return Vec::new();
    };
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    // `t: VAR = x` sets a variable for `t`, no prerequisites.
    if is_assignment(rest.trim()) {
        return Vec::new();
    }
    let (prereqs, inline) = match rest.split_once(';') {
        Some((prereqs, recipe)) => (prereqs, Some(recipe.trim().to_owned())),
        None => (rest, None),
    };
    let targets: Vec<String> = targets
        .split_whitespace()
        .map(|t| expand(&make.vars, t, "", &Rule::default(), 0))
        .filter(|t| !t.contains('%'))
        .collect();
    let prereqs: Vec<String> = expand(&make.vars, prereqs, "", &Rule::default(), 0)
        .split_whitespace()
        .filter(|p| *p != "|")
        .map(str::to_owned)
        .collect();
    for t in &targets {
        if make.first.is_none() && !t.starts_with('.') {
            make.first = Some(t.clone());
        }
        let rule = make.rules.entry(t.clone()).or_default();
        rule.prereqs.extend(prereqs.iter().cloned());
        if let Some(recipe) = &inline {
            rule.recipe.push(recipe.clone());
        }
    }
    targets
}

/// Whether a line assigns a variable (`A = b`, `A := b`, `A ?= b`, …)
/// rather than stating a rule.
fn is_assignment(code: &str) -> bool {
    let code = code
        .strip_prefix("export ")
        .or_else(|| code.strip_prefix("override "))
        .unwrap_or(code);
    match (code.find('='), code.find(':')) {
        (Some(eq), Some(colon)) => {
            eq < colon || code[colon..].starts_with(":=") || code[colon..].starts_with("::=")
        }
        (Some(_), None) => true,
        _ => false,
    }
}

/// The name and value of an assignment.
fn assignment(code: &str) -> (String, String) {
    let code = code
        .strip_prefix("export ")
        .or_else(|| code.strip_prefix("override "))
        .unwrap_or(code);
    let (name, value) = code.split_once('=').unwrap_or((code, ""));
    let name = name
        .trim_end_matches([':', '?', '+', '!', ' ', '\t'])
        .trim();
    (name.to_owned(), value.trim().to_owned())
}

/// A line without its comment (`#` not escaped).
fn strip_comment(line: &str) -> String {
    let mut out = String::new();
    let mut escaped = false;
    for c in line.chars() {
        if c == '#' && !escaped {
            break;
        }
        escaped = c == '\\';
        out.push(c);
    }
    out
}

/// The makefile's lines with backslash continuations joined (a recipe
/// keeps its backslash-newline, which the shell reads).
fn logical_lines(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut pending: Option<String> = None;
    for line in text.lines() {
        let joined = match pending.take() {
            Some(mut p) => {
                if p.starts_with('\t') {
                    p.push('\n');
                    p.push_str(line.trim_start_matches('\t'));
                } else {
                    p.push(' ');
                    p.push_str(line.trim_start());
                }
                p
            }
            None => line.to_owned(),
        };
        match joined.strip_suffix('\\') {
            Some(head) if !joined.starts_with('\t') => pending = Some(head.to_owned()),
            Some(_) => pending = Some(joined),
            None => out.push(joined),
        }
    }
    out.extend(pending);
    out
}

/// Expands the variables a makefile defines (and `$@`, `$<`, `$^`, `$$`,
/// `$(MAKE)`); what is unknown stays as written, for the shell's reader to
/// see as an expansion.
fn expand(
    vars: &BTreeMap<String, String>,
    text: &str,
    target: &str,
    rule: &Rule,
    depth: usize,
) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let Some(&n) = chars.peek() else {
            out.push('$');
            break;
        };
        chars.next();
        let name: String = match n {
            '$' => {
                // `$$` is the shell's `$`.
                out.push('$');
                continue;
            }
            '(' | '{' => {
                let close = if n == '(' { ')' } else { '}' };
                let mut name = String::new();
                let mut nesting = 0usize;
                for c in chars.by_ref() {
                    if c == n {
                        nesting += 1;
                    } else if c == close {
                        if nesting == 0 {
                            break;
                        }
                        nesting -= 1;
                    }
                    name.push(c);
                }
                name
            }
            single => single.to_string(),
        };
        let value = match name.as_str() {
            "MAKE" => Some("make".to_owned()),
            "CURDIR" => Some(".".to_owned()),
            "@" => Some(target.to_owned()),
            "<" => rule.prereqs.first().cloned(),
            "^" => Some(rule.prereqs.join(" ")),
            n if depth < MAX_EXPANSION => vars
                .get(n)
                .map(|v| expand(vars, v, target, rule, depth + 1)),
            _ => None,
        };
        if let Some(v) = value {
            out.push_str(&v);
        } else {
            out.push_str("$(");
            out.push_str(&name);
            out.push(')');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{Mem, configs, files};
    use super::super::{Runner, RunnerConfig, exam, launch_changes};

    #[test]
    fn launch_changes_of_a_makefile() {
        let base =
            "PY = python3\ncheck: build\n\t$(PY) t.py\nbuild:\n\tcc x.c\nlint:\n\teslint .\n";
        let cases: &[(&str, &[&str])] = &[
            (base, &[]),
            (
                "PY = python3\ncheck: build\n\t$(PY) t.py\nbuild:\n\tcc x.c\nlint:\n\teslint src\ndocs:\n\tmkdocs\n",
                &[],
            ),
            (
                "PY = python3\ncheck: build\n\t$(PY) t.py\n\texit 0\nbuild:\n\tcc x.c\n",
                &["recipe of `check`"],
            ),
            (
                "PY = python3\ncheck: build\n\t$(PY) t.py\nbuild:\n\tcc x.c\ncheck:\n\t@true\n",
                &["recipe of `check`"],
            ),
            (
                "PY = true\ncheck: build\n\t$(PY) t.py\nbuild:\n\tcc x.c\n",
                &["variable `PY`"],
            ),
            (
                "SHELL := /bin/true\nPY = python3\ncheck: build\n\t$(PY) t.py\nbuild:\n\tcc x.c\n",
                &["variable `SHELL`"],
            ),
            (
                ".IGNORE:\nPY = python3\ncheck: build setup\n\t$(PY) t.py\nbuild:\n\tcc x.c\n",
                &[
                    "prerequisites of `.IGNORE`",
                    "prerequisites of `check`",
                    "recipe of `.IGNORE`",
                ],
            ),
        ];
        let config = RunnerConfig {
            path: "Makefile".to_owned(),
            runner: Runner::Make,
            section: Some("build check | PY".to_owned()),
        };
        for (now, want) in cases {
            let got: Vec<String> =
                launch_changes(&config, Some(base.as_bytes()), Some(now.as_bytes()))
                    .into_iter()
                    .map(|c| c.key)
                    .collect();
            assert_eq!(got, *want, "{now}");
        }
    }

    fn tree() -> Mem {
        Mem::new(&[
            (
                "Makefile",
                ".PHONY: check all\nall: build\ninclude common.mk\n-include local.mk\nPY := python3\n\ncheck: build unit ## runs the exam\n\t@$(PY) tests/accept.py\n\t./scripts/e2e.sh --fast\n\nunit:\n\tcargo test --test server\n\nbuild:\n\t$(MAKE) -C sub build\n\nother:\n\tnode other.js\n",
            ),
            ("common.mk", "lint:\n\tnpx eslint .\n"),
            ("tests/accept.py", "\n"),
            ("scripts/e2e.sh", "#!/bin/sh\npytest tests/acc\n"),
            ("tests/acc/test_a.py", "\n"),
            ("Cargo.toml", "[package]\nname = \"a\"\n"),
            ("tests/server.rs", "\n"),
            ("sub/Makefile", "build:\n\tnode build.js\n"),
            ("sub/build.js", "\n"),
            (
                "vars/Makefile",
                "include $(SHARED)/x.mk\ntest:\n\tbash $(RUNNER)\n",
            ),
        ])
    }

    #[test]
    fn what_make_runs() {
        let tree = tree();
        let cases: &[(&str, &[&str])] = &[
            (
                "make check",
                &[
                    "Makefile",
                    "common.mk",
                    "sub/Makefile",
                    "sub/build.js",
                    "tests/server.rs",
                    "tests/accept.py",
                    "scripts/e2e.sh",
                    "tests/acc/test_a.py",
                ],
            ),
            (
                "make",
                &["Makefile", "common.mk", "sub/Makefile", "sub/build.js"],
            ),
            ("gmake -C sub", &["sub/Makefile", "sub/build.js"]),
            (
                // `-f` changes no directory: the recipe runs at the root.
                "make -f sub/Makefile -j 4 build",
                &["sub/Makefile", "build.js"],
            ),
        ];
        for (run, want) in cases {
            let got = exam(run, &tree);
            assert_eq!(files(&got), *want, "{run}");
        }
        let got = exam("make check", &tree);
        assert_eq!(configs(&got)[..3], ["GNUmakefile", "makefile", "local.mk"]);
        for file in ["Makefile", "common.mk"] {
            let config = format!("{file}#build check unit | MAKE PY");
            assert!(configs(&got).contains(&config), "{:?}", configs(&got));
        }
        assert!(got.unresolved.is_empty(), "{:?}", got.unresolved);
        for run in ["make -C vars test", "make nope", "make -C empty"] {
            assert!(!exam(run, &tree).unresolved.is_empty(), "{run}");
        }
    }
}
