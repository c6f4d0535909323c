#!/usr/bin/env bash
# Sets up (packages, build) and runs the whole test suite: lit, runtime unit tests
# and the ONNX backend node tests, through ctest. .ci/run calls this.
#
#   utils/test.sh [ctest options, e.g. -R lit]
set -euo pipefail
cd "$(dirname "$0")/.."
utils/setup.sh build
ctest --test-dir build --output-on-failure "$@"
