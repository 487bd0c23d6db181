#!/usr/bin/env bash
# Issue 21, split runs, on one GPU, from the repo root with a bundle in .bundle (executor_tests and hichat;
# bin/ and lib/ may come as .bundle/pack.tar.xz; the Llama-3.2 tokenizer as .bundle/tok.tar.gz):
#  1. executor_tests: every split point of every golden family, streamed and on the CPU, against the
#     all-GPU run, and the budget error; memcheck on one family's CPU splits;
#  2. the random 8B (bf16), `hichat bench engine`, all in one run: all on the GPU; half the layers
#     streamed (--gpu-layers 16 --offload stream); half on the CPU (--offload cpu, 16 threads); auto
#     under a budget that holds about half the layers (--gpu-memory-gb 12) at batch 1 and at batch 64
#     (each its own runner, so the plan is timed for that batch); all on the CPU (16 threads). CPU rows
#     use short prompts (16 tokens) so that their prefill fits the time limit. The placement blocks
#     (plan, bound, measured PCIe and CPU rates) are kept from the logs.
# Prints a table; logs in $OUT.
set -uo pipefail
[ -f .bundle/pack.tar.xz ] && tar -C .bundle -xJf .bundle/pack.tar.xz
. .bundle/env.sh; export PYTHONUNBUFFERED=1
export PATH="$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer"
export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures
log=$OUT; table=$log/table.txt; : > $table
row() { printf '%-44s %s\n' "$1" "$2" | tee -a $table; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee -a $table

timeout 200 executor_tests --gtest_filter='*StreamedLayers*' > $log/tests.log 2>&1
row "executor_tests split tests rc=$?" "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $log/tests.log | tr '\n' ' ')"
grep -E "^\[(stream|cpu-split)\]" $log/tests.log | tee -a $table
grep -E "^\[  FAILED" $log/tests.log | head -20 | tee -a $table
timeout 120 compute-sanitizer --tool memcheck --log-file $log/memcheck.log executor_tests \
    --gtest_filter="Fixtures/StreamedLayersTest.EveryCpuSplitMatchesAllGpuWithinTolerance/llama3" > $log/memcheck_gtest.log 2>&1
row "memcheck cpu splits rc=$?" "$(tail -1 $log/memcheck.log) | $(grep -E '^\[  (PASSED|FAILED) ' $log/memcheck_gtest.log | tr '\n' ' ')"

mkdir -p /tmp/tok && tar -C /tmp/tok -xzf .bundle/tok.tar.gz
timeout 150 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /tmp/tok > $log/make_8b.log 2>&1
row "make 8b rc=$?" ""
bench() {  # name timeout flags...
  local name=$1 t=$2; shift 2
  timeout $t hichat bench engine --model /tmp/b8 "$@" > $log/bench_$name.log 2> $log/bench_$name.err
  local rc=$?
  grep -E '^[0-9]' $log/bench_$name.log | while read -r b p o pf ms tok; do
    row "$name batch $b (rc $rc)" "$(printf '%8.2f ms/step %9.1f out tok/s  prefill %.0f tok/s' $ms $tok $pf)"; done
  [ $rc -ne 0 ] && tail -2 $log/bench_$name.err | tee -a $table
  sed -n '/layer placement/,$p' $log/bench_$name.err | grep -E "placement for|bound|measured" | sed 's/^/    /' | tee -a $table
}
short="--input-len 16 --repeat 1"
bench gpu 90 --device cuda --input-len 128 --output-len 32 --repeat 2 --batch 1,64
bench stream16 150 --device cuda --gpu-layers 16 --offload stream --input-len 128 --output-len 32 --repeat 2 --batch 1,64
bench cpu16_b1 60 --device cuda --gpu-layers 16 --offload cpu --threads 16 $short --output-len 16 --batch 1
bench cpu16_b64 100 --device cuda --gpu-layers 16 --offload cpu --threads 16 $short --output-len 8 --batch 64
bench auto12_b1 60 --device cuda --gpu-memory-gb 12 --threads 16 $short --output-len 16 --batch 1
bench auto12_b64 100 --device cuda --gpu-memory-gb 12 --threads 16 $short --output-len 8 --batch 64
bench allcpu_b1 60 --device cpu --threads 16 $short --output-len 8 --batch 1
