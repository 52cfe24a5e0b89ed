#!/usr/bin/env bash
# Evidence benchmark, every figure measured in this run:
#  1. what bundle writing, signing and the ledger append add to a
#     `gate verify` of the example workspace (target: under 5%);
#  2. `gate ledger verify` over 10,000 and 100,000 generated runs
#     (target: 100k within 11x of 10k) and its parallel speed-up over one
#     thread (target: at least 1.6x on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/bench/out/evidence
mkdir -p "$out"

cargo build --release -q -p gate --bin gate -p gate-evidence --example gen_ledger
gate=$root/target/release/gate
gen=$root/target/release/examples/gen_ledger

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
now() { date +%s.%N; }

echo "== evidence overhead on the example workspace"
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
cp -r examples/shop/. "$ws/"
"$gate" verify -q --workspace "$ws" >/dev/null   # creates the key: not timed
ratios=()
for _ in $(seq 1 15); do
  line=$(RUST_LOG=gate::timings=info "$gate" verify -q --workspace "$ws" 2>&1 >/dev/null | grep "run timings" | tail -1)
  run_ms=$(sed -E 's/.*run_ms=([0-9]+).*/\1/' <<<"$line")
  ev_ms=$(sed -E 's/.*evidence_ms=([0-9]+).*/\1/' <<<"$line")
  ratios+=("$(awk -v e="$ev_ms" -v r="$run_ms" 'BEGIN {printf "%.5f", e / (r - e)}')")
done
overhead=$(printf '%s\n' "${ratios[@]}" | median)
printf 'evidence step / rest of the run (median of %d runs): %.2f%%  (target < 5%%)\n' "${#ratios[@]}" "$(awk -v o="$overhead" 'BEGIN {print o * 100}')"

echo "== gate ledger verify scaling"
# Each generated bundle holds the example's real run, with the row's id,
# spec, attempt, verdict, tier and times: verify compares every row with it.
python3 bench/run_template.py "$ws/.gate/ledger.db" "$out/template.json"
for n in 10000 100000; do
  if [ ! -f "$out/l$n/ledger.db" ] || [ "$out/template.json" -nt "$out/l$n/ledger.db" ]; then
    rm -rf "$out/l$n"
    mkdir -p "$out/l$n"
    "$gen" "$out/l$n/ledger.db" --runs "$n" --outcomes 0 --template "$out/template.json" >/dev/null
  fi
done
best() { # best of 3 wall times of a command
  local b=999999
  for _ in 1 2 3; do
    local t0 t1; t0=$(now); "$@" >/dev/null; t1=$(now)
    b=$(awk -v b="$b" -v t="$(awk -v a="$t0" -v c="$t1" 'BEGIN {print c - a}')" 'BEGIN {print (t < b) ? t : b}')
  done
  echo "$b"
}
t10=$(best "$gate" --state "$out/l10000" ledger verify)
t100=$(best "$gate" --state "$out/l100000" ledger verify)
t100_1=$(best env RAYON_NUM_THREADS=1 "$gate" --state "$out/l100000" ledger verify)
printf '10,000 runs: %.2f s; 100,000 runs: %.2f s; ratio %.2f  (target <= 11)\n' "$t10" "$t100" "$(awk -v a="$t100" -v b="$t10" 'BEGIN {print a / b}')"
printf '100,000 runs on one thread: %.2f s; parallel speed-up %.2fx  (target >= 1.6x)\n' "$t100_1" "$(awk -v a="$t100_1" -v b="$t100" 'BEGIN {print a / b}')"
