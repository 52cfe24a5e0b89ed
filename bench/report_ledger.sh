# The generated ledger both report benchmarks read, and their shared
# settings (sourced, not run). Every run is a signed bundle file beside the
# ledger (the gen_ledger example's `--template`: each bundle holds a real
# run of examples/shop with the row's id, spec, attempt, verdict, tier and
# times, so every row vouches as a recorded run does).
# Needs: repo and die() set by the sourcing script.
# Sets: RUNS, N_RUNS, N_OUTCOMES (from the environment, else defaults),
# RATIO_TARGET, the timing helpers of measure.sh, and out, ws (the
# workspace), db (its SQLite ledger), gate (the release binary), after
# building gate and the gen_ledger example and generating the ledger once
# (kept under bench/out/ for later runs).
# shellcheck shell=bash disable=SC2154  # repo comes from the sourcing script

RUNS=${RUNS:-3}
N_RUNS=${N_RUNS:-1000000}
N_OUTCOMES=${N_OUTCOMES:-100000}
# shellcheck disable=SC2034  # read by the sourcing scripts
RATIO_TARGET=2.0

# shellcheck source=bench/measure.sh
source "$repo/bench/measure.sh"
command -v python3 >/dev/null || die "python3 is needed to compare the figures"

out=$repo/bench/out
ws=$out/report-signed-$N_RUNS-$N_OUTCOMES
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
    echo "recording one real run of examples/shop as the bundles' template..."
    shop=$(mktemp -d "${TMPDIR:-/tmp}/gate-report-shop.XXXXXX")
    cp -r "$repo/examples/shop/." "$shop/"
    "$gate" verify -q --workspace "$shop" >/dev/null || true
    mkdir -p "$out"
    template=$out/report-template.json
    python3 "$repo/bench/run_template.py" "$shop/.gate/ledger.db" "$template"
    rm -rf "$shop"
    echo "generating $N_RUNS runs (each a signed bundle) and $N_OUTCOMES outcomes under $ws (once)..."
    rm -rf "$ws"
    mkdir -p "$ws/.gate"
    "$gen" "$db" --runs "$N_RUNS" --outcomes "$N_OUTCOMES" --template "$template" ||
        die "generation failed"
    touch "$ws/.done"
fi
# The report's cache of the rows it vouched for (docs/evidence.md).
# shellcheck disable=SC2034  # read by the sourcing scripts
cache=$ws/.gate/report-cache
