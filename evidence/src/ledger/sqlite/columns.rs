//! The SQLite `runs` table's columns, and the text form its timestamps are stored in.

use chrono::{DateTime, SecondsFormat, Utc};

pub(super) const COLUMNS: &str = "seq, run_id, spec_id, attempt, verdict, tier, started_at, finished_at, \
     input_tokens, cached_input_tokens, output_tokens, cost_usd, bundle_path, \
     envelope_sha256, prev_sha256, leaf_hash, recorded_at, extra_json, series";

/// Timestamps are stored in one fixed-width UTC form so text order is time order.
pub(super) fn ts(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}
