#!/usr/bin/env bash
# Quick GPU-machine check, from the repo root with the bundle in .bundle: the CUDA op and executor
# tests, memcheck on the step kernels, GEMV figures, then 1B and 8B batch-1 engine runs in the
# variants of VARIANTS ("ENV=.. [flags]" per item, separated by ';'; BIN=name runs .bundle/bin/name,
# an older build copied there, instead of hichat). Switches: MEMCHECK=0 skips compute-sanitizer (memcheck
# on executor tests, memcheck + racecheck on the backend tests of SANITIZE_FILTER), GEMM_BENCH=0 the GEMV
# figures, THROUGHPUT=1 adds the 1B at batch 256 per variant, SERVE=1 the 8B served 1000/1000 at concurrency 256
# (in SERVE_VARIANTS if set).
set -uo pipefail; . .bundle/env.sh; export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures PYTHONUNBUFFERED=1
export PATH="$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer"
log=$(mktemp -d); SANITIZE_FILTER=${SANITIZE_FILTER:-Gemm*:QkvRope*}
timeout 120 backend_cuda_tests > $log/b.log 2>&1; echo "backend_cuda_tests rc=$?"
grep -E "^\[  (PASSED|FAILED) +\]|tests? from .* ran|Failure" $log/b.log | tail -6
timeout 90 executor_tests > $log/e.log 2>&1; echo "executor_tests rc=$?"
grep -E "^\[  (PASSED|FAILED) +\]|tests? from .* ran|Failure" $log/e.log | tail -6
[[ ${MEMCHECK:-1} == 1 ]] && timeout 150 compute-sanitizer --tool memcheck executor_tests \
    --gtest_filter='Fixtures/CudaGoldenTest.Pipelined*/llama3*:Fixtures/CudaGoldenTest.Graphed*/qwen3*' > $log/m.log 2>&1
echo "memcheck executor rc=$?: $(grep -E 'ERROR SUMMARY' $log/m.log | tail -1)"
for tool in memcheck racecheck; do
  [[ ${MEMCHECK:-1} == 1 ]] && timeout 120 compute-sanitizer --tool $tool backend_cuda_tests --gtest_filter="$SANITIZE_FILTER" > $log/$tool.log 2>&1
  echo "$tool $SANITIZE_FILTER rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $log/$tool.log | tail -1) $(grep -E '^\[  (PASSED|FAILED)' $log/$tool.log | tr '\n' ' ')"
done
cp $log/*.log $OUT/ 2>/dev/null
mkdir -p /tmp/tok && tar -C /tmp/tok -xzf .bundle/tok.tar.gz   # hichat serve needs the tokenizer
timeout 40 python3 scripts/make_bench_checkpoint.py 1b /tmp/b1 /tmp/tok > $log/m1.log 2>&1
timeout 120 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /tmp/tok > $log/m8.log 2>&1
IFS=';' read -ra variants <<< "${VARIANTS:-HICHAT_PDL=0 --no-overlap;HICHAT_PDL=1}"
split_variant() {  # split_variant "ENV=.. flags": sets envs, flags and bin
  local words w; read -ra words <<< "$1"; envs=(); flags=(); bin=hichat
  for w in "${words[@]}"; do
    if [[ $w == BIN=* ]]; then bin=${w#BIN=}; elif [[ $w == *=* ]]; then envs+=("$w"); else flags+=("$w"); fi
  done
}
[[ ${GEMM_BENCH:-1} == 1 ]] && timeout 60 cuda_ops_bench gemm 2>&1 | grep -E "gemv|cublasLt"
for model in b1 b8; do
  for v in "${variants[@]}"; do
    split_variant "$v"
    ms=$(env "${envs[@]}" timeout 90 "$bin" bench engine --model /tmp/$model --device cuda --batch 1 --input-len 128 \
         --output-len 256 --repeat 3 "${flags[@]}" 2>&1 | tee -a $OUT/engine.log | sed -n 's/.*"ms_per_token":\([0-9.]*\).*/\1/p')
    printf '%-4s %-45s %s ms/token\n' "$model" "$v" "$ms"
  done
done
# SERVE=1: the 8B served 1000/1000 at concurrency 256 (hichat serve + hichat bench serve, as
# gpu_bench.sh) in the same variants: the scheduler's mixed batches (bench engine prefills apart).
if [[ ${SERVE:-0} == 1 ]]; then
  IFS=';' read -ra serve_variants <<< "${SERVE_VARIANTS:-${VARIANTS:-X=0}}"
  for v in "${serve_variants[@]}"; do
    split_variant "$v"
    env "${envs[@]}" "$bin" serve --model /tmp/b8 --device cuda --port 8300 --max-num-seqs 256 \
        --max-num-batched-tokens 8192 --max-model-len 4096 > $log/serve.log 2>&1 &
    pid=$!
    for _ in $(seq 300); do grep -q "ready:" $log/serve.log && break; sleep 0.2; done
    tps=$(timeout 150 "$bin" bench serve --url http://127.0.0.1:8300 --model b8 --input-len 1000 --output-len 1000 \
          --num-prompts 256 --max-concurrency 256 --vocab-size 128000 2>&1 | tee -a $OUT/serve.log |
          sed -n 's/.*"output_throughput":\([0-9.]*\).*/\1/p')
    kill -TERM $pid; wait $pid
    printf '%-4s %-45s served 1000/1000 c256 %s tok/s\n' b8 "$v" "$tps"
  done
fi
# THROUGHPUT=1: the 1B at batch 256 (prompt 128, output 256) in the same variants.
if [[ ${THROUGHPUT:-0} == 1 ]]; then
  for v in "${variants[@]}"; do
    split_variant "$v"
    tps=$(env "${envs[@]}" timeout 120 "$bin" bench engine --model /tmp/b1 --device cuda --batch 256 --input-len 128 \
          --output-len 256 "${flags[@]}" 2>&1 | tee -a $OUT/engine.log | sed -n 's/.*"output_tok_s":\([0-9.]*\).*/\1/p')
    printf '%-4s %-45s b256 %s tok/s\n' b1 "$v" "$tps"
  done
fi
