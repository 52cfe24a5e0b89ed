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
