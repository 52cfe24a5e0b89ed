//! Mutation scoring in a run: under `[policy] mutants`, once the criteria
//! pass, the mutants of the change's own lines run against the criteria
//! that read their files (reusing this run's traces), and the score and
//! each survivor become the gate's findings.

use gate_harness::Status;
use gate_review::findings::{Finding, Lineage, finding_id};
use gate_specs::{MutantsPolicy, OnBelow};

use crate::guard::GUARD_ROLE;
use crate::interrupt::Interrupt;
use crate::{change, mutants};

use super::exercise::Exercised;
use super::planning::Planned;
use super::stage::Stage;
use super::survey::Survey;

/// Scores the criteria when the policy asks and they all passed; `None`
/// when it does not run (no policy, no base, a criterion not passed, the
/// run interrupted).
pub(super) async fn score(
    run: &Stage<'_>,
    survey: &Survey,
    planned: &Planned,
    exercised: &Exercised,
    interrupt: &Interrupt,
) -> Option<Result<Box<gate_mutants::report::Document>, String>> {
    let Stage {
        ctx, setup, trust, ..
    } = *run;
    let spec = &setup.spec;
    let policy = spec.policy.mutants.as_ref()?;
    let results = &exercised.harnessed.results;
    if exercised.harnessed.interrupted {
        return None;
    }
    // Only code-decided criteria run against mutants; each must have
    // passed now or been carried as passed.
    let passed = |id: &str| {
        results.get(id).map_or_else(
            || {
                planned
                    .plan
                    .items
                    .iter()
                    .any(|i| i.id == id && i.decision.carries())
            },
            |r| r.status == Status::Passed,
        )
    };
    if !spec
        .criteria()
        .filter(|(_, c)| c.run.is_some())
        .all(|(_, c)| passed(&c.id))
    {
        return None;
    }
    let (Some(base), Some(commit)) = (&trust.base, &trust.base_commit) else {
        return Some(Err(
            "it needs a base (`--base REV` or `[spec] base`): mutants are made of the \
             lines the change wrote"
                .to_owned(),
        ));
    };
    let merge_base = match change::merge_base(&setup.git, &ctx.workspace, base, commit).await {
        Ok(found) => found,
        Err(e) => return Some(Err(e.to_string())),
    };
    let scored = mutants::score(mutants::Inputs {
        ctx,
        spec,
        isolation: &setup.isolation,
        git: &setup.git,
        snapshot: &survey.snapshot,
        base_commit: &merge_base,
        changed: &survey.changed,
        task: None,
        max: policy.max.map(|m| m as usize),
        timeout: None,
        unscoped: false,
        interrupt,
        unmutated: Some(results),
        // A run's own progress is its events'; the scoring's is logged (-v).
        progress: &|line| tracing::info!("mutants: {line}"),
    })
    .await;
    Some(scored.map(Box::new).map_err(|e| e.to_string()))
}

/// The gate's findings from a scoring: each surviving mutant a warning at
/// its line; a score below `min_score`, or a scoring that could not run,
/// a warning or (`on_below = "fail"`) a critical finding at the spec.
pub(super) fn findings(
    policy: &MutantsPolicy,
    scored: &Result<Box<gate_mutants::report::Document>, String>,
    spec_file: &str,
) -> Vec<Finding> {
    let severity = match policy.on_below {
        OnBelow::Warn => "warning",
        OnBelow::Fail => "critical",
    };
    // An id reads a title's words, not its code or numbers: the place and
    // the whole title tell one survivor from another.
    let finding =
        |severity: &str, file: &str, line: Option<u32>, title: String, detail: String| Finding {
            id: finding_id(
                GUARD_ROLE,
                &format!("{file}:{}:{title}", line.unwrap_or(0)),
                &title,
            ),
            severity: severity.to_owned(),
            role: GUARD_ROLE.to_owned(),
            file: file.to_owned(),
            line,
            title,
            detail,
            confidence: 1.0,
            lineage: Lineage::raised(GUARD_ROLE, severity),
        };
    let doc = match scored {
        Ok(doc) => doc,
        Err(why) => {
            return vec![finding(
                severity,
                spec_file,
                None,
                format!("the criteria's mutation score could not be measured: {why}"),
                "`[policy] mutants` asks for it; run `gate mutants --base REV` to see why."
                    .to_owned(),
            )];
        }
    };
    let mut out: Vec<Finding> = doc
        .findings
        .iter()
        .map(|s| {
            finding(
                "warning",
                &s.file,
                Some(s.line),
                s.title.clone(),
                format!(
                    "The criteria that read this file ({}) all pass against this wrong \
                     version of the line: none checks what it decides.",
                    s.criteria.join(", ")
                ),
            )
        })
        .collect();
    // Nothing scored, though the change has code: nothing proves its
    // criteria, and that is said, never passed over (a change that marks
    // its files generated, or whose mutants all fail to build, lands here).
    let unproven: Vec<String> = doc
        .not_mutated
        .iter()
        .filter(|(_, why)| *why != crate::mutants::NO_GRAMMAR)
        .map(|(f, why)| format!("{f} ({why})"))
        .collect();
    if doc.total.score.is_none() && (!doc.files.is_empty() || !unproven.is_empty()) {
        let severity = if policy.min_score > 0.0 {
            severity
        } else {
            "warning"
        };
        out.push(finding(
            severity,
            spec_file,
            None,
            "no mutant of the change was scored: nothing proves its criteria would catch a \
             wrong version of its lines"
                .to_owned(),
            format!(
                "Mutated: {}. Changed code no mutant was made of: {}. `gate mutants --base \
                 REV` shows each mutant's status.",
                if doc.files.is_empty() {
                    "none".to_owned()
                } else {
                    doc.files.join(", ")
                },
                if unproven.is_empty() {
                    "none".to_owned()
                } else {
                    unproven.join(", ")
                }
            ),
        ));
    }
    if let Some(score) = doc.total.score
        && score < policy.min_score
    {
        out.push(finding(
            severity,
            spec_file,
            None,
            format!(
                "the criteria kill {} of {} mutants of the change ({:.0}%), below \
                 `[policy] mutants.min_score` ({:.0}%)",
                doc.total.killed,
                doc.total.killed + doc.total.survived,
                score * 100.0,
                policy.min_score * 100.0
            ),
            "A criterion that passes the change and a wrong version of it alike proves \
             little: `gate mutants --base REV` lists the mutants no criterion notices."
                .to_owned(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document with nothing scored: `files` mutated (every mutant set
    /// apart or unrun), `not_mutated` the change's other files.
    fn unscored(files: &[&str], not_mutated: &[(&str, &str)]) -> gate_mutants::report::Document {
        serde_json::from_value(serde_json::json!({
            "format_version": 1,
            "base_commit": "0".repeat(40),
            "files": files,
            "mutants": [],
            "left_out": 0,
            "criteria": {},
            "tasks": {},
            "total": {"killed": 0, "survived": 0, "score": null},
            "untraced": {},
            "not_mutated": not_mutated.iter().copied().collect::<std::collections::BTreeMap<_, _>>(),
            "findings": [],
            "tools": {},
        }))
        .unwrap()
    }

    /// Nothing scored on a change with code is said, at the policy's
    /// severity when it asks for a score; a change with no code in any
    /// language the engine parses owes none.
    #[test]
    fn a_change_whose_code_no_mutant_scored_is_said() {
        let fail = MutantsPolicy {
            min_score: 0.8,
            on_below: OnBelow::Fail,
            max: None,
        };
        let any = MutantsPolicy {
            min_score: 0.0,
            ..fail.clone()
        };
        let generated = [("src/rules.py", "a generated file")];
        let docs_only = [("README.md", crate::mutants::NO_GRAMMAR)];
        // (policy, files mutated, files not mutated, the finding's severity)
        type Case<'a> = (
            &'a MutantsPolicy,
            &'a [&'a str],
            &'a [(&'a str, &'a str)],
            Option<&'a str>,
        );
        let cases: [Case<'_>; 5] = [
            (&fail, &[], &generated, Some("critical")),
            (&fail, &["src/rules.py"], &[], Some("critical")),
            (&any, &[], &generated, Some("warning")),
            (&fail, &[], &docs_only, None),
            (&fail, &[], &[], None),
        ];
        for (policy, files, not_mutated, want) in cases {
            let found = findings(
                policy,
                &Ok(Box::new(unscored(files, not_mutated))),
                "gate.toml",
            );
            let got: Vec<&str> = found
                .iter()
                .filter(|f| f.title.starts_with("no mutant of the change was scored"))
                .map(|f| f.severity.as_str())
                .collect();
            assert_eq!(
                got,
                want.into_iter().collect::<Vec<_>>(),
                "{files:?} {not_mutated:?}"
            );
        }
    }
}
