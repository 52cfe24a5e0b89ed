#!/usr/bin/env bash
# Prepares the Python virtual environment the evidence peer tests use to check
# our bundles with independent tooling (securesystemslib's DSSE verifier and
# the reference blake3). Idempotent: an existing venv that already has both
# packages is left alone.
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

if [ ! -x "$dir/bin/python" ]; then
    "$python" -m venv "$dir"
fi

if ! "$dir/bin/python" -c 'import securesystemslib.dsse, securesystemslib.signer, cryptography, blake3' 2>/dev/null; then
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check 'securesystemslib[crypto]' blake3
fi

"$dir/bin/python" -c 'import securesystemslib.dsse, securesystemslib.signer, cryptography, blake3'
