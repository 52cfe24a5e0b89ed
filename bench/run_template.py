"""Writes the newest run of a ledger as a template for generated ledgers.

Usage: run_template.py LEDGER_DB OUT_JSON. The template holds the run as its
signed bundle records it and the row's columns, so each generated bundle is
a real run with its id, spec, attempt, verdict, tier and times replaced.
"""
import base64, json, sqlite3, sys

db = sqlite3.connect(sys.argv[1])
extra, path, i, c, o, cost = db.execute(
    "SELECT extra_json, bundle_path, input_tokens, cached_input_tokens, output_tokens, cost_usd"
    " FROM runs ORDER BY seq DESC LIMIT 1").fetchone()
envelope = json.load(open(path))
run = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["run"]
row = {"extra": json.loads(extra), "input_tokens": i, "cached_input_tokens": c,
       "output_tokens": o, "cost_usd": cost}
json.dump({"run": run, "row": row}, open(sys.argv[2], "w"))
