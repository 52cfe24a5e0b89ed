#!/usr/bin/env bash
# How long `cargo build -p gate` takes after one provider file is touched:
# the incremental rebuild a change to the model side costs.
#
# Builds once untimed (so only the touched file's crate and what depends on
# it rebuild), then RUNS times: touch the provider file, build, time it.
# Prints each run's seconds and the best. The provider file is the first of
# review/src/provider/sse.rs (the gate-review crate) and
# gate/src/provider/sse.rs (before the model side was its own crate).
#
# Usage: bench/rebuild.sh              (from anywhere; needs cargo)
# Env:   RUNS (default 3)
# Exit:  0, or 2 when nothing could be built.
set -euo pipefail

RUNS=${RUNS:-3}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

file=
for f in review/src/provider/sse.rs gate/src/provider/sse.rs; do
    if [ -f "$f" ]; then file=$f; break; fi
done
[ -n "$file" ] || { echo "rebuild: no provider file found" >&2; exit 2; }

cargo build -q -p gate || exit 2
best=
for i in $(seq "$RUNS"); do
    touch "$file"
    start=$(date +%s.%N)
    cargo build -q -p gate || exit 2
    end=$(date +%s.%N)
    s=$(echo "$end - $start" | bc)
    printf 'run %d: %.1f s\n' "$i" "$s"
    if [ -z "$best" ] || [ "$(echo "$s < $best" | bc)" = 1 ]; then best=$s; fi
done
printf 'touched %s; cargo build -p gate, best of %d: %.1f s\n' "$file" "$RUNS" "$best"
