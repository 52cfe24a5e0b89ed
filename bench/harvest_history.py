"""Writes a `git fast-import` stream of a generated history for the
harvest benchmark (bench/harvest.sh), and beside it what the benchmark
needs to know about it.

Usage: python3 bench/harvest_history.py COMMITS OUT_DIR > stream

The history: 200 files of 40 lines; each commit sets one line. Every 20th
commit lands a run's change (squashed): the same change also exists as
the run's own commit under refs/runs/, off the branch (what the run
verified). Every 50th commit is a fix ("fix: …") that changes a line a
recent run set, so SZZ blames that run. Commits are ten minutes apart.

Writes OUT_DIR/runs.txt (`MARK_OF_HEAD VERDICT STARTED_UNIX`, one run a
line) and OUT_DIR/fixes.txt (the marks of the fix commits).
"""
import random
import sys

FILES, LINES, START = 200, 40, 1_700_000_000


def main() -> None:
    commits, out_dir = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(7)
    files = [[f"v_{i} = 0" for i in range(LINES)] for _ in range(FILES)]
    out = sys.stdout
    runs, fixes, recent = [], [], []

    def data(text: str) -> None:
        raw = text.encode()
        out.write(f"data {len(raw)}\n")
        out.write(text)
        out.write("\n")

    def header(ref: str, mark: int, ts: int, message: str, parent: int = 0) -> None:
        out.write(f"commit {ref}\nmark :{mark}\n")
        out.write(f"committer Bench <bench@example.com> {ts} +0000\n")
        data(message)
        if parent:
            out.write(f"from :{parent}\n")

    def put(f: int) -> None:
        out.write(f"M 100644 inline src/m{f:03}.py\n")
        data("\n".join(files[f]) + "\n")

    header("refs/heads/main", 1, START, "initial")
    for f in range(FILES):
        put(f)
    for k in range(2, commits + 1):
        ts = START + k * 600
        if k % 50 == 25 and recent:
            f, line = rng.choice(recent[-10:])
            files[f][line] = f"v_{line} = fixed_{k}"
            header("refs/heads/main", k, ts, f"fix: correct v_{line} in m{f:03}")
            put(f)
            fixes.append(k)
            continue
        f, line = rng.randrange(FILES), rng.randrange(LINES)
        files[f][line] = f"v_{line} = {k}"
        if k % 20 == 0:
            # The run's own commit first, off the branch, then its squash.
            header(f"refs/runs/r{k}", 1_000_000 + k, ts - 300, f"feature {k}", parent=k - 1)
            put(f)
            header("refs/heads/main", k, ts, f"feature {k} (squashed)", parent=k - 1)
            put(f)
            verdict = "fail" if rng.random() < 0.1 else "pass"
            runs.append((1_000_000 + k, verdict, ts - 600))
            recent.append((f, line))
        else:
            header("refs/heads/main", k, ts, f"change {k}")
            put(f)
    with open(f"{out_dir}/runs.txt", "w") as r:
        for mark, verdict, started in runs:
            r.write(f":{mark} {verdict} {started}\n")
    with open(f"{out_dir}/fixes.txt", "w") as r:
        for mark in fixes:
            r.write(f":{mark}\n")


if __name__ == "__main__":
    main()
