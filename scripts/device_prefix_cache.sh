#!/usr/bin/env bash
# GPU-machine check of the prefix cache (issue 17), from the repo root with a bundle in .bundle
# (STRIP=1 scripts/make_bundle.sh build .bundle tools/hichat tests/engine/engine_tests) and the
# Llama-3.2 tokenizer files in .bundle/tok.tar.gz:
#   1. engine_tests' PrefixCache suite on CUDA (cache on == cache off, 5 families, sync and pipelined);
#   2. a random-weight 8B bf16 checkpoint (transformers), then bench/prefix_cache_bench.sh on it with
#      each workload named in the arguments: shared-prefix (SGLang's defaults: 64 x 16, 2048 system,
#      128 question, 256 output), multi-turn (16 conversations x 10 turns, 128 words in, 128 out: TTFT
#      by turn) or random (1000/1000, 0% hits: what the cache costs). SKIP_TESTS=1 skips step 1.
# Prints a table at the end; logs and result lines go to $OUT.
set -uo pipefail; . .bundle/env.sh; export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures
OUT=${OUT:-$(mktemp -d)}; rows=(); workloads=("${@:-shared-prefix}")
row() { rows+=("$(printf '%-44s %s' "$1" "$2")"); }
if [[ ${SKIP_TESTS:-0} != 1 ]]; then
  timeout 240 .bundle/bin/engine_tests --gtest_filter='*PrefixCache*cuda*' > $OUT/engine_prefix_cuda.log 2>&1; rc=$?
  row "engine_tests PrefixCache *cuda* rc=$rc" "$(grep -E '^\[  PASSED|^\[  FAILED' $OUT/engine_prefix_cuda.log | tr '\n' ' ')"
fi
mkdir -p /tmp/tok && tar -xzf .bundle/tok.tar.gz -C /tmp/tok
python3 scripts/make_bench_checkpoint.py 8b /tmp/m8b /tmp/tok > $OUT/make_8b.log 2>&1 || row "make 8b" "FAILED"
export HICHAT=hichat HICHAT_COMMIT=${HICHAT_COMMIT:-unknown}
rm -f bench/results/prefix-cache-*.jsonl  # this machine's lines only
for workload in "${workloads[@]}"; do
  case $workload in
    shared-prefix) flags=(--vocab-size 128000 --seed 1) ;;
    multi-turn) flags=(--mt-num-conversations 16 --mt-num-turns 10 --mt-input-len 128 --mt-output-len 128 --seed 1) ;;
    random) flags=(--input-len 1000 --output-len 1000 --num-prompts ${NUM_PROMPTS:-512} --max-concurrency 256
                   --vocab-size 128000 --seed 1) ;;
  esac
  timeout 400 bench/prefix_cache_bench.sh /tmp/m8b $workload "${flags[@]}" > $OUT/bench_$workload.txt 2> $OUT/bench_$workload.err
  row "prefix_cache_bench $workload rc=$?" "$(grep -c 'failed' $OUT/bench_$workload.err) lines with failures"
done
cp bench/results/prefix-cache-*.jsonl $OUT/ 2>/dev/null
printf '%s\n' "${rows[@]}" | tee $OUT/table.txt
for workload in "${workloads[@]}"; do
  echo "== $workload"; cat $OUT/bench_$workload.txt
  grep -E "Successful|Failed requests|Benchmark duration|Output token throughput|Median TTFT|served from cache" $OUT/bench_$workload.err
done
