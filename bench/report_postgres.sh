#!/usr/bin/env bash
# `gate report` on PostgreSQL against the same report on SQLite.
#
# Generates (once) a SQLite ledger of 1,000,000 runs and 100,000 outcomes
# through the ledger's own API (the gen_ledger example, as bench/report.sh
# does), copies it into a private PostgreSQL server on loopback with `gate
# ledger migrate` (the server is started and stopped here), then times
# `gate report --format json` on each ledger and checks that both print the
# same figures. Both run warm: each once untimed, then RUNS times; the best
# run counts (the median is shown too).
# Target: PostgreSQL's best within 2x SQLite's best.
#
# Usage: bench/report_postgres.sh   (from anywhere; needs cargo, python3 and
#                                    PostgreSQL, installed when missing)
# Env:   RUNS (default 3), N_RUNS (1000000), N_OUTCOMES (100000)
# Exit:  0 when the figures agree and the target holds, 1 when not, 2 on a setup error.
# shellcheck disable=SC2317  # the timed runners are called through `measure`
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "report_postgres: $*" >&2; exit 2; }

# shellcheck source=bench/report_ledger.sh
source "$repo/bench/report_ledger.sh"

pgdir=$(mktemp -d "${TMPDIR:-/tmp}/gate-report-pg.XXXXXX")
trap '"$repo/scripts/peer-postgres.sh" stop "$pgdir"; rm -rf "$pgdir"' EXIT
url=$("$repo/scripts/peer-postgres.sh" start "$pgdir") || die "cannot start PostgreSQL"

echo "copying the ledger into PostgreSQL (gate ledger migrate)..."
t0=$(now_ns)
"$gate" --workspace "$ws" -q ledger migrate --from "$db" --to "$url" >/dev/null ||
    die "migrate failed"
t1=$(now_ns)
echo "  copied in $(((t1 - t0) / 1000000)) ms"

sqlite_run() { GATE_LEDGER=$db "$gate" --workspace "$ws" -q report --format json >"$out/report-on-sqlite.json"; }
pg_run() { GATE_LEDGER=$url "$gate" --workspace "$ws" -q report --format json >"$out/report-on-postgres.json"; }


echo "timing ($RUNS runs each after a warm-up, $(nproc) cores)..."
measure sqlite_run
sqlite_best=$best_ns
printf '  %-26s best %6s ms  median %6s ms\n' "gate report on SQLite" "$(ms "$best_ns")" "$(ms "$median_ns")"
measure pg_run
pg_best=$best_ns
printf '  %-26s best %6s ms  median %6s ms\n' "gate report on PostgreSQL" "$(ms "$best_ns")" "$(ms "$median_ns")"

echo "comparing the figures..."
agree=0
python3 - "$out/report-on-sqlite.json" "$out/report-on-postgres.json" <<'EOF' || agree=1
import json, sys
# The ledger's name and when the report was made are the only fields that
# may differ between the two.
def figures(path):
    doc = json.load(open(path))
    for key in ("ledger", "generated_at"):
        doc.pop(key, None)
    return doc
a, b = (figures(p) for p in sys.argv[1:3])
if a != b:
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            print(f"  differs: {key}")
    sys.exit(1)
print("  same figures")
EOF

ratio=$(awk -v a="$pg_best" -v b="$sqlite_best" 'BEGIN {printf "%.2f", a / b}')
echo
echo "ledger:        $N_RUNS runs, $N_OUTCOMES outcomes"
echo "SQLite:        $(ms "$sqlite_best") ms"
echo "PostgreSQL:    $(ms "$pg_best") ms"
echo "ratio:         $ratio (PostgreSQL/SQLite, target <= $RATIO_TARGET)"

ok=$agree
((agree == 0)) || echo "FAIL: the figures differ"
awk -v r="$ratio" -v t="$RATIO_TARGET" 'BEGIN {exit !(r <= t)}' || { echo "FAIL: slower than target"; ok=1; }
((ok == 0)) && echo "PASS"
exit "$ok"
