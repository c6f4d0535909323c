#!/usr/bin/env bash
# Installs every Debian 12 package zero-opt needs (only what is missing; quiet when
# all is there) and builds the compiler, the runtime and the reference docs into
# build/. Safe to run again: the build is incremental.
#
#   utils/setup.sh [BUILD_DIR]         everything, for the tests (build/)
#   utils/setup.sh --demo [BUILD_DIR]  what utils/demo.sh needs (build-demo/)
#
# --demo takes nothing from PyPI: Debian's packages only (its ONNX 1.12 C++ library
# and python3-onnx), and builds zero-opt and zero-run alone, CPU-only, against that
# ONNX (-DZERO_DEBIAN_ONNX=ON: opsets up to 17, IR version 8; the tools say so of a
# newer model). The test build takes the tests' Python environment and ONNX's
# newest release from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=0
if [ "${1:-}" = --demo ]; then
  demo=1
  shift
fi
if ((demo)); then
  build=${1:-build-demo}
else
  build=${1:-build}
fi

packages=(
  cmake ninja-build ccache g++
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  libprotobuf-dev protobuf-compiler
  libopenmpi-dev openmpi-bin
  libopenblas-dev libgtest-dev libaio-dev libssl-dev
)
if ((demo)); then
  packages+=(libonnx-dev python3-onnx python3-numpy)
else
  packages+=(curl ca-certificates iproute2 clang-22 libfuzzer-22-dev libclang-rt-22-dev
             python3-venv python3-dev)
fi
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

if ((demo)); then
  if [ ! -f "$build/build.ninja" ]; then
    cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DZERO_DEBIAN_ONNX=ON \
      -DZERO_ENABLE_CUDA=OFF -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
  fi
  echo "setup: building zero-opt and zero-run in $build/"
  cmake --build "$build" --target zero-opt zero-run
  exit 0
fi

# The tests' packages from PyPI (utils/requirements.txt, pinned) in a virtual
# environment outside the build folder, made once per version of that file and
# reused; $build/python-env points at it. DeepSpeed (after "# second pass") builds
# against the torch of the first pass.
venv_root=${ZERO_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/zero-opt}
venv=$venv_root/venv-$(sha256sum utils/requirements.txt | cut -c1-12)
if [ ! -f "$venv/.complete" ]; then
  echo "setup: making the Python environment $venv (utils/requirements.txt; torch and its CUDA libraries are several GB)"
  rm -rf "$venv"
  mkdir -p "$venv_root"
  /usr/bin/python3 -m venv "$venv"
  pip=("$venv/bin/pip" install -q --disable-pip-version-check --no-deps)
  "${pip[@]}" -r <(sed '/^# second pass/,$d' utils/requirements.txt)
  "${pip[@]}" --no-build-isolation -r <(sed -n '/^# second pass/,$p' utils/requirements.txt)
  "$venv/bin/python" -c "import torch, onnx, onnxscript, onnxruntime, transformers, safetensors, deepspeed"
  touch "$venv/.complete"
fi
mkdir -p "$build"
ln -sfn "$venv" "$build/python-env"

# ONNX's C++ library (checker, shape inference, schemas) at the version the
# environment's onnx has, built from that release's source as PyPI serves it, once
# per machine; $build/onnx points at it. Debian's libonnx (1.12) knows opsets up
# to 17 only.
onnx_version=$(sed -n 's/^onnx==//p' utils/requirements.txt)
onnx_sha256=008cb0467b2bbee41448acc7da8b6f4e704624cb0d327a2d5adafc7ce19bc5b8
[ "$onnx_version" = 1.23.2 ] ||
  { echo "setup: utils/requirements.txt pins onnx $onnx_version; update onnx_sha256 in $0"; exit 1; }
onnx_prefix=$venv_root/onnx-$onnx_version
if [ ! -f "$onnx_prefix/.complete" ]; then
  echo "setup: building ONNX $onnx_version's C++ library into $onnx_prefix (a few minutes, once)"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  url=$(curl -fsSL https://pypi.org/simple/onnx/ |
          grep -o "https://[^\"#]*/onnx-$onnx_version\.tar\.gz" | head -1)
  [ -n "$url" ] || { echo "setup: PyPI lists no source release of onnx $onnx_version"; exit 1; }
  curl -fsSL -o "$work/onnx.tar.gz" "$url"
  echo "$onnx_sha256  $work/onnx.tar.gz" | sha256sum -c --quiet
  tar -xzf "$work/onnx.tar.gz" -C "$work"
  rm -rf "$onnx_prefix"
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  "$venv/bin/cmake" -G Ninja -S "$work/onnx-$onnx_version" -B "$work/build" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$onnx_prefix" \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DONNX_ML=ON -DONNX_NAMESPACE=onnx \
    -DONNX_USE_PROTOBUF_SHARED_LIBS=ON -DBUILD_ONNX_PYTHON=OFF -DONNX_BUILD_TESTS=OFF \
    -DONNX_GEN_PB_TYPE_STUBS=OFF "${launcher[@]}" >"$work/configure.log" ||
    { cat "$work/configure.log"; exit 1; }
  ninja -C "$work/build" install >"$work/build.log" || { tail -50 "$work/build.log"; exit 1; }
  touch "$onnx_prefix/.complete"
  rm -rf "$work"
  trap - EXIT
fi
ln -sfn "$onnx_prefix" "$build/onnx"

if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
fi
echo "setup: building in $build/"
cmake --build "$build" -- all mlir-doc
