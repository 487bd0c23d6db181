#!/usr/bin/env bash
# Builds A/B in the engine on one GPU, from the repo root with a bundle in .bundle (bin/ and lib/, or
# PACK, default .bundle/pack.tar.xz, holding them; the Llama-3.2 tokenizer in .bundle/tok.tar.gz).
# VARIANTS names builds by suffix: bin/hichat_V ("base" means the unsuffixed hichat); with TESTS set
# to a gtest filter, bin/backend_cuda_tests_V runs it first (and under memcheck with MEMCHECK set to
# another filter). Then on the random 8B with --quantization fp8, the variants alternating ROUNDS times
# (default 1), the runs of RUNS (default "ttft b1 b256"):
#   ttft  TTFT of one 2048-token prompt (bf16 KV)
#   b1    batch 1, 128 / 256, ms per token
#   b256  batch 256, 1000 / 1000 with the FP8 KV cache, output tok/s
# Prints a table ($OUT/engine_table.txt); logs in $OUT/engine_logs.tgz.
set -uo pipefail
[ -d .bundle/bin ] || tar -C .bundle -xJf "${PACK:-.bundle/pack.tar.xz}"
. .bundle/env.sh
export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures PYTHONUNBUFFERED=1
variants=${VARIANTS:?set VARIANTS}
log=/tmp/engine_logs; mkdir -p $log; table=$OUT/engine_table.txt; touch $table
row() { printf '%-52s %s\n' "$1" "$2" | tee -a $table; }
suffix() { [ "$1" = base ] && echo "" || echo "_$1"; }
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a $table
mkdir -p /tmp/tok && tar -C /tmp/tok -xzf .bundle/tok.tar.gz
if [ -f /tmp/b8/config.json ]; then touch /tmp/b8.done; else
  (timeout 200 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /tmp/tok > $log/make_8b.log 2>&1; touch /tmp/b8.done) &
fi
if [ -n "${TESTS:-}" ]; then
  for v in $variants; do
    s=$(suffix $v)
    timeout 120 backend_cuda_tests$s --gtest_filter="$TESTS" > $log/tests_$v.log 2>&1
    row "backend_cuda_tests$s rc=$?" "$(grep -E '^\[  (PASSED|FAILED)' $log/tests_$v.log | tr '\n' ' ')"
    grep -E '^\[  FAILED  \].*\(' $log/tests_$v.log | head -3 | tee -a $table
    if [ -n "${MEMCHECK:-}" ]; then
      timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 backend_cuda_tests$s \
        --gtest_filter="$MEMCHECK" > $log/memcheck_$v.log 2>&1
      row "memcheck ($v) rc=$?" "$(grep 'ERROR SUMMARY' $log/memcheck_$v.log | tail -1)"
    fi
  done
fi
for _ in $(seq 100); do [ -f /tmp/b8.done ] && break; sleep 2; done
engine() {  # variant name args...
  local v=$1 name=$2; shift 2
  local out
  out=$(timeout 120 hichat$(suffix $v) bench engine --model /tmp/b8 --quantization fp8 --device cuda "$@" --repeat 1 2>&1 |
        tee -a $log/engine_$v.log)
  row "$name $v" "$(echo "$out" | grep -oE '"(ms_per_token|output_tok_s|ttft_ms)":[0-9.]+' | tr '\n' ' ')"
}
for round in $(seq 1 ${ROUNDS:-1}); do
  for run in ${RUNS:-ttft b1 b256}; do
    for v in $variants; do
      case $run in
        ttft) engine $v "TTFT 2048 (round $round)" --kv-cache-dtype bf16 --batch 1 --input-len 2048 --output-len 1 ;;
        b1) engine $v "batch 1 128/256 (round $round)" --kv-cache-dtype bf16 --batch 1 --input-len 128 --output-len 256 ;;
        b256) engine $v "batch 256 1000/1000 fp8 KV (round $round)" --kv-cache-dtype fp8 --batch 256 --input-len 1000 \
                --output-len 1000 ;;
      esac
    done
  done
done
tar -C $log -czf $OUT/engine_logs.tgz .
