#!/usr/bin/env bash
# Harvest benchmark: `gate outcome harvest` over 1,000 runs of a generated
# 20,000-commit history (bench/harvest_history.py: every run's change
# squashed onto main, its own commit kept under refs/runs/, a fix every 50
# commits blaming a recent run), and the SZZ step (`gate outcome blame`)
# against PyDriller's `get_commits_last_modified_lines` on the same 400
# fix commits, both timed in one go.
#
# Targets: the harvest in at most 10 s; the SZZ step at least 10× faster
# than PyDriller. Prints both times and the ratio; exits 1 when a target is
# missed. PyDriller comes from the peer venv (scripts/peer-venv.sh), or
# the Python named by PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
COMMITS=${COMMITS:-20000}
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
fixes=()
while read -r mark; do fixes+=("${sha[$mark]}"); done < "$work/fixes.txt"

ms() { echo $(( ($2 - $1) / 1000000 )); }
failed=0

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

start=$(date +%s%N)
"$gate" --workspace "$repo" --state "$state" -q outcome blame --format json "${fixes[@]}" \
  > "$work/ours.json"
end=$(date +%s%N)
ours_ms=$(ms "$start" "$end")
start=$(date +%s%N)
printf '%s\n' "${fixes[@]}" \
  | "$PYTHON" tests/fixtures/szz/pydriller_blame.py "$repo" > "$work/theirs.json"
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
echo "SZZ on ${#fixes[@]} fixes: gate ${ours_ms} ms, PyDriller ${theirs_ms} ms: ${ratio}× (target ≥ 10×)"
python3 -c "import sys; sys.exit(0 if $theirs_ms >= 10 * $ours_ms else 1)" || failed=1
exit $failed
