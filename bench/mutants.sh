#!/usr/bin/env bash
# Speed of mutation-scored criteria on a real project: boltons (a
# pure-Python library, its sdist fetched from PyPI at a pinned version) with
# a change carried in it: the base lacks mathutils' `Bits` class, the change
# adds it back. Each test module of the library is a criterion.
#
# The same mutants of the change's lines run three ways:
#   scoped    `gate mutants`: each mutant only against the criteria whose
#             traced reads include its file;
#   unscoped  `gate mutants --unscoped`: every criterion against every mutant,
#             the same copies and sandbox;
#   mutmut    the ecosystem's own tool (PyPI, pinned) on the same changed
#             lines (`--use-patch-file`), with the one test module that
#             covers them, chosen by hand, as its runner.
# Prints the wall time of each and the ratios, and checks that scoped and
# unscoped give every mutant the same verdict (exit 1 when they differ, or
# when scoped is less than TARGET times faster than unscoped).
#
# MAX mutants run (default 20); GATE_BIN a gate already built (the release
# build is the default).
set -euo pipefail
cd "$(dirname "$0")/.."
MAX=${MAX:-20}
TARGET=${TARGET:-5}
BOLTONS=24.1.0
MUTMUT=2.5.1
PYTEST=8.3.3
if [ -z "${GATE_BIN:-}" ]; then
  cargo build --release -q -p gate --bin gate --bin gate-drop
fi
gate=${GATE_BIN:-$PWD/target/release/gate}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "fetching boltons $BOLTONS, pytest $PYTEST and mutmut $MUTMUT from PyPI" >&2
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "pytest==$PYTEST" "mutmut[patch]==$MUTMUT"
"$work/venv/bin/pip" download -q --no-deps --no-binary :all: -d "$work" "boltons==$BOLTONS"
tar -xzf "$work/boltons-$BOLTONS.tar.gz" --no-same-owner -C "$work"
ws=$work/ws
mv "$work/boltons-$BOLTONS" "$ws"
rm -rf "$ws/boltons.egg-info" "$ws/docs"

# The criteria: one per test module that passes on its own in the sandbox
# (those that reach the network or trace the interpreter are left out).
modules="cacheutils dictutils fileutils formatutils funcutils iterutils jsonutils \
listutils mathutils namedutils queueutils setutils statsutils strutils tableutils \
tbutils timeutils typeutils urlutils"
{
  printf '[spec]\nid = "boltons-bits"\n\n[[task]]\nid = "bits"\npaths = ["boltons/**"]\n\n'
  for m in $modules; do
    printf '[[task.criterion]]\nid = "%s"\ntext = "boltons.%s holds"\n' "$m" "$m"
    printf 'run = "%s/venv/bin/python -m pytest -q -p no:cacheprovider tests/test_%s.py"\n\n' "$work" "$m"
  done
  printf '[sandbox]\nreadable = ["%s/venv"]\n' "$work"
} > "$ws/gate.toml"
printf '.gate/\n__pycache__/\n.mutmut-cache\n' > "$ws/.gitignore"

git_() { git -C "$ws" -c user.name=b -c user.email=b@example.com "$@"; }
cp "$ws/boltons/mathutils.py" "$work/mathutils.py"
# The base: mathutils without the Bits class (and its name in __all__).
python3 - "$ws/boltons/mathutils.py" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
cut = text.index("class Bits")
open(path, "w").write(text[:cut].rstrip() + "\n")
PY
git_ init -q -b main
git_ add .
git_ commit -q -m base
cp "$work/mathutils.py" "$ws/boltons/mathutils.py"
git_ diff -U0 > "$work/change.patch"
"$gate" keys generate --workspace "$ws" >/dev/null

now() { date +%s.%N; }
run_gate() {
  local out=$1
  shift
  local start end
  start=$(now)
  "$gate" --workspace "$ws" mutants --base main --max "$MAX" --format json "$@" \
    > "$out" 2> "$out.log" || { tail -5 "$out.log" >&2; return 1; }
  end=$(now)
  echo "$end - $start" | bc
}
echo "scoped…" >&2
scoped=$(run_gate "$work/scoped.json") || exit 1
echo "unscoped…" >&2
unscoped=$(run_gate "$work/unscoped.json" --unscoped) || exit 1

# mutmut on the same changed lines, its runner the one test module that
# covers them. It has no bound on how many mutants it runs: it runs all of
# them, and the ratio is per mutant.
echo "mutmut…" >&2
start=$(now)
(
  cd "$ws"
  "$work/venv/bin/mutmut" run --paths-to-mutate boltons/mathutils.py \
    --use-patch-file "$work/change.patch" --no-progress \
    --runner "$work/venv/bin/python -m pytest -x -q -p no:cacheprovider tests/test_mathutils.py" \
    > "$work/mutmut.log" 2>&1 || true
)
end=$(now)
mutmut=$(echo "$end - $start" | bc)
# Its verdicts, from its cache: killed and survived mutants.
mutmut_counts=$(python3 - "$ws/.mutmut-cache" <<'PY'
import sqlite3, sys
rows = dict(sqlite3.connect(sys.argv[1]).execute(
    "select status, count(*) from Mutant group by status").fetchall())
print(rows.get("ok_killed", 0), rows.get("bad_survived", 0), sum(rows.values()))
PY
)

python3 - "$work/scoped.json" "$work/unscoped.json" "$scoped" "$unscoped" "$mutmut" \
  "$mutmut_counts" "$TARGET" <<'PY'
import json, sys
scoped, unscoped = (json.load(open(p)) for p in sys.argv[1:3])
t_scoped, t_unscoped, t_mutmut = (float(x) for x in sys.argv[3:6])
mm_killed, mm_survived, mm_all = (int(x) for x in sys.argv[6].split())
target = float(sys.argv[7])
key = lambda m: (m["file"], m["line"], m["replacement"])
verdicts = lambda doc: {key(m): m["status"] for m in doc["mutants"]}
a, b = verdicts(scoped), verdicts(unscoped)
ran = lambda doc: sum(len(m["ran"]) for m in doc["mutants"])
run = sum(1 for m in scoped["mutants"] if m["ran"])
made = len(scoped["mutants"]) + scoped["left_out"]
print(f"mutants run: {run} of {made} made ({scoped['left_out']} left out by MAX)")
print(f"criterion runs against mutants: scoped {ran(scoped)}, unscoped {ran(unscoped)}")
print(f"score: scoped {scoped['total']['score']}, unscoped {unscoped['total']['score']}")
print(f"wall time: scoped {t_scoped:.1f} s, unscoped {t_unscoped:.1f} s for {run} mutants; "
      f"mutmut {t_mutmut:.1f} s for {mm_all} ({mm_killed} killed, {mm_survived} survived)")
per = lambda t, n: t / max(n, 1)
print(f"per mutant: scoped {per(t_scoped, run):.2f} s, unscoped {per(t_unscoped, run):.2f} s, "
      f"mutmut {per(t_mutmut, mm_all):.2f} s")
print(f"unscoped / scoped: {t_unscoped / t_scoped:.1f}x   "
      f"scoped / mutmut, per mutant: {per(t_scoped, run) / per(t_mutmut, mm_all):.1f}x")
differ = [k for k in a if a[k] != b.get(k)]
for k in differ:
    print(f"verdicts differ at {k[0]}:{k[1]} `{k[2]}`: scoped {a[k]}, unscoped {b.get(k)}")
if differ or set(a) != set(b):
    sys.exit(1)
print("same verdict scoped and unscoped on every mutant")
if t_unscoped / t_scoped < target:
    print(f"scoped is under the {target:.0f}x target")
    sys.exit(1)
PY
