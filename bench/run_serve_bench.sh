#!/usr/bin/env bash
# Serving overhead on this machine: the tiny fixture model served to 256 concurrent streaming clients
# (hichat bench serve, vLLM's metrics) against the engine-level figure at the same batch (hichat bench
# engine), for 1 and 2 compute threads. Appends JSON lines to bench/results/serve-<host>-<date>.jsonl.
# Usage: bench/run_serve_bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin=$build/tools/hichat
commit=$(git rev-parse --short HEAD)
out=bench/results/serve-$(hostname)-$(date -u +%Y-%m-%d).jsonl
model=$(mktemp -d)/tiny
mkdir -p "$model" bench/results
cp tests/fixtures/llama3/{config.json,model.safetensors} tests/fixtures/byte_tokenizer/tokenizer.json \
   tests/fixtures/tiny_chat/tokenizer_config.json "$model"/
tag() { sed "s/^{/{\"commit\":\"$commit\",\"machine\":\"$(nproc)-core $(uname -m)\",\"setting\":\"$1\",/"; }
for threads in 1 2; do
  io=$((threads == 1 ? 1 : 2))
  echo "== compute threads $threads, io threads $io"
  "$bin" bench engine --model "$model" --batch 256 --input-len 32 --output-len 64 --threads "$threads" --repeat 3 \
    | grep '^{' | tag "engine threads=$threads" | tee -a "$out" | cut -c1-220
  "$bin" serve --model "$model" --port 8199 --threads "$threads" --io-threads "$io" --max-num-seqs 256 \
    --max-num-batched-tokens 8192 2> /tmp/hichat_serve_bench.log &
  pid=$!
  until grep -q "ready:" /tmp/hichat_serve_bench.log; do sleep 0.2; done
  for run in 1 2 3; do
    "$bin" bench serve --url http://127.0.0.1:8199 --model tiny --input-len 32 --output-len 64 --num-prompts 512 \
      --max-concurrency 256 | grep '^{' | tag "served threads=$threads io=$io" | tee -a "$out" \
      | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print("served: %d/%d ok, %.0f req/s, %.0f output tok/s, p99 TTFT %.0f ms" % (d["completed"], d["num_prompts"], d["request_throughput"], d["output_throughput"], d["p99_ttft_ms"]))'
  done
  kill -TERM $pid; wait $pid || true
done
echo "appended to $out"
