//! The state a command line is read with: the [`Ctx`] over the tree, the
//! [`Scope`] of nesting, the [`Found`] exam being collected, and the
//! [`Call`] each ecosystem reads. Following a command line further (a
//! script, a recipe) goes through [`Follow`], which the dispatch of
//! command lines implements, so that ecosystems never import it.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};

use super::model::{Exam, ExamFile, ExamKind, Runner, RunnerConfig, Tree};
use crate::verifier::Word;

/// Reads the command lines a command runs: implemented by the dispatch of
/// command lines, called by the ecosystems through a [`Call`].
pub(super) trait Follow {
    /// Reads one command line run in `dir`.
    fn line(&self, run: &str, dir: &str, scope: &Scope, out: &mut Found);
    /// Reads one simple command: a runner's, a shell's, or a script run by path.
    fn command(&self, words: &[Word], dir: &str, scope: &Scope, out: &mut Found);
}

/// An exam being collected, with its files and configurations indexed:
/// an exam may list thousands of files, each added once.
#[derive(Default)]
pub(super) struct Found {
    pub(super) exam: Exam,
    file_index: HashSet<(String, ExamKind)>,
    config_index: HashSet<RunnerConfig>,
}

impl std::ops::Deref for Found {
    type Target = Exam;

    fn deref(&self) -> &Exam {
        &self.exam
    }
}

impl Found {
    pub(super) fn file(&mut self, path: &str, why: String, kind: ExamKind) {
        if self.file_index.insert((path.to_owned(), kind.clone())) {
            self.exam.files.push(ExamFile {
                path: path.to_owned(),
                why,
                kind,
            });
        }
    }

    pub(super) fn config(&mut self, path: &str, runner: Runner, section: Option<&str>) {
        let config = RunnerConfig {
            path: path.to_owned(),
            runner,
            section: section.map(str::to_owned),
        };
        if self.config_index.insert(config.clone()) {
            self.exam.configs.push(config);
        }
    }

    pub(super) fn in_code(&mut self, sentence: String) {
        if !self.exam.in_code.contains(&sentence) {
            self.exam.in_code.push(sentence);
        }
    }

    /// A word of `command` the shell expands: what it selects is not known.
    pub(super) fn expanded(&mut self, command: &str, word: &str) {
        self.unresolved(format!(
            "`{command}` has `{word}`, which the shell expands: what it selects is not known"
        ));
    }

    pub(super) fn unresolved(&mut self, sentence: String) {
        if !self.exam.unresolved.contains(&sentence) {
            self.exam.unresolved.push(sentence);
        }
    }
}

/// The tree being read, with its directory listings kept once read.
pub(super) struct Ctx<'a> {
    /// The tree itself, for what is read as bytes.
    pub(super) tree: &'a dyn Tree,
    listings: RefCell<BTreeMap<String, Vec<String>>>,
}

/// Where in the nesting of command lines a line is read.
#[derive(Clone)]
pub(super) struct Scope {
    /// How many command lines enclose it.
    pub(super) depth: usize,
    /// How the line was reached (" (from `npm test`)"), for the `why`s.
    pub(super) via: String,
    /// Whether the paths the line names are exam files here: they are in a
    /// script or recipe, not on the criterion's own line (where the gate
    /// protects them already).
    pub(super) named: bool,
}

/// One simple command of a runner, as the ecosystems read it.
pub(super) struct Call<'a> {
    /// The tree being read.
    pub(super) ctx: &'a Ctx<'a>,
    /// Where the command lines it runs are read.
    pub(super) follow: &'a dyn Follow,
    /// The directory it runs in, workspace-relative.
    pub(super) dir: &'a str,
    /// The words before the command's name (`GOOS=windows`, `env`).
    pub(super) before: &'a [Word],
    /// The words after the command's name.
    pub(super) args: &'a [Word],
    /// The command as written, for the `why`s.
    pub(super) text: String,
    pub(super) scope: &'a Scope,
}

impl Call<'_> {
    /// Why a file this command selects is part of the exam.
    pub(super) fn why(&self) -> String {
        format!("`{}` runs it{}", self.text, self.scope.via)
    }

    /// The scope of a command line this command runs.
    pub(super) fn nested(&self, named: bool) -> Scope {
        Scope {
            depth: self.scope.depth + 1,
            via: format!(" (from `{}`{})", self.text, self.scope.via),
            named,
        }
    }

    /// Reads a command line this command runs (a script, a recipe) in `dir`.
    pub(super) fn run_line(&self, line: &str, dir: &str, out: &mut Found) {
        self.follow.line(line, dir, &self.nested(true), out);
    }

    /// Reads one simple command this command runs, in its own scope.
    pub(super) fn run_command(&self, words: &[Word], dir: &str, out: &mut Found) {
        self.follow.command(words, dir, self.scope, out);
    }

    pub(super) fn read_text(&self, path: &str) -> Option<String> {
        self.ctx.read_text(path)
    }
}
impl<'a> Ctx<'a> {
    /// A context over `tree`, nothing listed yet.
    pub(super) fn new(tree: &'a dyn Tree) -> Self {
        Self {
            tree,
            listings: RefCell::new(BTreeMap::new()),
        }
    }

    pub(super) fn read_text(&self, path: &str) -> Option<String> {
        self.tree
            .read(path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    pub(super) fn exists(&self, path: &str) -> bool {
        self.tree.exists(path)
    }

    /// The files under `dir`, listed once.
    pub(super) fn files_under(&self, dir: &str) -> Vec<String> {
        if let Some(list) = self.listings.borrow().get(dir) {
            return list.clone();
        }
        let list = self.tree.files_under(dir);
        self.listings
            .borrow_mut()
            .insert(dir.to_owned(), list.clone());
        list
    }

    /// Whether `dir` holds any file.
    pub(super) fn is_dir(&self, dir: &str) -> bool {
        !self.files_under(dir).is_empty()
    }
}
