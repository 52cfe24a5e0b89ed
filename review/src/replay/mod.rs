//! Controlled replays of recorded reviews: a run's kept review request
//! ([`request::KeptRequest`]) rebuilt and reviewed again by a candidate
//! routing table and prompts, under the recorded tier, remits, budget and
//! limits, then scored beside the recorded review against what became of
//! the run ([`score`]).
//!
//! A replay reads nothing of a workspace and runs no check or criterion:
//! the request holds the change as it was sent. House rules and design
//! rules are not kept, so a replay asks neither; nothing of the previous
//! attempt is carried, so every seat is asked.

pub mod request;
pub mod score;
pub mod target;

use std::collections::BTreeMap;

use crate::events::EventSink;
use crate::review::breaker::Breakers;
use crate::review::call::Clients;
use crate::review::context::Fence;
use crate::review::prompts::Prompts;
use crate::review::watch::Watch;
use crate::review::{self, ReviewInput, ReviewOutput};
use crate::routing::Routing;

use self::request::Rebuilt;

/// What a candidate reviews with.
pub struct Candidate<'a> {
    /// The candidate routing table.
    pub routing: &'a Routing,
    /// The candidate prompts.
    pub prompts: &'a Prompts,
    /// Clients of the table's providers.
    pub clients: &'a Clients,
    /// The models' circuit breakers.
    pub breakers: &'a Breakers,
}

/// Reviews `rebuilt` with `candidate`: the recorded tier, spec, policy
/// (budget, timeouts, limits) and change, a fresh fence, nothing carried.
/// `run_id` names the replay's requests (`X-Gate-Run`).
pub async fn review(
    rebuilt: &Rebuilt,
    candidate: &Candidate<'_>,
    run_id: &str,
    events: &EventSink,
) -> ReviewOutput {
    let fence = Fence::new();
    let watch = Watch::reporting_to(events.clone());
    let carried = BTreeMap::new();
    review::run(&ReviewInput {
        run_id,
        spec: &rebuilt.spec,
        tier: &rebuilt.tier,
        change: &rebuilt.change,
        judged: &rebuilt.judged,
        judge_files: &rebuilt.judge_files,
        rules: &[],
        rule_references: &[],
        pages: &[],
        code_criteria: &rebuilt.code_criteria,
        routing: candidate.routing,
        prompts: candidate.prompts,
        clients: candidate.clients,
        policy: &rebuilt.spec.policy,
        fence: &fence,
        carried: &carried,
        earlier: &[],
        breakers: candidate.breakers,
        watch: &watch,
        events,
    })
    .await
}
