# Timing helpers shared by the benchmark scripts (sourced, not run).
# shellcheck shell=bash

# Nanoseconds since the epoch.
now_ns() { date +%s%N; }

# Runs "$@" RUNS times after one untimed warm-up; sets best_ns and median_ns.
measure() {
    "$@"
    local -a times=()
    local i t0 t1
    for ((i = 0; i < RUNS; i++)); do
        t0=$(now_ns); "$@"; t1=$(now_ns)
        times+=($((t1 - t0)))
    done
    mapfile -t times < <(printf '%s\n' "${times[@]}" | sort -n)
    # shellcheck disable=SC2034  # both are read by the sourcing script
    best_ns=${times[0]}
    # shellcheck disable=SC2034
    median_ns=${times[$((RUNS / 2))]}
}

# Nanoseconds as whole milliseconds.
ms() { awk -v n="$1" 'BEGIN {printf "%.0f", n / 1e6}'; }
