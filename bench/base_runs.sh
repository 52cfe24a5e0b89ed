#!/usr/bin/env bash
# Base-run benchmark: a series of three attempts over a spec of 20
# fail-to-pass criteria behind one build check (`--base main`). Each attempt
# edits the source, so the build and every criterion re-run on the change.
# Targets: over the whole series the base costs one build and 20 criterion
# runs (counted from the scripts' own logs, not from the gate's word), and
# attempts 2 and 3 take under 10% more than the same attempts of the same
# series without expectations (no base runs), measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
# GATE_BIN: a gate already built (the release build is the default).
if [ -z "${GATE_BIN:-}" ]; then
  cargo build --release -q -p gate --bin gate --bin gate-drop
fi
gate=${GATE_BIN:-$PWD/target/release/gate}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
ROUNDS=${ROUNDS:-3}
N=20

# A workspace at its base commit: `build` copies src/ into target/ after a
# pause that stands for a compiler; criterion i looks for "feature i" there.
# $2 is what each criterion adds to its definition.
make_ws() {
  local ws=$1 expect=$2 log=$3
  mkdir -p "$ws/src" "$ws/scripts" "$log"
  {
    printf '[spec]\nid = "bench-base"\n[policy]\nbuiltin_parse = false\n'
    printf '[[check]]\nid = "build"\nrun = "./scripts/build.sh"\n'
    printf '[[task]]\nid = "t"\npaths = ["src/**"]\n'
    for i in $(seq 1 $N); do
      printf '[[task.criterion]]\nid = "c%s"\ntext = "feature %s works"\nrun = "./scripts/check.sh %s"\nafter = ["build"]\n%s\n' \
        "$i" "$i" "$i" "$expect"
    done
    printf '[sandbox]\nwritable = ["%s"]\n' "$log"
  } > "$ws/gate.toml"
  # Each script logs which side it ran on: the base's checkout is shown at
  # the workspace's path, so only `.here` (ignored, in no commit) tells.
  local side='$(test -e .here && echo change || echo base)'
  printf '#!/bin/sh\nset -e\necho "%s" >> %s/build\nsleep 0.5\nmkdir -p target\ncp src/app.txt target/\n' "$side" "$log" > "$ws/scripts/build.sh"
  printf '#!/bin/sh\necho "%s" >> %s/check\nsleep 0.05\ngrep -qx "feature $1" target/app.txt\n' "$side" "$log" > "$ws/scripts/check.sh"
  chmod +x "$ws/scripts/"*.sh
  printf '.gate/\ntarget/\n.here\n' > "$ws/.gitignore"
  echo "nothing yet" > "$ws/src/app.txt"
  git -C "$ws" init -q -b main
  git -C "$ws" add .
  git -C "$ws" -c user.name=b -c user.email=b@example.com commit -q -m base
  : > "$ws/.here"
  "$gate" keys generate --workspace "$ws" >/dev/null
}

# The source of attempt $2: every feature but the one left out ($3, or none).
features() {
  local ws=$1 missing=$2
  for i in $(seq 1 $N); do [ "$i" = "$missing" ] || echo "feature $i"; done > "$ws/src/app.txt"
}

now() { date +%s%N; }

# One series of three attempts in a fresh workspace; prints the
# milliseconds of attempts 1, 2 and 3 and checks each verdict.
series() {
  local ws=$1 expect=$2 log=$3
  make_ws "$ws" "$expect" "$log"
  local times=() want t0 t1 code
  for attempt in 1 2 3; do
    case $attempt in
      1) features "$ws" 20; want=1 ;;
      2) features "$ws" 7; want=1 ;;
      3) features "$ws" none; want=0 ;;
    esac
    t0=$(now)
    "$gate" verify -q --workspace "$ws" --base main >/dev/null && code=0 || code=$?
    t1=$(now)
    [ "$code" = "$want" ] || { echo "attempt $attempt of $ws: exit $code, expected $want" >&2; exit 1; }
    times+=($(((t1 - t0) / 1000000)))
  done
  echo "${times[@]}"
}

# Runs on the base.
on_base() { grep -cx "base" "$1" || true; }

with=() without=()
for r in $(seq 1 "$ROUNDS"); do
  a="$root/with-$r"; b="$root/without-$r"
  read -r w1 w2 w3 < <(series "$a" 'expect = "fail-to-pass"' "$root/log-with-$r")
  read -r o1 o2 o3 < <(series "$b" '' "$root/log-without-$r")
  builds=$(on_base "$root/log-with-$r/build")
  checks=$(on_base "$root/log-with-$r/check")
  [ "$builds" = 1 ] && [ "$checks" = $N ] || {
    echo "round $r: the base ran $builds builds and $checks criteria over the series (want 1 and $N)" >&2
    exit 1
  }
  with+=("$w1 $((w2 + w3))"); without+=("$o1 $((o2 + o3))")
  printf 'round %s: with base runs %s/%s/%s ms, without %s/%s/%s ms; base: %s build, %s criterion runs\n' \
    "$r" "$w1" "$w2" "$w3" "$o1" "$o2" "$o3" "$builds" "$checks"
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
# shellcheck disable=SC2046  # one number per word
later_with=$(median $(printf '%s\n' "${with[@]}" | cut -d' ' -f2))
# shellcheck disable=SC2046
later_without=$(median $(printf '%s\n' "${without[@]}" | cut -d' ' -f2))
# shellcheck disable=SC2046
first_with=$(median $(printf '%s\n' "${with[@]}" | cut -d' ' -f1))
# shellcheck disable=SC2046
first_without=$(median $(printf '%s\n' "${without[@]}" | cut -d' ' -f1))
printf 'attempt 1 (pays for the base): %s ms against %s ms without base runs (+%.0f%%)\n' \
  "$first_with" "$first_without" "$(awk -v a="$first_with" -v b="$first_without" 'BEGIN {print (a / b - 1) * 100}')"
overhead=$(awk -v a="$later_with" -v b="$later_without" 'BEGIN {print (a / b - 1) * 100}')
printf 'attempts 2 and 3: %s ms against %s ms without base runs: %+.1f%%  (target < 10%%)\n' \
  "$later_with" "$later_without" "$overhead"
awk -v o="$overhead" 'BEGIN {exit !(o < 10)}' || { echo "over target" >&2; exit 1; }
