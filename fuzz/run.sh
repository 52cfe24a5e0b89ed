#!/usr/bin/env bash
# Runs every fuzz target for a while (default 60 s each). Not part of the
# test suite: a crash found here becomes a regression test next to the code
# it broke, with the input inlined.
#
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
#
# Only the stable toolchain can be installed here, so cargo-fuzz runs with
# RUSTC_BOOTSTRAP=1 and without a sanitizer.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-60}
shift || true
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(spec_toml spec_json envelope normalise sse answer openai_reply anthropic_reply)
fi
export RUSTC_BOOTSTRAP=1
mkdir -p corpus
# Seed the spec targets with the specs the repository already has.
mkdir -p corpus/spec_toml corpus/spec_json
cp ../examples/shop/gate.toml ../gate/src/init/gate.toml corpus/spec_toml/ 2>/dev/null || true
find ../specs/tests/fixtures -name '*.toml' -exec cp {} corpus/spec_toml/ \; 2>/dev/null || true
find ../specs/tests/fixtures -name '*.json' -exec cp {} corpus/spec_json/ \; 2>/dev/null || true
for t in "${targets[@]}"; do
  echo "== $t (${seconds}s)"
  mkdir -p "corpus/$t"
  cargo fuzz run --sanitizer none "$t" "corpus/$t" -- -max_total_time="$seconds" -rss_limit_mb=2048
done
