#!/usr/bin/env bash
# A candidate build against main's on one GPU, in one device call, from the repo root. The bundle
# (PACK, default .bundle/pack.tar.xz: bin/ and lib/) holds main's hichat, cuda_ops_bench and
# backend_cuda_tests unsuffixed and the candidate's as hichat_new, cuda_ops_bench_new,
# backend_cuda_tests_new and executor_tests_new (scripts/make_bundle.sh per build, then rename);
# .bundle/tok.tar.gz the Llama-3.2 tokenizer. In order of what a landing needs, each step skipped once
# BUDGET seconds (default 420) have gone:
#   1. the candidate's FP8, RoPE, GEMM/GEMV, FP8-KV and attention op tests; the executor goldens
#      (FP8, FP8-KV, CUDA); memcheck on the FP8 and FP8-KV op tests;
#   2. the random 8B with --quantization fp8: TTFT of a 2048-token prompt (batch 1), main then
#      candidate, twice; batch 1 128 / 256 ms per token; batch 256 1000 / 1000 with the FP8 cache;
#   3. cuda_ops_bench fp8, attention, fp8_rows and rope, main then candidate; when the bundle has them,
#      step_timeline_new for a 2048-token prefill and at batch 256 (1000-token contexts), and
#      cublaslt_scale_probe.
# Prints a table ($OUT/table.txt); logs in $OUT/logs.tgz.
set -uo pipefail
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
budget=${BUDGET:-420}; late() { [ "$(el)" -gt "$1" ]; }
[ -d .bundle/bin ] || tar -C .bundle -xJf "${PACK:-.bundle/pack.tar.xz}"
. .bundle/env.sh
export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures PYTHONUNBUFFERED=1
log=/tmp/new_vs_main; mkdir -p $log; table=$OUT/table.txt; : > $table
row() { printf '%-56s %s\n' "$1" "$2" | tee -a $table; }
passed() { grep -E '^\[  (PASSED|FAILED) +\]' "$1" | tr '\n' ' '; }
fails() { grep -E '^\[  FAILED  \].*\(' "$1" | head -4 | sed 's/^/    /' | tee -a $table; }
finish() { tar -C $log -czf $OUT/logs.tgz .; exit 0; }
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a $table
mkdir -p /tmp/tok && tar -C /tmp/tok -xzf .bundle/tok.tar.gz
(timeout 150 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /tmp/tok > $log/make_8b.log 2>&1; echo done > /tmp/b8.done) &

timeout 90 backend_cuda_tests_new --gtest_filter='Fp8*:*Rope*:*Gemm*:*Gemv*:*Attention*' > $log/ops.log 2>&1
row "backend_cuda_tests_new rc=$? ($(el) s)" "$(passed $log/ops.log)"; fails $log/ops.log
timeout 120 executor_tests_new --gtest_filter='*Fp8*:*CudaGolden*' > $log/golden.log 2>&1
row "executor_tests_new Fp8+CudaGolden rc=$? ($(el) s)" "$(passed $log/golden.log)"; fails $log/golden.log
grep -E '^\[cuda fp8' $log/golden.log | head -12 | sed 's/^/  /' | tee -a $table
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 backend_cuda_tests_new \
  --gtest_filter='Fp8Test.*:Fp8KvAttentionTest.MixedBatch*:QkvRopeTest.Scales*' > $log/memcheck.log 2>&1
row "memcheck rc=$? ($(el) s)" "$(grep 'ERROR SUMMARY' $log/memcheck.log | tail -1)"
late "$budget" && finish

for _ in $(seq 60); do [ -f /tmp/b8.done ] && break; sleep 2; done
row "make 8b ($(el) s)" "$(tail -1 $log/make_8b.log)"
engine() {  # suffix kv batch in out
  local out
  out=$(timeout 90 hichat$1 bench engine --model /tmp/b8 --quantization fp8 --kv-cache-dtype $2 --device cuda --batch $3 \
        --input-len $4 --output-len $5 --repeat 1 2>&1 | tee -a $log/engine$1.log)
  row "8B fp8 kv $2 b$3 $4/$5 hichat$1 ($(el) s)" \
      "$(echo "$out" | grep -oE '"(ms_per_token|output_tok_s|ttft_ms)":[0-9.]+' | tr '\n' ' ')"
}
for _ in 1 2; do for v in "" _new; do engine "$v" bf16 1 2048 1; done; done
for v in "" _new; do engine "$v" bf16 1 128 256; done
for v in "" _new; do late "$budget" || engine "$v" fp8 256 1000 1000; done
late "$budget" && finish

for v in "" _new; do
  timeout 40 cuda_ops_bench$v fp8 > $log/fp8$v.log 2>&1; row "cuda_ops_bench$v fp8 rc=$?" ""
  grep 'per layer' $log/fp8$v.log | sed 's/^/  /' | tee -a $table
  timeout 30 cuda_ops_bench$v attention > $log/attention$v.log 2>&1; row "cuda_ops_bench$v attention rc=$?" ""
  grep -E '^decode attention' $log/attention$v.log | grep -v graph | sed 's/^/  /' | tee -a $table
  timeout 30 cuda_ops_bench$v fp8_rows rope > $log/rows$v.log 2>&1; row "cuda_ops_bench$v fp8_rows rope rc=$?" ""
  grep -E 'fp8|qkv_rope' $log/rows$v.log | sed 's/^/  /' | tee -a $table
done
if command -v step_timeline_new > /dev/null && ! late "$budget"; then   # where a 2048-token prefill's time goes
  timeout 60 step_timeline_new --model /tmp/b8 --quantization fp8 --kv-cache-dtype bf16 --device cuda --batch 1 \
    --input-len 2048 --output-len 1 --repeat 3 > $OUT/step_timeline_prefill.txt 2>&1
  row "step_timeline_new prefill 2048 rc=$?" "$(grep -m1 '^outside graphs' $OUT/step_timeline_prefill.txt)"
  grep -A8 '^outside graphs' $OUT/step_timeline_prefill.txt | tail -7 | sed 's/^/  /' | cut -c1-140 | tee -a $table
fi
if command -v step_timeline_new > /dev/null && ! late "$budget"; then   # where a batch-256 step's time goes
  timeout 90 step_timeline_new --model /tmp/b8 --quantization fp8 --kv-cache-dtype fp8 --device cuda --batch 256 \
    --input-len 1000 --output-len 64 --repeat 1 > $OUT/step_timeline_b256.txt 2>&1
  row "step_timeline_new b256 rc=$?" ""
fi
if command -v cublaslt_scale_probe > /dev/null && ! late "$budget"; then
  timeout 40 cublaslt_scale_probe > $OUT/cublaslt_scale_probe.txt 2>&1; row "cublaslt_scale_probe rc=$?" ""
fi
finish
