//! The workspace paths a command line names: the verifiers a check or
//! criterion runs.
//!
//! A check's or criterion's `run` is the exam the change is judged by. The
//! files it names (`./scripts/e2e.sh`, `python3 tests/accept.py`, `pytest
//! tests/acceptance`) are read here from the command line alone, as a shell
//! would split it into words; which of them exist is the caller's question
//! (this crate does no I/O). A word names a workspace path when, once
//! unquoted, it is relative, stays inside the workspace and is not an
//! option, an assignment, a URL or something the shell would still expand.

/// One word of a command line that may name a workspace path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedPath {
    /// The path, workspace-relative and normalised (`./a//b/` → `a/b`).
    pub path: String,
    /// Whether the word is a command the shell runs directly (the first word
    /// of a simple command, after any `VAR=value` assignments): such a file
    /// must be executable.
    pub direct: bool,
    /// Whether the word looks like a path on its own (it holds a `/`, or ends
    /// in a script's extension), so that one that does not exist is worth
    /// naming as missing. A bare word such as `build` counts only when a file
    /// or folder of that name exists.
    pub path_like: bool,
}

/// Extensions that mark a bare word (`check.py`) as a file name.
const SCRIPT_EXTENSIONS: [&str; 12] = [
    "sh", "bash", "py", "js", "mjs", "cjs", "ts", "rb", "pl", "php", "lua", "bats",
];

/// The words of `run` that may name workspace paths, in order, each once.
pub fn named_paths(run: &str) -> Vec<NamedPath> {
    let mut out: Vec<NamedPath> = Vec::new();
    collect(run, &mut out, 0);
    out
}

/// How deep `sh -c '…'` is looked into.
const MAX_NESTING: usize = 4;

fn collect(run: &str, out: &mut Vec<NamedPath>, depth: usize) {
    // `sh -c 'python3 tests/x.py'`: the word after `-c` is itself a command line.
    let mut shell = false;
    let mut script_next = false;
    for word in words(run) {
        if word.command {
            let name = word.text.rsplit('/').next().unwrap_or_default();
            shell = SHELLS.contains(&name);
            script_next = false;
        } else if script_next {
            script_next = false;
            if depth < MAX_NESTING {
                collect(&word.text, out, depth + 1);
            }
            continue;
        } else if shell && is_command_option(&word.text) {
            script_next = true;
        }
        let Some(path) = normalise(&word.text) else {
            continue;
        };
        let path_like = word.text.contains('/') || has_script_extension(&path);
        match out.iter_mut().find(|n| n.path == path) {
            Some(seen) => {
                seen.direct |= word.command;
                seen.path_like |= path_like;
            }
            None => out.push(NamedPath {
                path,
                direct: word.command,
                path_like,
            }),
        }
    }
}

/// Shells whose `-c` takes a command line.
const SHELLS: [&str; 5] = ["sh", "bash", "dash", "zsh", "ksh"];

/// `-c`, or short options ending in it (`-ec`, `-xc`).
fn is_command_option(word: &str) -> bool {
    word.strip_prefix('-').is_some_and(|flags| {
        !flags.starts_with('-')
            && flags.ends_with('c')
            && flags.chars().all(|c| c.is_ascii_alphabetic())
    })
}

fn has_script_extension(path: &str) -> bool {
    path.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && !stem.ends_with('/')
            && SCRIPT_EXTENSIONS
                .iter()
                .any(|e| e.eq_ignore_ascii_case(ext))
    })
}

/// A word as the shell would see it once unquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: String,
    /// The word is in command position.
    command: bool,
    /// Part of it would still be expanded by the shell (`$`, a glob, `~`, a
    /// backquote): what it names is not known from the text.
    expands: bool,
}

/// Splits a command line into words, the way `sh` does for what matters
/// here: quotes and backslashes, and the operators that end a word or a
/// simple command.
fn words(run: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut chars = run.chars().peekable();
    let mut text = String::new();
    let mut in_word = false;
    let mut expands = false;
    // The next word starts a simple command.
    let mut at_command = true;
    // The word just finished was the target of a redirection.
    let mut redirect = false;
    let mut finish = |text: &mut String,
                      in_word: &mut bool,
                      expands: &mut bool,
                      at_command: &mut bool,
                      redirect: &mut bool| {
        if !*in_word {
            return;
        }
        let word = std::mem::take(text);
        // `2>&1`, `>&-`: a descriptor, not a file.
        let descriptor = *redirect && (word == "-" || word.chars().all(|d| d.is_ascii_digit()));
        let assignment = *at_command && is_assignment(&word);
        let command = *at_command && !assignment && !*redirect;
        if !*redirect && !assignment {
            *at_command = false;
        }
        if !descriptor {
            out.push(Word {
                text: word,
                command,
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
                at_command = true;
            }
            ' ' | '\t' => finish(
                &mut text,
                &mut in_word,
                &mut expands,
                &mut at_command,
                &mut redirect,
            ),
            '\n' | ';' | '&' | '|' | '(' | ')' | '{' | '}' if !in_word || c != '{' && c != '}' => {
                finish(
                    &mut text,
                    &mut in_word,
                    &mut expands,
                    &mut at_command,
                    &mut redirect,
                );
                at_command = true;
                redirect = false;
            }
            '<' | '>' => {
                // `2>file`: the digits before a redirection are its fd, not a word.
                if in_word && text.chars().all(|d| d.is_ascii_digit()) {
                    text.clear();
                    in_word = false;
                } else {
                    finish(
                        &mut text,
                        &mut in_word,
                        &mut expands,
                        &mut at_command,
                        &mut redirect,
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
        &mut at_command,
        &mut redirect,
    );
    out.into_iter().filter(|w| !w.expands).collect()
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

    /// (path, direct, path_like)
    type Named = (String, bool, bool);

    fn paths(run: &str) -> Vec<Named> {
        named_paths(run)
            .into_iter()
            .map(|n| (n.path, n.direct, n.path_like))
            .collect()
    }

    fn p(path: &str, direct: bool, path_like: bool) -> Named {
        (path.to_owned(), direct, path_like)
    }

    #[test]
    fn words_that_name_workspace_paths() {
        let cases: &[(&str, &[Named])] = &[
            ("./scripts/e2e.sh", &[p("scripts/e2e.sh", true, true)]),
            (
                "python3 tests/accept.py",
                &[p("python3", true, false), p("tests/accept.py", false, true)],
            ),
            (
                "pytest tests/acceptance -q",
                &[p("pytest", true, false), p("tests/acceptance", false, true)],
            ),
            (
                "npm test",
                &[p("npm", true, false), p("test", false, false)],
            ),
            (
                "python3 check.py --url=http://x/y",
                &[p("python3", true, false), p("check.py", false, true)],
            ),
            (
                "FOO=1 BAR='a b' ./run.sh arg",
                &[p("run.sh", true, true), p("arg", false, false)],
            ),
            (
                "make build && ./bin/check 'tests/with space.sh'",
                &[
                    p("make", true, false),
                    p("build", false, false),
                    p("bin/check", true, true),
                    p("tests/with space.sh", false, true),
                ],
            ),
            (
                "cd sub; ./x.sh > out/log.txt 2>&1 | tee a.log",
                &[
                    p("cd", true, false),
                    p("sub", false, false),
                    p("x.sh", true, true),
                    p("out/log.txt", false, true),
                    p("tee", true, false),
                    p("a.log", false, false),
                ],
            ),
            (
                "sh -c \"python3 tests/it.py\" && bash -ec './b.sh x'",
                &[
                    p("sh", true, false),
                    p("python3", true, false),
                    p("tests/it.py", false, true),
                    p("bash", true, false),
                    p("b.sh", true, true),
                    p("x", false, false),
                ],
            ),
            (
                "cat $HOME/x ~/y /etc/passwd ../up scripts/*.sh \"$X/a\" ./ok.sh",
                &[p("cat", true, false), p("ok.sh", false, true)],
            ),
            (
                "./a.sh # ./commented.sh\n./b.sh",
                &[p("a.sh", true, true), p("b.sh", true, true)],
            ),
            (
                "./a.sh; ./a.sh arg",
                &[p("a.sh", true, true), p("arg", false, false)],
            ),
            (
                "bash ./scripts//x.sh/",
                &[p("bash", true, false), p("scripts/x.sh", false, true)],
            ),
            ("", &[]),
        ];
        for (run, want) in cases {
            assert_eq!(paths(run), *want, "{run}");
        }
    }
}
