//! Controlled replays of recorded reviews: a run's kept review request
//! ([`request::KeptRequest`]) rebuilt and reviewed again by a candidate
//! routing table and prompts, under the recorded tier, remits, budget and
//! limits, then scored beside the recorded review against what became of
//! the run ([`score`]); a plan's targets are [`target`]'s.
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
use crate::review::slots::Slots;
use crate::review::watch::Watch;
use crate::review::{self, CarriedReview, ReviewInput, ReviewOutput};
use crate::role::Role;
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
    /// The models' circuit breakers, shared by the replay's runs.
    pub breakers: &'a Breakers,
    /// Each provider's `concurrency`, shared by the replay's runs.
    pub slots: &'a Slots,
}

/// What a review input borrows that a replay makes afresh: a new fence,
/// its own watch, nothing carried.
struct Fresh {
    fence: Fence,
    watch: Watch,
    carried: BTreeMap<Role, CarriedReview>,
}

impl Fresh {
    fn new(events: &EventSink) -> Self {
        Self {
            fence: Fence::new(),
            watch: Watch::reporting_to(events.clone()),
            carried: BTreeMap::new(),
        }
    }

    /// The review's input for `rebuilt` with `candidate`.
    fn input<'a>(
        &'a self,
        rebuilt: &'a Rebuilt,
        candidate: &'a Candidate<'a>,
        run_id: &'a str,
        events: &'a EventSink,
    ) -> ReviewInput<'a> {
        ReviewInput {
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
            fence: &self.fence,
            carried: &self.carried,
            earlier: &[],
            breakers: candidate.breakers,
            slots: Some(candidate.slots),
            watch: &self.watch,
            events,
        }
    }
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
    let fresh = Fresh::new(events);
    review::run(&fresh.input(rebuilt, candidate, run_id, events)).await
}

/// Output tokens allowed for per input token in a cost estimate: replies
/// are short beside what reviewers are shown.
const OUTPUT_SHARE: f64 = 0.1;

/// What reviewing `rebuilt` with `candidate` may cost at most, in US
/// dollars: the review's pre-flight input estimate (every request with its
/// repair) at the table's dearest input price, and a tenth of it again as
/// output at the dearest output price. A table without prices estimates 0.
pub fn estimated_usd(rebuilt: &Rebuilt, candidate: &Candidate<'_>) -> f64 {
    let events = EventSink::discard();
    let fresh = Fresh::new(&events);
    let tokens = review::estimated_input_tokens_of(&fresh.input(rebuilt, candidate, "", &events));
    let prices = candidate
        .routing
        .table
        .models
        .values()
        .filter_map(|m| m.price.as_ref());
    let (input, output) = prices.fold((0.0_f64, 0.0_f64), |(i, o), p| {
        (i.max(p.input), o.max(p.output))
    });
    let tokens = tokens as f64;
    (tokens * input + tokens * OUTPUT_SHARE * output) / 1_000_000.0
}
