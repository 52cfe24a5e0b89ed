//! Python: what lines added to a module can do. A module's top level runs
//! when pytest or unittest imports it (a package's `__init__.py` before
//! any module of the package), so an added statement there, an added
//! decorator or hook, a definition that takes an old one's name, or a line
//! inserted into an old function is an edit of the exam; a new function or
//! class with its body is a test of its own.

use std::collections::{BTreeMap, BTreeSet};

use super::words::{callee, calls, identifiers, shown};

/// Names that end or replace the process wherever they are called.
const EXITS: [&str; 13] = [
    "_exit",
    "exit",
    "quit",
    "SystemExit",
    "abort",
    "execv",
    "execve",
    "execl",
    "execle",
    "execlp",
    "execlpe",
    "execvp",
    "execvpe",
];

/// Functions a runner calls around old tests or instead of them: defined
/// in a module or an old class, they run with tests from before the change.
const AROUND: [&str; 17] = [
    "load_tests",
    "setup_module",
    "teardown_module",
    "setUpModule",
    "tearDownModule",
    "setup_function",
    "teardown_function",
    "setup_method",
    "teardown_method",
    "setup_class",
    "teardown_class",
    "setup",
    "teardown",
    "setUp",
    "tearDown",
    "setUpClass",
    "tearDownClass",
];

/// Module names a runner reads to select, mark or skip tests.
const STEERING: [&str; 7] = [
    "pytestmark",
    "__test__",
    "collect_ignore",
    "collect_ignore_glob",
    "pytest_plugins",
    "load_tests",
    "__unittest",
];

/// Calls a module may make at its top level: they compute a value and run
/// nothing of the workspace.
const PURE_CALLS: [&str; 14] = [
    "dict",
    "list",
    "tuple",
    "set",
    "frozenset",
    "range",
    "str",
    "int",
    "float",
    "bytes",
    "object",
    "re.compile",
    "Path",
    "pathlib.Path",
];

/// One logical line: its physical lines, its indentation and its code with
/// string contents and comments taken out.
#[derive(Debug)]
struct Logical {
    first: usize,
    last: usize,
    indent: usize,
    code: String,
    /// The physical lines as written, joined.
    raw: String,
}

/// What the file held before the change.
struct Known<'a> {
    /// The names each scope bound.
    bound: &'a BTreeMap<String, BTreeSet<String>>,
    /// Its import statements.
    imports: &'a BTreeSet<String>,
}

/// A block a line is in.
#[derive(Debug)]
struct Block {
    indent: usize,
    kind: Kind,
    name: String,
    gained: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Def,
    Class,
    /// `if __name__ == "__main__":`, which no runner runs.
    Main,
    Other,
}

/// The first gained line of `now` that edits the exam, and why.
pub(super) fn judge(base: &str, now: &str, gained: &BTreeSet<usize>) -> Option<(usize, String)> {
    let bound = bindings(base);
    let imports: BTreeSet<String> = logical_lines(base)
        .into_iter()
        .map(|l| l.code.trim().to_owned())
        .filter(|c| c.starts_with("import ") || c.starts_with("from "))
        .collect();
    let mut stack: Vec<Block> = Vec::new();
    // The decorators waiting for their definition: (line, gained).
    let mut decorators: Vec<(usize, bool)> = Vec::new();
    for line in logical_lines(now) {
        while stack.last().is_some_and(|b| b.indent >= line.indent) {
            stack.pop();
        }
        let is_gained = (line.first..=line.last).any(|n| gained.contains(&n));
        let code = line.code.trim();
        let header = header(code, &line.raw);
        let known = &Known {
            bound: &bound,
            imports: &imports,
        };
        if is_gained && let Some(why) = judge_line(code, header.as_ref(), &stack, known) {
            return Some((line.first, why));
        }
        if code.starts_with('@') {
            decorators.push((line.first, is_gained));
            continue;
        }
        if let Some((kind, name)) = header {
            if matches!(kind, Kind::Def | Kind::Class) {
                for (at, decorated) in decorators.drain(..) {
                    if decorated != is_gained {
                        let why = if decorated {
                            format!(
                                "adds a decorator to `{name}`, which was there before the change: it changes what an old test does"
                            )
                        } else {
                            format!(
                                "puts `{name}` under a decorator from before the change: the old definition loses it"
                            )
                        };
                        return Some((at, why));
                    }
                }
            }
            stack.push(Block {
                indent: line.indent,
                kind,
                name,
                gained: is_gained,
            });
        }
        decorators.clear();
    }
    None
}

/// Why a gained line edits the exam, if it does.
fn judge_line(
    code: &str,
    header: Option<&(Kind, String)>,
    stack: &[Block],
    known: &Known<'_>,
) -> Option<String> {
    if stack.iter().any(|b| b.kind == Kind::Main) || header.is_some_and(|(k, _)| *k == Kind::Main) {
        return None;
    }
    if let Some(exit) = identifiers(code).find(|w| EXITS.contains(w)) {
        return Some(format!(
            "calls `{exit}` (`{}`): it can end the run before the tests do",
            shown(code)
        ));
    }
    if let Some(def) = stack.iter().find(|b| b.kind == Kind::Def) {
        return (!def.gained).then(|| {
            format!(
                "is inserted into `{}`, a function from before the change: it changes what an old test does",
                def.name
            )
        });
    }
    if stack.iter().any(|b| b.kind == Kind::Other) {
        return Some(format!(
            "adds `{}`, which runs when the module is imported",
            shown(code)
        ));
    }
    let class = stack.iter().rev().find(|b| b.kind == Kind::Class);
    let scope = scope_of(stack);
    let rebinds = |name: &str| {
        known
            .bound
            .get(&scope)
            .is_some_and(|names| names.contains(name))
    };
    if let Some((kind, name)) = header {
        return match kind {
            Kind::Main => None,
            Kind::Other => Some(format!(
                "adds `{}`, which runs when the module is imported",
                shown(code)
            )),
            _ if name.starts_with("pytest_") => Some(format!(
                "adds the hook `{name}`, which pytest calls around every test"
            )),
            _ if AROUND.contains(&name.as_str()) && class.is_none_or(|c| !c.gained) => {
                Some(format!(
                    "adds `{name}`, which the runner calls with the tests from before the change"
                ))
            }
            _ if rebinds(name) => Some(format!(
                "defines `{name}` again: the definition from before the change no longer runs"
            )),
            _ => None,
        };
    }
    if code.starts_with('@') {
        return code.contains("autouse").then(|| {
            "adds an autouse fixture, which runs with every test from before the change".to_owned()
        });
    }
    if is_string_only(code) || code == "pass" || code == "..." {
        return None;
    }
    if code.starts_with("import ") || code.starts_with("from ") {
        if code.ends_with('*') || code.contains("import *") {
            return Some(format!(
                "adds `{}`, which may rebind any name the old tests use",
                shown(code)
            ));
        }
        if known.imports.contains(code) {
            return None;
        }
        let names = import_names(code);
        return names
            .iter()
            .find(|n| rebinds(n))
            .map(|n| format!("imports `{n}` over the name the old tests used"));
    }
    let Some(targets) = assignment(code) else {
        return Some(format!(
            "adds `{}`, which runs when the module is imported",
            shown(code)
        ));
    };
    if let Some(name) = targets.iter().find(|t| STEERING.contains(&t.as_str())) {
        return Some(format!("sets `{name}`, which steers what the runner runs"));
    }
    if let Some(name) = targets.iter().find(|t| rebinds(t)) {
        return Some(format!(
            "assigns `{name}` again: the old tests see the new value"
        ));
    }
    let value = code.split_once('=').map_or("", |(_, v)| v);
    calls(value)
        .into_iter()
        .map(|at| callee(value, at))
        .find(|c| !pure_call(c))
        .map(|c| {
            format!(
                "calls `{c}` when the module is imported (`{}`)",
                shown(code)
            )
        })
}

fn pure_call(callee: &str) -> bool {
    callee.is_empty()
        || callee.starts_with("pytest.")
        || PURE_CALLS.contains(&callee)
        || [
            "in", "not", "and", "or", "if", "else", "lambda", "for", "is",
        ]
        .contains(&callee)
}

/// The scope key of a line: the classes it is in, dotted ("" at the top).
fn scope_of(stack: &[Block]) -> String {
    stack
        .iter()
        .filter(|b| b.kind == Kind::Class)
        .map(|b| b.name.as_str())
        .collect::<Vec<_>>()
        .join(".")
}

/// The names each scope (module, class) of `text` binds, outside functions.
fn bindings(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack: Vec<Block> = Vec::new();
    for line in logical_lines(text) {
        while stack.last().is_some_and(|b| b.indent >= line.indent) {
            stack.pop();
        }
        let code = line.code.trim();
        let header = header(code, &line.raw);
        if !stack.iter().any(|b| b.kind == Kind::Def) {
            let names = match &header {
                Some((Kind::Def | Kind::Class, name)) => vec![name.clone()],
                Some(_) => Vec::new(),
                None if code.starts_with("import ") || code.starts_with("from ") => {
                    import_names(code)
                }
                None => assignment(code).unwrap_or_default(),
            };
            out.entry(scope_of(&stack)).or_default().extend(names);
        }
        if let Some((kind, name)) = header {
            stack.push(Block {
                indent: line.indent,
                kind,
                name,
                gained: false,
            });
        }
    }
    out
}

/// A block's header: `def`/`class` with the name, `if __name__ ==
/// "__main__":`, or another compound statement.
fn header(code: &str, raw: &str) -> Option<(Kind, String)> {
    let code = code.strip_prefix("async ").unwrap_or(code);
    let name_after = |rest: &str| {
        rest.trim_start()
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    if let Some(rest) = code.strip_prefix("def ") {
        return Some((Kind::Def, name_after(rest)));
    }
    if let Some(rest) = code.strip_prefix("class ") {
        return Some((Kind::Class, name_after(rest)));
    }
    let keyword = code
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or_default();
    if !code.ends_with(':') && !code.contains(": ") {
        return None;
    }
    match keyword {
        "if" if code.contains("__name__") && raw.contains("__main__") => {
            Some((Kind::Main, String::new()))
        }
        "if" | "elif" | "else" | "for" | "while" | "with" | "try" | "except" | "finally"
        | "match" | "case" => Some((Kind::Other, keyword.to_owned())),
        _ => None,
    }
}

/// The names an import binds (`import a.b` binds `a`; `as` names).
fn import_names(code: &str) -> Vec<String> {
    let list = match code.strip_prefix("from ") {
        Some(rest) => rest.split_once(" import ").map_or("", |(_, n)| n),
        None => code.strip_prefix("import ").unwrap_or_default(),
    };
    list.split(',')
        .filter_map(|part| {
            let part = part.trim().trim_matches(|c| c == '(' || c == ')').trim();
            let name = match part.split_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None => part.split('.').next().unwrap_or_default(),
            };
            (!name.is_empty()).then(|| name.to_owned())
        })
        .collect()
}

/// The names an assignment statement binds (`a = b = 1`, `a, b = …`,
/// `a: int = 1`), `None` when the line is no assignment.
fn assignment(code: &str) -> Option<Vec<String>> {
    let mut names = Vec::new();
    let mut rest = code;
    let mut any = false;
    while let Some(at) = rest.find('=') {
        let (left, after) = rest.split_at(at);
        let after = &after[1..];
        // `==`, `<=`, `!=`, `+=` and keyword arguments are not assignments.
        if after.starts_with('=') || left.ends_with(['<', '>', '!', '=', '(', ',']) {
            break;
        }
        let target = left.split_once(':').map_or(left, |(t, _)| t);
        let is_target = target.split(',').all(|t| {
            let t = t.trim();
            !t.is_empty()
                && t.chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        });
        if !is_target {
            break;
        }
        any = true;
        names.extend(target.split(',').map(|t| t.trim().to_owned()));
        rest = after;
    }
    any.then_some(names)
}

/// Whether a statement is a string and nothing else (a docstring).
fn is_string_only(code: &str) -> bool {
    let body = code.trim_start_matches(|c| "rRbBuUfF".contains(c));
    !body.is_empty() && body.chars().all(|c| c == '"' || c == '\'')
}

/// The logical lines of Python source: a statement over several physical
/// lines (brackets, a `\`, a triple-quoted string) is one, with the string
/// contents and comments taken out of its code.
fn logical_lines(text: &str) -> Vec<Logical> {
    let mut out = Vec::new();
    let mut current: Option<Logical> = None;
    // An open string: its quote and whether it is triple.
    let mut string: Option<(char, bool)> = None;
    let mut depth = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        let mut line = raw;
        if current.is_none() {
            let trimmed = raw.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            current = Some(Logical {
                first: number,
                last: number,
                indent: raw.len() - trimmed.len(),
                code: String::new(),
                raw: String::new(),
            });
            line = trimmed;
        }
        let Some(logical) = current.as_mut() else {
            continue;
        };
        logical.raw.push_str(line);
        logical.raw.push('\n');
        let chars: Vec<char> = line.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            if let Some((quote, triple)) = string {
                if c == '\\' {
                    k += 2;
                    continue;
                }
                if c == quote
                    && (!triple
                        || (chars.get(k + 1) == Some(&quote) && chars.get(k + 2) == Some(&quote)))
                {
                    k += if triple { 3 } else { 1 };
                    logical.code.push(quote);
                    string = None;
                    continue;
                }
                k += 1;
                continue;
            }
            match c {
                '#' => break,
                '\'' | '"' => {
                    let triple = chars.get(k + 1) == Some(&c) && chars.get(k + 2) == Some(&c);
                    logical.code.push(c);
                    string = Some((c, triple));
                    k += if triple { 3 } else { 1 };
                    continue;
                }
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            logical.code.push(c);
            k += 1;
        }
        logical.last = number;
        if string.is_some_and(|(_, triple)| !triple) {
            logical.code.push('"');
            string = None;
        }
        let continued = logical.code.trim_end().ends_with('\\');
        if continued {
            let kept = logical.code.trim_end().trim_end_matches('\\').len();
            logical.code.truncate(kept);
        }
        if string.is_some() || depth > 0 || continued {
            logical.code.push(' ');
        } else if let Some(done) = current.take() {
            out.push(done);
        }
    }
    out.extend(current);
    out
}
