//! Token usage and what it costs, as every provider's reply reports it.

use serde::{Deserialize, Serialize};

/// Token usage as reported, normalised across providers: `input_tokens` is
/// the whole input, cached and cache-written tokens included. Unknown is
/// `None`, never zero.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// All input tokens.
    pub input_tokens: Option<u64>,
    /// Input tokens read from the provider's cache.
    pub cached_input_tokens: Option<u64>,
    /// Input tokens written to the provider's cache.
    pub cache_write_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
    /// The cost the provider reported (OpenRouter's `usage.cost`), in USD.
    pub cost_usd: Option<f64>,
}

/// A model's prices, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Uncached input.
    pub input: f64,
    /// Input read from the cache.
    pub cached_input: f64,
    /// Input written to the cache.
    pub cache_write: f64,
    /// Output.
    pub output: f64,
}

/// What a call cost in USD: the provider's own figure when it reported one,
/// else `usage` at `price`. `None` when the input or output count is unknown.
/// Unreported cache counts are taken as no cache use.
pub fn cost(usage: &Usage, price: &Price) -> Option<f64> {
    if let Some(reported) = usage.cost_usd {
        return Some(reported);
    }
    let input = usage.input_tokens?;
    let output = usage.output_tokens?;
    let cached = usage.cached_input_tokens.unwrap_or(0);
    let written = usage.cache_write_tokens.unwrap_or(0);
    let uncached = input.saturating_sub(cached).saturating_sub(written);
    let micro = uncached as f64 * price.input
        + cached as f64 * price.cached_input
        + written as f64 * price.cache_write
        + output as f64 * price.output;
    Some(micro / 1_000_000.0)
}
