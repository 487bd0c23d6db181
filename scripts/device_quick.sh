set -uo pipefail; . .bundle/env.sh; export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures PYTHONUNBUFFERED=1
timeout 40 executor_tests > $OUT/executor_tests.log 2>&1; echo "executor_tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) +\]|tests? from .* ran" $OUT/executor_tests.log | tail -3
timeout 40 python3 scripts/make_bench_checkpoint.py 1b /tmp/b1 /nonexistent > $OUT/make_1b.log 2>&1; echo "make rc=$?"
for b in 1 32 128; do timeout 25 hichat bench engine --model /tmp/b1 --device cuda --batch $b --input-len 128 --output-len 128 --repeat 2 2>&1 | tee -a $OUT/bench_1b.log | tail -1; done
