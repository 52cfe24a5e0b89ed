//! What every stage after the set-up reads, as one value.

use crate::config::Context;
use crate::events::EventSink;
use crate::retry::History;

use super::setup::Setup;
use super::start::{Start, VerifyRequest};
use super::trust::Trust;

/// What every stage after the set-up reads: the request, the run's start,
/// its set-up, its base and its series so far.
#[derive(Clone, Copy)]
pub(super) struct Stage<'a> {
    pub ctx: &'a Context,
    pub req: &'a VerifyRequest,
    pub events: &'a EventSink,
    pub start: &'a Start,
    pub setup: &'a Setup,
    pub trust: &'a Trust,
    pub history: &'a History,
}
