# The generated ledger both report benchmarks read (sourced, not run).
# Needs: repo, N_RUNS, N_OUTCOMES and die() set by the sourcing script.
# Sets: out, ws (the workspace), db (its SQLite ledger), gate (the release
# binary), after building gate and the gen_ledger example and generating
# the ledger once (kept under bench/out/ for later runs).
# shellcheck shell=bash disable=SC2154  # repo, N_RUNS, N_OUTCOMES come from the sourcing script

out=$repo/bench/out
ws=$out/report-$N_RUNS-$N_OUTCOMES
db=$ws/.gate/ledger.db

echo "building gate and the ledger generator (release)..."
(cd "$repo" && cargo build --release --quiet -p gate --bin gate &&
    cargo build --release --quiet -p gate-evidence --example gen_ledger) ||
    die "cargo build failed"
target_dir=${CARGO_TARGET_DIR:-$repo/target}
gate=$target_dir/release/gate
gen=$target_dir/release/examples/gen_ledger
[[ -x $gate && -x $gen ]] || die "no binaries under $target_dir/release"

if [[ ! -f $ws/.done ]]; then
    echo "generating $N_RUNS runs and $N_OUTCOMES outcomes under $ws (once)..."
    rm -rf "$ws"
    mkdir -p "$ws/.gate"
    "$gen" "$db" --runs "$N_RUNS" --outcomes "$N_OUTCOMES" || die "generation failed"
    touch "$ws/.done"
fi
