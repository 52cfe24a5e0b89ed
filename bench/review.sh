#!/usr/bin/env bash
# Review benchmark (critical path, shared prefix, effective input cost):
# builds the release binary, then runs tests/benches/review.rs against it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p gate --bin gate
cargo bench -q -p gate-tests --bench review
