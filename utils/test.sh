#!/usr/bin/env bash
# Sets up (packages, build, the fuzz build) and runs the whole test suite: lit,
# runtime unit tests, the ONNX backend node tests, parity, fuzzing, through ctest.
# .ci/run calls this.
#
#   utils/test.sh [ctest options, e.g. -R lit]
set -euo pipefail
cd "$(dirname "$0")/.."
utils/setup.sh build
# The fuzz targets' own build (clang, sanitizers), for the fuzz-* tests.
utils/fuzz.sh build
ctest --test-dir build --output-on-failure "$@"
