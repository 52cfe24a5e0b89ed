#!/bin/sh
# Byte-compiles the package: a syntax error anywhere fails the build.
set -eu
python3 -m compileall -q shop
