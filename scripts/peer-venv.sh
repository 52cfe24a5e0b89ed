#!/usr/bin/env bash
# Prepares the Python virtual environment whose independent tools the test
# suite checks the gate's output with (scripts/peer-requirements.txt:
# securesystemslib's DSSE verifier, the reference blake3, …). Idempotent: a
# venv that already has every requirement is left alone.
#
# Usage: scripts/peer-venv.sh DIR
# Then:  export GATE_TEST_PYTHON=DIR/bin/python
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
dir=$1
python=${PYTHON:-python3}
requirements="$(cd "$(dirname "$0")" && pwd)/peer-requirements.txt"
stamp="$dir/.requirements"

if [ ! -x "$dir/bin/python" ]; then
    "$python" -m venv "$dir" || {
        echo "python3 -m venv failed: install Debian's python3-venv" >&2
        exit 1
    }
fi

if ! cmp -s "$requirements" "$stamp"; then
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$stamp"
fi
