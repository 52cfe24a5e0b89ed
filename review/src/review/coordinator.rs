//! The coordinator: fuses what the specialists raised into the findings the
//! verdict reads, and keeps the lineage of every one of them.
//!
//! The deterministic fusion always runs: a finding outside the change or
//! below the confidence floor is dropped, and duplicates across roles are
//! merged into the one of the highest severity. On the full tier a model
//! coordinator is then shown the fused findings with the code each cites
//! ([`payload`]) and decides, per finding, to keep (perhaps rephrased or
//! re-categorised), merge or drop it ([`coordinate`]). It cannot veto in
//! silence: a drop needs a stated reason, and so does a downgrade of a
//! critical; a finding it neither keeps nor drops stands; and unless
//! `[policy] coordinator_may_drop_critical` allows it, a critical raised by
//! two or more roles, or with confidence 0.9 or more, stands whatever it
//! says. What it asked that did not hold is kept in the finding's
//! `lineage.overruled`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::json;

use crate::findings::{Fate, FateBy, Finding, lines_overlap, titles_match};
use crate::review::answer::{Coordination, Keep, RawFinding};
use crate::review::context::{ChangedFile, Fence};
use crate::role::Role;

/// A finding as one specialist raised it.
#[derive(Debug, Clone)]
pub struct Raised {
    /// Who raised it.
    pub role: Role,
    /// What it said.
    pub finding: RawFinding,
}

/// What the deterministic fusion kept and dropped.
#[derive(Debug, Clone, Default)]
pub struct Fusion {
    /// Kept, worst first.
    pub kept: Vec<Finding>,
    /// Dropped or merged away, each with its lineage.
    pub dropped: Vec<Finding>,
}

/// Confidence at which one role's critical finding is corroborated enough
/// to stand against the model coordinator.
pub const SURE_CRITICAL: f64 = 0.9;

/// Severity rank: lower is worse.
pub fn severity_rank(severity: &str) -> u8 {
    match severity {
        "critical" => 0,
        "warning" => 1,
        _ => 2,
    }
}

fn tidy_path(file: &str) -> String {
    file.trim().trim_start_matches("./").to_owned()
}

/// A finding as `role` raised it.
pub fn to_finding(role: Role, f: &RawFinding) -> Finding {
    Finding::raised(
        role.as_str(),
        &f.severity,
        tidy_path(&f.file),
        f.line,
        f.title.trim().to_owned(),
        f.detail.trim().to_owned(),
        f.confidence,
    )
}

/// Whether two findings describe the same defect.
pub fn same_defect(a: &Finding, b: &Finding) -> bool {
    a.file == b.file && lines_overlap(a.line, b.line) && titles_match(&a.title, &b.title)
}

fn role_rank(role: &str) -> u8 {
    role.parse::<Role>().map_or(u8::MAX, Role::tie_rank)
}

/// Records that `from`'s raisers raised `into`'s defect too.
fn absorb(into: &mut Finding, from: &Finding) {
    for r in &from.lineage.raised_by {
        if !into.lineage.raised_by.contains(r) {
            into.lineage.raised_by.push(r.clone());
        }
    }
}

/// Drops findings outside the change and below the confidence floor, then
/// merges duplicates into the finding of the highest severity (ties go to
/// the first role in the order security, quality, performance,
/// integration, docs, rules). Every finding raised ends in `kept` or, with
/// why, in `dropped`.
pub fn fuse(raised: &[Raised], changed: &BTreeSet<String>, confidence_floor: f64) -> Fusion {
    let mut fusion = Fusion::default();
    let mut candidates = Vec::new();
    for r in raised {
        let f = to_finding(r.role, &r.finding);
        if !changed.contains(&f.file) {
            fusion
                .dropped
                .push(f.dropped(FateBy::OutsideChange, "it cites a file outside the change"));
        } else if f.confidence < confidence_floor {
            let why = format!(
                "confidence {:.2} below the floor {confidence_floor:.2}",
                f.confidence
            );
            fusion.dropped.push(f.dropped(FateBy::ConfidenceFloor, why));
        } else {
            candidates.push(f);
        }
    }
    // Strongest first, so the first of a group of duplicates is the one kept.
    candidates.sort_by_key(|f| (severity_rank(&f.severity), role_rank(&f.role)));
    for f in candidates {
        match fusion.kept.iter_mut().find(|k| same_defect(k, &f)) {
            Some(k) => {
                absorb(k, &f);
                let why = format!("the same defect as {} ({})", k.id, k.role);
                let merged = f.merged(FateBy::Dedupe, k, why);
                fusion.dropped.push(merged);
            }
            None => fusion.kept.push(f),
        }
    }
    sort_worst_first(&mut fusion.kept);
    fusion
}

/// Worst first, then by file and line.
pub fn sort_worst_first(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        (severity_rank(&a.severity), &a.file, a.line, &a.id).cmp(&(
            severity_rank(&b.severity),
            &b.file,
            b.line,
            &b.id,
        ))
    });
}

/// Adds the house rules' findings (already worst first) to the fused ones.
/// A rule finding that is the same defect as a fused finding merges like
/// any duplicate: the higher severity stays, and on a tie the other role
/// wins (rules come last in the tie order). The result is worst first by
/// severity; within a severity the fused findings keep their order and the
/// rules' follow theirs. Returns what stands and what was merged away.
pub fn merge_rule_findings(
    fused: Vec<Finding>,
    rules: Vec<Finding>,
) -> (Vec<Finding>, Vec<Finding>) {
    let mut kept = fused;
    let mut from_rules = Vec::new();
    let mut merged = Vec::new();
    for mut r in rules {
        match kept.iter().position(|k| same_defect(k, &r)) {
            Some(i) if severity_rank(&r.severity) < severity_rank(&kept[i].severity) => {
                let k = kept.remove(i);
                absorb(&mut r, &k);
                let why = format!("the same defect as {} ({})", r.id, r.role);
                merged.push(k.merged(FateBy::Dedupe, &r, why));
                from_rules.push(r);
            }
            Some(i) => {
                absorb(&mut kept[i], &r);
                let why = format!("the same defect as {} ({})", kept[i].id, kept[i].role);
                merged.push(r.merged(FateBy::Dedupe, &kept[i], why));
            }
            None => from_rules.push(r),
        }
    }
    kept.extend(from_rules);
    // A stable sort: the order within one severity is kept.
    kept.sort_by_key(|f| severity_rank(&f.severity));
    (kept, merged)
}

/// Lines shown on each side of the line a finding cites.
const AROUND: usize = 8;
/// The most of one finding's code shown.
const EXCERPT_CAP: usize = 4 * 1024;

/// The lines around `line` (1-based; the file's start when `None`),
/// numbered, at most [`EXCERPT_CAP`] bytes.
fn excerpt(text: &str, line: Option<u32>) -> (String, usize, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let at = line.map_or(1, |l| l as usize).clamp(1, lines.len().max(1));
    let first = at.saturating_sub(AROUND).max(1);
    let last = (at + AROUND).min(lines.len());
    let mut out = String::new();
    for (n, l) in lines
        .iter()
        .enumerate()
        .take(last)
        .skip(first - 1)
        .map(|(i, l)| (i + 1, l))
    {
        let row = format!("{n:>6} | {l}\n");
        if out.len() + row.len() > EXCERPT_CAP {
            break;
        }
        out.push_str(&row);
    }
    (out, first, last)
}

/// What the model coordinator is shown: the findings (with their ids, who
/// raised them, and how sure they were), then the code each cites, fenced,
/// as long as the code fits in `code_bytes`.
pub fn payload(
    findings: &[Finding],
    files: &[ChangedFile],
    fence: &Fence,
    code_bytes: usize,
) -> String {
    let (section, _) = fence.wrap(
        "kind=\"findings\"",
        &findings_json(findings),
        crate::review::context::BLOCK_CAP,
    );
    let mut out = format!("## Findings\n{section}");
    let mut code = String::new();
    let mut left_out = Vec::new();
    for f in findings {
        let Some(text) = files
            .iter()
            .find(|c| c.path == f.file)
            .and_then(|c| c.text.as_deref())
        else {
            continue;
        };
        let (lines, first, last) = excerpt(text, f.line);
        let (section, _) = fence.wrap(
            &format!(
                "kind=\"code\" finding=\"{}\" file=\"{}\" lines=\"{first}-{last}\"",
                f.id, f.file
            ),
            &lines,
            EXCERPT_CAP,
        );
        if code.len() + section.len() > code_bytes {
            left_out.push(f.id.as_str());
            continue;
        }
        code.push_str(&section);
    }
    if !code.is_empty() || !left_out.is_empty() {
        let _ = write!(out, "\n## The code the findings cite\n{code}");
        if !left_out.is_empty() {
            let _ = writeln!(
                out,
                "(The code of {} is not shown: the run's token budget has no room for it.)",
                left_out.join(", ")
            );
        }
    }
    out
}

/// Findings as a model is shown them: id, severity, place, words, how sure,
/// and who raised them.
pub fn findings_json(findings: &[Finding]) -> String {
    let list: Vec<_> = findings
        .iter()
        .map(|f| {
            json!({"id": f.id, "severity": f.severity, "file": f.file, "line": f.line,
                   "title": f.title, "detail": f.detail, "confidence": f.confidence,
                   "raised_by": f.lineage.raised_by})
        })
        .collect();
    serde_json::to_string_pretty(&list).unwrap_or_default()
}

/// A critical finding the model coordinator may not drop or downgrade while
/// `[policy] coordinator_may_drop_critical` is false: raised by two or more
/// roles, or as a critical with confidence [`SURE_CRITICAL`] or more by any.
pub fn corroborated(f: &Finding, merged: &[Finding]) -> bool {
    f.severity == "critical"
        && (f.lineage.raised_by.len() >= 2
            || f.confidence >= SURE_CRITICAL
            || merged.iter().any(|d| {
                d.lineage.merged_into.as_deref() == Some(f.id.as_str())
                    && d.lineage.raised_severity == "critical"
                    && d.confidence >= SURE_CRITICAL
            }))
}

/// Applies the model coordinator's decisions to the fused findings.
/// `merged` holds what the fusion merged away (read for corroboration).
/// Returns what stands, worst first, and what it dropped or merged away.
pub fn coordinate(
    fused: Vec<Finding>,
    merged: &[Finding],
    decisions: &Coordination,
    may_drop_critical: bool,
) -> (Vec<Finding>, Vec<Finding>) {
    let shown: BTreeSet<&str> = fused.iter().map(|f| f.id.as_str()).collect();
    let keep: BTreeMap<&str, &Keep> = decisions
        .keep
        .iter()
        .filter(|k| shown.contains(k.id.as_str()))
        .map(|k| (k.id.as_str(), k))
        .collect();
    let merge: BTreeMap<&str, &Keep> = decisions
        .keep
        .iter()
        .filter(|k| shown.contains(k.id.as_str()))
        .flat_map(|k| k.merges.iter().map(move |m| (m.as_str(), k)))
        .filter(|(m, k)| *m != k.id && shown.contains(m))
        .collect();
    let drop: BTreeMap<&str, &str> = decisions
        .drop
        .iter()
        .map(|d| (d.id.as_str(), d.why.as_str()))
        .collect();
    for unknown in decisions
        .keep
        .iter()
        .map(|k| k.id.as_str())
        .chain(drop.keys().copied())
        .filter(|id| !shown.contains(id))
    {
        tracing::warn!(
            finding = unknown,
            "the coordinator named a finding it was not shown"
        );
    }

    let rules = Lowering {
        merged,
        may_drop_critical,
    };
    let mut stands: Vec<Finding> = Vec::new();
    let mut gone: Vec<Finding> = Vec::new();
    let mut absorbed: Vec<(String, Finding)> = Vec::new();
    for mut f in fused {
        if let Some(k) = keep.get(f.id.as_str()) {
            restate(&mut f, k, &rules);
            stands.push(f);
        } else if let Some(k) = merge.get(f.id.as_str()) {
            let what = format!("merged it into {} (a {})", k.id, k.severity);
            match rules.holds(&f, &k.severity, &k.why, &what) {
                Ok(()) => absorbed.push((k.id.clone(), f)),
                Err(overruled) => {
                    f.lineage.overruled = Some(overruled);
                    stands.push(f);
                }
            }
        } else if let Some(why) = drop.get(f.id.as_str()) {
            let verdict = if why.is_empty() {
                Err("the coordinator dropped it without a reason; it stands".to_owned())
            } else if f.severity == "critical" && !may_drop_critical && corroborated(&f, merged) {
                Err(format!(
                    "the coordinator dropped it ({why}), but a critical {} stands \
                     (coordinator_may_drop_critical = false)",
                    corroboration(&f, merged)
                ))
            } else {
                Ok(())
            };
            match verdict {
                Ok(()) => gone.push(f.dropped(FateBy::Coordinator, *why)),
                Err(overruled) => {
                    f.lineage.overruled = Some(overruled);
                    stands.push(f);
                }
            }
        } else {
            f.lineage.overruled =
                Some("the coordinator left it out without a reason; it stands".to_owned());
            stands.push(f);
        }
    }
    for (into, f) in absorbed {
        match stands.iter_mut().find(|s| s.id == into) {
            Some(target) => {
                absorb(target, &f);
                let why = keep
                    .get(into.as_str())
                    .map(|k| k.why.clone())
                    .filter(|w| !w.is_empty())
                    .unwrap_or_else(|| "the same defect".to_owned());
                gone.push(f.merged(FateBy::Coordinator, target, why));
            }
            None => stands.push(f),
        }
    }
    sort_worst_first(&mut stands);
    (stands, gone)
}

/// When the coordinator may lower a finding's severity (drop it into a
/// lesser one, or merge it into one): always, except a critical without a
/// reason, or a corroborated critical while the policy says no.
struct Lowering<'a> {
    merged: &'a [Finding],
    may_drop_critical: bool,
}

impl Lowering<'_> {
    /// Whether lowering `f` to `to` for `why` holds; when not, what the
    /// coordinator did (`what`) and why it does not hold.
    fn holds(&self, f: &Finding, to: &str, why: &str, what: &str) -> Result<(), String> {
        if severity_rank(to) <= severity_rank(&f.severity) || f.severity != "critical" {
            return Ok(());
        }
        if why.is_empty() {
            return Err(format!(
                "the coordinator {what} without a reason; a critical stands as raised"
            ));
        }
        if !self.may_drop_critical && corroborated(f, self.merged) {
            return Err(format!(
                "the coordinator {what} ({why}), but a critical {} stands \
                 (coordinator_may_drop_critical = false)",
                corroboration(f, self.merged)
            ));
        }
        Ok(())
    }
}

/// A kept finding as the coordinator restates it: its severity (unless a
/// lowering does not hold), and its wording, with what it was recorded.
fn restate(f: &mut Finding, k: &Keep, rules: &Lowering<'_>) {
    let why = (!k.why.is_empty()).then(|| k.why.clone());
    if !k.title.is_empty() && k.title != f.title {
        f.lineage.raised_title = Some(std::mem::replace(&mut f.title, k.title.clone()));
        f.lineage.by = Some(FateBy::Coordinator);
    }
    if !k.detail.is_empty() && k.detail != f.detail {
        f.lineage.raised_detail = Some(std::mem::replace(&mut f.detail, k.detail.clone()));
        f.lineage.by = Some(FateBy::Coordinator);
    }
    if k.severity != f.severity {
        let what = format!("downgraded it to {}", k.severity);
        match rules.holds(f, &k.severity, &k.why, &what) {
            Ok(()) => {
                f.lineage.fate = if severity_rank(&k.severity) > severity_rank(&f.severity) {
                    Fate::Downgraded
                } else {
                    Fate::Upgraded
                };
                f.severity.clone_from(&k.severity);
                f.lineage.by = Some(FateBy::Coordinator);
            }
            Err(overruled) => f.lineage.overruled = Some(overruled),
        }
    }
    if f.lineage.by == Some(FateBy::Coordinator) {
        f.lineage.why = why;
    }
}

fn corroboration(f: &Finding, merged: &[Finding]) -> String {
    if f.lineage.raised_by.len() >= 2 {
        return format!("raised by {}", f.lineage.raised_by.join(" and "));
    }
    let surest = merged
        .iter()
        .filter(|d| d.lineage.merged_into.as_deref() == Some(f.id.as_str()))
        .filter(|d| d.lineage.raised_severity == "critical")
        .map(|d| d.confidence)
        .fold(f.confidence, f64::max);
    format!("raised with confidence {surest:.2}")
}

#[cfg(test)]
mod tests;
