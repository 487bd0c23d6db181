#!/usr/bin/env bash
# Serving overhead on this machine: the tiny fixture model served to 256 concurrent streaming clients
# (hichat bench serve, vLLM's metrics) against the engine-level figure at the same batch and the same
# compute threads (hichat bench engine). Settings: `hichat serve`'s default split of the cores
# (compute = cores - I/O threads), then 1 compute + 1 I/O and 2 + 2 threads (on 2 cores the last
# oversubscribes: the client, the I/O threads and the compute threads share the cores).
# Appends JSON lines to bench/results/serve-<host>-<date>.jsonl and prints served/engine ratios.
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
field() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"; }
cores=$(nproc)
default_io=$((cores <= 4 ? 1 : 2))
default_threads=$((cores - default_io > 1 ? cores - default_io : 1))
settings=("$default_threads $default_io default")
[[ "$default_threads $default_io" != "1 1" ]] && settings+=("1 1 explicit")
settings+=("2 2 explicit")
for setting in "${settings[@]}"; do
  read -r threads io how <<< "$setting"
  echo "== compute threads $threads, io threads $io ($how); load $(cut -d' ' -f1-3 /proc/loadavg)"
  engine=$("$bin" bench engine --model "$model" --batch 256 --input-len 32 --output-len 64 --threads "$threads" \
    --repeat 3 | grep '^{' | tag "engine threads=$threads" | tee -a "$out")
  engine_tok_s=$(field output_tok_s <<< "$engine")
  printf 'engine: %.0f output tok/s\n' "$engine_tok_s"
  flags=(--threads "$threads" --io-threads "$io")
  [[ $how == default ]] && flags=()
  : > /tmp/hichat_serve_bench.log  # emptied here, not by the background job: the wait below must not see the last run's line
  "$bin" serve --model "$model" --port 8199 "${flags[@]}" --max-num-seqs 256 \
    --max-num-batched-tokens 8192 2> /tmp/hichat_serve_bench.log &
  pid=$!
  until grep -q "ready:" /tmp/hichat_serve_bench.log; do sleep 0.2; done
  for run in 1 2 3; do
    "$bin" bench serve --url http://127.0.0.1:8199 --model tiny --input-len 32 --output-len 64 --num-prompts 512 \
      --max-concurrency 256 | grep '^{' | tag "served threads=$threads io=$io" | tee -a "$out" \
      | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); e=float(sys.argv[1]); print("served: %d/%d ok, %.0f req/s, %.0f output tok/s (%.2f of engine), p99 TTFT %.0f ms" % (d["completed"], d["num_prompts"], d["request_throughput"], d["output_throughput"], d["output_throughput"] / e, d["p99_ttft_ms"]))' "$engine_tok_s"
  done
  kill -TERM $pid; wait $pid || true
done
echo "appended to $out"
