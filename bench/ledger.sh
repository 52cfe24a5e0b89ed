#!/usr/bin/env bash
# Ledger append benchmark, every figure measured in this run: with 16
# concurrent writers, chained appends of pre-built envelopes (sha256, RFC
# 6962 leaf hash, serialised tip read, chain link, row) against a baseline
# of raw single-row INSERT-and-commit transactions of the same row shape on
# the same database; target: appends reach at least half the baseline's
# rate, on SQLite and on PostgreSQL (a private server on loopback, started
# and stopped here).
#
# On PostgreSQL it then measures, with pgbench on the same database and
# the same number of writers, the ceiling of the ledger's design, which
# inserts each run's row in its own transaction under the chain lock: the
# lock and one insert after the tip, nothing else (no report rows, no
# bundle, no series check, and, for `ceiling`, not even the wait for
# durability). The ledger's append does strictly more, so it can be no
# faster than that.
#
# Usage: bench/ledger.sh [WRITERS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
writers=${1:-16}
seconds=${2:-5}

cargo build --release -q -p gate-evidence --example appendbench
work=$(mktemp -d "${TMPDIR:-/tmp}/gate-ledger-bench.XXXXXX")
pgdir=$(mktemp -d "${TMPDIR:-/tmp}/gate-ledger-bench-pg.XXXXXX")
trap 'scripts/peer-postgres.sh stop "$pgdir"; rm -rf "$work"' EXIT
url=$(scripts/peer-postgres.sh start "$pgdir")

echo "== ledger appends vs raw inserts ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$root/target/release/examples/appendbench" "$work/sqlite" "$url" "$writers" "$seconds"

# pgbench wants the extended protocol for pipelines; each script builds
# distinct run ids and digests from the client and the clock.
pgbench=$(command -v pgbench || printf '%s\n' /usr/lib/postgresql/*/bin/pgbench | sort -V | tail -n 1)
db="${url%/*}/gate_bench"
row_values="'spec-' || :client_id::text, 1, 'pass', 'light', now(), now(), 1000, 100, 50, 0.01, \
'/var/gate/bundles/' || id || '.dsse.json', md5(id) || md5(id || 'e'), tip_sha, md5(id || 'l') || md5(id || 'm'), now(), \
'{\"agent\": \"bench\", \"models\": [\"p/m\"], \"roles\": [], \"findings\": []}'"
columns="run_id, spec_id, attempt, verdict, tier, started_at, finished_at, input_tokens, \
cached_input_tokens, output_tokens, cost_usd, bundle_path, envelope_sha256, prev_sha256, leaf_hash, recorded_at, extra_json"
id="format('b%s-%s', :client_id::text, clock_timestamp())"
cat >"$work/raw.sql" <<SQL
INSERT INTO bench_raw (${columns/prev_sha256, /}) SELECT id, ${row_values/tip_sha, /} FROM (SELECT $id AS id) AS one;
SQL
chained="BEGIN ISOLATION LEVEL READ COMMITTED;
SELECT set_config('synchronous_commit', 'off', true), pg_advisory_xact_lock(1734440037, 1);
INSERT INTO runs (seq, $columns) SELECT COALESCE(tip.seq, 0) + 1, id, ${row_values/tip_sha/tip.envelope_sha256}
  FROM (SELECT $id AS id) AS one
  LEFT JOIN (SELECT seq, envelope_sha256 FROM runs ORDER BY seq DESC LIMIT 1) AS tip ON true;
COMMIT;"
printf '\\startpipeline\n%s\n\\endpipeline\n' "$chained" >"$work/ceiling.sql"
printf '\\startpipeline\n%s\nSELECT pg_logical_emit_message(true, %s, %s);\n\\endpipeline\n' "$chained" "'gate'" "''" >"$work/durable.sql"

tps() {
    "$pgbench" -n -M prepared -c "$writers" -j "$(nproc)" -T "$seconds" -f "$work/$1.sql" "$db" 2>&1 |
        sed -n 's/^tps = \([0-9]*\).*/\1/p'
}
best() { if [ "${1:-0}" -gt "${2:-0}" ]; then echo "$1"; else echo "${2:-0}"; fi; }

echo "== the ceiling of a row inserted under the chain lock (pgbench, $writers writers)"
raw=0 ceiling=0 durable=0
for _ in 1 2; do
    raw=$(best "$raw" "$(tps raw)")
    ceiling=$(best "$ceiling" "$(tps ceiling)")
    durable=$(best "$durable" "$(tps durable)")
done
[ "$raw" -gt 0 ] || { echo "ledger: pgbench measured nothing" >&2; exit 2; }
ratio() { awk -v a="$1" -v b="$raw" 'BEGIN { printf "%.2f", a / b }'; }
printf 'postgres  raw insert+commit %8d/s\n' "$raw"
printf '          lock + insert after the tip, no durability wait %8d/s   ratio %s\n' "$ceiling" "$(ratio "$ceiling")"
printf '          the same, then the durability wait              %8d/s   ratio %s\n' "$durable" "$(ratio "$durable")"
# The ceiling's rows joined the ledger's chain: it must still be one.
broken=$("${pgbench%/*}/psql" -X -q -t -A "$db" -c "SELECT count(*) FROM runs r LEFT JOIN runs p ON p.seq = r.seq - 1
    WHERE r.prev_sha256 IS DISTINCT FROM p.envelope_sha256 OR (r.seq > 1 AND p.seq IS NULL)")
[ "$broken" = 0 ] || { echo "ledger: the ceiling's appends broke the chain ($broken rows)" >&2; exit 1; }
echo "          the chain is unbroken after them"
