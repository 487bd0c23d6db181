#!/usr/bin/env bash
# The FP8 KV cache on the GPU machine, from the repo root with the bundle in .bundle (hichat,
# executor_tests, backend_cuda_tests, cuda_ops_bench; Llama-3.2 tokenizer in .bundle/tok.tar.gz):
#  0. the FP8-KV op tests and the bf16 attention / RoPE tests, compute-sanitizer memcheck on the FP8 ones;
#     cuda_ops_bench attention (bf16 and fp8 rows);
#  1. the FP8-KV golden tests (CUDA with an FP8 cache against the CPU and against the bf16 cache) and
#     memcheck on one fixture;
#  2. `hichat bench engine` on the random 8B: batch 1 (128 / 256) and batch 256 (1000 / 1000), bf16
#     weights with a bf16 and an fp8 cache, and fp8 weights with an fp8 cache, in the same run.
set -uo pipefail; . .bundle/env.sh; export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures PYTHONUNBUFFERED=1
export PATH="$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer"
log=$OUT; table=$log/table.txt; : > $table
row() { printf '%-52s %s\n' "$1" "$2" | tee -a $table; }
passed() { grep -E '^\[  (PASSED|FAILED) +\]' "$1" | tr '\n' ' '; }

mkdir -p /tmp/tok && tar -C /tmp/tok -xzf .bundle/tok.tar.gz
(timeout 150 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /tmp/tok > $log/make_8b.log 2>&1; echo done > /tmp/b8.done) &

timeout 150 backend_cuda_tests --gtest_filter='Fp8Kv*:*Attention*:RopeKv*' > $log/ops.log 2>&1
row "backend_cuda_tests Fp8Kv+Attention+RopeKv rc=$?" "$(passed $log/ops.log)"
grep -E "Failure|Which is|seed" $log/ops.log | head -12 | sed 's/^/  /' | tee -a $table
timeout 200 compute-sanitizer --tool memcheck backend_cuda_tests \
  --gtest_filter='Fp8KvAttentionTest.MixedBatch*:Fp8KvAttentionTest.Refuses*:Fp8KvRopeTest.*' > $log/memcheck_ops.log 2>&1
row "memcheck Fp8Kv ops rc=$?" "$(grep -E 'ERROR SUMMARY' $log/memcheck_ops.log | tail -1) $(passed $log/memcheck_ops.log)"
timeout 120 cuda_ops_bench attention > $log/bench_attention.log 2>&1
row "cuda_ops_bench attention rc=$?" ""; grep -E "attention" $log/bench_attention.log | sed 's/^/  /' | tee -a $table

timeout 200 executor_tests --gtest_filter='Fixtures/Fp8KvGoldenTest.*:Fixtures/CudaGoldenTest.*' > $log/golden.log 2>&1
row "executor_tests Fp8KvGolden+CudaGolden rc=$?" "$(passed $log/golden.log)"
grep -E '^\[cuda fp8 kv\]|Failure|Which is' $log/golden.log | sed 's/^/  /' | tee -a $table
timeout 120 compute-sanitizer --tool memcheck executor_tests --gtest_filter='Fixtures/Fp8KvGoldenTest.Logits*/qwen3' \
  > $log/memcheck_golden.log 2>&1
row "memcheck Fp8KvGolden qwen3 rc=$?" "$(grep -E 'ERROR SUMMARY' $log/memcheck_golden.log | tail -1) $(passed $log/memcheck_golden.log)"

for i in $(seq 60); do [ -f /tmp/b8.done ] && break; sleep 2; done
row "make 8b" "$(tail -1 $log/make_8b.log)"
bench() {   # weights kv batch input output repeat
  local start=$(date +%s) out
  out=$(timeout 200 hichat bench engine --model /tmp/b8 --quantization $1 --kv-cache-dtype $2 --device cuda --batch $3 \
        --input-len $4 --output-len $5 --repeat $6 2>&1 | tee -a $log/engine.log)
  local ms=$(echo "$out" | sed -n 's/.*"ms_per_token":\([0-9.]*\).*/\1/p' | tail -1)
  local tps=$(echo "$out" | sed -n 's/.*"output_tok_s":\([0-9.]*\).*/\1/p' | tail -1)
  local ttft=$(echo "$out" | sed -n 's/.*"ttft_ms":\([0-9.]*\).*/\1/p' | tail -1)
  row "8B weights $1 kv $2 batch $3 ($4 / $5)" "$ms ms/step, output $tps tok/s, prefill $ttft ms ($(( $(date +%s) - start )) s)"
}
for kv in bf16 fp8; do bench none $kv 1 128 256 3; done
bench fp8 fp8 1 128 256 3
for kv in bf16 fp8; do bench none $kv 256 1000 1000 1; done
bench fp8 fp8 256 1000 1000 1
