#!/usr/bin/env bash
# Installs the coding agents the tests drive for real, pinned, into a folder
# of their own: Claude Code and OpenAI's Codex CLI from the npm registry,
# Aider from PyPI (in a virtual environment). Idempotent: a folder with all
# three at these versions is left alone.
#
# Usage: scripts/agent-clis.sh DIR
# Then:  export GATE_TEST_CLAUDE=DIR/node_modules/.bin/claude
#        export GATE_TEST_CODEX=DIR/node_modules/.bin/codex
#        export GATE_TEST_AIDER=DIR/aider/bin/aider
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
dir=$1
wanted="@anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0"
aider="aider-chat==0.86.2"
stamp="$dir/.installed"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted $aider" ]; then
    exit 0
fi
mkdir -p "$dir"
# shellcheck disable=SC2086 # the package list is split on purpose
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $wanted
if [ ! -x "$dir/aider/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$dir/aider"
fi
"$dir/aider/bin/python" -m pip install --quiet --disable-pip-version-check "$aider"
echo "$wanted $aider" > "$stamp"
