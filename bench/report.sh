#!/usr/bin/env bash
# `gate report` against the sqlite3 command-line tool.
#
# Generates (once) a ledger of 1,000,000 runs and 100,000 outcomes through
# the ledger's own API (the gen_ledger example of gate-evidence), each run
# a signed bundle file as `gate verify` leaves it, then times the same
# aggregates written as SQL (bench/report.sql) run by `sqlite3` on the same
# database, a first `gate report --format json` (no cache: every row's
# bundle read and verified) and a cached one (the rows vouched for kept in
# the state directory: each row's stamp, its columns read raw, matched
# against the cache), and checks that gate and sqlite3 give the same
# figures (bench/report_check.py). sqlite3 and the cached report run from
# a warm page cache: once untimed, then RUNS times; the best run counts
# (the median is shown too). The first report runs once.
# Target: the cached report's best within 2x sqlite3's best; the first
# report's ratio is printed beside it.
#
# Usage: bench/report.sh            (from anywhere; needs cargo, sqlite3, python3)
# Env:   RUNS (default 3), N_RUNS (1000000), N_OUTCOMES (100000)
# Exit:  0 when the figures agree and the target holds, 1 when not, 2 on a setup error.
# shellcheck disable=SC2317  # the timed runners are called through `measure`
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "report: $*" >&2; exit 2; }
if ! command -v sqlite3 >/dev/null; then
    sudo=
    [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null && sudo=sudo
    $sudo apt-get install -y sqlite3 >&2 ||
        { $sudo apt-get update >&2 && $sudo apt-get install -y sqlite3 >&2; } ||
        die "cannot install sqlite3"
fi
echo "sqlite3: $(sqlite3 --version | cut -d' ' -f1)"

# shellcheck source=bench/report_ledger.sh
source "$repo/bench/report_ledger.sh"
# Fold the write-ahead log into the database so both sides read one file.
sqlite3 "$db" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
echo "ledger: $(du -h "$db" | cut -f1), $(sqlite3 "$db" 'SELECT COUNT(*) FROM runs') runs," \
    "$(sqlite3 "$db" 'SELECT COUNT(*) FROM outcomes') outcomes"

gate_run() { "$gate" --workspace "$ws" -q report --format json >"$out/report-gate.json"; }
first_run() { rm -f "$cache"; gate_run; }
sqlite_run() { sqlite3 -bail "$db" <"$repo/bench/report.sql" >"$out/report-sqlite.json"; }


echo "timing ($RUNS runs each after a warm-up, $(nproc) cores)..."
measure sqlite_run
sqlite_best=$best_ns
printf '  %-22s best %6s ms  median %6s ms\n' "sqlite3 report.sql" "$(ms "$best_ns")" "$(ms "$median_ns")"
# Once: it reads and verifies every bundle (minutes at a million runs).
t0=$(now_ns); first_run; first_best=$(($(now_ns) - t0))
printf '  %-22s once %6s ms\n' "gate report, first" "$(ms "$first_best")"
measure gate_run
gate_best=$best_ns
printf '  %-22s best %6s ms  median %6s ms\n' "gate report, cached" "$(ms "$best_ns")" "$(ms "$median_ns")"

echo "comparing the figures..."
agree=0
python3 "$repo/bench/report_check.py" "$out/report-gate.json" "$out/report-sqlite.json" || agree=1

ratio=$(awk -v a="$gate_best" -v b="$sqlite_best" 'BEGIN {printf "%.2f", a / b}')
first_ratio=$(awk -v a="$first_best" -v b="$sqlite_best" 'BEGIN {printf "%.2f", a / b}')
left_out=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["left_out"])' "$out/report-gate.json")
echo
echo "ledger:        $N_RUNS runs (each a signed bundle), $N_OUTCOMES outcomes; left out: $left_out"
echo "sqlite3:       $(ms "$sqlite_best") ms"
echo "first report:  $(ms "$first_best") ms, ratio $first_ratio (gate/sqlite3, every bundle verified)"
echo "cached report: $(ms "$gate_best") ms, ratio $ratio (gate/sqlite3, target <= $RATIO_TARGET)"

ok=$agree
((agree == 0)) || echo "FAIL: the figures differ"
awk -v r="$ratio" -v t="$RATIO_TARGET" 'BEGIN {exit !(r <= t)}' || { echo "FAIL: slower than target"; ok=1; }
((ok == 0)) && echo "PASS"
exit "$ok"
