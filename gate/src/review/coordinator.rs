//! The coordinator: fuses what the specialists raised into the findings the
//! verdict reads. The deterministic fusion always runs; on the full tier a
//! model coordinator then re-categorises and filters its result.

use std::collections::BTreeSet;

use serde_json::json;

use crate::findings::{finding_id, lines_overlap, titles_match};
use crate::record::Finding;
use crate::review::answer::RawFinding;
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
    /// Dropped, each with why.
    pub dropped: Vec<(Finding, String)>,
}

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

fn to_finding(role: Role, f: &RawFinding) -> Finding {
    let file = tidy_path(&f.file);
    Finding {
        id: finding_id(role.as_str(), &file, &f.title),
        severity: f.severity.clone(),
        role: role.as_str().to_owned(),
        file,
        line: f.line,
        title: f.title.trim().to_owned(),
        detail: f.detail.trim().to_owned(),
        confidence: f.confidence,
    }
}

/// Whether two findings describe the same defect.
pub fn same_defect(a: &Finding, b: &Finding) -> bool {
    a.file == b.file && lines_overlap(a.line, b.line) && titles_match(&a.title, &b.title)
}

fn role_rank(role: &str) -> u8 {
    role.parse::<Role>().map_or(u8::MAX, Role::tie_rank)
}

/// Drops findings outside the change and below the confidence floor, then
/// merges duplicates into the finding of the highest severity (ties go to
/// the first role in the order security, quality, performance,
/// integration, docs, rules).
pub fn fuse(raised: &[Raised], changed: &BTreeSet<String>, confidence_floor: f64) -> Fusion {
    let mut fusion = Fusion::default();
    let mut candidates = Vec::new();
    for r in raised {
        let f = to_finding(r.role, &r.finding);
        if !changed.contains(&f.file) {
            fusion
                .dropped
                .push((f, "cites a file outside the change".to_owned()));
        } else if f.confidence < confidence_floor {
            let why = format!(
                "confidence {:.2} below the floor {confidence_floor:.2}",
                f.confidence
            );
            fusion.dropped.push((f, why));
        } else {
            candidates.push(f);
        }
    }
    // Strongest first, so the first of a group of duplicates is the one kept.
    candidates.sort_by_key(|f| (severity_rank(&f.severity), role_rank(&f.role)));
    for f in candidates {
        match fusion.kept.iter().find(|k| same_defect(k, &f)) {
            Some(k) => {
                let why = format!("duplicate of {} ({})", k.id, k.role);
                fusion.dropped.push((f, why));
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
/// rules' follow theirs.
pub fn merge_rule_findings(fused: Vec<Finding>, rules: Vec<Finding>) -> Vec<Finding> {
    let mut kept = fused;
    let mut from_rules = Vec::new();
    for r in rules {
        match kept.iter().position(|k| same_defect(k, &r)) {
            Some(i) if severity_rank(&r.severity) < severity_rank(&kept[i].severity) => {
                kept.remove(i);
                from_rules.push(r);
            }
            Some(_) => {}
            None => from_rules.push(r),
        }
    }
    kept.extend(from_rules);
    // A stable sort: the order within one severity is kept.
    kept.sort_by_key(|f| severity_rank(&f.severity));
    kept
}

/// The findings as the model coordinator is shown them.
pub fn coordinator_payload(findings: &[Finding]) -> String {
    let list: Vec<_> = findings
        .iter()
        .map(|f| {
            json!({"severity": f.severity, "file": f.file, "line": f.line, "title": f.title,
                   "detail": f.detail, "confidence": f.confidence, "raised_by": f.role})
        })
        .collect();
    serde_json::to_string_pretty(&list).unwrap_or_default()
}

/// Maps the model coordinator's kept findings back onto the fused ones: a
/// kept finding takes the role and id of the fused finding it matches, and
/// its own (re-categorised) severity. It can only keep, merge or
/// re-categorise: a finding matching nothing it was shown is ignored.
pub fn reconcile(fused: &[Finding], kept_by_model: &[RawFinding]) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for k in kept_by_model {
        let probe = to_finding(Role::Coordinator, k);
        let Some(original) = fused.iter().find(|f| same_defect(f, &probe)) else {
            continue;
        };
        if out.iter().any(|o| o.id == original.id) {
            continue;
        }
        let severity = if severity_rank(&probe.severity) <= 2 {
            probe.severity.clone()
        } else {
            original.severity.clone()
        };
        out.push(Finding {
            severity,
            ..original.clone()
        });
    }
    sort_worst_first(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(sev: &str, file: &str, line: u32, title: &str, conf: f64) -> RawFinding {
        RawFinding {
            severity: sev.into(),
            file: file.into(),
            line: Some(line),
            title: title.into(),
            detail: String::new(),
            confidence: conf,
        }
    }

    #[test]
    fn fusion_drops_dedupes_and_orders() {
        let changed: BTreeSet<String> = ["src/a.rs", "src/b.rs"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let raised = vec![
            Raised {
                role: Role::Quality,
                finding: raw("warning", "src/a.rs", 10, "Error swallowed in parse", 0.9),
            },
            // Same defect, stronger severity, from another role: it wins.
            Raised {
                role: Role::Security,
                finding: raw(
                    "critical",
                    "./src/a.rs",
                    12,
                    "parse swallows the error",
                    0.8,
                ),
            },
            // Same severity tie: security beats performance.
            Raised {
                role: Role::Performance,
                finding: raw("warning", "src/b.rs", 5, "Quadratic loop over orders", 0.9),
            },
            Raised {
                role: Role::Security,
                finding: raw(
                    "warning",
                    "src/b.rs",
                    6,
                    "quadratic loop over the orders",
                    0.9,
                ),
            },
            Raised {
                role: Role::Quality,
                finding: raw("critical", "src/elsewhere.rs", 1, "bad", 0.99),
            },
            Raised {
                role: Role::Quality,
                finding: raw("critical", "src/a.rs", 40, "Unsure thing", 0.3),
            },
            Raised {
                role: Role::Docs,
                finding: raw(
                    "suggestion",
                    "src/a.rs",
                    90,
                    "Different problem entirely",
                    0.7,
                ),
            },
        ];
        let fusion = fuse(&raised, &changed, 0.5);
        let kept: Vec<(&str, &str, &str)> = fusion
            .kept
            .iter()
            .map(|f| (f.severity.as_str(), f.role.as_str(), f.file.as_str()))
            .collect();
        assert_eq!(
            kept,
            [
                ("critical", "security", "src/a.rs"),
                ("warning", "security", "src/b.rs"),
                ("suggestion", "docs", "src/a.rs"),
            ]
        );
        let reasons: Vec<&str> = fusion.dropped.iter().map(|(_, w)| w.as_str()).collect();
        assert!(reasons.contains(&"cites a file outside the change"));
        assert!(
            reasons
                .iter()
                .any(|r| r.starts_with("confidence 0.30 below"))
        );
        assert_eq!(
            reasons
                .iter()
                .filter(|r| r.starts_with("duplicate of"))
                .count(),
            2
        );
    }

    #[test]
    fn model_coordinator_can_only_keep_and_recategorise() {
        let changed: BTreeSet<String> = ["src/a.rs".to_owned()].into();
        let fused = fuse(
            &[
                Raised {
                    role: Role::Quality,
                    finding: raw(
                        "critical",
                        "src/a.rs",
                        10,
                        "Order total ignores quantity",
                        0.9,
                    ),
                },
                Raised {
                    role: Role::Docs,
                    finding: raw("warning", "src/a.rs", 50, "Readme wording", 0.9),
                },
            ],
            &changed,
            0.5,
        )
        .kept;
        let kept = reconcile(
            &fused,
            &[
                raw("warning", "src/a.rs", 11, "total ignores the quantity", 0.9),
                raw(
                    "critical",
                    "src/a.rs",
                    200,
                    "A brand new invented problem",
                    1.0,
                ),
            ],
        );
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].severity, "warning");
        assert_eq!(kept[0].role, "quality");
        assert_eq!(kept[0].id, fused[0].id);
    }
}
