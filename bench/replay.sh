#!/usr/bin/env bash
# Replay benchmark (a replay's wall time against its model calls' own):
# builds the release binary, then runs tests/benches/replay.rs against it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p gate --bin gate
cargo bench -q -p gate-tests --bench replay
