#!/usr/bin/env bash
# run_on_gpu.sh BUNDLE_DIR LOG_DIR: what the GPU machine runs for the CUDA backend, from the repo root.
# The full backend_cuda_tests, compute-sanitizer memcheck and racecheck on subsets, then cuda_ops_bench.
# Logs go to LOG_DIR; a short summary goes to stdout.
set -uo pipefail
bundle=$1
logs=$2
. "$bundle/env.sh"
export PATH="$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer"
if ldd "$bundle/bin/backend_cuda_tests" | grep -q "not found"; then   # CUDA libraries elsewhere (pip wheels)
    lt=$(find / -name 'libcublasLt.so.13' -not -path '/proc/*' 2> /dev/null | head -1)
    [[ -n "$lt" ]] && export LD_LIBRARY_PATH="$(dirname "$lt"):$LD_LIBRARY_PATH"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
ldd "$bundle/bin/backend_cuda_tests" | grep -E "cublas|not found"

echo "== backend_cuda_tests"
timeout 150 backend_cuda_tests > "$logs/tests.log" 2>&1
echo "rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) +\]|tests? from .* ran|Failure|Which is|error:|relative_error|Expected" \
    "$logs/tests.log" | head -60

memcheck_filter='SmallOpsTest.*:QkvRopeTest.*:PagedAttentionTest.DecodeSingle*:PagedAttentionTest.DecodeSkips*'
memcheck_filter+=':PagedAttentionTest.SmallMixedBatch:PagedAttentionTest.PrefillMatchesCpu:GemmTest.OddShapes*'
memcheck_filter+=':DeviceBufferTest.RoundTrips*'
echo "== memcheck"
timeout 100 compute-sanitizer --tool memcheck --log-file "$logs/memcheck.log" \
    backend_cuda_tests --gtest_filter="$memcheck_filter" > "$logs/memcheck_gtest.log" 2>&1
echo "rc=$?"
tail -2 "$logs/memcheck.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) +\]" "$logs/memcheck_gtest.log"

echo "== racecheck"
timeout 60 compute-sanitizer --tool racecheck --log-file "$logs/racecheck.log" \
    backend_cuda_tests --gtest_filter='PagedAttentionTest.SmallMixedBatch:PagedAttentionTest.DecodeSkips*' \
    > "$logs/racecheck_gtest.log" 2>&1
echo "rc=$?"
tail -2 "$logs/racecheck.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) +\]" "$logs/racecheck_gtest.log"

echo "== cuda_ops_bench"
timeout 45 cuda_ops_bench 2>&1 | tee "$logs/bench.log"
