#!/usr/bin/env bash
# Issue 21, streamed layers, on one GPU, from the repo root with a bundle in .bundle (executor_tests and
# hichat; bin/ and lib/ may come as .bundle/pack.tar.xz; the Llama-3.2 tokenizer as .bundle/tok.tar.gz):
#  1. executor_tests: every split point of every golden family against the all-GPU run (streamed
#     layers), the budget error, and the CUDA goldens; memcheck on one family's splits;
#  2. the random 8B (bf16): `hichat bench engine` at batch 1 and 64 all on the GPU, with half the layers
#     streamed (--gpu-layers 16 --offload stream), under a budget that holds about half the layers
#     (--gpu-memory-gb $BUDGET_GB, auto), and all on the CPU (16 threads, shorter runs); the placement
#     blocks (plan, measured PCIe) are kept from the logs.
# Prints a table; logs in $OUT.
set -uo pipefail
[ -f .bundle/pack.tar.xz ] && tar -C .bundle -xJf .bundle/pack.tar.xz
. .bundle/env.sh; export PYTHONUNBUFFERED=1
export PATH="$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer"
export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures
log=$OUT; table=$log/table.txt; : > $table
row() { printf '%-44s %s\n' "$1" "$2" | tee -a $table; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee -a $table

timeout 200 executor_tests --gtest_filter='*StreamedLayers*:*CudaGolden*' > $log/tests.log 2>&1
row "executor_tests streamed+golden rc=$?" "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $log/tests.log | tr '\n' ' ')"
grep -E "^\[stream\]" $log/tests.log | awk '{print "  " $0}' | tee -a $table | tail -3 >/dev/null
grep -cE "^\[stream\].*identical" $log/tests.log | sed 's/^/  splits with identical greedy: /' | tee -a $table
grep -E "^\[  FAILED" $log/tests.log | head -20 | tee -a $table
timeout 150 compute-sanitizer --tool memcheck --log-file $log/memcheck.log executor_tests \
    --gtest_filter="Fixtures/StreamedLayersTest.EverySplitEqualsAllGpu/$(grep -m1 -oE 'StreamedLayersTest.EverySplitEqualsAllGpu/[A-Za-z0-9_]+' $log/tests.log | cut -d/ -f2)" \
    > $log/memcheck_gtest.log 2>&1
row "memcheck rc=$?" "$(tail -1 $log/memcheck.log) | $(grep -E '^\[  (PASSED|FAILED) ' $log/memcheck_gtest.log | tr '\n' ' ')"

mkdir -p /tmp/tok && tar -C /tmp/tok -xzf .bundle/tok.tar.gz
timeout 150 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /tmp/tok > $log/make_8b.log 2>&1
row "make 8b rc=$?" ""
bench() {  # name timeout flags...
  local name=$1 t=$2; shift 2
  timeout $t hichat bench engine --model /tmp/b8 "$@" > $log/bench_$name.log 2> $log/bench_$name.err
  local rc=$?
  grep -E '^[0-9]' $log/bench_$name.log | while read -r b p o pf ms tok; do
    row "$name batch $b (rc $rc)" "$(printf '%8.2f ms/step %9.1f out tok/s  prefill %.0f tok/s' $ms $tok $pf)"; done
  sed -n '/layer placement/,$p' $log/bench_$name.err | sed 's/^/    /' | tee -a $table
}
common="--input-len 128 --output-len 32 --repeat 2 --batch 1,64"
bench gpu 120 --device cuda $common
bench stream16 240 --device cuda --gpu-layers 16 --offload stream $common
bench budget${BUDGET_GB:-12} 240 --device cuda --gpu-memory-gb ${BUDGET_GB:-12} $common
bench cpu16_b1 150 --device cpu --threads 16 --input-len 16 --output-len 8 --repeat 1 --batch 1
bench cpu16_b64 200 --device cpu --threads 16 --input-len 16 --output-len 4 --repeat 1 --batch 64
cp $table $log/ 2>/dev/null
