//! A series that is escalated, or whose attempt budget is spent, decides
//! nothing of its own: nothing of the workspace runs, and its record says
//! why, every declared item skipped.

use crate::doom::{self, Thresholds};
use crate::errors::GateError;
use crate::events::{Note, RunEvent};
use crate::record::{Reason, ReasonKind, RunRecord, Verdict};
use crate::verdict::doom_reason;

use super::records;
use super::stage::Stage;

/// The record of a run its series does not let decide, if this is one.
/// An escalation for a spent budget is recorded, so the series stays
/// escalated; a run of an escalated series is not.
pub(super) fn short_circuit(run: &Stage<'_>) -> Result<Option<RunRecord>, GateError> {
    let Stage {
        ctx,
        events,
        start,
        setup,
        trust,
        history,
        ..
    } = *run;
    let spec = &setup.spec;
    if let Some((escalated_by, doom)) = &history.escalated {
        // Nothing runs until a human starts a new series or overrides: a
        // new branch or series key is no way out.
        let mut reasons = vec![Reason::new(
            ReasonKind::DoomLoop,
            escalated_by,
            Verdict::Escalate,
            format!(
                "`{}` is escalated since run {escalated_by}, in every series on this base; \
                 an operator starts a new series with `gate verify --new-series`, or a human \
                 lets it through with `gate override {escalated_by}`",
                spec.spec.id
            ),
        )];
        if let Some(d) = doom {
            reasons.push(doom_reason(d));
        }
        let mut record = start.bare(spec, history, Verdict::Escalate, reasons);
        record.base.clone_from(&trust.base);
        record.base_commit.clone_from(&trust.base_commit);
        (record.checks, record.criteria) = records::not_run(
            spec,
            "not run: the series is escalated (start a new series or override)",
        );
        record.doom_loop.clone_from(doom);
        record.routing_override.clone_from(&setup.routing_override);
        record.advisory = ctx.env.advisory();
        return Ok(Some(record));
    }
    let Some(d) = doom::over_budget(
        history.attempt,
        &history.failing,
        Thresholds::from(&spec.policy),
    ) else {
        return Ok(None);
    };
    let mut record = start.bare(spec, history, Verdict::Escalate, vec![doom_reason(&d)]);
    // The escalation holds for the spec on this base: its record says which.
    record.base.clone_from(&trust.base);
    record.base_commit.clone_from(&trust.base_commit);
    (record.checks, record.criteria) =
        records::not_run(spec, "not run: the attempt budget is spent");
    record.doom_loop = Some(d);
    record.previous_bundle = history.previous.as_ref().map(|p| p.bundle_sha256.clone());
    record.routing_override.clone_from(&setup.routing_override);
    let sealed = super::seal::Sealed {
        tested: None,
        subject_names: &[],
        plan: Vec::new(),
        rules: Vec::new(),
    };
    if let Some(reason) = super::seal::finish(ctx, setup, &mut record, sealed)? {
        events.emit(RunEvent::Note(Note::NotRecorded { reason }));
    }
    Ok(Some(record))
}
