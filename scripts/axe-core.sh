#!/usr/bin/env bash
# Installs axe-core (the accessibility engine whose `color-contrast` rule the
# gate's page check runs) from npm into DIR. Idempotent: a folder that
# already holds the pinned version is left alone.
#
# Usage: scripts/axe-core.sh DIR
# Then:  export GATE_AXE_CORE=DIR/node_modules/axe-core/axe.min.js
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
dir=$1
version=4.10.3
package="$dir/node_modules/axe-core/package.json"

if [ -f "$package" ] && grep -q "\"version\": \"$version\"" "$package"; then
    exit 0
fi
command -v npm >/dev/null || {
    echo "npm is missing: install Debian's npm" >&2
    exit 1
}
mkdir -p "$dir"
npm install --silent --no-audit --no-fund --no-save --prefix "$dir" "axe-core@$version" >&2
test -f "$dir/node_modules/axe-core/axe.min.js"
