#!/usr/bin/env python3
"""The gate crate's shape, as figures: its top-level modules, its production
lines, the largest set of top-level modules that reach each other through
imports (a knot: a strongly connected component of the import graph), and
the `pub mod`s of its lib.rs.

Read from the sources as text, as tests/tests/modules.rs reads them: test
code (`tests.rs` files, and the item after each `#[cfg(test)]`) and
comments are left out; a production line is one with code on it.

Usage: scripts/structure.py [--check | --check-size] [CRATE_SRC]
                                                   (default gate/src)
  --check       exit 1 when a lasting bound is crossed: a knot of more than
                5 top-level modules, or more than one `pub mod` in lib.rs
                (the test suite runs this).
  --check-size  as --check, and also past 40 top-level modules or 26,000
                production lines: the bounds the model side's move out of
                the gate crate was held to. Capabilities that land later go
                into modules (or crates) of their own, so these two figures
                may grow; the knot and the one `pub mod` may not.
"""

import os
import re
import sys

MAX_MODULES = 40
MAX_LINES = 26_000
MAX_KNOT = 5
MAX_PUB_MODS = 1


def production(text):
    """The lines of `text` outside comments and `#[cfg(test)]` items."""
    lines = [l.split("//")[0] for l in text.split("\n")]
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() != "#[cfg(test)]":
            out.append(lines[i])
            i += 1
            continue
        i += 1
        depth, opened = 0, False
        while i < len(lines):
            line = lines[i]
            i += 1
            depth += line.count("{") - line.count("}")
            opened = opened or "{" in line
            if (opened and depth <= 0) or (not opened and line.rstrip().endswith(";")):
                break
    return out


def expand(tree):
    """`a::{b, c::{d, e}}` as `a::b`, `a::c::d`, `a::c::e`."""
    tree = tree.strip()
    if "{" not in tree:
        return [tree]
    open_ = tree.index("{")
    prefix, inner = tree[:open_], tree[open_ + 1 : tree.rindex("}")]
    parts, depth, start = [], 0, 0
    for i, c in enumerate(inner):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return [prefix + e for p in parts if p.strip() for e in expand(p)]


def crate_paths(code):
    """Every `crate::…` path the code names, in `use` trees or inline."""
    out = []
    for stmt in code.split(";"):
        m = re.match(r"\s*(?:pub(?:\([a-z]+\))?\s+)?use\s+(.*)", stmt, re.S)
        if m:
            out.extend(expand("".join(m.group(1).split())))
    out.extend(re.findall(r"(?<![\w:])crate::[\w:]+", code))
    return [p for p in out if p.startswith("crate::")]


def top_level(src):
    """Each top-level module's name and its files."""
    mods = {}
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if name in ("lib.rs", "main.rs", "bin"):
            continue
        if name.endswith(".rs"):
            mods.setdefault(name[:-3], []).append(path)
        elif os.path.isdir(path):
            for root, _, files in os.walk(path):
                mods.setdefault(name, []).extend(
                    os.path.join(root, f) for f in files if f.endswith(".rs")
                )
    return mods


def knots(edges):
    """The strongly connected components of `edges` (Tarjan's)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main(argv):
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    flags = ("--check", "--check-size")
    unknown = [a for a in argv if a.startswith("-") and a not in flags]
    if unknown:
        print(f"unknown option {unknown[0]}; see --help", file=sys.stderr)
        return 2
    size = "--check-size" in argv
    check = size or "--check" in argv
    args = [a for a in argv if a not in flags]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = os.path.join(repo, args[0] if args else "gate/src")
    mods = top_level(src)
    edges, lines = {m: set() for m in mods}, 0
    for mod, files in mods.items():
        for f in files:
            is_test = os.path.basename(f) in ("tests.rs", "testutil.rs")
            with open(f, encoding="utf-8") as fh:
                code_lines = production(fh.read())
            if is_test:
                continue
            lines += sum(1 for l in code_lines if l.strip())
            for p in crate_paths("\n".join(code_lines)):
                to = p.split("::")[1]
                if to in mods and to != mod:
                    edges[mod].add(to)
    with open(os.path.join(src, "lib.rs"), encoding="utf-8") as fh:
        lib = fh.read()
    for l in production(lib):
        if l.strip():
            lines += 1
    pub_mods = re.findall(r"^pub mod (\w+);", lib, re.M)
    comps = sorted(knots(edges), key=len, reverse=True)
    largest = comps[0] if comps else []
    print(f"top-level modules: {len(mods)}")
    print(f"production lines:  {lines}")
    print(f"largest knot:      {len(largest)}" + (f" ({', '.join(largest)})" if len(largest) > 1 else ""))
    for c in comps[1:]:
        if len(c) > 1:
            print(f"other knot:        {len(c)} ({', '.join(c)})")
    print(f"pub mods in lib:   {len(pub_mods)} ({', '.join(pub_mods)})")
    if not check:
        return 0
    over = []
    if size and len(mods) > MAX_MODULES:
        over.append(f"{len(mods)} top-level modules (at most {MAX_MODULES})")
    if size and lines > MAX_LINES:
        over.append(f"{lines} production lines (at most {MAX_LINES})")
    if len(largest) > MAX_KNOT:
        over.append(f"a knot of {len(largest)} (at most {MAX_KNOT})")
    if len(pub_mods) > MAX_PUB_MODS:
        over.append(f"{len(pub_mods)} pub mods (at most {MAX_PUB_MODS})")
    for o in over:
        print(f"over: {o}", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
