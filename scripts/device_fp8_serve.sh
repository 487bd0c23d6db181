#!/usr/bin/env bash
# Served FP8 on the GPU machine (the issue's targets), from the repo root with the bundle in .bundle:
# the random 8B behind `hichat serve`, `hichat bench serve` at concurrency 256: 1000/1000 with bf16
# weights and cache, FP8 weights with a bf16 cache, and FP8 weights with an FP8 cache; that last also
# at 128/128 (1024 prompts) and 2048/128 (512 prompts); TTFT of one 2048-token prompt at concurrency 1.
set -uo pipefail; . .bundle/env.sh; export PYTHONUNBUFFERED=1
log=$OUT; table=$log/table.txt; : > $table
row() { printf '%-52s %s\n' "$1" "$2" | tee -a $table; }
mkdir -p /tmp/tok && tar -C /tmp/tok -xzf .bundle/tok.tar.gz
timeout 150 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /tmp/tok > $log/make_8b.log 2>&1
row "make 8b rc=$?" ""
summary='import json, sys
d = json.loads(sys.stdin.read() or "{}")
g = lambda k: d.get(k) or 0
print("out %.0f tok/s, tpot %.2f ms, median ttft %.1f ms, p99 ttft %.0f ms, ok %s/%s" % (g("output_throughput"),
      g("median_tpot_ms"), g("median_ttft_ms"), g("p99_ttft_ms"), d.get("completed"), d.get("num_prompts")))'
serve() {  # name in out prompts concurrency flags...
  local name=$1 in=$2 out=$3 prompts=$4 conc=$5; shift 5
  hichat serve --model /tmp/b8 --device cuda --port 8300 --max-num-seqs 256 --max-num-batched-tokens 8192 \
    --max-model-len 4096 "$@" > $log/serve_$name.log 2>&1 &
  local pid=$!
  for _ in $(seq 400); do grep -q "ready:" $log/serve_$name.log && break; sleep 0.2; done
  timeout 150 hichat bench serve --url http://127.0.0.1:8300 --model b8 --input-len $in --output-len $out \
    --num-prompts $prompts --max-concurrency $conc --vocab-size 128000 > $log/bench_$name.log 2>&1
  kill -TERM $pid; wait $pid
  row "$name ($in/$out, c$conc)" "$(grep '^{' $log/bench_$name.log | tail -1 | python3 -c "$summary")"
  grep -E "KV cache" $log/serve_$name.log | head -2 | sed 's/^/  /' | tee -a $table
}
serve bf16_bf16 1000 1000 256 256
serve fp8w_bf16kv 1000 1000 256 256 --quantization fp8
serve fp8w_fp8kv 1000 1000 256 256 --quantization fp8 --kv-cache-dtype fp8
serve fp8w_fp8kv_128 128 128 1024 256 --quantization fp8 --kv-cache-dtype fp8
serve fp8w_fp8kv_2048 2048 128 512 256 --quantization fp8 --kv-cache-dtype fp8
serve fp8w_fp8kv_ttft 2048 1 8 1 --quantization fp8 --kv-cache-dtype fp8
serve bf16_ttft 2048 1 8 1
