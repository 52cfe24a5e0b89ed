#!/usr/bin/env bash
# Writes docs/schemas/ from the code: one JSON Schema per file the gate
# reads or output it writes (`gate schema NAME`). Run it after changing a
# type that reads or writes one of them; a test fails until then.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p gate
for name in spec routing rules verify events predicate mutants replay replay-plan; do
    target/debug/gate schema "$name" > "docs/schemas/$name.schema.json"
done
