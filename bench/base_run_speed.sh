#!/usr/bin/env bash
# Speed of a trivial run with a base: a git workspace of one Python file and
# one fail-to-pass criterion, `gate verify --base HEAD~1` (the criterion
# runs on the base's checkout and on the change), as an agent's Stop hook
# runs it. Beside it, the same work by hand: check the base out with
# `git worktree add`, run the criterion there and in the workspace, each in
# a bubblewrap sandbox, remove the checkout. RUNS runs each, alternating;
# prints the median wall and CPU time of both and their ratio.
# Target: the gate's run at most 0.5 s of wall time (median); exits 1 when
# over it. GATE_TRACE is left as the environment sets it (as root with
# clang, `GATE_TRACE=ebpf` traces with eBPF).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-9}
# GATE_BIN: a gate already built (the release build is the default).
if [ -z "${GATE_BIN:-}" ]; then
  cargo build --release -q -p gate --bin gate --bin gate-drop
fi
gate=${GATE_BIN:-$PWD/target/release/gate}
command -v bwrap >/dev/null || { echo "bubblewrap (bwrap) is not installed" >&2; exit 1; }

work=$(mktemp -d)
trap 'git -C "$work/ws" worktree prune 2>/dev/null; rm -rf "$work"' EXIT
ws=$work/ws
mkdir -p "$ws"
git_() { git -C "$ws" -c user.name=b -c user.email=b@example.com "$@"; }
cat > "$ws/gate.toml" <<'EOF'
[spec]
id = "bench-base-speed"
[[task]]
id = "t"
paths = ["calc.py"]
[[task.criterion]]
id = "adds"
text = "add() adds"
run = "/usr/bin/python3 -c 'import calc; assert calc.add(2, 3) == 5'"
expect = "fail-to-pass"
EOF
printf '.gate/\n__pycache__/\n' > "$ws/.gitignore"
printf 'def add(a, b):\n    return a - b\n' > "$ws/calc.py"
git_ init -q -b main
git_ add .
git_ commit -q -m base
printf 'def add(a, b):\n    return a + b\n' > "$ws/calc.py"
git_ commit -q -am "add adds"
"$gate" keys generate --workspace "$ws" >/dev/null

criterion="import calc; assert calc.add(2, 3) == 5"
# The sandbox the gate gives an item, in brief: the system read-only, the
# folder writable, a private /tmp, no network, the processes' own PIDs.
sandboxed() {
  local dir=$1
  shift
  bwrap --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
    --symlink usr/lib64 /lib64 --ro-bind /etc /etc --proc /proc --dev /dev \
    --tmpfs /tmp --bind "$dir" "$dir" --chdir "$dir" --unshare-all \
    --die-with-parent --new-session -- "$@"
}
by_hand() {
  local base=$work/base
  git -C "$ws" worktree add -q --detach "$base" HEAD~1
  if sandboxed "$base" /usr/bin/python3 -c "$criterion" 2>/dev/null; then
    echo "by hand: the criterion passed on the base" >&2
    exit 1
  fi
  sandboxed "$ws" /usr/bin/python3 -c "$criterion"
  git -C "$ws" worktree remove --force "$base"
}
the_gate() {
  local code=0
  "$gate" verify -q --workspace "$ws" --base HEAD~1 --new-series >/dev/null 2>"$work/err" || code=$?
  [ "$code" = 0 ] || { echo "the gate exited $code:" >&2; cat "$work/err" >&2; exit 1; }
}

# Wall and CPU (user + system, children included) milliseconds of "$@".
timed() {
  local t0 t1 c0 c1 me=$BASHPID
  c0=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$me/stat")
  t0=$(date +%s%N)
  "$@"
  t1=$(date +%s%N)
  c1=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$me/stat")
  echo "$(((t1 - t0) / 1000000)) $(((c1 - c0) * 1000 / $(getconf CLK_TCK)))"
}

# One run of each, unmeasured: caches warm (the eBPF tracer's compiled
# programs, the page cache).
the_gate
by_hand
gate_wall=() gate_cpu=() hand_wall=() hand_cpu=()
for _ in $(seq 1 "$RUNS"); do
  read -r w c < <(timed the_gate)
  gate_wall+=("$w") gate_cpu+=("$c")
  read -r w c < <(timed by_hand)
  hand_wall+=("$w") hand_cpu+=("$c")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
gw=$(median "${gate_wall[@]}") gc=$(median "${gate_cpu[@]}")
hw=$(median "${hand_wall[@]}") hc=$(median "${hand_cpu[@]}")
printf 'trace: %s\n' "${GATE_TRACE:-default}"
printf 'gate verify --base HEAD~1: %s ms wall, %s ms CPU (median of %s)\n' "$gw" "$gc" "$RUNS"
printf 'the same commands by hand:  %s ms wall, %s ms CPU\n' "$hw" "$hc"
printf 'ratio: %.1fx wall, %.1fx CPU; target <= 500 ms wall\n' \
  "$(awk -v a="$gw" -v b="$hw" 'BEGIN {print a / b}')" "$(awk -v a="$gc" -v b="$hc" 'BEGIN {print a / (b > 0 ? b : 1)}')"
[ "$gw" -le 500 ] || { echo "over target" >&2; exit 1; }
