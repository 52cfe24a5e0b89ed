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
//!   `bats`, `phpunit`, `rspec`, and `python -m pytest`);
//! - the files of a module Python runs with `-m` (`python3 -m
//!   scripts.check`), which count only where the workspace has them.
//!
//! A path a command only reads or checks (`test -f dist/app.js`, `grep x
//! src/app.py`) is what the change is judged on, not the exam, and is not
//! a verifier.
//!
//! `cd DIR` moves what follows it: in `cd app && ./bin/check` the verifier
//! is `app/bin/check`. After a `cd` whose directory is not known from the
//! text (`cd "$DIR"`, `cd /abs`, `cd ..`) nothing more is read: the paths
//! are no longer the workspace's. A path is `first` when nothing in the
//! line ran before it (only `cd`, `set`, `export` and the like): a path a
//! later command runs may be made by an earlier one (`cargo build &&
//! ./target/debug/app`).

/// A workspace path a command line runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierPath {
    /// The path, workspace-relative and normalised (`./a//b/` → `a/b`).
    pub path: String,
    /// Whether the shell runs it directly (it must be executable).
    pub direct: bool,
    /// Whether it is run before anything of the line that could have made
    /// it: such a path must exist when the command starts.
    pub first: bool,
    /// Whether it is one of the files a Python module named by `-m` may be
    /// (`python3 -m scripts.check` runs `scripts/__init__.py` and
    /// `scripts/check.py`, or the package `scripts/check/`): a verifier only
    /// where the workspace has it, now or before the change; otherwise the
    /// module is an installed one.
    pub module: bool,
    /// Whether a test runner is given it (`pytest tests/x.py`), rather than
    /// a shell or an interpreter running it: a suite that only gained tests
    /// still runs its old ones, where a script that gained a line may no
    /// longer run them.
    pub runner: bool,
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

/// Commands that change nothing on disk: what runs after them is still
/// run before anything could have made it.
const INERT: [&str; 7] = ["cd", "set", "export", ":", "true", "umask", "ulimit"];

/// Where the line has got to: the directory `cd` moved to (workspace
/// relative, empty at the root; `None` once it is not known) and whether
/// anything that could write a file has run yet.
struct Cursor {
    dir: Option<String>,
    first: bool,
}

/// The workspace paths `run` runs, in order, each once.
pub fn verifier_paths(run: &str) -> Vec<VerifierPath> {
    let mut out: Vec<VerifierPath> = Vec::new();
    let mut cursor = Cursor {
        dir: Some(String::new()),
        first: true,
    };
    collect(run, &mut out, &mut cursor, 0);
    out
}

/// Test runners and the tools that start them, which run the exam though
/// they name no verifier path (`go test ./...`, `npm test`): a program of
/// one of these names is the exam's program wherever it is on a line.
const RUNNER_PROGRAMS: [&str; 10] = [
    "go", "npm", "pnpm", "yarn", "npx", "cargo", "make", "gmake", "pytest", "py.test",
];

/// The programs `run` starts by bare name to run a verifier or a nested
/// command line (an interpreter, a test runner or a shell: `python3` in
/// `python3 tests/accept.py`, `go` in `go test ./...`), which the shell
/// finds through the items' `PATH`.
pub fn verifier_programs(run: &str) -> Vec<String> {
    let mut out = Vec::new();
    programs(run, &mut out, 0);
    out
}

fn programs(run: &str, out: &mut Vec<String>, depth: usize) {
    for command in simple_commands(run) {
        let mut found = Vec::new();
        let nested = runs(&command, &mut found);
        if let Some(word) = command.get(command_index(&command))
            && (!found.is_empty()
                || nested.is_some()
                || RUNNER_PROGRAMS.contains(&word.text.as_str()))
            && !word.expands
            && !word.text.contains('/')
            && !out.contains(&word.text)
        {
            out.push(word.text.clone());
        }
        if let Some(line) = nested
            && depth < MAX_NESTING
        {
            programs(&line, out, depth + 1);
        }
    }
}

fn collect(run: &str, out: &mut Vec<VerifierPath>, cursor: &mut Cursor, depth: usize) {
    for command in simple_commands(run) {
        let Some(dir) = cursor.dir.clone() else {
            return;
        };
        if command[0].text == "cd" && !command[0].expands {
            cursor.dir = match command.get(1) {
                Some(w) if !w.expands && command.len() == 2 => {
                    normalise(&w.text).map(|d| join(&dir, &d))
                }
                _ => None,
            };
            continue;
        }
        let mut found = Vec::new();
        let nested = runs(&command, &mut found);
        for mut path in found {
            path.path = join(&dir, &path.path);
            path.first = cursor.first;
            add(out, path);
        }
        if let Some(line) = nested
            && depth < MAX_NESTING
        {
            // `sh -c` is a shell of its own: its `cd` stays in it.
            collect(&line, out, cursor, depth + 1);
            cursor.dir = Some(dir);
        }
        if !INERT.contains(&command[0].text.as_str()) {
            cursor.first = false;
        }
    }
}

/// `path` under the workspace-relative directory `dir`.
pub(crate) fn join(dir: &str, path: &str) -> String {
    if dir.is_empty() {
        path.to_owned()
    } else {
        format!("{dir}/{path}")
    }
}

fn add(out: &mut Vec<VerifierPath>, found: VerifierPath) {
    match out.iter_mut().find(|v| v.path == found.path) {
        Some(seen) => {
            seen.direct |= found.direct;
            seen.first |= found.first;
            // Named as a file too, it is no longer only a module's candidate.
            seen.module &= found.module;
        }
        None => out.push(found),
    }
}

/// Where the command itself is among a simple command's words: past
/// assignments and wrappers (`env`, `timeout 30`, `nice -n 5`).
pub(crate) fn command_index(words: &[Word]) -> usize {
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
    i
}

/// What one simple command runs: the paths into `found`, and the command
/// line of `sh -c '…'` when it has one.
pub(crate) fn runs(words: &[Word], found: &mut Vec<VerifierPath>) -> Option<String> {
    let i = command_index(words);
    let command = words.get(i)?;
    if command.expands {
        return None;
    }
    if command.text.contains('/')
        && let Some(path) = normalise(&command.text)
    {
        found.push(VerifierPath {
            path,
            direct: true,
            first: true,
            module: false,
            runner: false,
        });
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
                if w.text == "-m"
                    && name.starts_with("python")
                    && let Some(module) = args.next()
                    && !module.expands
                {
                    if TEST_RUNNERS.contains(&module.text.as_str()) {
                        // `python -m pytest tests/x`: a module that is a test runner.
                        tested(args.as_slice(), found);
                    } else {
                        found.extend(module_files(&module.text));
                    }
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
                first: true,
                module: false,
                runner: false,
            });
        }
        return None;
    }
    None
}

/// The workspace files `python -m a.b` may run: each parent package's
/// `__init__.py`, then `a/b.py` or the package's `a/b/__init__.py` and
/// `a/b/__main__.py`. None for a name that is not a dotted module path.
fn module_files(module: &str) -> Vec<VerifierPath> {
    let parts: Vec<&str> = module.split('.').collect();
    let identifier = |p: &&str| {
        p.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && p.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    if !parts.iter().all(identifier) {
        return Vec::new();
    }
    let candidate = |path: String| VerifierPath {
        path,
        direct: false,
        first: true,
        module: true,
        runner: false,
    };
    let mut out: Vec<VerifierPath> = (1..parts.len())
        .map(|n| candidate(format!("{}/__init__.py", parts[..n].join("/"))))
        .collect();
    let whole = parts.join("/");
    out.push(candidate(format!("{whole}.py")));
    out.push(candidate(format!("{whole}/__init__.py")));
    out.push(candidate(format!("{whole}/__main__.py")));
    out
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
                first: true,
                module: false,
                runner: true,
            });
        }
    }
}

pub(crate) fn base_name(word: &str) -> &str {
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
pub(crate) struct Word {
    pub(crate) text: String,
    /// Part of it would still be expanded by the shell (`$`, a glob, `~`, a
    /// backquote): what it names is not known from the text.
    pub(crate) expands: bool,
}

/// The state of [`simple_commands`] between characters.
#[derive(Default)]
struct Lexer {
    commands: Vec<Vec<Word>>,
    current: Vec<Word>,
    text: String,
    in_word: bool,
    expands: bool,
    /// The word being read is the target of a redirection.
    redirect: bool,
}

impl Lexer {
    /// Ends the word being read (a redirection's target is no word of the
    /// command).
    fn end_word(&mut self) {
        if !self.in_word {
            return;
        }
        let word = std::mem::take(&mut self.text);
        if !self.redirect {
            self.current.push(Word {
                text: word,
                expands: self.expands,
            });
        }
        self.redirect = false;
        self.in_word = false;
        self.expands = false;
    }

    /// Ends the simple command being read.
    fn end_command(&mut self) {
        self.commands.push(std::mem::take(&mut self.current));
    }

    /// The rest of a double-quoted string, after its opening `"`.
    fn double_quoted(&mut self, chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
        self.in_word = true;
        while let Some(q) = chars.next() {
            match q {
                '"' => break,
                '\\' => {
                    if let Some(&n) = chars.peek()
                        && matches!(n, '"' | '\\' | '$' | '`')
                    {
                        self.text.push(n);
                        chars.next();
                    } else {
                        self.text.push('\\');
                    }
                }
                '$' | '`' => {
                    self.expands = true;
                    self.text.push(q);
                }
                _ => self.text.push(q),
            }
        }
    }
}

/// Splits a command line into simple commands and those into words, the
/// way `sh` does for what matters here: quotes and backslashes, comments,
/// the operators that end a command, and redirections (whose targets are
/// not words of the command).
pub(crate) fn simple_commands(run: &str) -> Vec<Vec<Word>> {
    let mut lx = Lexer::default();
    let mut chars = run.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                lx.in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    lx.text.push(q);
                }
            }
            '"' => lx.double_quoted(&mut chars),
            '\\' => {
                lx.in_word = true;
                if let Some(n) = chars.next()
                    && n != '\n'
                {
                    lx.text.push(n);
                }
            }
            '#' if !lx.in_word => {
                // A comment runs to the end of the line.
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
                lx.end_command();
            }
            ' ' | '\t' => lx.end_word(),
            '\n' | ';' | '&' | '|' | '(' | ')' => {
                lx.end_word();
                lx.end_command();
            }
            '<' | '>' => {
                // `2>file`: the digits before a redirection are its descriptor.
                if lx.in_word && lx.text.chars().all(|d| d.is_ascii_digit()) {
                    lx.text.clear();
                    lx.in_word = false;
                } else {
                    lx.end_word();
                }
                while chars.peek().is_some_and(|&n| matches!(n, '<' | '>' | '&')) {
                    chars.next();
                }
                lx.redirect = true;
            }
            '$' | '`' | '*' | '?' | '[' => {
                lx.expands = true;
                lx.in_word = true;
                lx.text.push(c);
            }
            '~' if !lx.in_word => {
                lx.expands = true;
                lx.in_word = true;
                lx.text.push(c);
            }
            _ => {
                lx.in_word = true;
                lx.text.push(c);
            }
        }
    }
    lx.end_word();
    lx.end_command();
    without_reserved_words(lx.commands)
}

/// The commands without the reserved words that open or close a compound
/// command (`if`, `then`, `{`, …), which are not commands, and without
/// what is then empty.
fn without_reserved_words(mut commands: Vec<Vec<Word>>) -> Vec<Vec<Word>> {
    commands.retain(|c| !c.is_empty());
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
pub(crate) fn is_assignment(word: &str) -> bool {
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
    fn the_programs_that_run_a_verifier_by_bare_name() {
        // (command line, the programs found through PATH)
        let cases: &[(&str, &[&str])] = &[
            ("python3 tests/accept.py", &["python3"]),
            ("timeout 30 node e2e.js && bash x.sh", &["node", "bash"]),
            ("sh -c 'pytest tests/acc'", &["sh", "pytest"]),
            ("npx vitest run tests/a.test.ts", &["vitest"]),
            (".venv/bin/python tests/x.py", &[]),
            ("python3 -c 'print(1)'", &[]),
            ("curl -sf http://localhost/", &[]),
            ("go test ./... && npm test", &["go", "npm"]),
            ("[ -n \"$X\" ] && cargo test --test server", &["cargo"]),
        ];
        for (run, want) in cases {
            assert_eq!(verifier_programs(run), *want, "{run}");
        }
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
                &[d("sub/x.sh")],
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
            // Backslashes, inside double quotes and out.
            (
                r#"./my\ check.sh; bash "t/\"q\".sh""#,
                &[d("my check.sh"), s("t/\"q\".sh")],
            ),
            ("", &[]),
        ];
        for (run, want) in cases {
            assert_eq!(paths(run), *want, "{run}");
        }
    }

    /// The files of a module `python -m` runs, as candidates: (line,
    /// [(path, module)]).
    #[test]
    fn the_files_a_python_module_may_be() {
        let cases: &[(&str, &[(&str, bool)])] = &[
            (
                "python3 -m scripts.check_cart",
                &[
                    ("scripts/__init__.py", true),
                    ("scripts/check_cart.py", true),
                    ("scripts/check_cart/__init__.py", true),
                    ("scripts/check_cart/__main__.py", true),
                ],
            ),
            (
                "cd app && python -m accept -v",
                &[
                    ("app/accept.py", true),
                    ("app/accept/__init__.py", true),
                    ("app/accept/__main__.py", true),
                ],
            ),
            // Named as a file too, it is a verifier wherever it is.
            (
                "python3 -m check; python3 check.py",
                &[
                    ("check.py", false),
                    ("check/__init__.py", true),
                    ("check/__main__.py", true),
                ],
            ),
            // Not a module path, or not Python: nothing.
            (
                "python3 -m $MOD; python3 -m a..b; node -m x; python3 -m",
                &[],
            ),
            ("python -m pytest tests/acc", &[("tests/acc", false)]),
        ];
        for (run, want) in cases {
            let got: Vec<(String, bool)> = verifier_paths(run)
                .into_iter()
                .map(|v| (v.path, v.module))
                .collect();
            let want: Vec<(String, bool)> =
                want.iter().map(|(p, m)| ((*p).to_owned(), *m)).collect();
            assert_eq!(got, want, "{run}");
        }
    }

    /// Where `cd` moves the paths after it, and which paths are run before
    /// anything could have made them: (line, [(path, first)]).
    #[test]
    fn cd_and_what_ran_first() {
        let cases: &[(&str, &[(&str, bool)])] = &[
            ("./a.sh", &[("a.sh", true)]),
            ("cd app && ./bin/check", &[("app/bin/check", true)]),
            ("cd app/ && cd sub && ./x", &[("app/sub/x", true)]),
            ("set -e; export A=1; ./x", &[("x", true)]),
            (
                "cd app && cargo build && ./target/debug/app",
                &[("app/target/debug/app", false)],
            ),
            (
                "python3 -m venv .venv && .venv/bin/python t.py",
                &[
                    ("venv.py", true),
                    ("venv/__init__.py", true),
                    ("venv/__main__.py", true),
                    (".venv/bin/python", false),
                ],
            ),
            ("./a.sh && ./b.sh", &[("a.sh", true), ("b.sh", false)]),
            // A directory not known from the text: nothing after it is read.
            ("cd \"$D\" && ./x; cd /abs; ./y", &[]),
            ("./a.sh; cd ..; ./b.sh", &[("a.sh", true)]),
            ("cd; ./x", &[]),
            // A `cd` inside `sh -c` stays there.
            (
                "sh -c 'cd sub && ./in.sh' && ./out.sh",
                &[("sub/in.sh", true), ("out.sh", false)],
            ),
        ];
        for (run, want) in cases {
            let got: Vec<(String, bool)> = verifier_paths(run)
                .into_iter()
                .map(|v| (v.path, v.first))
                .collect();
            let want: Vec<(String, bool)> =
                want.iter().map(|(p, f)| ((*p).to_owned(), *f)).collect();
            assert_eq!(got, want, "{run}");
        }
    }
}
