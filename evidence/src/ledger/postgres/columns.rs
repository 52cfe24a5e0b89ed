//! The PostgreSQL `runs` table's columns, and the integer type its counts are stored as.

pub(super) const COLUMNS: &str = "seq, run_id, spec_id, attempt, verdict, tier, started_at, finished_at, \
     input_tokens, cached_input_tokens, output_tokens, cost_usd, bundle_path, \
     envelope_sha256, prev_sha256, leaf_hash, recorded_at, extra_json, series";

pub(super) fn big(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
