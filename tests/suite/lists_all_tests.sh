#!/usr/bin/env bash
# Usage: lists_all_tests.sh BUILD_DIR TEST_BINARY...
# Each GoogleTest binary lists its tests with no GPU visible and no time limit, and every test it lists
# is registered with ctest (tests are discovered when ctest runs, never during the build).
set -uo pipefail
build_dir=$1; shift
registered=$(ctest --test-dir "$build_dir" -N 2>&1) || { echo "FAIL: ctest -N failed:"; echo "$registered"; exit 1; }
registered_names=$(echo "$registered" | sed -n 's/^ *Test *#[0-9]*: \([^ ]*\).*/\1/p')
failures=0
for bin in "$@"; do
  listing=$(CUDA_VISIBLE_DEVICES="" "$bin" --gtest_list_tests 2>&1)
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL: $bin --gtest_list_tests exited $rc:"; echo "$listing" | tail -5; failures=$((failures + 1)); continue
  fi
  # "Suite." lines, then "  Test  # comment" lines.
  names=$(echo "$listing" | awk '/^[^ ]/ { suite = $1 } /^  / { print suite $1 }')
  count=$(echo "$names" | grep -c . || true)
  if [ "$count" -eq 0 ]; then echo "FAIL: $bin lists no tests"; failures=$((failures + 1)); continue; fi
  missing=$(comm -23 <(echo "$names" | sort -u) <(echo "$registered_names" | sort -u))
  if [ -n "$missing" ]; then
    echo "FAIL: listed by $bin but not registered with ctest:"; echo "$missing" | head -5
    failures=$((failures + 1)); continue
  fi
  echo "ok: $(basename "$bin"): $count tests listed and registered"
done
[ $failures -eq 0 ] || { echo "$failures binaries failed"; exit 1; }
