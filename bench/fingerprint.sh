#!/usr/bin/env bash
# Workspace fingerprinting against b3sum.
#
# Hashes the same tree of 20,000 files (1 GiB, varying sizes, nested
# folders, deterministic content) with `b3sum` and with `Snapshot::take`
# (the `snapshot` example of gate-evidence) and prints both throughputs, the
# ratio ours/b3sum (target >= 0.8) and our peak RSS (target < 200 MiB).
# Both sides run from a warm page cache: each is run once untimed first, then
# RUNS times; the best run counts (the median is shown too).
#
# Usage: bench/fingerprint.sh            (from anywhere; needs cargo)
# Env:   RUNS (default 5), B3SUM (a b3sum binary to use instead of finding one)
# Exit:  0 when both targets hold, 1 when one does not, 2 on a setup error.
# shellcheck disable=SC2317  # the timed runners are called through `measure`
set -euo pipefail

RUNS=${RUNS:-5}
FILES=20000
TOTAL=$((1 << 30))
RATIO_TARGET=0.8
RSS_TARGET_MIB=200

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$repo/bench/out
tree=$out/tree
mkdir -p "$out"

die() { echo "fingerprint: $*" >&2; exit 2; }
# shellcheck source=bench/measure.sh
source "$repo/bench/measure.sh"

# --- b3sum ------------------------------------------------------------------
find_b3sum() {
    if [[ -n ${B3SUM:-} ]]; then echo "$B3SUM"; return; fi
    if command -v b3sum >/dev/null; then command -v b3sum; return; fi
    local sudo=
    [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null && sudo=sudo
    if $sudo apt-get install -y b3sum >&2 ||
        { $sudo apt-get update >&2 && $sudo apt-get install -y b3sum >&2; }; then
        command -v b3sum && return
    fi
    echo "fingerprint: no b3sum package; building it with cargo" >&2
    cargo install b3sum --locked --root "$out/b3sum" >&2 || return 1
    echo "$out/b3sum/bin/b3sum"
}
b3sum=$(find_b3sum) || die "cannot install b3sum"
echo "b3sum: $b3sum ($("$b3sum" --version))"

# --- our side ---------------------------------------------------------------
echo "building the snapshot example (release)..."
(cd "$repo" && cargo build --release --quiet -p gate-evidence --example snapshot) ||
    die "cargo build failed"
target_dir=${CARGO_TARGET_DIR:-$repo/target}
ours=$target_dir/release/examples/snapshot
[[ -x $ours ]] || die "no binary at $ours"

# --- the tree ---------------------------------------------------------------
# Sizes from a fixed LCG: 19,900 small files, each uniform within a random
# power-of-two band from 1 B to 128 KiB; 95 medium ones of 1-8 MiB; 5 large
# ones sharing what is left of 1 GiB. Content: slices of a b3sum XOF stream,
# each file headed by its own number so no two are alike.
generate_tree() {
    local seed=20240611 small=19900 medium=95 large=5
    local -a sizes=()
    local i sum=0 e s
    rand() { seed=$(((seed * 1103515245 + 12345) & 0x7fffffff)); r=$((seed >> 8)); }
    for ((i = 0; i < small; i++)); do
        rand; e=$((r % 17))
        rand; s=$(((1 << e) + r % (1 << e)))
        sizes+=("$s"); sum=$((sum + s))
    done
    for ((i = 0; i < medium; i++)); do
        rand; s=$(((1 << 20) + r % (7 << 20)))
        sizes+=("$s"); sum=$((sum + s))
    done
    local rest=$((TOTAL - sum))
    ((rest > large * (32 << 20))) || die "size plan leaves too little for the large files"
    for ((i = 0; i < large; i++)); do
        s=$((rest / large)); ((i == large - 1)) && s=$((rest - (large - 1) * (rest / large)))
        sizes+=("$s")
    done

    local tmp=$out/tree.tmp source=$out/source.bin
    rm -rf "$tmp"
    local source_len=$((160 << 20))
    printf 'gate fingerprint bench' | "$b3sum" --raw --length "$source_len" >"$source"
    local dir name offset=0 n=${#sizes[@]} header
    local -A made=()
    # Spread the big files through the list so no thread gets them all.
    local -a order=()
    for ((i = 0; i < n; i++)); do order+=("$(((i * 7919) % n))"); done
    exec 3<"$source"
    for ((i = 0; i < n; i++)); do
        local k=${order[$i]}
        s=${sizes[$k]}
        dir=$tmp/d$((k % 20))/s$((k / 20 % 10))
        ((k % 3 == 0)) && dir=$dir/deep$((k % 7))/deeper
        name=f$k.bin
        ((k % 50 == 0)) && name=.hidden$k
        [[ -n ${made[$dir]:-} ]] || { mkdir -p "$dir"; made[$dir]=1; }
        header="$k"$'\n'
        if ((${#header} >= s)); then
            head -c "$s" <<<"$header" >"$dir/$name"
        else
            if ((offset + s > source_len)); then exec 3<"$source"; offset=0; fi
            { printf '%s' "$header"; head -c $((s - ${#header})) <&3; } >"$dir/$name"
            offset=$((offset + s - ${#header}))
        fi
        if ((i % 2000 == 0)); then echo "  $i/$n files" >&2; fi
    done
    exec 3<&-
    rm -f "$source"
    mv "$tmp" "$tree"
}

if [[ ! -d $tree ]]; then
    echo "generating $FILES files, $((TOTAL >> 20)) MiB under $tree (once)..."
    generate_tree
fi
count=$(find "$tree" -type f | wc -l)
bytes=$(find "$tree" -type f -printf '%s\n' | awk '{s += $1} END {printf "%d", s}')
[[ $count -eq $FILES && $bytes -eq $TOTAL ]] ||
    die "tree has $count files, $bytes bytes; expected $FILES, $TOTAL (delete $tree to regenerate)"

# --- timing -----------------------------------------------------------------
# b3sum gets a fair chance: one process over the whole list (its default,
# multithreaded per file, memory-mapped), and one process per core over
# half of the list each, single-threaded. The fastest variant is the baseline.
# Both sides must hash the same bytes to the same digests.
echo "checking that every digest matches b3sum's..."
diff <("$ours" "$tree" --list | grep -v '^files=' | sort) \
    <(cd "$tree" && find . -type f -printf '%P\0' | xargs -0 "$b3sum" | sort) >/dev/null ||
    die "digests differ from b3sum's"

cores=$(nproc)
per_process=$(((FILES + cores - 1) / cores))
b3sum_single() { find "$tree" -type f -print0 | xargs -0 "$b3sum" >/dev/null; }
b3sum_split() {
    find "$tree" -type f -print0 |
        xargs -0 -P "$cores" -n "$per_process" "$b3sum" --num-threads 1 >/dev/null
}
b3sum_split_mt() {
    find "$tree" -type f -print0 | xargs -0 -P "$cores" -n "$per_process" "$b3sum" >/dev/null
}
our_line=
ours_run() { our_line=$("$ours" "$tree"); }

mibs() { awk -v b="$TOTAL" -v ns="$1" 'BEGIN {printf "%.0f", b / 1048576 / (ns / 1e9)}'; }

echo "timing ($RUNS runs each after a warm-up, $cores cores)..."
base_best=
base_name=
for variant in b3sum_single b3sum_split b3sum_split_mt; do
    measure "$variant"
    printf '  %-16s best %6.1f ms  median %6.1f ms  %5s MiB/s\n' "$variant" \
        "$(awk -v n="$best_ns" 'BEGIN {print n / 1e6}')" \
        "$(awk -v n="$median_ns" 'BEGIN {print n / 1e6}')" "$(mibs "$best_ns")"
    if [[ -z $base_best ]] || ((best_ns < base_best)); then
        base_best=$best_ns base_name=$variant
    fi
done
measure ours_run
ours_best=$best_ns
printf '  %-16s best %6.1f ms  median %6.1f ms  %5s MiB/s\n' "snapshot" \
    "$(awk -v n="$best_ns" 'BEGIN {print n / 1e6}')" \
    "$(awk -v n="$median_ns" 'BEGIN {print n / 1e6}')" "$(mibs "$best_ns")"

# Our count and bytes must match the tree, or the comparison means nothing.
[[ $our_line == "files=$FILES bytes=$TOTAL "* ]] || die "snapshot saw: $our_line"

# Peak RSS of one run, from the kernel's own accounting.
if [[ -x /usr/bin/time ]]; then
    rss_kib=$(/usr/bin/time -f '%M' "$ours" "$tree" 2>&1 >/dev/null | tail -1)
    rss_source="/usr/bin/time"
else
    rss_kib=${our_line##*peak_rss_kib=}
    rss_source="VmHWM"
fi

ratio=$(awk -v a="$base_best" -v b="$ours_best" 'BEGIN {printf "%.2f", a / b}')
rss_mib=$(awk -v k="$rss_kib" 'BEGIN {printf "%.1f", k / 1024}')
echo
echo "tree:          $FILES files, $((TOTAL >> 20)) MiB"
echo "b3sum:         $(mibs "$base_best") MiB/s ($base_name)"
echo "snapshot:      $(mibs "$ours_best") MiB/s"
echo "ratio:         $ratio (ours/b3sum, target >= $RATIO_TARGET)"
echo "peak RSS:      $rss_mib MiB ($rss_source, target < $RSS_TARGET_MIB MiB)"

ok=0
awk -v r="$ratio" -v t="$RATIO_TARGET" 'BEGIN {exit !(r >= t)}' || { echo "FAIL: ratio below target"; ok=1; }
awk -v m="$rss_mib" -v t="$RSS_TARGET_MIB" 'BEGIN {exit !(m < t)}' || { echo "FAIL: peak RSS above target"; ok=1; }
((ok == 0)) && echo "PASS"
exit "$ok"
