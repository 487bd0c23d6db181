#!/usr/bin/env bash
# CPU benchmark of record: Llama-3.2-1B-shaped bf16 checkpoint (scripts/make_bench_checkpoint.py), 2 threads,
# prompt 128 / 32 generated, plus tokenizer throughput and the machine's read bandwidth. Appends JSON lines
# to bench/results/cpu-<host>-<date>.jsonl. llama.cpp's figures for the same shapes on this machine come
# from ../shared/benchmarks.md (measured there with llama-bench -t 2 -p 128 -n 32), not from this run.
# Usage: bench/run_cpu_bench.sh CHECKPOINT_DIR [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: bench/run_cpu_bench.sh CHECKPOINT_DIR [BUILD_DIR]}
build=${2:-build}
commit=$(git rev-parse --short HEAD)
out=bench/results/cpu-$(hostname)-$(date -u +%Y-%m-%d).jsonl
mkdir -p bench/results
tag() { sed "s/^{/{\"commit\":\"$commit\",\"machine\":\"$(nproc)-core $(uname -m)\",\"date\":\"$(date -u +%FT%TZ)\",/"; }

echo "== memory bandwidth and GEMV/GEMM (cpu_ops_bench)"
"$build"/tests/backend_cpu/cpu_ops_bench --threads 2 --no-gemm | tee /tmp/hichat_ops.txt | grep -v '^{' || true
grep '^{' /tmp/hichat_ops.txt | tag >> "$out"

echo "== engine: 1B bf16, prompt 128, 32 generated, batch 1, 2 threads"
"$build"/tools/hichat bench engine --model "$model" --input-len 128 --output-len 32 --batch 1 --threads 2 --repeat 3 \
  | tee /tmp/hichat_engine.txt | grep -v '^{'
grep '^{' /tmp/hichat_engine.txt | tag >> "$out"

echo "== tokenizer: Llama-3.2, English, one thread"
"$build"/tests/tokenizer/tokenizer_bench | tee /tmp/hichat_tok.txt | grep -v '^{' || true
grep '^{' /tmp/hichat_tok.txt | tag >> "$out"

# The peer's figures for the same shapes on this machine (../shared/benchmarks.md), for side-by-side reading.
echo '{"engine":"llama.cpp-cpu","source":"../shared/benchmarks.md (llama-bench -t 2 -p 128 -n 32, BF16)","model":"1B","threads":2,"prefill_tok_s":75,"decode_tok_s":6.2}' | tag >> "$out"
echo "appended to $out"
