#!/usr/bin/env bash
# Installs every Debian 12 package zero-opt needs (only what is missing; quiet when
# all is there) and builds the compiler, the runtime and the reference docs into
# build/. Safe to run again: the build is incremental.
#
#   utils/setup.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

packages=(
  cmake ninja-build ccache g++
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  libonnx-dev libprotobuf-dev protobuf-compiler
  libopenmpi-dev openmpi-bin
  libopenblas-dev libgtest-dev
  clang-22 libfuzzer-22-dev libclang-rt-22-dev
  python3-onnx python3-torch python3-numpy python3-protobuf
  python3-venv python3-setuptools python3-wheel python3-psutil
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# The tests' packages from PyPI (utils/requirements.txt, pinned) in a virtual
# environment outside the build folder, made once per version of that file and
# reused; $build/python-env points at it.
venv_root=${ZERO_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/zero-opt}
venv=$venv_root/venv-$(sha256sum utils/requirements.txt | cut -c1-12)
if [ ! -f "$venv/.complete" ]; then
  echo "setup: making the Python environment $venv (utils/requirements.txt)"
  rm -rf "$venv"
  mkdir -p "$venv_root"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --no-build-isolation \
    -r utils/requirements.txt
  touch "$venv/.complete"
fi
mkdir -p "$build"
ln -sfn "$venv" "$build/python-env"

if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
fi
echo "setup: building in $build/"
cmake --build "$build" -- all mlir-doc
