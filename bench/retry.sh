#!/usr/bin/env bash
# Retry benchmark: a spec of 200 criteria, one failing; its input file is
# fixed between attempts, so the retry re-runs only the affected criterion.
# Target: the retry takes under 10% of the first attempt's time.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p gate --bin gate
gate=$PWD/target/release/gate
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
{
  printf '[spec]\nid = "bench-retry"\n[policy]\nbuiltin_parse = false\n'
  printf '[[task]]\nid = "t"\npaths = ["inputs/**"]\n'
  for i in $(seq -w 0 199); do
    printf '[[task.criterion]]\nid = "c%s"\ntext = "input %s is ok"\nrun = "sleep 0.1; grep -qx ok inputs/%s.txt"\ninputs = ["inputs/%s.txt"]\n' "$i" "$i" "$i" "$i"
  done
} > "$ws/gate.toml"
mkdir -p "$ws/inputs"
for i in $(seq -w 0 199); do echo ok > "$ws/inputs/$i.txt"; done
echo broken > "$ws/inputs/000.txt"
"$gate" keys generate --workspace "$ws" >/dev/null

now() { date +%s.%N; }
t0=$(now); "$gate" verify -q --workspace "$ws" >/dev/null && exit_code=0 || exit_code=$?; t1=$(now)
[ "$exit_code" = 1 ] || { echo "the first attempt should fail (exit $exit_code)"; exit 1; }
echo ok > "$ws/inputs/000.txt"
t2=$(now); "$gate" verify -q --workspace "$ws" --format json > "$ws/retry.json"; t3=$(now)
reran=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for c in d['criteria'] if c['status'] != 'carried'))" "$ws/retry.json")
first=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
retry=$(awk -v a="$t2" -v b="$t3" 'BEGIN {print b - a}')
printf 'first attempt: %.2f s (200 criteria); retry: %.2f s (%s re-run, the rest carried); ratio %.1f%%  (target < 10%%)\n' \
  "$first" "$retry" "$reran" "$(awk -v a="$retry" -v b="$first" 'BEGIN {print a / b * 100}')"
