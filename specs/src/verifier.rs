//! The verifiers a command line runs: the workspace paths a check or
//! criterion executes to decide its result.
//!
//! A check's or criterion's `run` is the exam the change is judged by. The
//! files it runs (`./scripts/e2e.sh`, `python3 tests/accept.py`, `pytest
//! tests/acceptance`) are read here from the command line alone, as a shell
//! would split it into words; which of them exist is the caller's question
//! (this crate does no I/O). A path counts when the command runs it:
//!
//! - the command of a simple command, written as a path (`./x.sh`,
//!   `bin/check`; a bare word is looked up on `PATH`, not in the workspace),
//!   also behind a wrapper (`env A=1 ./x.sh`, `timeout 30 ./x.sh`, `exec`,
//!   `nice`, `nohup`, `time`, `npx`, `xvfb-run`);
//! - the script an interpreter runs (`sh`, `bash`, `python3`, `node`,
//!   `ruby`, `perl`, `php`, `deno run`, `bun run`, `tsx`, `ts-node`), or
//!   the command line of `sh -c '…'`, read the same way;
//! - the paths a test runner is given (`pytest`, `jest`, `vitest`, `mocha`,
//!   `bats`, `phpunit`, `rspec`, and `python -m pytest`).
//!
//! A path a command only reads or checks (`test -f dist/app.js`, `grep x
//! src/app.py`) is what the change is judged on, not the exam, and is not
//! a verifier.

/// A workspace path a command line runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierPath {
    /// The path, workspace-relative and normalised (`./a//b/` → `a/b`).
    pub path: String,
    /// Whether the shell runs it directly (it must be executable).
    pub direct: bool,
}

/// Interpreters whose first operand is the script they run.
const INTERPRETERS: [&str; 17] = [
    "sh", "bash", "dash", "zsh", "ksh", "python", "python2", "python3", "node", "nodejs", "ruby",
    "perl", "php", "tsx", "ts-node", "Rscript", "lua",
];

/// Interpreters that take a subcommand (`run`) before the script.
const RUNNERS_WITH_RUN: [&str; 2] = ["deno", "bun"];

/// Test runners whose path operands are the tests they run.
const TEST_RUNNERS: [&str; 8] = [
    "pytest", "py.test", "jest", "vitest", "mocha", "bats", "phpunit", "rspec",
];

/// Commands that run the command after their own options.
const WRAPPERS: [&str; 9] = [
    "env", "exec", "nice", "nohup", "timeout", "time", "npx", "xvfb-run", "stdbuf",
];

/// Options after which an interpreter runs no script file (`-c CODE`,
/// `-m MODULE`, `-e CODE`).
const NO_SCRIPT: [&str; 6] = ["-c", "-m", "-e", "--eval", "-p", "--print"];

/// Shells whose `-c` takes a command line.
const SHELLS: [&str; 5] = ["sh", "bash", "dash", "zsh", "ksh"];

/// How deep `sh -c '…'` is looked into.
const MAX_NESTING: usize = 4;

/// The workspace paths `run` runs, in order, each once.
pub fn verifier_paths(run: &str) -> Vec<VerifierPath> {
    let mut out: Vec<VerifierPath> = Vec::new();
    collect(run, &mut out, 0);
    out
}

fn collect(run: &str, out: &mut Vec<VerifierPath>, depth: usize) {
    for command in simple_commands(run) {
        let mut found = Vec::new();
        let nested = runs(&command, &mut found);
        for path in found {
            add(out, path);
        }
        if let Some(line) = nested
            && depth < MAX_NESTING
        {
            collect(&line, out, depth + 1);
        }
    }
}

fn add(out: &mut Vec<VerifierPath>, found: VerifierPath) {
    match out.iter_mut().find(|v| v.path == found.path) {
        Some(seen) => seen.direct |= found.direct,
        None => out.push(found),
    }
}

/// What one simple command runs: the paths into `found`, and the command
/// line of `sh -c '…'` when it has one.
fn runs(words: &[Word], found: &mut Vec<VerifierPath>) -> Option<String> {
    // Past assignments and wrappers, to the command itself.
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if w.expands || is_assignment(&w.text) {
            i += 1;
            continue;
        }
        let name = base_name(&w.text);
        if WRAPPERS.contains(&name) {
            i += 1;
            // The wrapper's own options and operands (`timeout 30`, `-n 5`).
            while i < words.len()
                && (words[i].text.starts_with('-')
                    || is_assignment(&words[i].text)
                    || words[i]
                        .text
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_digit()))
            {
                i += 1;
            }
            continue;
        }
        break;
    }
    let command = words.get(i)?;
    if command.expands {
        return None;
    }
    if command.text.contains('/')
        && let Some(path) = normalise(&command.text)
    {
        found.push(VerifierPath { path, direct: true });
        return None;
    }
    let name = base_name(&command.text);
    let rest = &words[i + 1..];
    if INTERPRETERS.contains(&name) {
        return interpreted(name, rest, found);
    }
    if RUNNERS_WITH_RUN.contains(&name) {
        let after_run = rest.iter().position(|w| w.text == "run")?;
        return interpreted(name, &rest[after_run + 1..], found);
    }
    if TEST_RUNNERS.contains(&name) {
        tested(rest, found);
    }
    None
}

/// The script an interpreter runs, or the command line of `sh -c`.
fn interpreted(name: &str, args: &[Word], found: &mut Vec<VerifierPath>) -> Option<String> {
    let mut args = args.iter();
    while let Some(w) = args.next() {
        if w.text == "--" {
            continue;
        }
        if w.text.starts_with('-') {
            if SHELLS.contains(&name) && is_shell_command_option(&w.text) {
                return args.next().filter(|w| !w.expands).map(|w| w.text.clone());
            }
            if NO_SCRIPT.contains(&w.text.as_str()) {
                // `python -m pytest tests/x`: a module that is a test runner.
                if w.text == "-m"
                    && let Some(module) = args.next()
                    && TEST_RUNNERS.contains(&module.text.as_str())
                {
                    tested(args.as_slice(), found);
                }
                return None;
            }
            continue;
        }
        if !w.expands
            && let Some(path) = normalise(&w.text)
        {
            found.push(VerifierPath {
                path,
                direct: false,
            });
        }
        return None;
    }
    None
}

/// The path operands of a test runner: words that hold a `/` or end in a
/// file extension (an option's value such as `-k name` has neither).
fn tested(args: &[Word], found: &mut Vec<VerifierPath>) {
    for w in args {
        if w.expands || w.text.starts_with('-') {
            continue;
        }
        let looks_like_path = w.text.contains('/')
            || w.text.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && ext.chars().all(|c| c.is_ascii_alphanumeric())
                    && !ext.is_empty()
            });
        // `tests/test_x.py::test_name` names a file.
        let text = w.text.split("::").next().unwrap_or_default();
        if looks_like_path && let Some(path) = normalise(text) {
            found.push(VerifierPath {
                path,
                direct: false,
            });
        }
    }
}

fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// `-c`, or short options ending in it (`-ec`, `-xc`).
fn is_shell_command_option(word: &str) -> bool {
    word.strip_prefix('-').is_some_and(|flags| {
        !flags.starts_with('-')
            && flags.ends_with('c')
            && flags.chars().all(|c| c.is_ascii_alphabetic())
    })
}

/// A word as the shell would see it once unquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: String,
    /// Part of it would still be expanded by the shell (`$`, a glob, `~`, a
    /// backquote): what it names is not known from the text.
    expands: bool,
}

/// Splits a command line into simple commands and those into words, the
/// way `sh` does for what matters here: quotes and backslashes, comments,
/// the operators that end a command, and redirections (whose targets are
/// not words of the command).
fn simple_commands(run: &str) -> Vec<Vec<Word>> {
    let mut commands: Vec<Vec<Word>> = Vec::new();
    let mut current: Vec<Word> = Vec::new();
    let mut chars = run.chars().peekable();
    let mut text = String::new();
    let mut in_word = false;
    let mut expands = false;
    // The word being read is the target of a redirection.
    let mut redirect = false;
    let finish = |text: &mut String,
                  in_word: &mut bool,
                  expands: &mut bool,
                  redirect: &mut bool,
                  current: &mut Vec<Word>| {
        if !*in_word {
            return;
        }
        let word = std::mem::take(text);
        if !*redirect {
            current.push(Word {
                text: word,
                expands: *expands,
            });
        }
        *redirect = false;
        *in_word = false;
        *expands = false;
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    text.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(&n) = chars.peek()
                                && matches!(n, '"' | '\\' | '$' | '`')
                            {
                                text.push(n);
                                chars.next();
                            } else {
                                text.push('\\');
                            }
                        }
                        '$' | '`' => {
                            expands = true;
                            text.push(q);
                        }
                        _ => text.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next()
                    && n != '\n'
                {
                    text.push(n);
                }
            }
            '#' if !in_word => {
                // A comment runs to the end of the line.
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
                commands.push(std::mem::take(&mut current));
            }
            ' ' | '\t' => finish(
                &mut text,
                &mut in_word,
                &mut expands,
                &mut redirect,
                &mut current,
            ),
            '\n' | ';' | '&' | '|' | '(' | ')' => {
                finish(
                    &mut text,
                    &mut in_word,
                    &mut expands,
                    &mut redirect,
                    &mut current,
                );
                commands.push(std::mem::take(&mut current));
            }
            '<' | '>' => {
                // `2>file`: the digits before a redirection are its descriptor.
                if in_word && text.chars().all(|d| d.is_ascii_digit()) {
                    text.clear();
                    in_word = false;
                } else {
                    finish(
                        &mut text,
                        &mut in_word,
                        &mut expands,
                        &mut redirect,
                        &mut current,
                    );
                }
                while chars.peek().is_some_and(|&n| matches!(n, '<' | '>' | '&')) {
                    chars.next();
                }
                redirect = true;
            }
            '$' | '`' | '*' | '?' | '[' => {
                expands = true;
                in_word = true;
                text.push(c);
            }
            '~' if !in_word => {
                expands = true;
                in_word = true;
                text.push(c);
            }
            _ => {
                in_word = true;
                text.push(c);
            }
        }
    }
    finish(
        &mut text,
        &mut in_word,
        &mut expands,
        &mut redirect,
        &mut current,
    );
    commands.push(current);
    commands.retain(|c| !c.is_empty());
    // Reserved words that open or close a compound command are not commands.
    for command in &mut commands {
        while command.first().is_some_and(|w| {
            matches!(
                w.text.as_str(),
                "{" | "}" | "!" | "then" | "do" | "else" | "if" | "while" | "until"
            )
        }) {
            command.remove(0);
        }
    }
    commands.retain(|c| !c.is_empty());
    commands
}

/// `NAME=value` before a command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The workspace-relative path a word names, or `None` when it names none:
/// an option, an assignment, a URL, an absolute path, one that leaves the
/// workspace, or the workspace itself.
fn normalise(word: &str) -> Option<String> {
    if word.is_empty()
        || word.starts_with('-')
        || word.starts_with('/')
        || word.contains("://")
        || word.contains('=')
        || word.contains('\0')
    {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in word.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (path, direct)
    type Found = (String, bool);

    fn paths(run: &str) -> Vec<Found> {
        verifier_paths(run)
            .into_iter()
            .map(|v| (v.path, v.direct))
            .collect()
    }

    fn d(path: &str) -> Found {
        (path.to_owned(), true)
    }

    fn s(path: &str) -> Found {
        (path.to_owned(), false)
    }

    #[test]
    fn what_a_command_line_runs() {
        let cases: &[(&str, &[Found])] = &[
            ("./scripts/e2e.sh", &[d("scripts/e2e.sh")]),
            ("python3 tests/accept.py", &[s("tests/accept.py")]),
            ("python3 check.py --url=http://x/y", &[s("check.py")]),
            ("pytest tests/acceptance -q", &[s("tests/acceptance")]),
            (
                "pytest -k name tests/test_x.py::test_a",
                &[s("tests/test_x.py")],
            ),
            ("python -m pytest tests/acc", &[s("tests/acc")]),
            ("python3 -c 'import x' tests/not.py", &[]),
            ("npm test", &[]),
            ("make build && ./bin/check arg", &[d("bin/check")]),
            ("FOO=1 BAR='a b' ./run.sh arg", &[d("run.sh")]),
            ("env A=1 timeout 30 ./slow.sh", &[d("slow.sh")]),
            (
                "npx vitest run tests/e2e.test.ts",
                &[s("tests/e2e.test.ts")],
            ),
            (
                "node e2e.js && deno run -A check.ts",
                &[s("e2e.js"), s("check.ts")],
            ),
            (
                "cd sub; ./x.sh > out/log.txt 2>&1 | tee a.log",
                &[d("x.sh")],
            ),
            (
                "(cat x) > probe/out.txt; (./y.sh) 2> err/log.txt",
                &[d("y.sh")],
            ),
            (
                "sh -c \"python3 tests/it.py\" && bash -ec './b.sh x'",
                &[s("tests/it.py"), d("b.sh")],
            ),
            ("bash scripts/check.sh", &[s("scripts/check.sh")]),
            // What a command only reads or checks is not the exam.
            ("test -f dist/app.js && grep -q x src/app.py", &[]),
            ("curl -sf http://127.0.0.1:8080/health", &[]),
            // What the shell would still expand is not known.
            ("$HOME/x.sh; ~/y.sh; scripts/*.sh; ../up.sh; /etc/x.sh", &[]),
            ("./a.sh # ./commented.sh\n./b.sh", &[d("a.sh"), d("b.sh")]),
            ("./a.sh; ./a.sh arg", &[d("a.sh")]),
            ("if ./a.sh; then ./b.sh; fi", &[d("a.sh"), d("b.sh")]),
            ("bash ./scripts//x.sh/", &[s("scripts/x.sh")]),
            ("", &[]),
        ];
        for (run, want) in cases {
            assert_eq!(paths(run), *want, "{run}");
        }
    }
}
