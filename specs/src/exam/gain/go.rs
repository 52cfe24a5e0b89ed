//! Go: what lines added to a package's files can do. A test binary is the
//! whole package: `TestMain` decides whether the tests run, every `init()`
//! and package variable runs before them, and a build constraint decides
//! whether a file is built at all. An added test function is a test of its
//! own; the rest is an edit of the exam.

use std::collections::{BTreeMap, BTreeSet};

use super::words::{callee, calls, shown};

/// Calls that end or replace the test binary, by their package's name.
const EXITS: [&str; 11] = [
    "os.Exit",
    "syscall.Exit",
    "unix.Exit",
    "runtime.Goexit",
    "syscall.Exec",
    "unix.Exec",
    "syscall.Syscall",
    "syscall.RawSyscall",
    "unix.Syscall",
    "unix.RawSyscall",
    "syscall.ForkExec",
];

/// Packages whose functions a package variable may call at start-up: they
/// compute a value and run nothing of the workspace.
const PURE_PACKAGES: [&str; 13] = [
    "regexp.",
    "errors.",
    "fmt.",
    "time.",
    "strings.",
    "bytes.",
    "strconv.",
    "filepath.",
    "path.",
    "url.",
    "big.",
    "sort.",
    "flag.",
];

/// What a package variable may not touch: the process's arguments and the
/// test flags, set before the tests read them.
const STEERING: [&str; 6] = [
    "os.Args",
    "flag.Set",
    "flag.Parse",
    "flag.CommandLine",
    "testing.",
    "}()",
];

/// Packages whose renaming in an import hides the calls above.
const WATCHED: [&str; 4] = [
    "\"os\"",
    "\"syscall\"",
    "\"runtime\"",
    "\"golang.org/x/sys/unix\"",
];

/// One line of Go: its code with strings and comments taken out, and the
/// depth of brackets it starts at.
struct Line<'a> {
    raw: &'a str,
    code: String,
    depth: usize,
}

/// A top-level declaration: its keyword, its name, and whether its first
/// line is one the change added.
#[derive(Clone)]
struct Decl {
    keyword: String,
    name: String,
    gained: bool,
}

/// The first gained line of a Go file (a test file, or a helper the tests
/// import) that edits the exam, and why. `new_file`: the change created
/// the file, so a build constraint there leaves out that file alone.
pub(super) fn judge_test(
    text: &str,
    gained: &BTreeSet<usize>,
    new_file: bool,
) -> Option<(usize, String)> {
    let lines = lines(text);
    let mut decl: Option<Decl> = None;
    for (i, line) in lines.iter().enumerate() {
        let number = i + 1;
        let is_gained = gained.contains(&number);
        if let Some(d) = declaration(line) {
            decl = Some(Decl {
                gained: is_gained,
                ..d
            });
        }
        if !is_gained {
            continue;
        }
        if let Some(why) = always(line, new_file) {
            return Some((number, why));
        }
        if line.code.trim().is_empty() {
            continue;
        }
        let Some(d) = &decl else { continue };
        let why = match d.keyword.as_str() {
            "func" if ["TestMain", "init"].contains(&d.name.as_str()) => Some(format!(
                "{} `func {}`, which runs before any test and decides whether they run",
                if d.gained { "adds" } else { "changes" },
                d.name
            )),
            "func" if !d.gained && line.depth > 0 => Some(format!(
                "is inserted into `{}`, a function from before the change: it changes what an old test does",
                d.name
            )),
            "var" => start_up(line),
            "import" => renamed_import(line),
            _ => None,
        };
        if why.is_some() {
            return why.map(|w| (number, w));
        }
    }
    None
}

/// The first line of a file of the code under test (non-test, built into
/// the tests) that the change added or changed and that runs when the test
/// binary starts, or ends it outside `main`: `init()`, a package variable
/// that calls a function literal or touches the arguments or test flags,
/// an exit.
pub(super) fn judge_package_code(base: &str, now: &str) -> Option<(usize, String)> {
    let mut had: BTreeMap<&str, usize> = BTreeMap::new();
    for line in base.lines() {
        *had.entry(line.trim()).or_default() += 1;
    }
    let lines = lines(now);
    let mut decl: Option<Decl> = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some(d) = declaration(line) {
            decl = Some(d);
        }
        // A line the base had (as often) is not the change's.
        if let Some(n) = had.get_mut(line.raw.trim())
            && *n > 0
        {
            *n -= 1;
            continue;
        }
        if line.code.trim().is_empty() && !line.raw.contains("go:linkname") {
            continue;
        }
        let in_main = line.depth > 0
            && decl
                .as_ref()
                .is_some_and(|d| d.keyword == "func" && d.name == "main");
        let why = match decl.as_ref().map(|d| (d.keyword.as_str(), d.name.as_str())) {
            Some(("func", "init")) => Some(
                "adds or changes `func init`, which runs when the test binary starts".to_owned(),
            ),
            Some(("var", _)) => start_up(line),
            Some(("import", _)) => renamed_import(line),
            _ => None,
        };
        let why = why.or_else(|| always(line, true).filter(|_| !in_main));
        if let Some(why) = why {
            return Some((i + 1, why));
        }
    }
    None
}

/// Why a line edits the exam wherever it is: an exit, a link to the
/// runtime's insides, a renamed `os`, a build constraint over an old file.
fn always(line: &Line<'_>, new_file: bool) -> Option<String> {
    let raw = line.raw.trim();
    if !new_file && (raw.starts_with("//go:build") || raw.starts_with("// +build")) {
        return Some(format!(
            "adds the build constraint `{}` to a file from before the change: its tests may no longer be built at all",
            shown(raw)
        ));
    }
    if raw.starts_with("//go:linkname") {
        return Some(format!(
            "adds `{}`, which reaches into another package's insides",
            shown(raw)
        ));
    }
    EXITS.iter().find(|e| mentions(&line.code, e)).map(|exit| {
        format!(
            "calls `{exit}` (`{}`): it can end the test binary before its tests do",
            shown(&line.code)
        )
    })
}

/// Why an import line hides what the file calls: `os`, `syscall`,
/// `runtime` or `unix` under another name, or dot-imported.
fn renamed_import(line: &Line<'_>) -> Option<String> {
    let raw = line.raw.split("//").next().unwrap_or_default().trim();
    let spec = raw.strip_prefix("import").map_or(raw, str::trim);
    (WATCHED.iter().any(|w| spec.ends_with(w)) && !WATCHED.contains(&spec)).then(|| {
        format!(
            "imports a package under another name (`{}`), which hides what the file calls",
            shown(raw)
        )
    })
}

/// Why a line of a package variable's declaration runs something when the
/// test binary starts: a function literal it calls, the test flags, or a
/// call to a function that is not known to only compute a value.
fn start_up(line: &Line<'_>) -> Option<String> {
    let code = line.code.trim();
    if let Some(what) = STEERING.iter().find(|s| code.contains(*s)) {
        return Some(format!(
            "adds a package variable that touches `{what}` when the test binary starts (`{}`)",
            shown(code)
        ));
    }
    let value = code.split_once('=').map(|(_, v)| v)?;
    calls(value)
        .into_iter()
        .map(|at| callee(value, at))
        .find(|c| {
            !c.is_empty()
                && !c.starts_with("func")
                && !PURE_PACKAGES.iter().any(|p| c.starts_with(p))
        })
        .map(|c| {
            format!(
                "adds a package variable that calls `{c}` when the test binary starts (`{}`)",
                shown(code)
            )
        })
}

/// Whether `code` names `what` (`os.Exit`) as a whole name.
fn mentions(code: &str, what: &str) -> bool {
    code.match_indices(what).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + what.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The declaration a line at the top level opens, if it opens one.
fn declaration(line: &Line<'_>) -> Option<Decl> {
    if line.depth != 0 {
        return None;
    }
    let code = line.code.trim();
    let keyword = ["func", "var", "const", "type", "import", "package"]
        .into_iter()
        .find(|k| {
            code.strip_prefix(k)
                .is_some_and(|r| r.is_empty() || r.starts_with([' ', '(', '\t']))
        })?;
    let mut rest = code[keyword.len()..].trim_start();
    if keyword == "func" && rest.starts_with('(') {
        // A method: its name follows the receiver.
        rest = rest.split_once(')').map_or("", |(_, r)| r).trim_start();
    }
    let name = rest
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or_default();
    Some(Decl {
        keyword: keyword.to_owned(),
        name: name.to_owned(),
        gained: false,
    })
}

/// The lines of Go source, each with its code (strings emptied, comments
/// gone) and the depth of `{`, `(` and `[` it starts at.
fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut in_comment = false;
    let mut in_raw = false;
    for raw in text.lines() {
        let start = depth;
        let mut code = String::new();
        let chars: Vec<char> = raw.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            let next = chars.get(k + 1).copied();
            if in_comment {
                if c == '*' && next == Some('/') {
                    in_comment = false;
                    k += 1;
                }
                k += 1;
                continue;
            }
            if in_raw {
                if c == '`' {
                    in_raw = false;
                    code.push('`');
                }
                k += 1;
                continue;
            }
            match c {
                '/' if next == Some('/') => break,
                '/' if next == Some('*') => {
                    in_comment = true;
                    k += 2;
                    continue;
                }
                '`' => {
                    in_raw = true;
                    code.push('`');
                }
                '"' | '\'' => {
                    code.push(c);
                    k += 1;
                    while k < chars.len() && chars[k] != c {
                        k += if chars[k] == '\\' { 2 } else { 1 };
                    }
                    code.push(c);
                }
                '{' | '(' | '[' => {
                    depth += 1;
                    code.push(c);
                }
                '}' | ')' | ']' => {
                    depth = depth.saturating_sub(1);
                    code.push(c);
                }
                _ => code.push(c),
            }
            k += 1;
        }
        out.push(Line {
            raw,
            code,
            depth: start,
        });
    }
    out
}
