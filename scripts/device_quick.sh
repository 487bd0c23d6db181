#!/usr/bin/env bash
# Quick GPU-machine check, from the repo root with the bundle in .bundle: the CUDA op and executor
# tests, sanitizers on the newest kernels, GEMV figures, then 1B and 8B batch-1/32 engine runs.
set -uo pipefail; . .bundle/env.sh; export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures PYTHONUNBUFFERED=1
export PATH="$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer"
log=$(mktemp -d)
timeout 120 backend_cuda_tests > $log/b.log 2>&1; echo "backend_cuda_tests rc=$?"
grep -E "^\[  (PASSED|FAILED) +\]|tests? from .* ran|Failure" $log/b.log | tail -6
timeout 60 executor_tests > $log/e.log 2>&1; echo "executor_tests rc=$?"
grep -E "^\[  (PASSED|FAILED) +\]|tests? from .* ran|Failure" $log/e.log | tail -6
timeout 120 compute-sanitizer --tool memcheck backend_cuda_tests \
    --gtest_filter='SampleRows*:GemmTest.DecodeRows*:SmallOpsTest.*' > $log/m.log 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY' $log/m.log | tail -1)"
for f in 'SampleRowsTest.FilterEdgeValues:SampleRowsTest.VocabOfOne*:SampleRowsTest.TemperatureZero*' \
         'GemmTest.FusedRmsNorm*'; do
  timeout 60 compute-sanitizer --tool racecheck backend_cuda_tests --gtest_filter="$f" > $log/r.log 2>&1
  echo "racecheck $f rc=$?: $(grep -E 'RACECHECK SUMMARY' $log/r.log | tail -1)"
  grep -m3 -E "Race reported|Error: Race" -A2 $log/r.log
done
timeout 60 cuda_ops_bench 2>&1 | grep -E "gemv|cublasLt|sample"
timeout 40 python3 scripts/make_bench_checkpoint.py 1b /tmp/b1 /nonexistent > $log/m1.log 2>&1
timeout 60 hichat bench engine --model /tmp/b1 --device cuda --batch 1,32 --input-len 128 --output-len 256 \
    --repeat 1 2>&1 | tee $OUT/engine_1b.log | grep -v '^{'
timeout 120 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /nonexistent > $log/m8.log 2>&1
timeout 90 hichat bench engine --model /tmp/b8 --device cuda --batch 1 --input-len 128 --output-len 256 \
    --repeat 1 2>&1 | tee $OUT/engine_8b.log | grep -v '^{'
