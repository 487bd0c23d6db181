#!/usr/bin/env bash
# Quick GPU-machine check, from the repo root with the bundle in .bundle: executor tests (CUDA goldens,
# graphed decode), then 1B and 8B engine runs at a few batch sizes. Logs in $OUT.
set -uo pipefail; . .bundle/env.sh; export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures PYTHONUNBUFFERED=1
timeout 60 executor_tests > $OUT/executor_tests.log 2>&1; echo "executor_tests rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) +\]|tests? from .* ran|Failure" $OUT/executor_tests.log | tail -8
timeout 40 python3 scripts/make_bench_checkpoint.py 1b /tmp/b1 /nonexistent > $OUT/make_1b.log 2>&1; echo "make 1b rc=$?"
timeout 60 hichat bench engine --model /tmp/b1 --device cuda --batch 1,32,128,256 --input-len 128 --output-len 256 \
    --repeat 1 2>&1 | tee $OUT/bench_1b.log | grep -v '^{'
timeout 120 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /nonexistent > $OUT/make_8b.log 2>&1; echo "make 8b rc=$?"
timeout 120 hichat bench engine --model /tmp/b8 --device cuda --batch 1,64,256 --input-len 128 --output-len 128 \
    --repeat 1 2>&1 | tee $OUT/bench_8b.log | grep -v '^{'
timeout 60 hichat bench engine --model /tmp/b8 --device cuda --batch 1 --input-len 2048 --output-len 2 \
    --repeat 3 2>&1 | tee -a $OUT/bench_8b.log | grep -v '^{'
