#!/usr/bin/env bash
# Failback speed: what a dead primary model costs a full-tier `gate verify`.
#
# Builds the release `gate` binary and the `failback` example of gate-tests,
# which drives the binary against a scripted model server on loopback:
#   healthy primary          — the baseline, a whole run;
#   primary hanging          — must cost at most the inactivity bound plus a
#                              healthy run, not the sum of the timeouts;
#   primary's breaker open   — must pay no timeout at all (about a healthy run).
# and prints the figures and both ratios measured in the same run.
#
# Usage: bench/failback.sh           (from anywhere; needs cargo)
# Env:   RUNS (default 3), LATENCY_MS (the models' answer time, default 300)
# Exit:  0 when both targets hold, 1 when one does not, 2 on a build error.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
echo "building gate and the failback example (release)..."
cargo build --release --quiet -p gate --bin gate || exit 2
cargo build --release --quiet -p gate-tests --example failback || exit 2
target_dir=${CARGO_TARGET_DIR:-$repo/target}
exec "$target_dir/release/examples/failback"
