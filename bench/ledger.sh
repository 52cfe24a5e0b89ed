#!/usr/bin/env bash
# Ledger append benchmark, every figure measured in this run: with 16
# concurrent writers, chained appends of pre-built envelopes (sha256, RFC
# 6962 leaf hash, serialised tip read, chain link, row) against a baseline
# of raw single-row INSERT-and-commit transactions of the same row shape on
# the same database; target: appends reach at least half the baseline's
# rate, on SQLite and on PostgreSQL (a private server on loopback, started
# and stopped here).
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
