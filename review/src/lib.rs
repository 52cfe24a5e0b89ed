//! The gate's model review: given what to review (the change's files, the
//! model-judged criteria, the house rules that apply, the tier, the routing
//! table and the budget) it returns findings, the judged criteria's
//! verdicts, what each reviewer saw and what it cost, and reports its
//! progress as [`events::Event`]s.
//!
//! # Layout
//! - [`provider`]: one model request in, one parsed answer out (HTTP,
//!   streaming, usage, errors), for OpenAI- and Anthropic-style APIs.
//! - [`routing`]: the routing table (providers, model classes, failback
//!   chains, prices) and its checks; [`routing::patch`] the override.
//! - [`review`]: the panel by tier, each reviewer's call down its chain,
//!   the judge, the coordinator; [`role`] names the reviewers.
//! - [`rules`]: house rules, asked as yes/no questions; rule tests.
//! - [`findings`]: a finding, its id and lineage; [`tier`]: the risk tier;
//!   [`record`]: the rest of what the review fills of a run's record.
//! - [`events`]: what a review reports while it goes; [`text`]: model text
//!   made plain.
//! - [`replay`]: a review's request kept as sent, reviewed again by a
//!   candidate routing table, and scored against outcomes.
//!
//! It reads no environment variable: API keys come in through the values
//! its caller passes ([`review::call::clients`] and
//! [`routing::KeyLookup`]), and it knows nothing of the sandbox or the
//! command line.

// Test code may run long: a scenario reads best whole.
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod events;
pub mod findings;
pub mod provider;
pub mod record;
pub mod replay;
pub mod review;
pub mod role;
pub mod routing;
pub mod rules;
pub mod text;
pub mod tier;
