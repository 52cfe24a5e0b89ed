#!/usr/bin/env bash
# Harvest benchmark: `gate outcome harvest` over 1,000 runs of a generated
# 20,000-commit history (bench/harvest_history.py: every run's change
# squashed onto main, its own commit kept under refs/runs/, a fix every 50
# commits blaming a recent run), and the SZZ step (`gate outcome blame`)
# against PyDriller's `get_commits_last_modified_lines` on the same fix
# commits: the generated history's 400, then those of a real history
# (kmod's, cloned from GitHub, or the local clone HARVEST_REAL_REPO names;
# HARVEST_REAL_URL clones another), its non-merge commits whose subject
# the default `[eval] fix_pattern` matches.
#
# Targets: the harvest in at most 10 s; the SZZ step at least 10× faster
# than PyDriller on both histories. Prints every time and ratio; exits 1
# when a target is missed. PyDriller comes from the peer venv
# (scripts/peer-venv.sh), or the Python named by PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
COMMITS=${COMMITS:-20000}
REAL_URL=${HARVEST_REAL_URL:-https://github.com/kmod-project/kmod}
# The default `[eval] fix_pattern`, as documented (docs/outcomes.md).
FIX_PATTERN='(?i)\b(fix(e[sd]|ing)?|bug(s|fix)?|hotfix|regressions?|broken|crash(es|ed)?|defects?)\b'
cargo build --release -q -p gate --bin gate
cargo build --release -q -p gate-evidence --example harvest_ledger
if [ -z "${PYTHON:-}" ]; then
  scripts/peer-venv.sh target/peer-venv >&2
  PYTHON=target/peer-venv/bin/python
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gate=$PWD/target/release/gate
repo=$work/repo
state=$work/state

echo "generating a $COMMITS-commit history" >&2
git init -q -b main "$repo"
python3 bench/harvest_history.py "$COMMITS" "$work" > "$work/stream"
git -C "$repo" fast-import --quiet --export-marks="$work/marks" < "$work/stream"
git -C "$repo" reset -q --hard main
printf 'gate.toml\n.gate/\n' > "$repo/.git/info/exclude"
printf '[spec]\nid = "bench"\n' > "$repo/gate.toml"
root=$(git -C "$repo" rev-list --max-parents=0 main)
# Marks to commit ids.
declare -A sha
while read -r mark id; do sha[$mark]=$id; done < "$work/marks"
n=0
while read -r mark verdict started; do
  n=$((n + 1))
  printf 'run-%05d\t%s\t%s\t%s\t%s\n' "$n" "$verdict" "$started" "${sha[$mark]}" "$root"
done < "$work/runs.txt" > "$work/runs.tsv"
mkdir -p "$state"
"$gate" --workspace "$repo" --state "$state" keys generate >/dev/null
target/release/examples/harvest_ledger "$state/ledger.db" < "$work/runs.tsv" >&2
while read -r mark; do echo "${sha[$mark]}"; done < "$work/fixes.txt" > "$work/fixes.ids"

ms() { echo $(( ($2 - $1) / 1000000 )); }
failed=0

# Times the SZZ step (`gate outcome blame`) and PyDriller's
# `get_commits_last_modified_lines` on the fix commits listed in FILE of the
# repository REPO, prints both, how often they agree and the ratio, and
# sets failed=1 when the gate is not at least 10× faster.
# Usage: szz_compare LABEL REPO FILE
szz_compare() {
  local label=$1 dir=$2 list=$3 start end ours_ms theirs_ms ratio
  local -a ids
  mapfile -t ids < "$list"
  start=$(date +%s%N)
  "$gate" --workspace "$dir" --state "$state" -q outcome blame --format json "${ids[@]}" \
    > "$work/ours.json"
  end=$(date +%s%N)
  ours_ms=$(ms "$start" "$end")
  start=$(date +%s%N)
  "$PYTHON" tests/fixtures/szz/pydriller_blame.py "$dir" < "$list" > "$work/theirs.json"
  end=$(date +%s%N)
  theirs_ms=$(ms "$start" "$end")
  python3 - "$work/ours.json" "$work/theirs.json" <<'PY'
import json, sys
ours = {f["commit"]: sorted(f["commits"]) for f in json.load(open(sys.argv[1]))["fixes"]}
theirs = json.load(open(sys.argv[2]))
same = sum(1 for k in ours if ours[k] == theirs.get(k))
print(f"SZZ: the same commits as PyDriller for {same} of {len(ours)} fixes", file=sys.stderr)
PY
  ratio=$(python3 -c "print(f'{$theirs_ms / max($ours_ms, 1):.1f}')")
  echo "SZZ on ${#ids[@]} fixes of $label: gate ${ours_ms} ms, PyDriller ${theirs_ms} ms: ${ratio}× (target ≥ 10×)"
  python3 -c "import sys; sys.exit(0 if $theirs_ms >= 10 * $ours_ms else 1)" || failed=1
}

start=$(date +%s%N)
"$gate" --workspace "$repo" --state "$state" -q outcome harvest --dry-run --format json \
  > "$work/harvest.json"
end=$(date +%s%N)
harvest_ms=$(ms "$start" "$end")
python3 - "$work/harvest.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
by = {}
for l in d["labels"]:
    by[l["source"]] = by.get(l["source"], 0) + 1
print(f"harvest: {d['runs']} runs; labels {by}; pending {d['pending']}; "
      f"not integrated {len(d['not_integrated'])}", file=sys.stderr)
PY
echo "harvest of $n runs over $COMMITS commits: ${harvest_ms} ms (target ≤ 10000)"
[ "$harvest_ms" -le 10000 ] || failed=1

szz_compare "the generated history" "$repo" "$work/fixes.ids"

# A real history: kmod's, or the clone HARVEST_REAL_REPO names; its fixes
# are the non-merge commits whose subject the default `[eval] fix_pattern`
# matches (as tests/tests/e2e/harvest_peer.rs picks them).
real=${HARVEST_REAL_REPO:-}
if [ -z "$real" ]; then
  real=$work/real
  echo "cloning $REAL_URL" >&2
  git clone -q "$REAL_URL" "$real"
fi
git -C "$real" log --no-merges --format='%H%x00%s' | python3 -c '
import re, sys
pattern = re.compile(sys.argv[1])
for line in sys.stdin:
    commit, _, subject = line.rstrip("\n").partition("\0")
    if pattern.search(subject):
        print(commit)
' "$FIX_PATTERN" > "$work/real-fixes.ids"
szz_compare "${HARVEST_REAL_REPO:-$REAL_URL}" "$real" "$work/real-fixes.ids"
exit $failed
