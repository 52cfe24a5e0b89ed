//! The verdict, biased to approve: only something definite fails a run.

use gate_specs::OnReviewUnavailable;

use crate::record::{CheckRecord, CriterionRecord, Finding, ItemStatus, ReviewRecord, Verdict};

/// Everything the verdict is derived from.
pub struct Inputs<'a> {
    /// Cross-check results.
    pub checks: &'a [CheckRecord],
    /// Criterion results.
    pub criteria: &'a [CriterionRecord],
    /// The review.
    pub review: &'a ReviewRecord,
    /// Findings the coordinator kept.
    pub findings: &'a [Finding],
    /// What a specialist that did not run means.
    pub on_review_unavailable: OnReviewUnavailable,
    /// Why the review leaves the run undecided (over budget, too little coverage).
    pub review_incomplete: &'a [String],
}

/// The verdict and its reasons, strongest first. When several apply the
/// strongest wins: escalate > fail > incomplete > pass.
pub fn decide(inputs: &Inputs<'_>) -> (Verdict, Vec<String>) {
    let mut reasons: Vec<(Verdict, String)> = Vec::new();
    for c in inputs.checks {
        match c.status {
            ItemStatus::Failed => {
                reasons.push((Verdict::Fail, failed("check", &c.id, c.reason.as_deref())));
            }
            ItemStatus::Unverified => reasons.push((
                Verdict::Incomplete,
                format!(
                    "check `{}` was not decided: {}",
                    c.id,
                    c.reason.as_deref().unwrap_or("no result")
                ),
            )),
            ItemStatus::Passed | ItemStatus::Carried | ItemStatus::Skipped => {}
        }
    }
    for c in inputs.criteria {
        match c.status {
            ItemStatus::Failed => {
                reasons.push((
                    Verdict::Fail,
                    failed("criterion", &c.id, c.reason.as_deref()),
                ));
            }
            ItemStatus::Unverified => reasons.push((
                Verdict::Incomplete,
                format!(
                    "criterion `{}` could not be judged: {}",
                    c.id,
                    c.reason.as_deref().unwrap_or("no answer")
                ),
            )),
            ItemStatus::Passed | ItemStatus::Carried | ItemStatus::Skipped => {}
        }
    }
    for f in inputs.findings {
        if f.severity == "critical" {
            reasons.push((
                Verdict::Fail,
                format!("critical finding in {}: {}", f.file, f.title),
            ));
        }
    }
    if inputs.on_review_unavailable == OnReviewUnavailable::Fail {
        for s in &inputs.review.specialists {
            if s.status == "did_not_run" {
                reasons.push((
                    Verdict::Fail,
                    format!(
                        "reviewer `{}` did not run ({}) and policy says on_review_unavailable = \"fail\"",
                        s.role,
                        s.reason.as_deref().unwrap_or("no reason given")
                    ),
                ));
            }
        }
    }
    for why in inputs.review_incomplete {
        reasons.push((Verdict::Incomplete, why.clone()));
    }
    // Stable sort: strongest first, file order within a strength.
    reasons.sort_by_key(|r| std::cmp::Reverse(r.0));
    let verdict = reasons.first().map_or(Verdict::Pass, |(v, _)| *v);
    (verdict, reasons.into_iter().map(|(_, r)| r).collect())
}

fn failed(what: &str, id: &str, reason: Option<&str>) -> String {
    match reason {
        Some(r) => format!("{what} `{id}` failed: {r}"),
        None => format!("{what} `{id}` failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{CheckKind, DecidedBy};

    fn check(status: ItemStatus) -> CheckRecord {
        CheckRecord {
            id: "build".into(),
            kind: CheckKind::Check,
            command: "make".into(),
            status,
            exit_code: None,
            duration_ms: 0,
            inputs_digest: String::new(),
            carried_from: None,
            carried_bundle: None,
            reason: Some("exited with status 2".into()),
            output: gate_harness::Output::default(),
            locations: Vec::new(),
        }
    }

    fn criterion(status: ItemStatus) -> CriterionRecord {
        CriterionRecord {
            id: "c".into(),
            task: "t".into(),
            text: String::new(),
            decided_by: DecidedBy::Model,
            command: None,
            status,
            met: None,
            threshold: Some(0.8),
            exit_code: None,
            duration_ms: 0,
            inputs_digest: String::new(),
            carried_from: None,
            carried_bundle: None,
            reason: Some("review did not run".into()),
            output: gate_harness::Output::default(),
        }
    }

    #[test]
    fn strongest_wins() {
        use ItemStatus::{Carried, Failed, Passed, Skipped, Unverified};
        let review = ReviewRecord::did_not_run("no provider configured");
        let cases = [
            (vec![Passed], vec![Passed], Verdict::Pass),
            (vec![Carried], vec![Carried], Verdict::Pass),
            (vec![Failed, Skipped], vec![Passed], Verdict::Fail),
            (vec![Passed], vec![Unverified], Verdict::Incomplete),
            // A definite failure is reported even when something else is undecided.
            (vec![Failed], vec![Unverified], Verdict::Fail),
            (vec![Passed], vec![Failed, Unverified], Verdict::Fail),
        ];
        for (checks, criteria, want) in cases {
            let checks: Vec<_> = checks.into_iter().map(check).collect();
            let criteria: Vec<_> = criteria.into_iter().map(criterion).collect();
            let (v, reasons) = decide(&Inputs {
                checks: &checks,
                criteria: &criteria,
                review: &review,
                findings: &[],
                on_review_unavailable: OnReviewUnavailable::Pass,
                review_incomplete: &[],
            });
            assert_eq!(v, want, "{checks:?} {criteria:?}");
            assert_eq!(reasons.is_empty(), want == Verdict::Pass);
        }
    }

    #[test]
    fn reasons_strongest_first() {
        let review = ReviewRecord::did_not_run("offline");
        let (_, reasons) = decide(&Inputs {
            checks: &[check(ItemStatus::Failed)],
            criteria: &[criterion(ItemStatus::Unverified)],
            review: &review,
            findings: &[],
            on_review_unavailable: OnReviewUnavailable::Pass,
            review_incomplete: &[],
        });
        assert_eq!(
            reasons,
            [
                "check `build` failed: exited with status 2",
                "criterion `c` could not be judged: review did not run"
            ]
        );
    }
}
