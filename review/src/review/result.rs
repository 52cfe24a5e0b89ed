//! What a model call produced: the answer, every attempt down the failback
//! chain, usage and cost. The call fills it in as it goes; the watch
//! publishes it while it runs.

use std::time::Duration;

use crate::provider::Usage;
use crate::record::Attempt;
use crate::review::answer::Answer;

/// What a call produced.
#[derive(Debug, Clone)]
pub struct CallResult {
    /// The valid answer, or why there is none.
    pub answer: Result<Answer, String>,
    /// The model that answered (or was tried last).
    pub model: String,
    /// Every attempt, in order.
    pub attempts: Vec<Attempt>,
    /// Usage summed over every request sent (failed ones are billed too).
    pub usage: Usage,
    /// Cost summed over every request; `None` when some could not be priced.
    pub cost_usd: Option<f64>,
    /// Wall time of the whole call.
    pub latency: Duration,
}

impl CallResult {
    /// A call that has not begun.
    pub fn empty() -> Self {
        Self {
            answer: Err("no model of its chain is configured here".to_owned()),
            model: String::new(),
            attempts: Vec::new(),
            usage: Usage::default(),
            cost_usd: Some(0.0),
            latency: Duration::ZERO,
        }
    }
}
