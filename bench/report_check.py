"""Checks that `gate report --format json` and bench/report.sql agree.

Usage: python3 bench/report_check.py GATE_JSON SQLITE_OUTPUT
Exits 0 when every figure matches (fractions to 1e-9 relative), 1 with a
list of differences otherwise.
"""
import json
import math
import sys


def arrays(text):
    """The JSON arrays sqlite3 printed, one per statement, flattened."""
    decoder, at, rows = json.JSONDecoder(), 0, []
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return rows
        value, at = decoder.raw_decode(text, at)
        rows.extend(value)


def main():
    gate = json.load(open(sys.argv[1], encoding="utf-8"))
    rows = arrays(open(sys.argv[2], encoding="utf-8").read())
    one = {r["q"]: r for r in rows if r["q"] in ("total", "cost", "input_tokens", "dismissed", "open")}
    problems = []
    checked = 0

    def same(what, got, want):
        nonlocal checked
        checked += 1
        if got is None or want is None:
            ok = got is None and want is None
        elif isinstance(want, float) or isinstance(got, float):
            ok = math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-9)
        else:
            ok = got == want
        if not ok:
            problems.append(f"{what}: gate {got!r}, sqlite3 {want!r}")

    t = one["total"]
    pairs = [
        ("runs", gate["runs"], t["runs"]),
        ("false_pass.broken", gate["false_pass"]["broken"], t["approved_broken"]),
        ("false_pass.with_outcome", gate["false_pass"]["with_outcome"], t["approved_with_outcome"]),
        ("false_pass.unknown", gate["false_pass"]["unknown"], t["approved_unknown"]),
        ("false_pass.rate", gate["false_pass"]["rate"], t["fp_rate"]),
        ("false_pass.low", gate["false_pass"]["low"], t["fp_low"]),
        ("false_pass.high", gate["false_pass"]["high"], t["fp_high"]),
        ("false_fail.fine", gate["false_fail"]["fine"], t["failed_fine"]),
        ("false_fail.with_outcome", gate["false_fail"]["with_outcome"], t["failed_with_outcome"]),
        ("false_fail.unknown", gate["false_fail"]["unknown"], t["failed_unknown"]),
        ("false_fail.rate", gate["false_fail"]["rate"], t["ff_rate"]),
        ("override_rate", gate["override_rate"], t["override_rate"]),
        ("escalation_rate", gate["escalation_rate"], t["escalation_rate"]),
        ("did_not_run_rate", gate["did_not_run_rate"], t["did_not_run_rate"]),
        ("findings.resolved", gate["findings"]["resolved"], t["resolved"]),
        ("findings.superseded", gate["findings"]["superseded"], t["superseded"]),
        ("findings.dismissed", gate["findings"]["dismissed"], one["dismissed"]["n"]),
        ("findings.open", gate["findings"]["open"], one["open"]["n"]),
        ("cost_usd.total", gate["cost_usd"]["total"], t["cost_total"]),
        ("cost_usd.median", gate["cost_usd"]["median"], one["cost"]["median"]),
        ("cost_usd.p90", gate["cost_usd"]["p90"], one["cost"]["p90"]),
        ("input_tokens.total", gate["input_tokens"]["total"], t["input_total"]),
        ("input_tokens.median", gate["input_tokens"]["median"], one["input_tokens"]["median"]),
        ("input_tokens.p90", gate["input_tokens"]["p90"], one["input_tokens"]["p90"]),
        ("cached_input_share", gate["cached_input_share"], t["cached_input_share"]),
    ]
    for what, got, want in pairs:
        same(what, got, want)
    published = t["published"]
    if published:
        same("findings.noise_rate", gate["findings"]["noise_rate"],
             (one["dismissed"]["n"] + t["duplicates"]) / published)
    groups = {}
    for r in rows:
        if r["q"] in ("tier", "spec", "agent", "week", "model", "role"):
            groups.setdefault(r["q"], {})[r["key"]] = r
    for dim in ("tier", "spec", "agent", "week", "model", "role"):
        ours, theirs = gate["by"][dim], groups.get(dim, {})
        if set(ours) != set(theirs):
            problems.append(f"by.{dim}: keys differ: {sorted(set(ours) ^ set(theirs))[:10]}")
            continue
        for key, g in ours.items():
            r = theirs[key]
            same(f"by.{dim}.{key}.runs", g["runs"], r["runs"])
            for f in ("rate", "low", "high"):
                same(f"by.{dim}.{key}.false_pass.{f}", g["false_pass"][f], r[f])
    if problems:
        print(f"MISMATCH: {len(problems)} of {checked} figures differ")
        for p in problems[:40]:
            print("  " + p)
        sys.exit(1)
    print(f"same figures: {checked} checked")


main()
