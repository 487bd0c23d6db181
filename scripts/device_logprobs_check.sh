set -uo pipefail; . .bundle/env.sh; export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures
s=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
r() { local name=$1; shift; timeout 200 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(grep -E '^\[  PASSED|^\[  FAILED|ERROR SUMMARY' $OUT/$name.log | tr '\n' ' ')"; }
r cuda_ops .bundle/bin/backend_cuda_tests --gtest_filter='RowLogprobs*:SampleRows*'
r engine_lp .bundle/bin/engine_tests --gtest_filter='*Logprobs*'
r memcheck_ops $s --tool memcheck --error-exitcode 9 .bundle/bin/backend_cuda_tests --gtest_filter='RowLogprobs*'
r memcheck_engine $s --tool memcheck --error-exitcode 9 .bundle/bin/engine_tests --gtest_filter='*Logprobs*cuda*'
grep -E "Failure|Expected|Which is|vs " $OUT/*.log | head -20
