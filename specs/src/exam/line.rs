//! The dispatch of a command line: each simple command to the ecosystem
//! that reads its runner, `sh -c` lines and shell scripts read as command
//! lines of their own, and [`exam`], which starts it.

use super::cargo;
use super::go;
use super::make;
use super::model::{Exam, ExamKind, Tree};
use super::node;
use super::path::{parent, resolve};
use super::python;
use super::walk::{Call, Ctx, Follow, Found, Scope};
use crate::verifier::{self, Word};

/// Runners (and task runners) whose own selection of what runs is not read.
const UNREAD: [&str; 14] = [
    "tox", "nox", "gradle", "gradlew", "mvn", "mvnw", "dotnet", "ctest", "just", "task", "rake",
    "bazel", "bazelisk", "sbt",
];

/// Shell builtins and test expressions: they run no program, so no exam
/// (`[ $n -le 60 ]` names no command through its expansions). `eval`,
/// `exec`, `command`, `.` and `source` run what follows and are not here.
const BUILTINS: [&str; 30] = [
    "[", "[[", "test", ":", "true", "false", "echo", "printf", "exit", "return", "set", "export",
    "local", "read", "shift", "unset", "wait", "trap", "umask", "ulimit", "readonly", "declare",
    "typeset", "break", "continue", "let", "pwd", "getopts", "hash", "type",
];

/// How deep command lines are followed into scripts, recipes and `sh -c`.
const MAX_DEPTH: usize = 6;

/// The files that define `run`'s result beyond the scripts it names by path
/// (which [`verifier_paths`](crate::verifier_paths) reads), resolved in `tree`.
pub fn exam(run: &str, tree: &dyn Tree) -> Exam {
    let ctx = Ctx::new(tree);
    let mut out = Found::default();
    ctx.line(
        run,
        "",
        &Scope {
            depth: 0,
            via: String::new(),
            named: false,
        },
        &mut out,
    );
    out.exam
}

impl Follow for Ctx<'_> {
    /// Reads one command line run in `dir`.
    fn line(&self, run: &str, dir: &str, scope: &Scope, out: &mut Found) {
        if scope.depth > MAX_DEPTH {
            out.unresolved(format!(
                "`{}` is nested more than {MAX_DEPTH} deep{}: it was not read",
                first_line(run),
                scope.via
            ));
            return;
        }
        if scope.named {
            self.named_paths(run, dir, scope, out);
        }
        let mut cwd = dir.to_owned();
        for words in verifier::simple_commands(run) {
            if words[0].text == "cd" && !words[0].expands {
                let Some(next) = cd_target(&cwd, &words) else {
                    out.unresolved(format!(
                        "`{}` moves into a directory not known from the text{}: what follows it was not read",
                        text_of(&words),
                        scope.via
                    ));
                    return;
                };
                cwd = next;
                continue;
            }
            self.command(&words, &cwd, scope, out);
        }
    }

    /// Reads one simple command: a runner's, a shell's, or a script run by path.
    fn command(&self, words: &[Word], dir: &str, scope: &Scope, out: &mut Found) {
        if words
            .iter()
            .find(|w| !verifier::is_assignment(&w.text))
            .is_some_and(|w| BUILTINS.contains(&w.text.as_str()))
        {
            return;
        }
        let i = verifier::command_index(words);
        let Some(cmd) = words.get(i) else { return };
        // The command index skips expansions: one before it may be the command.
        if cmd.expands
            || words[..i]
                .iter()
                .any(|w| w.expands && !verifier::is_assignment(&w.text))
        {
            out.unresolved(format!(
                "`{}` names its command through an expansion{}: what it runs is not known",
                text_of(words),
                scope.via
            ));
            return;
        }
        let call = Call {
            ctx: self,
            follow: self,
            dir,
            before: &words[..i],
            args: &words[i + 1..],
            text: text_of(&words[i..]),
            scope,
        };
        let name = verifier::base_name(&cmd.text);
        match name {
            "cargo" => cargo::exam(&call, out),
            "go" => go::exam(&call, out),
            "npm" | "pnpm" | "yarn" => node::package_manager(name, &call, out),
            "vitest" | "jest" | "mocha" => node::runner(name, &call, out),
            "make" | "gmake" => make::exam(&call, out),
            "pytest" | "py.test" => python::pytest(&call, call.args, out),
            "uv" | "poetry" | "pdm" | "pipenv" | "hatch" | "rye" => {
                // `uv run pytest`: the command after `run` is the runner.
                if let Some(at) = call.args.iter().position(|w| w.text == "run") {
                    let rest = &call.args[at + 1..];
                    let skip = rest.iter().take_while(|w| w.text.starts_with('-')).count();
                    self.command(&rest[skip..], dir, scope, out);
                }
            }
            n if n.starts_with("python") => python::interpreter(&call, out),
            n if UNREAD.contains(&n)
                || (matches!(n, "bun" | "deno")
                    && call.args.first().is_some_and(|w| w.text == "test")) =>
            {
                out.unresolved(format!(
                    "`{}` runs what `{n}` selects, which is not read{}",
                    call.text, scope.via
                ));
            }
            _ => self.other(words, dir, scope, out),
        }
    }
}

impl Ctx<'_> {
    /// The files a script or recipe names by path (`node x.js`, `./t.sh`).
    fn named_paths(&self, run: &str, dir: &str, scope: &Scope, out: &mut Found) {
        for found in verifier::verifier_paths(run) {
            let path = verifier::join(dir, &found.path);
            if found.module && !self.exists(&path) {
                continue;
            }
            let lines: Vec<&str> = run.lines().filter(|l| !l.trim().is_empty()).collect();
            let why = match lines[..] {
                [one] => format!("`{}` runs it{}", one.trim(), scope.via),
                _ => format!("it is run by name{}", scope.via),
            };
            if self.is_dir(&path) && !self.exists(&path) {
                // A runner given a directory: its own module reads it.
                continue;
            }
            out.file(&path, why, ExamKind::File);
        }
    }

    /// A shell's `-c` line, or a shell script the command runs by path,
    /// whose text is read as a command line of its own.
    fn other(&self, words: &[Word], dir: &str, scope: &Scope, out: &mut Found) {
        let mut found = Vec::new();
        if let Some(line) = verifier::runs(words, &mut found) {
            let nested = Scope {
                depth: scope.depth + 1,
                ..scope.clone()
            };
            self.line(&line, dir, &nested, out);
            return;
        }
        for script in found.into_iter().filter(|f| !f.module) {
            let path = verifier::join(dir, &script.path);
            let Some(text) = self.read_text(&path) else {
                continue;
            };
            if !is_shell_script(&path, &text) {
                continue;
            }
            let nested = Scope {
                depth: scope.depth + 1,
                via: format!(" (from `{path}`{})", scope.via),
                named: true,
            };
            // A script runs in its caller's directory; `$0` is its path
            // as the caller wrote it.
            let own_dir = dir_word(parent(&script.path));
            let text = SCRIPT_DIR
                .iter()
                .fold(text, |t, form| t.replace(form, &own_dir));
            self.line(&text, dir, &nested, out);
        }
    }
}

/// How scripts write their own directory (`cd "$(dirname "$0")/.."`).
const SCRIPT_DIR: [&str; 5] = [
    "$(dirname \"$0\")",
    "$(dirname $0)",
    "$(dirname \"${BASH_SOURCE[0]}\")",
    "$(dirname ${BASH_SOURCE[0]})",
    "$(dirname \"$BASH_SOURCE\")",
];

/// A directory as a word `cd` can take (`.` for the root).
fn dir_word(dir: &str) -> String {
    if dir.is_empty() {
        ".".to_owned()
    } else {
        dir.to_owned()
    }
}

/// Whether a file is a shell script: by its extension or its `#!` line.
fn is_shell_script(path: &str, text: &str) -> bool {
    if [".sh", ".bash"].iter().any(|e| path.ends_with(e)) {
        return true;
    }
    text.lines().next().is_some_and(|l| {
        l.starts_with("#!")
            && ["sh", "bash", "dash", "zsh", "ksh"]
                .iter()
                .any(|s| l.split(['/', ' ']).any(|w| w == *s))
    })
}

/// Where `cd` moves from `cwd`, when the text says.
fn cd_target(cwd: &str, words: &[Word]) -> Option<String> {
    match words.get(1) {
        Some(w) if !w.expands && words.len() == 2 => resolve(cwd, &w.text),
        _ => None,
    }
}

/// The words of a command as written, for messages.
fn text_of(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn first_line(run: &str) -> &str {
    run.lines().next().unwrap_or_default().trim()
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{Mem, files};
    use super::*;

    #[test]
    fn scripts_and_nesting() {
        let tree = Mem::new(&[
            (
                "scripts/test.sh",
                "#!/bin/sh\nset -e\ncd \"$(dirname \"$0\")/..\"\ncargo test --test server\n",
            ),
            ("Cargo.toml", "[package]\nname = \"app\"\n"),
            ("tests/server.rs", "#[test] fn t() {}\n"),
            ("ci/run", "#!/usr/bin/env bash\npython3 tests/x.py\n"),
            (
                "app/scripts/t.sh",
                "#!/bin/bash\ncd \"$(dirname \"${BASH_SOURCE[0]}\")/..\"\ncargo test --test it\n",
            ),
            ("app/Cargo.toml", "[package]\nname = \"app2\"\n"),
            ("app/tests/it.rs", "\n"),
        ]);
        // (command line, exam files, whether something is unresolved)
        let cases: &[(&str, &[&str], bool)] = &[
            ("./scripts/test.sh", &["tests/server.rs"], false),
            (
                "sh -c 'cargo test --test server'",
                &["tests/server.rs"],
                false,
            ),
            ("ci/run", &["tests/x.py"], false),
            ("cd app && bash scripts/t.sh", &["app/tests/it.rs"], false),
            ("$RUNNER test", &[], true),
            ("[ $ra -le 60 ] && [[ -n $X ]] && test $Y = 1", &[], false),
            (
                "echo $X; cargo test --test server",
                &["tests/server.rs"],
                false,
            ),
            ("tox -e py311", &[], true),
            ("./gradlew test", &[], true),
            ("cd \"$D\" && cargo test", &[], true),
            (
                "cd . && cargo test --test server",
                &["tests/server.rs"],
                false,
            ),
        ];
        for (run, want, unresolved) in cases {
            let got = exam(run, &tree);
            assert_eq!(files(&got), *want, "{run}");
            assert_eq!(!got.unresolved.is_empty(), *unresolved, "{run}: {got:?}");
        }
    }
}
