//! House rules as questions: which rules a change asks, the questions in
//! one request (split only to fit limits), and the answers turned into
//! findings.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::findings::Finding;
use crate::review::answer::RuleAnswer;
use crate::review::context::{self, Fence};
use crate::review::coordinator::severity_rank;
use crate::role::Role;
use crate::rules::model::{Claim, Rule};
use crate::rules::scope::RuleSet;

/// Questions in one request at most; more are split into further requests.
pub const MAX_QUESTIONS: usize = 60;
/// Bytes of questions in one request at most.
pub const MAX_QUESTION_BYTES: usize = 64 * 1024;

/// A judged rule put to the rules reviewer, with the changed files it applies to.
#[derive(Debug, Clone)]
pub struct Asked {
    /// The id the answer must carry: the rule's id, qualified by its home
    /// when rules of sibling folders share it.
    pub key: String,
    /// The rule.
    pub rule: Rule,
    /// The changed files it applies to, sorted.
    pub files: Vec<String>,
}

/// The judged rules that apply to any of `files` (workspace-relative),
/// outermost first; guide entries are never asked.
pub fn asked(set: &RuleSet, files: &[String]) -> Vec<Asked> {
    // Design rules are asked of screenshots, page by page (`rules::design`).
    judged(set, files, false)
}

/// The judged rules, design rules or the others, that apply to any of
/// `files`; a rule id that more than one rules file uses is keyed
/// `id@home`.
pub fn judged(set: &RuleSet, files: &[String], design: bool) -> Vec<Asked> {
    let mut out: Vec<Asked> = Vec::new();
    for rule in set.rules.iter().filter(|r| r.judge && r.design == design) {
        let mut applies: Vec<String> = files
            .iter()
            .filter(|f| rule.applies_to(f))
            .cloned()
            .collect();
        if applies.is_empty() {
            continue;
        }
        applies.sort();
        applies.dedup();
        out.push(Asked {
            key: rule.id.clone(),
            rule: rule.clone(),
            files: applies,
        });
    }
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for a in &out {
        *count.entry(a.rule.id.clone()).or_default() += 1;
    }
    for a in &mut out {
        if count[&a.rule.id] > 1 {
            a.key = format!("{}@{}", a.rule.id, a.rule.home);
        }
    }
    out
}

/// The questions split into requests: as few as the limits allow.
pub fn chunks(asked: &[Asked]) -> Vec<&[Asked]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    for (i, a) in asked.iter().enumerate() {
        let size = a.rule.question().len() + a.key.len() + 16;
        if i > start && (i - start >= MAX_QUESTIONS || bytes + size > MAX_QUESTION_BYTES) {
            out.push(&asked[start..i]);
            start = i;
            bytes = 0;
        }
        bytes += size;
    }
    if start < asked.len() {
        out.push(&asked[start..]);
    }
    out
}

/// The fenced list of questions, one per rule, each the rule's own words
/// prefixed with where it applies.
pub fn questions(fence: &Fence, asked: &[Asked]) -> String {
    let mut list = String::new();
    for a in asked {
        let _ = writeln!(list, "- id `{}`: {}", a.key, a.rule.question());
        if a.files.len() == 1 {
            let _ = writeln!(list, "  (changed file it applies to: {})", a.files[0]);
        } else if !a.files.is_empty() {
            let _ = writeln!(
                list,
                "  (changed files it applies to: {})",
                a.files.join(", ")
            );
        }
    }
    let (section, _) = fence.wrap("kind=\"rules\"", &list, context::BLOCK_CAP);
    format!(
        "## House rules\nFor each rule below, `p` is the probability that its claim is true \
         for the change.\n{section}"
    )
}

/// A rule's verdict on a change.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// The key it was asked under.
    pub key: String,
    /// Probability the change complies (a mistake's `p` flipped).
    pub compliance: f64,
    /// The reviewer's reason.
    pub why: String,
}

/// Compliance per asked rule, from the answers (by key); rules without an
/// answer are left out.
pub fn score(asked: &[Asked], answers: &[RuleAnswer]) -> Vec<Scored> {
    asked
        .iter()
        .filter_map(|a| {
            let answer = answers.iter().find(|r| r.id.trim() == a.key)?;
            Some(Scored {
                key: a.key.clone(),
                compliance: a.rule.claim.compliance(answer.p),
                why: answer.why.trim().to_owned(),
            })
        })
        .collect()
}

/// Findings for the rules whose compliance is below `threshold`, worst
/// first: by severity, then by compliance.
pub fn findings(asked: &[Asked], scored: &[Scored], threshold: f64) -> Vec<Finding> {
    let mut out: Vec<(f64, Finding)> = Vec::new();
    for s in scored.iter().filter(|s| s.compliance < threshold) {
        let Some(a) = asked.iter().find(|a| a.key == s.key) else {
            continue;
        };
        out.push((s.compliance, finding(a, s, threshold)));
    }
    out.sort_by(|(ca, a), (cb, b)| {
        severity_rank(&a.severity)
            .cmp(&severity_rank(&b.severity))
            .then(ca.total_cmp(cb))
            .then(a.id.cmp(&b.id))
    });
    out.into_iter().map(|(_, f)| f).collect()
}

fn finding(a: &Asked, s: &Scored, threshold: f64) -> Finding {
    let rule = &a.rule;
    // The file the reviewer's reason names, else the first the rule applies to.
    let file = a
        .files
        .iter()
        .find(|f| s.why.contains(f.as_str()))
        .or_else(|| a.files.first())
        .cloned()
        .unwrap_or_default();
    let title = match &rule.claim {
        Claim::Mistake(m) => format!("house rule `{}`: {}", rule.id, m.trim()),
        Claim::Statement(st) => format!("house rule `{}` not followed: {}", rule.id, st.trim()),
    };
    let mut detail = String::new();
    if !s.why.is_empty() {
        let _ = writeln!(detail, "{}", s.why);
    }
    let _ = writeln!(
        detail,
        "compliance {:.2}, below the rule threshold {threshold:.2}",
        s.compliance
    );
    let _ = writeln!(detail, "fix: {}", rule.fix.trim());
    if let Some(reference) = &rule.reference {
        let _ = writeln!(detail, "reference: {reference}");
    }
    let _ = write!(detail, "rule: {} in {}", rule.id, rule.source);
    Finding::raised(
        Role::Rules.as_str(),
        rule.severity.as_str(),
        file,
        None,
        title,
        detail,
        ((1.0 - s.compliance).clamp(0.0, 1.0) * 1000.0).round() / 1000.0,
    )
}

/// The references of `asked`, workspace-relative, sorted and unique.
pub fn references(asked: &[Asked]) -> Vec<String> {
    let mut refs: Vec<String> = asked
        .iter()
        .filter_map(|a| a.rule.reference.clone())
        .collect();
    refs.sort();
    refs.dedup();
    refs
}
