//! The record of a scoring: each mutant and what became of it, the
//! tallies, the survivors as findings (the document `gate mutants --format
//! json` prints and a run's bundle keeps), and its readable text.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::mutant::{Mutant, Operator, Status};
use crate::score::Tally;

/// The version of this document's shape.
pub const FORMAT_VERSION: u32 = 1;

/// What `gate mutants` found: each mutant of the change's own lines, what
/// the criteria that read its file made of it, and the scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Document {
    /// The version of this shape.
    pub format_version: u32,
    /// The commit the change was measured from (the merge-base of the base and `HEAD`).
    pub base_commit: String,
    /// The changed files mutants were made of.
    pub files: Vec<String>,
    /// Each mutant, in file and line order.
    pub mutants: Vec<MutantRecord>,
    /// Mutants made but not run because of `--max` (or `[policy] mutants.max`).
    pub left_out: usize,
    /// Each criterion's tally over the scored mutants it ran against.
    pub criteria: BTreeMap<String, Tally>,
    /// Each task's tally: a mutant any of its criteria ran against is
    /// killed when one of them failed on it.
    pub tasks: BTreeMap<String, Tally>,
    /// Every scored mutant, killed or survived.
    pub total: Tally,
    /// Criteria run against every mutant of their task's files because
    /// no complete trace says what they read, with why.
    pub untraced: BTreeMap<String, String>,
    /// The change's other files, with why no mutant was made of them (no
    /// grammar for the language, a test or generated file, a link, does
    /// not parse): their lines are proven by no mutant.
    #[serde(default)]
    pub not_mutated: BTreeMap<String, String>,
    /// One warning per surviving mutant.
    pub findings: Vec<Survivor>,
    /// The tools that made and parsed the mutants, with their versions.
    pub tools: BTreeMap<String, String>,
}

/// One mutant and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MutantRecord {
    /// Workspace-relative.
    pub file: String,
    /// 1-based line of the edit.
    pub line: u32,
    /// What kind of edit.
    pub operator: Operator,
    /// The line as the change wrote it (trimmed).
    pub original: String,
    /// The line as the mutant has it (trimmed).
    pub replacement: String,
    /// `killed`, `survived`, `timeout`, `unviable`, `equivalent` or `not_run`.
    pub status: Status,
    /// The criteria that failed against it.
    pub killed_by: Vec<String>,
    /// The criteria that ran against it.
    pub ran: Vec<String>,
    /// Why it was set apart or not run, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl MutantRecord {
    /// A mutant's record before anything ran: set apart with why, or not
    /// run (yet).
    pub fn of(m: &Mutant) -> Self {
        Self {
            file: m.file.clone(),
            line: m.line,
            operator: m.operator,
            original: m.original.clone(),
            replacement: m.replacement.clone(),
            status: m.set_apart.as_ref().map_or(Status::NotRun, |a| a.status),
            killed_by: Vec::new(),
            ran: Vec::new(),
            why: m.set_apart.as_ref().map(|a| a.why.clone()),
        }
    }
}

/// A mutant no criterion noticed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Survivor {
    /// Always `warning`.
    pub severity: String,
    /// "no criterion notices when `…` becomes `…` at file:line".
    pub title: String,
    /// Workspace-relative.
    pub file: String,
    /// 1-based.
    pub line: u32,
    /// The criteria that read the file and passed against the mutant.
    pub criteria: Vec<String>,
}

impl Survivor {
    /// The finding for a surviving mutant.
    pub fn of(m: &MutantRecord) -> Self {
        Self {
            severity: "warning".to_owned(),
            title: format!(
                "no criterion notices when `{}` becomes `{}` at {}:{}",
                m.original, m.replacement, m.file, m.line
            ),
            file: m.file.clone(),
            line: m.line,
            criteria: m.ran.clone(),
        }
    }
}

/// The readable text: the totals, each criterion's score, the survivors.
pub fn text(doc: &Document) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let count = |s: Status| doc.mutants.iter().filter(|m| m.status == s).count();
    let _ = writeln!(
        out,
        "mutants: {} of {} file(s): {} killed, {} survived, {} timeout, {} unviable, {} equivalent, {} not run{}",
        doc.mutants.len(),
        doc.files.len(),
        count(Status::Killed),
        count(Status::Survived),
        count(Status::Timeout),
        count(Status::Unviable),
        count(Status::Equivalent),
        count(Status::NotRun),
        if doc.left_out > 0 {
            format!(" ({} more left out by --max)", doc.left_out)
        } else {
            String::new()
        }
    );
    let _ = writeln!(out, "score: {}", shown(&doc.total));
    for (id, tally) in &doc.criteria {
        let _ = writeln!(out, "  criterion {id}: {}", shown(tally));
    }
    for (id, tally) in &doc.tasks {
        let _ = writeln!(out, "  task {id}: {}", shown(tally));
    }
    for (id, why) in &doc.untraced {
        let _ = writeln!(
            out,
            "  criterion {id} ran against every mutant of its task's files: {why}"
        );
    }
    for (file, why) in &doc.not_mutated {
        let _ = writeln!(out, "  not mutated: {file} ({why})");
    }
    for f in &doc.findings {
        let _ = writeln!(
            out,
            "warning: {} (read by {})",
            f.title,
            f.criteria.join(", ")
        );
    }
    out
}

/// A tally as text: "2/3 killed (67%)", or "nothing scored".
pub fn shown(t: &Tally) -> String {
    match t.score {
        Some(score) => format!(
            "{}/{} killed ({:.0}%)",
            t.killed,
            t.killed + t.survived,
            score * 100.0
        ),
        None => "nothing scored".to_owned(),
    }
}
