//! The verdict, biased to approve: only something definite fails a run.
//! A pass that rests on less review than planned says so (its qualifier).

use gate_review::findings::Finding;
use gate_review::record::{ByteRange, ReviewRecord, ReviewStatus};
use gate_specs::ReviewUnavailable;

use crate::guard::GUARD_ROLE;
use crate::record::{
    CheckRecord, CriterionRecord, ItemStatus, Qualifier, QualifierKind, Reason, ReasonKind, Verdict,
};

/// Everything the verdict is derived from.
pub(crate) struct Inputs<'a> {
    /// Cross-check results.
    pub checks: &'a [CheckRecord],
    /// Criterion results.
    pub criteria: &'a [CriterionRecord],
    /// The review.
    pub review: &'a ReviewRecord,
    /// Findings the coordinator kept.
    pub findings: &'a [Finding],
    /// What a reviewer that did not run means in this run's tier.
    pub on_review_unavailable: ReviewUnavailable,
    /// What part of a reviewer's remit not shown to it means in this run's tier.
    pub on_review_cut: ReviewUnavailable,
    /// Why the review leaves the run undecided (over budget, too little coverage).
    pub review_incomplete: &'a [String],
}

/// The verdict, its reasons (strongest first) and what a pass leaves unsaid.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    /// The verdict.
    pub verdict: Verdict,
    /// Why, strongest first.
    pub reasons: Vec<Reason>,
    /// For a pass: whether review was missing, wholly or mostly.
    pub qualifier: Option<Qualifier>,
}

/// The verdict and its reasons, strongest first. When several apply the
/// strongest wins: escalate > fail > incomplete > pass.
pub(crate) fn decide(inputs: &Inputs<'_>) -> Decision {
    let mut reasons: Vec<Reason> = Vec::new();
    for c in inputs.checks {
        match c.status {
            ItemStatus::Failed => reasons.push(Reason::new(
                ReasonKind::Check,
                &c.id,
                Verdict::Fail,
                failed("check", &c.id, c.reason.as_deref()),
            )),
            ItemStatus::Unverified => reasons.push(Reason::new(
                ReasonKind::Check,
                &c.id,
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
            ItemStatus::Failed => reasons.push(Reason::new(
                ReasonKind::Criterion,
                &c.id,
                Verdict::Fail,
                failed("criterion", &c.id, c.reason.as_deref()),
            )),
            ItemStatus::Unverified => reasons.push(Reason::new(
                ReasonKind::Criterion,
                &c.id,
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
    for f in inputs.findings.iter().filter(|f| f.severity == "critical") {
        let kind = if f.role == GUARD_ROLE {
            ReasonKind::Guard
        } else {
            ReasonKind::Finding
        };
        reasons.push(Reason::new(
            kind,
            &f.id,
            Verdict::Fail,
            format!("critical finding in {}: {}", f.file, f.title),
        ));
    }
    // A review skipped because a cross-check failed was not unavailable:
    // the failure decides.
    let failed_first = inputs.checks.iter().any(|c| c.status == ItemStatus::Failed)
        || inputs.criteria.iter().any(|c| {
            c.status == ItemStatus::Failed && c.decided_by == crate::record::DecidedBy::Code
        });
    let missing = if failed_first {
        Missing::default()
    } else {
        Missing::of(inputs.review)
    };
    let policy = inputs.on_review_unavailable;
    if let Some(verdict) = called_for(policy) {
        for (id, why) in &missing.reviewers {
            let what = if id == "review" {
                "the review".to_owned()
            } else {
                format!("reviewer `{id}`")
            };
            reasons.push(Reason::new(
                ReasonKind::Review,
                id,
                verdict,
                format!(
                    "{what} did not run ({why}) and policy says on_review_unavailable = \"{}\"",
                    policy.as_str()
                ),
            ));
        }
    }
    if !missing.unseen.is_empty()
        && let Some(verdict) = called_for(inputs.on_review_cut)
    {
        reasons.push(Reason::new(
            ReasonKind::Review,
            "review",
            verdict,
            format!(
                "part of the change was not reviewed ({}) and policy says on_review_cut = \"{}\"",
                missing.unseen_words(),
                inputs.on_review_cut.as_str()
            ),
        ));
    }
    for why in inputs.review_incomplete {
        reasons.push(Reason::new(
            ReasonKind::Review,
            "review",
            Verdict::Incomplete,
            why.clone(),
        ));
    }
    // Stable sort: strongest first, file order within a strength.
    reasons.sort_by_key(|r| std::cmp::Reverse(r.verdict));
    let verdict = reasons.first().map_or(Verdict::Pass, |r| r.verdict);
    let qualifier = (verdict == Verdict::Pass)
        .then(|| missing.qualifier())
        .flatten();
    Decision {
        verdict,
        reasons,
        qualifier,
    }
}

/// The verdict a policy word calls for (`pass`: none).
fn called_for(policy: ReviewUnavailable) -> Option<Verdict> {
    match policy {
        ReviewUnavailable::Pass => None,
        ReviewUnavailable::Incomplete => Some(Verdict::Incomplete),
        ReviewUnavailable::Fail => Some(Verdict::Fail),
    }
}

/// The review that should have run and did not.
#[derive(Debug, Default)]
struct Missing {
    /// Each reviewer that did not run and why (`review` for the whole review).
    reviewers: Vec<(String, String)>,
    /// Reviewers planned: those asked or meant to be (never a skipped one).
    planned: usize,
    /// Whether no reviewer looked at the change at all.
    none_ran: bool,
    /// The models an open circuit breaker skipped for a reviewer that did
    /// not run.
    breakers_open: Vec<String>,
    /// What reviewers that ran were not shown of their remit, each range
    /// with the reviewers it was kept from.
    unseen: Vec<(ByteRange, Vec<String>)>,
}

impl Missing {
    fn of(review: &ReviewRecord) -> Self {
        if review.status == ReviewStatus::DidNotRun {
            let why = review
                .reason
                .clone()
                .unwrap_or_else(|| "no reason given".to_owned());
            return Self {
                reviewers: vec![("review".to_owned(), why)],
                planned: 0,
                none_ran: true,
                breakers_open: breakers_open(review.specialists.iter()),
                unseen: Vec::new(),
            };
        }
        let planned: Vec<_> = review
            .specialists
            .iter()
            .filter(|s| s.status != "skipped")
            .collect();
        let reviewers: Vec<(String, String)> = planned
            .iter()
            .filter(|s| s.status == "did_not_run")
            .map(|s| {
                (
                    s.role.clone(),
                    s.reason
                        .clone()
                        .unwrap_or_else(|| "no reason given".to_owned()),
                )
            })
            .collect();
        Self {
            unseen: review.unseen(),
            none_ran: !planned.is_empty() && reviewers.len() == planned.len(),
            planned: planned.len(),
            breakers_open: breakers_open(
                planned
                    .iter()
                    .copied()
                    .filter(|s| s.status == "did_not_run"),
            ),
            reviewers,
        }
    }

    /// `unreviewed` when nobody reviewed, `under-reviewed` when more than
    /// half of the planned reviewers did not run.
    fn qualifier(&self) -> Option<Qualifier> {
        if self.none_ran {
            let why = match self.reviewers.as_slice() {
                [(id, why)] if id == "review" => why.clone(),
                [(_, why)] => why.clone(),
                all => format!("none of {} reviewers ran ({})", all.len(), names(all)),
            };
            return Some(Qualifier {
                kind: QualifierKind::Unreviewed,
                why,
                breakers_open: self.breakers_open.clone(),
            });
        }
        let mut why = Vec::new();
        if self.reviewers.len() * 2 > self.planned {
            why.push(format!(
                "{} of {} reviewers did not run: {}",
                self.reviewers.len(),
                self.planned,
                names(&self.reviewers)
            ));
        }
        if !self.unseen.is_empty() {
            why.push(format!("not reviewed: {}", self.unseen_words()));
        }
        (!why.is_empty()).then(|| Qualifier {
            breakers_open: self.breakers_open.clone(),
            kind: QualifierKind::UnderReviewed,
            why: why.join("; "),
        })
    }

    /// The ranges no reviewer was shown, each with whom it was kept from:
    /// `src/app.py bytes 262144-307199 (quality, security)`; the first few,
    /// then how many more.
    fn unseen_words(&self) -> String {
        const SHOWN: usize = 5;
        let mut words: Vec<String> = self
            .unseen
            .iter()
            .take(SHOWN)
            .map(|(r, roles)| format!("{} ({})", r.words(), roles.join(", ")))
            .collect();
        if self.unseen.len() > SHOWN {
            words.push(format!("and {} more", self.unseen.len() - SHOWN));
        }
        words.join(", ")
    }
}

/// The models an open breaker skipped for `specialists`, sorted, each once.
fn breakers_open<'a>(
    specialists: impl Iterator<Item = &'a gate_review::record::SpecialistRecord>,
) -> Vec<String> {
    let models: std::collections::BTreeSet<&str> = specialists
        .flat_map(|s| s.attempts.iter())
        .filter(|a| a.outcome == gate_review::record::AttemptOutcome::BreakerOpen)
        .map(|a| a.model.as_str())
        .collect();
    models.into_iter().map(str::to_owned).collect()
}

fn names(reviewers: &[(String, String)]) -> String {
    reviewers
        .iter()
        .map(|(id, _)| id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn failed(what: &str, id: &str, reason: Option<&str>) -> String {
    match reason {
        Some(r) => format!("{what} `{id}` failed: {r}"),
        None => format!("{what} `{id}` failed"),
    }
}

/// The doom-loop detector's conclusion as a verdict reason.
pub(crate) fn doom_reason(d: &crate::doom::DoomLoop) -> Reason {
    Reason::new(
        ReasonKind::DoomLoop,
        d.pattern.as_str(),
        Verdict::Escalate,
        d.message.clone(),
    )
}

/// A failing attempt read with the series' failing ones: one that keeps
/// failing the same way (or flips between failures, or makes no progress)
/// is escalated to a human, the detector's reason first.
pub(crate) fn escalate_on_doom(
    record: &mut crate::record::RunRecord,
    failing: &[crate::doom::FailingAttempt],
    thresholds: crate::doom::Thresholds,
) {
    if record.verdict != Verdict::Fail {
        return;
    }
    let mut failing = failing.to_vec();
    failing.push(crate::doom::FailingAttempt {
        attempt: record.attempt,
        failures: record.failures.iter().cloned().collect(),
    });
    if let Some(d) = crate::doom::detect(&failing, thresholds) {
        record.verdict = Verdict::Escalate;
        record.verdict_reasons.insert(0, doom_reason(&d));
        record.doom_loop = Some(d);
    }
}

/// Break glass: a human's override of this spec on this very content lets
/// a run that did not pass through, signed and said first.
pub(crate) fn apply_override(
    record: &mut crate::record::RunRecord,
    overrides: &[gate_evidence::ledger::OverrideEntry],
) {
    if record.verdict == Verdict::Pass {
        return;
    }
    let Some(o) = overrides
        .iter()
        .find(|o| o.content_digest == record.content_digest)
    else {
        return;
    };
    record.verdict_reasons.insert(
        0,
        Reason::new(
            ReasonKind::Override,
            &o.run_id,
            Verdict::Pass,
            format!("overridden by {} (run {}): {}", o.by, o.run_id, o.reason),
        ),
    );
    record.override_note = Some(format!("{}: {}", o.by, o.reason));
    record.overridden = true;
    record.qualifier = None;
    record.verdict = Verdict::Pass;
}

#[cfg(test)]
mod tests {
    use gate_review::record::SpecialistRecord;

    use super::*;
    use crate::record::{CheckKind, DecidedBy};

    fn check(status: ItemStatus) -> CheckRecord {
        CheckRecord {
            id: "build".into(),
            kind: CheckKind::Check,
            task: None,
            command: "make".into(),
            status,
            exit_code: None,
            duration_ms: 0,
            started_ms: None,
            inputs_digest: String::new(),
            carried_from: None,
            carried_bundle: None,
            reason: Some("exited with status 2".into()),
            output: gate_harness::Output::default(),
            locations: Vec::new(),
            observed: None,
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
            started_ms: None,
            inputs_digest: String::new(),
            carried_from: None,
            carried_bundle: None,
            reason: Some("review did not run".into()),
            output: gate_harness::Output::default(),
            expect: gate_specs::Expect::Any,
            base_status: None,
            observed: None,
        }
    }

    fn decide_with(
        checks: &[CheckRecord],
        criteria: &[CriterionRecord],
        review: &ReviewRecord,
        policy: ReviewUnavailable,
    ) -> Decision {
        decide(&Inputs {
            checks,
            criteria,
            review,
            findings: &[],
            on_review_unavailable: policy,
            on_review_cut: ReviewUnavailable::Pass,
            review_incomplete: &[],
        })
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
            let d = decide_with(&checks, &criteria, &review, ReviewUnavailable::Pass);
            assert_eq!(d.verdict, want, "{checks:?} {criteria:?}");
            assert_eq!(d.reasons.is_empty(), want == Verdict::Pass);
        }
    }

    #[test]
    fn reasons_strongest_first_as_data() {
        let review = ReviewRecord::did_not_run("offline");
        let d = decide_with(
            &[check(ItemStatus::Failed)],
            &[criterion(ItemStatus::Unverified)],
            &review,
            ReviewUnavailable::Pass,
        );
        assert_eq!(
            d.reasons,
            [
                Reason::new(
                    ReasonKind::Check,
                    "build",
                    Verdict::Fail,
                    "check `build` failed: exited with status 2"
                ),
                Reason::new(
                    ReasonKind::Criterion,
                    "c",
                    Verdict::Incomplete,
                    "criterion `c` could not be judged: review did not run"
                ),
            ]
        );
        assert_eq!(d.qualifier, None, "a failure is not a qualified pass");
    }

    fn specialist(role: &str, status: &str) -> SpecialistRecord {
        let mut s = crate::output::fixture::specialist(role, status, None);
        if status == "did_not_run" {
            s.reason = Some("HTTP 500".into());
        }
        s
    }

    fn ran(statuses: &[(&str, &str)]) -> ReviewRecord {
        ReviewRecord {
            status: ReviewStatus::Ran,
            reason: None,
            specialists: statuses.iter().map(|(r, s)| specialist(r, s)).collect(),
            budget: None,
            breakers_refused: Vec::new(),
            request: None,
        }
    }

    /// What review did not run means, by policy: the qualifier on a pass
    /// (whatever the policy), or the verdict the policy asks for.
    #[test]
    fn missing_review_by_policy() {
        use ReviewUnavailable::{Fail, Incomplete, Pass};
        let none = ReviewRecord::did_not_run("no provider configured");
        let most = ran(&[
            ("quality", "did_not_run"),
            ("security", "did_not_run"),
            ("docs", "ok"),
        ]);
        let half = ran(&[("quality", "did_not_run"), ("security", "ok")]);
        let skipped_do_not_count = ran(&[
            ("quality", "did_not_run"),
            ("security", "ok"),
            ("docs", "skipped"),
            ("performance", "skipped"),
        ]);
        let all = ran(&[("quality", "did_not_run"), ("security", "did_not_run")]);
        let unreviewed = |why: &str| {
            Some(Qualifier {
                kind: QualifierKind::Unreviewed,
                why: why.to_owned(),
                breakers_open: Vec::new(),
            })
        };
        let under = |why: &str| {
            Some(Qualifier {
                kind: QualifierKind::UnderReviewed,
                why: why.to_owned(),
                breakers_open: Vec::new(),
            })
        };
        // (review, policy, verdict, qualifier)
        let cases = [
            (
                &none,
                Pass,
                Verdict::Pass,
                unreviewed("no provider configured"),
            ),
            (&none, Incomplete, Verdict::Incomplete, None),
            (&none, Fail, Verdict::Fail, None),
            (
                &most,
                Pass,
                Verdict::Pass,
                under("2 of 3 reviewers did not run: quality, security"),
            ),
            (&most, Incomplete, Verdict::Incomplete, None),
            (&half, Pass, Verdict::Pass, None),
            (&half, Fail, Verdict::Fail, None),
            (&skipped_do_not_count, Pass, Verdict::Pass, None),
            (
                &all,
                Pass,
                Verdict::Pass,
                unreviewed("none of 2 reviewers ran (quality, security)"),
            ),
        ];
        for (review, policy, verdict, qualifier) in cases {
            let d = decide_with(&[check(ItemStatus::Passed)], &[], review, policy);
            assert_eq!(
                (d.verdict, &d.qualifier),
                (verdict, &qualifier),
                "{policy:?} {:?}",
                review.specialists
            );
            if verdict != Verdict::Pass {
                assert!(
                    d.reasons
                        .iter()
                        .all(|r| r.kind == ReasonKind::Review && r.verdict == verdict),
                    "{:?}",
                    d.reasons
                );
            }
        }
        // A review skipped because a check failed is not "unavailable".
        let d = decide_with(&[check(ItemStatus::Failed)], &[], &none, Fail);
        assert_eq!(d.reasons.len(), 1, "{:?}", d.reasons);
    }

    /// Part of the change a reviewer that ran was not shown: a pass says
    /// which bytes, by name, on its verdict line; `on_review_cut` makes it
    /// incomplete or failed instead. A reviewer that did not run adds no
    /// range (it is counted as not run).
    #[test]
    fn a_pass_never_rests_on_a_cut_in_silence() {
        use gate_review::record::ByteRange;

        use crate::record::verdict_line;
        let mut review = ran(&[
            ("quality", "ok"),
            ("security", "ok"),
            ("docs", "did_not_run"),
        ]);
        let range = ByteRange {
            file: "src/app.py".into(),
            start: 262_144,
            end: 307_200,
        };
        for s in &mut review.specialists {
            s.coverage.cut_ranges = vec![range.clone()];
        }
        let line = "PASS (under-reviewed: not reviewed: src/app.py bytes 262144-307199 (quality, security))";
        // (on_review_cut, verdict, the verdict line)
        let cases = [
            (ReviewUnavailable::Pass, Verdict::Pass, line),
            (
                ReviewUnavailable::Incomplete,
                Verdict::Incomplete,
                "INCOMPLETE",
            ),
            (ReviewUnavailable::Fail, Verdict::Fail, "FAIL"),
        ];
        for (policy, verdict, want) in cases {
            let d = decide(&Inputs {
                checks: &[check(ItemStatus::Passed)],
                criteria: &[],
                review: &review,
                findings: &[],
                on_review_unavailable: ReviewUnavailable::Pass,
                on_review_cut: policy,
                review_incomplete: &[],
            });
            assert_eq!(d.verdict, verdict, "{policy:?}");
            let mut record = crate::output::fixture::record();
            record.verdict = d.verdict;
            record.qualifier = d.qualifier.clone();
            record.review = review.clone();
            assert_eq!(verdict_line(&record), want, "{policy:?}");
            if verdict != Verdict::Pass {
                let why = &d.reasons[0].why;
                assert!(
                    why.contains("src/app.py bytes 262144-307199")
                        && why.contains(&format!("on_review_cut = \"{}\"", policy.as_str())),
                    "{why}"
                );
            }
        }
    }

    /// A reviewer an open circuit breaker kept from running: the qualifier
    /// names the breakers, and the verdict line says so; a reviewer that
    /// failed for another reason names none.
    #[test]
    fn an_open_breaker_that_kept_review_out_is_named() {
        use gate_review::record::AttemptOutcome;

        use crate::record::verdict_line;
        let skipped_by = |review: &mut ReviewRecord, role: &str, models: &[&str]| {
            let s = review
                .specialists
                .iter_mut()
                .find(|s| s.role == role)
                .unwrap();
            s.attempts = models
                .iter()
                .map(|m| gate_review::record::Attempt {
                    model: (*m).to_owned(),
                    outcome: AttemptOutcome::BreakerOpen,
                    latency_ms: 0,
                    error: None,
                })
                .collect();
        };
        let mut all_skipped = ran(&[("quality", "did_not_run"), ("security", "did_not_run")]);
        skipped_by(&mut all_skipped, "quality", &["p/b", "p/a"]);
        skipped_by(&mut all_skipped, "security", &["p/a"]);
        let mut one_of_three = ran(&[
            ("quality", "did_not_run"),
            ("security", "did_not_run"),
            ("docs", "ok"),
        ]);
        skipped_by(&mut one_of_three, "quality", &["p/a"]);
        let mut ran_anyway = ran(&[("quality", "ok"), ("security", "did_not_run")]);
        skipped_by(&mut ran_anyway, "quality", &["p/a"]);
        let failed = ran(&[("quality", "did_not_run"), ("security", "did_not_run")]);
        // (review, the breakers named, the verdict line)
        let cases: [(&ReviewRecord, &[&str], &str); 4] = [
            (
                &all_skipped,
                &["p/a", "p/b"],
                "PASS (unreviewed: none of 2 reviewers ran (quality, security); circuit breaker open: p/a, p/b)",
            ),
            (
                &one_of_three,
                &["p/a"],
                "PASS (under-reviewed: 2 of 3 reviewers did not run: quality, security; circuit breaker open: p/a)",
            ),
            (&ran_anyway, &[], "PASS"),
            (
                &failed,
                &[],
                "PASS (unreviewed: none of 2 reviewers ran (quality, security))",
            ),
        ];
        for (review, breakers, line) in cases {
            let d = decide_with(
                &[check(ItemStatus::Passed)],
                &[],
                review,
                ReviewUnavailable::Pass,
            );
            let named = d
                .qualifier
                .as_ref()
                .map(|q| q.breakers_open.clone())
                .unwrap_or_default();
            assert_eq!(named, breakers, "{line}");
            let mut record = crate::output::fixture::record();
            record.verdict = d.verdict;
            record.overridden = false;
            record.qualifier = d.qualifier.clone();
            assert_eq!(verdict_line(&record), line);
            // The JSON carries the same names, and none when there are none.
            let json = serde_json::to_value(&d.qualifier).unwrap();
            assert_eq!(
                json.get("breakers_open").is_some(),
                !breakers.is_empty(),
                "{json}"
            );
        }
    }
}
