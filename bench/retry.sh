#!/usr/bin/env bash
# Retry benchmark: a spec of 200 criteria, one failing; its input file is
# fixed between attempts, so the retry re-runs only the affected criterion.
# Target: the retry takes under 10% of the first attempt's time.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p gate --bin gate --bin gate-drop
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
t0=$(now); "$gate" verify -q --workspace "$ws" >/dev/null 2>&1 && exit_code=0 || exit_code=$?; t1=$(now)
[ "$exit_code" = 1 ] || { echo "the first attempt should fail (exit $exit_code)"; exit 1; }
echo ok > "$ws/inputs/000.txt"
t2=$(now); "$gate" verify -q --workspace "$ws" --format json > "$ws/retry.json" 2>/dev/null; t3=$(now)
reran=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for c in d['criteria'] if c['status'] != 'carried'))" "$ws/retry.json")
first=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
retry=$(awk -v a="$t2" -v b="$t3" 'BEGIN {print b - a}')
printf 'first attempt: %.2f s (200 criteria); retry: %.2f s (%s re-run, the rest carried); ratio %.1f%%  (target < 10%%)\n' \
  "$first" "$retry" "$reran" "$(awk -v a="$retry" -v b="$first" 'BEGIN {print a / b * 100}')"

# A Python project tested with pytest and coverage: twelve criteria, each
# one test file over one module (with a coverage data file of its own, as
# concurrent pytest-cov runs need), all writing pytest's cache, compiled
# modules and coverage data into the one workspace. The first attempt fails
# on module 00; the retry fixes it. How many criteria the retry carries is
# printed, and, with BASELINE_GATE naming another gate binary (an earlier
# build), how many that one carries on the same project in the same run.
python_project() {
  local dir=$1
  mkdir -p "$dir/pkg" "$dir/tests"
  : > "$dir/pkg/__init__.py"
  {
    printf '[spec]\nid = "bench-pytest"\n[policy]\nbuiltin_parse = false\n'
    printf '[[task]]\nid = "t"\npaths = ["pkg/**", "tests/**"]\n'
    for i in $(seq -w 0 11); do
      printf '[[task.criterion]]\nid = "p%s"\ntext = "module %s holds"\n' "$i" "$i"
      printf 'run = "COVERAGE_FILE=.coverage.p%s .venv/bin/python -m pytest -q tests/test_m%s.py --cov=pkg.m%s --cov-report="\n' "$i" "$i" "$i"
      printf 'inputs = ["tests/test_m%s.py"]\n' "$i"
    done
  } > "$dir/gate.toml"
  for i in $(seq -w 0 11); do
    printf 'def value():\n    return %d\n' "$((10#$i))" > "$dir/pkg/m$i.py"
    printf 'from pkg import m%s\n\n\ndef test_value():\n    assert m%s.value() == %d\n' "$i" "$i" "$((10#$i))" > "$dir/tests/test_m$i.py"
  done
  printf 'def value():\n    return -1\n' > "$dir/pkg/m00.py"
  printf '.gate/\n.venv/\n.pytest_cache/\n__pycache__/\n.coverage\n.coverage.*\n' > "$dir/.gitignore"
  python3 -m venv "$dir/.venv"
  "$dir/.venv/bin/pip" install -q --disable-pip-version-check pytest pytest-cov >/dev/null
}

# Prints how many of the retry's criteria a gate binary carries.
python_retry() {
  local bin=$1 dir=$2
  "$bin" keys generate --workspace "$dir" >/dev/null
  local code=0
  "$bin" verify -q --workspace "$dir" >/dev/null 2>&1 || code=$?
  [ "$code" = 1 ] || { echo "the first pytest attempt should fail (exit $code)" >&2; exit 1; }
  printf 'def value():\n    return 0\n' > "$dir/pkg/m00.py"
  "$bin" verify -q --workspace "$dir" --format json > "$dir.json" 2>/dev/null || true
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for c in d['criteria'] if c['status'] == 'carried'))" "$dir.json"
}

python_project "$ws/py"
carried=$(python_retry "$gate" "$ws/py")
printf 'pytest with coverage: the retry carries %s of 12 criteria (11 read nothing the fix changed)\n' "$carried"
if [ -n "${BASELINE_GATE:-}" ]; then
  python_project "$ws/py-baseline"
  before=$(python_retry "$BASELINE_GATE" "$ws/py-baseline")
  printf 'pytest with coverage: %s carries %s of 12; this build carries %s (target: as many or more)\n' \
    "$BASELINE_GATE" "$before" "$carried"
fi
