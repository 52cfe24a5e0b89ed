#!/usr/bin/env bash
# Noise on correct work: the warnings a run raises on a correct change to two
# real projects, with the gate before the noise work (0546823) and now.
# The changes are bench/noise/chi.sh (go-chi/chi: a rate-limit middleware
# and an example server, two tasks, a shell criterion with `[ … ]` tests)
# and bench/noise/waitress.sh (Pylons/waitress: a header-count limit and
# the runner's option for it, two tasks, pytest criteria with a base run
# each and a shell criterion). Each change comes in two attempts, as an
# agent makes them: the first fails one criterion of the second task, the
# retry fixes it and carries what did not change. Each attempt is verified
# with each gate (`gate verify --base main`, a fresh state for each gate),
# with the JSON, Markdown and human outputs written; for each run it
# prints the warnings, each with its role, file and title, and each
# criterion's time on the change and its base result.
#
#   bench/noise.sh [CHI_CLONE WAITRESS_CLONE]
#
# Without clones it clones both from GitHub into its work folder. The
# change scripts reset the clones (`git clean -fdx`, branches `main` and
# `feature` made again). GATE_BEFORE and GATE_AFTER name built gates;
# without them it builds `-p gate` at BEFORE_REV (0546823, the last commit
# before the noise work) in a worktree of its own, and this tree's.
# NOISE_WORK keeps the work folder (outputs, the before build, the virtual
# environment) instead of a temporary one removed at the end. Needs go
# (1.19 or newer), python3 with venv and pip (pytest from PyPI), bwrap.
#
# Measured on 2 cores shared with other work, as root (eBPF tracer), debug
# builds, Go 1.19.8, Python 3.11.7, pytest 9.2.0; warnings per run, first
# attempt / retry (the same on both attempts):
#
#   project   before (0546823)   after
#   chi       4 / 4              2 / 2
#   waitress  9 / 9              5 / 5
#
# Gone: the `[ … ]` tests read as commands named through an expansion (two
# on chi, one on waitress), and on waitress a second "adds tests to the
# exam file" per test file a criterion names and the suite also runs
# (three). Left, each true: "adds (tests to) the exam file" once per test
# file the change added to (one on chi, four on waitress), and "runs no
# file of the workspace" for the shell criterion of each (it runs
# `go run ./_examples/…` or `python -m waitress`, code under test, and no
# script or test file of the workspace decides it). No run had a file
# counted as uncommitted or changed while the checks ran (waitress's
# ignored `src/waitress.egg-info`, `.coverage`, `.pytest_cache/` and, from
# the before gate's runs, `__pycache__/` were there). On the retry,
# before listed no carried item in the Markdown (it carried 2 on chi and
# none on waitress); after lists the 2 it carried on each.
# Per criterion on the change, before / after, over two runs of the bench:
# a waitress pytest criterion of one or two tests 0.6-1.2 s / 2.3-3.6 s,
# the whole suite (803 tests) 27-35 s / 28-45 s, `python -m waitress
# --help` 0.2-0.4 s / 0.6-0.9 s: each process now compiles the Python it
# imports (pytest, coverage, waitress) into a byte-code folder of its own.
# chi's `go test -run` 7.6-10 s and its `go run` 1.7-3.6 s with either.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BEFORE_REV=${BEFORE_REV:-0546823}
if [ -n "${NOISE_WORK:-}" ]; then
  work=$NOISE_WORK
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'git -C "$here" worktree remove --force "$work/gate-before" 2>/dev/null || true; rm -rf "$work"' EXIT
fi
work=$(realpath "$work")
for tool in go python3 bwrap git; do
  command -v "$tool" >/dev/null || { echo "noise: $tool is not installed" >&2; exit 1; }
done

chi=${1:-}
waitress=${2:-}
if [ -z "$chi" ]; then
  chi=$work/chi
  [ -d "$chi/.git" ] || git clone -q https://github.com/go-chi/chi "$chi"
fi
if [ -z "$waitress" ]; then
  waitress=$work/waitress
  [ -d "$waitress/.git" ] || git clone -q https://github.com/Pylons/waitress "$waitress"
fi
chi=$(realpath "$chi")
waitress=$(realpath "$waitress")

if [ -z "${GATE_BEFORE:-}" ]; then
  if [ ! -d "$work/gate-before" ]; then
    git -C "$here" worktree add -q --detach "$work/gate-before" "$BEFORE_REV"
  fi
  (cd "$work/gate-before" && CARGO_TARGET_DIR=$work/target-before cargo build -q --locked -p gate)
  GATE_BEFORE=$work/target-before/debug/gate
fi
if [ -z "${GATE_AFTER:-}" ]; then
  (cd "$here" && cargo build -q --locked -p gate)
  GATE_AFTER=$here/target/debug/gate
fi

"$here/bench/noise/chi.sh" "$chi"
"$here/bench/noise/waitress.sh" "$waitress" "$work/waitress-venv"

# One run: the outputs kept under $work/out, the warnings listed.
verify() {
  local name=$1 gate=$2 ws=$3 attempt=$4 out=$work/out/$1-$2-$4
  local bin
  if [ "$gate" = before ]; then bin=$GATE_BEFORE; else bin=$GATE_AFTER; fi
  mkdir -p "$(dirname "$out")"
  local path=$PATH
  if [ "$name" = waitress ]; then path=$work/waitress-venv/bin:$PATH; fi
  local start end code=0
  start=$(date +%s.%N)
  PATH=$path "$bin" verify --workspace "$ws" --base main --format json \
    --report markdown="$out.md" --report human="$out.txt" >"$out.json" 2>"$out.err" || code=$?
  end=$(date +%s.%N)
  python3 - "$out.json" "$name" "$gate" "$attempt" "$code" "$start" "$end" <<'EOF'
import json
import sys

path, name, gate, attempt, code, start, end = sys.argv[1:]
try:
    doc = json.load(open(path))
except ValueError:
    print(f"{name} {gate} attempt {attempt}: exit {code}, no JSON (see {path[:-5]}.err)")
    sys.exit(0)
warnings = [f for f in doc["findings"] if f["severity"] == "warning"]
critical = [f for f in doc["findings"] if f["severity"] == "critical"]
items = doc["checks"] + doc["criteria"]
carried = sum(1 for i in items if i["status"] == "carried")
# What the Markdown comment lists under "Carried", one line each.
listed = open(path[:-5] + ".md").read().count("\n- ↻ ")
print(
    f"{name} {gate} attempt {attempt}: {doc['verdict_line']} (exit {code}, "
    f"{float(end) - float(start):.1f} s): {len(warnings)} warnings, {len(critical)} critical; "
    f"{carried} items carried, {listed} listed in the Markdown"
)
for f in warnings + critical:
    print(f"  {f['severity']}  {f['role']}  {f['file'] or '-'}  {f['title']}")
for c in doc["criteria"]:
    base = c.get("base_status") or {}
    took = "carried" if c.get("carried_from") else f"{c.get('duration_ms', 0) / 1000:.1f} s"
    print(
        f"    criterion {c['id']}: {c['status']}, {took}"
        + (f", base {base['status']} ({base.get('reason') or 'exit 0'})" if base else "")
    )
EOF
  # The tally the summary reads.
  python3 -c 'import json,sys
try: d=json.load(open(sys.argv[1])); print(sum(f["severity"]=="warning" for f in d["findings"]))
except ValueError: print("-")' "$out.json" >"$out.count"
}

for name in chi waitress; do
  if [ "$name" = chi ]; then ws=$chi; else ws=$waitress; fi
  for gate in before after; do
    rm -rf "$ws/.gate"
    git -C "$ws" checkout -q -B feature attempt-1
    verify "$name" "$gate" "$ws" 1
    git -C "$ws" checkout -q -B feature attempt-2
    verify "$name" "$gate" "$ws" 2
  done
  rm -rf "$ws/.gate"
done

echo
echo "warnings per run (attempt 1 / attempt 2)"
printf '%-10s %-12s %-12s\n' project before after
for name in chi waitress; do
  printf '%-10s %-12s %-12s\n' "$name" \
    "$(cat "$work/out/$name-before-1.count") / $(cat "$work/out/$name-before-2.count")" \
    "$(cat "$work/out/$name-after-1.count") / $(cat "$work/out/$name-after-2.count")"
done
echo "outputs: $work/out"
