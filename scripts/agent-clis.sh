#!/usr/bin/env bash
# Installs the coding agents whose Stop hooks the tests drive for real:
# Claude Code and OpenAI's Codex CLI, pinned, from the npm registry, into a
# folder of their own. Idempotent: a folder with both at these versions is
# left alone.
#
# Usage: scripts/agent-clis.sh DIR
# Then:  export GATE_TEST_CLAUDE=DIR/node_modules/.bin/claude
#        export GATE_TEST_CODEX=DIR/node_modules/.bin/codex
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
dir=$1
wanted="@anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0"
stamp="$dir/.installed"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
    exit 0
fi
mkdir -p "$dir"
# shellcheck disable=SC2086 # the package list is split on purpose
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $wanted
echo "$wanted" > "$stamp"
