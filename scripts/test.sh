#!/usr/bin/env bash
# The whole test suite: the fuzz targets (each on its seed corpus, then a fixed number of inputs from a fixed seed), the release
# build, then the same tests under AddressSanitizer and UndefinedBehaviorSanitizer. Ends with ctest's
# summary.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build
cmake --build build-asan
cmake --build build-fuzz
ctest --test-dir build-fuzz --output-on-failure -j2
ctest --test-dir build --output-on-failure -j2
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j2
