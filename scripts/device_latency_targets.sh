#!/usr/bin/env bash
# Issue 22's speed check on the GPU machine, from the repo root with the bundle in .bundle (hichat; bin/
# and lib/ may come as .bundle/pack.tar.xz): the random 8B (bf16) behind `hichat serve`, `hichat bench
# serve` 128/128 at concurrency 256 (1024 prompts) without targets, then with --target-itl-ms 25, the
# two alternating twice; p50 / p99 ITL, p99 TTFT and output tok/s per run, and the server's ITL-target
# misses from /metrics (ROUNDS=1: once each). Prints a table; logs in $OUT, with each server's --step-log.
set -uo pipefail
[ -f .bundle/pack.tar.xz ] && tar -C .bundle -xJf .bundle/pack.tar.xz
. .bundle/env.sh; export PYTHONUNBUFFERED=1
log=$OUT; table=$log/table.txt; : > $table
row() { printf '%-40s %s\n' "$1" "$2" | tee -a $table; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee -a $table
mkdir -p /tmp/tok && tar -C /tmp/tok -xzf .bundle/tok.tar.gz
[ -f /tmp/b8/config.json ] || { timeout 150 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /tmp/tok > $log/make_8b.log 2>&1
row "make 8b rc=$?" ""; }
summary='import json, sys
d = json.loads(sys.stdin.read() or "{}")
g = lambda k: d.get(k) or 0
print("out %.0f tok/s, ITL p50 %.1f p99 %.1f ms, TTFT p50 %.0f p99 %.0f ms, ok %s/%s" % (g("output_throughput"),
      g("median_itl_ms"), g("p99_itl_ms"), g("median_ttft_ms"), g("p99_ttft_ms"), d.get("completed"), d.get("num_prompts")))'
serve() {  # name flags...
  local name=$1; shift
  hichat serve --model /tmp/b8 --device cuda --port 8300 --max-num-seqs 256 --max-num-batched-tokens 8192 \
    --max-model-len 4096 --no-prefix-cache --step-log $log/steps_$name.jsonl "$@" > $log/serve_$name.log 2>&1 &
  local pid=$!
  for _ in $(seq 600); do grep -q "ready:" $log/serve_$name.log && break; sleep 0.2; done
  timeout 120 hichat bench serve --url http://127.0.0.1:8300 --model b8 --input-len 128 --output-len 128 \
    --num-prompts 1024 --max-concurrency 256 --vocab-size 128000 > $log/bench_$name.log 2>&1
  local misses=$(curl -s http://127.0.0.1:8300/metrics | grep '^hichat_itl_target_misses_total' | awk '{print $2}')
  local steps=$(curl -s http://127.0.0.1:8300/metrics | grep '^hichat_step_duration_seconds_count' | awk '{print $2}')
  kill -TERM $pid; wait $pid
  row "$name" "$(grep '^{' $log/bench_$name.log | tail -1 | python3 -c "$summary"); steps $steps, over target $misses"
}
for round in $(seq ${ROUNDS:-2}); do
  serve "untargeted_r$round"
  serve "itl25_r$round" --target-itl-ms 25
done
