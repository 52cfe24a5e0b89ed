#!/usr/bin/env bash
# Sandbox benchmark: one spec of 40 trivial checks (`true`), run isolated
# (each check in its own bubblewrap sandbox) and unisolated (--sandbox off),
# RUNS times each, alternating, in one go. Prints the median time per check
# as the run's JSON records it (spawn to end) for both, and their
# difference: the cost the sandbox adds to one item. Every check has a
# fresh /tmp, /var/tmp and HOME of its own, made before the checks start:
# the median time the isolated runs took to make them, per item, is
# printed and added to the item's cost. The 40 checks run after a first
# one, `build`, that leaves 20 small files in its /tmp and HOME, so each
# starts from a copy of them: the median time that copy took, per item,
# is printed and added too.
# Target: at most 15 ms added per item (median); exits 1 when over it.
# The isolation alone is measured: GATE_TRACE is off in both modes unless
# the environment sets it (bench/trace.sh measures what tracing adds).
# As root it also runs the gate as an unprivileged user (uid 65534), where
# bubblewrap makes a user namespace per item too.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
cargo build --release -q -p gate --bin gate --bin gate-drop
command -v bwrap >/dev/null || { echo "bubblewrap (bwrap) is not installed" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
cp target/release/gate target/release/gate-drop "$work/"
ws=$work/ws
mkdir -p "$ws"
{
  printf '[spec]\nid = "bench-sandbox"\n[policy]\nbuiltin_parse = false\nbuiltin_secrets = false\nbuiltin_conflicts = false\n'
  printf '[[check]]\nid = "build"\nrun = '"'"'mkdir -p "$TMPDIR/out" "$HOME/.cache/tool" ; for i in $(seq 10); do echo "$i" > "$TMPDIR/out/$i.o"; echo "$i" > "$HOME/.cache/tool/$i"; done'"'"'\n'
  for i in $(seq -w 1 40); do
    printf '[[check]]\nid = "c%s"\nrun = "true"\nafter = ["build"]\n' "$i"
  done
} > "$ws/gate.toml"

# Median of the checks' durations (ms) over the JSON documents given.
median_item_ms() {
  python3 - "$@" <<'EOF'
import json, statistics, sys
durations = []
for path in sys.argv[1:]:
    doc = json.load(open(path))
    durations += [c["duration_ms"] for c in doc["checks"] if c["id"].startswith("c")]
print(statistics.median(durations))
EOF
}

# Two medians (ms) over the debug logs given: the time one item's private
# folders took to make, and the time the copy of what `build` left into
# an item's folders took.
median_folders_and_copy_ms() {
  python3 - "$@" <<'EOF'
import re, statistics, sys
folders, copies = [], []
for path in sys.argv[1:]:
    for line in open(path, errors="replace"):
        m = re.search(r"made the private folders of the items items=(\d+) us=(\d+)", line)
        if m and int(m.group(1)) > 0:
            folders.append(int(m.group(2)) / 1000 / int(m.group(1)))
        m = re.search(r"copied what the items before an item left from=1 .*us=(\d+)", line)
        if m:
            copies.append(int(m.group(1)) / 1000)
if not folders or not copies:
    sys.exit("no folders or no copy logged: the checks did not start from build's folders")
print(statistics.median(folders), statistics.median(copies))
EOF
}

# Runs the spec RUNS times per mode as "$@" (a command prefix), alternating.
measure_as() {
  local who=$1; shift
  local state=$work/state-$who
  # A home and a temporary folder of the run's own: unisolated, `build`
  # writes in them.
  local home=$work/home-$who tmp=$work/tmp-$who
  rm -rf "$state" "$home" "$tmp"; mkdir -p "$state" "$home" "$tmp"
  [ "$who" = root ] || chown -R 65534:65534 "$ws" "$state" "$home" "$tmp"
  "$@" "$work/gate" keys generate --workspace "$ws" --state "$state" >/dev/null
  local i
  for ((i = 0; i < RUNS; i++)); do
    for mode in required off; do
      HOME=$home TMPDIR=$tmp GATE_TRACE=${GATE_TRACE:-off} RUST_LOG=warn,gate::isolation=debug,gate_harness::seed=debug \
        "$@" "$work/gate" verify --workspace "$ws" --state "$state" --sandbox "$mode" --format json \
        > "$work/$who-$mode-$i.json" 2> "$work/$who-$mode-$i.log" || { echo "the $mode run failed" >&2; exit 1; }
    done
  done
  python3 - "$work/$who-required-0.json" <<'EOF'
import json, sys
kind = json.load(open(sys.argv[1]))["isolation"]["kind"]
assert kind == "bwrap", f"the isolated runs were not isolated: {kind}"
EOF
  local isolated unisolated folders copy
  isolated=$(median_item_ms "$work/$who"-required-*.json)
  unisolated=$(median_item_ms "$work/$who"-off-*.json)
  read -r folders copy < <(median_folders_and_copy_ms "$work/$who"-required-*.log)
  awk -v who="$who" -v i="$isolated" -v u="$unisolated" -v f="$folders" -v c="$copy" -v runs="$RUNS" 'BEGIN {
    printf "%-8s 40 checks x %d runs: median per check isolated %.1f ms, unisolated %.1f ms; private folders %.2f ms and the copy of what build left %.2f ms per item; added %.1f ms per item (ratio %s; target <= 15 ms added)\n",
      who, runs, i, u, f, c, i - u + f + c, (u > 0 ? sprintf("%.2f", (i + f + c) / u) : "n/a: unisolated under 1 ms")
    if (i - u + f + c > 15) { printf "%s: over the target\n", who > "/dev/stderr"; exit 1 }
  }'
}

over=0
measure_as "$(id -un)" || over=1
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  measure_as nobody setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all -- || over=1
fi
exit "$over"
