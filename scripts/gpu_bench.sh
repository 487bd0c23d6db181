#!/usr/bin/env bash
# GPU benchmark of record (README, "Benchmarks"), run on the GPU machine from the repo root with the
# bundle in .bundle (scripts/make_bundle.sh) and the Llama-3.2 tokenizer files in .bundle/tok.tar.gz:
#   1. correctness first: backend_cuda_tests and executor_tests (CUDA goldens, graphed decode);
#   2. random-weight 1B and 8B bf16 checkpoints (scripts/make_bench_checkpoint.py, transformers);
#   3. hichat bench engine: batch 1/32/64/128/256 at prompt 128 / output 256 (and batch 1/256 without
#      host/device overlap), prompt 1000 / output 1000 at batch 256, TTFT of a 2048-token prompt;
#   4. hichat serve + hichat bench serve, 1000/1000 at concurrency 256 (served vs engine);
#   3b/4b. the same 8B rows with `--quantization fp8 --kv-cache-dtype fp8` (FP8 weights, per-token
#      activations, FP8 KV cache), same run, and served also at 128/128 and 2048/128;
#   5. transformers generate() on the same checkpoints and shapes (the peer, same run; SKIP_PEER=1
#      leaves it out when the FP8 rows need the time);
#   6. cuda_ops_bench.
# Writes OUT_DIR/results.jsonl (every line tagged with gpu, commit, date), OUT_DIR/logs.tar.gz and
# OUT_DIR/console.txt (everything printed, the record's console log); prints a table. SERVE_AB=name
# repeats step 4 with .bundle/bin/name, an A/B build, and prints its throughput (not in the results).
set -uo pipefail
dest=${1:?usage: scripts/gpu_bench.sh OUT_DIR [COMMIT]}
mkdir -p "$dest"
exec > >(tee "$dest/console.txt") 2>&1
tee_pid=$!
out=$(mktemp -d)   # the logs, packed into one file at the end
commit=${2:-$(git rev-parse --short HEAD 2> /dev/null || echo unknown)}
. .bundle/env.sh
export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures PYTHONUNBUFFERED=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
results=$dest/results.jsonl
tag() {  # tag MODEL_NAME: stamps each JSON line of stdin
    python3 -c 'import json,sys
for line in sys.stdin:
    if line.startswith("{"):
        d = json.loads(line); d.update(model=sys.argv[1], gpu=sys.argv[2], commit=sys.argv[3], date=sys.argv[4])
        print(json.dumps(d), flush=True)' "$1" "$gpu" "$commit" "$(date -u +%F)" >> "$results"
}
echo "gpu: $gpu  commit: $commit"

echo "== tests"
timeout 240 backend_cuda_tests > "$out/backend_cuda_tests.log" 2>&1; echo "backend_cuda_tests rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) +\]|tests? from .* ran|sampled rows" "$out/backend_cuda_tests.log" | tail -12
export PATH="$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer"
timeout 120 compute-sanitizer --tool memcheck --log-file "$out/memcheck.log" backend_cuda_tests \
    --gtest_filter='SampleRows*:SmallOpsTest.*:QkvRope*:GemmTest.DecodeRows*:GemmTest.GemvSiluMul*' \
    > "$out/memcheck_gtest.log" 2>&1
echo "memcheck rc=$?: $(tail -1 "$out/memcheck.log")"
timeout 60 compute-sanitizer --tool racecheck --log-file "$out/racecheck.log" backend_cuda_tests \
    --gtest_filter='SampleRowsTest.FilterEdgeValues:SampleRowsTest.VocabOfOne*:SampleRowsTest.TemperatureZero*:GemmTest.GemvSiluMul*' \
    > "$out/racecheck_gtest.log" 2>&1
echo "racecheck rc=$?: $(tail -1 "$out/racecheck.log")"
timeout 120 executor_tests > "$out/executor_tests.log" 2>&1; echo "executor_tests rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) +\]|tests? from .* ran" "$out/executor_tests.log" | tail -6

mkdir -p /tmp/tok && tar -C /tmp/tok -xzf .bundle/tok.tar.gz
timeout 150 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /tmp/tok > "$out/make_8b.log" 2>&1; echo "make 8b rc=$?"
m8="llama-3.1-8b-shape random bf16"
m1="llama-3.2-1b-shape random bf16"

echo "== 8B engine"
timeout 150 hichat bench engine --model /tmp/b8 --device cuda --batch 1,32,64,128,256 --input-len 128 \
    --output-len 256 --repeat 1 2>&1 | tee "$out/engine_8b.log" | tag "$m8"
timeout 60 hichat bench engine --model /tmp/b8 --device cuda --batch 1,256 --input-len 128 --output-len 256 \
    --repeat 1 --no-overlap 2>&1 | tee -a "$out/engine_8b.log" | tag "$m8"
timeout 120 hichat bench engine --model /tmp/b8 --device cuda --batch 256 --input-len 1000 --output-len 1000 \
    --repeat 1 2>&1 | tee -a "$out/engine_8b.log" | tag "$m8"
timeout 60 hichat bench engine --model /tmp/b8 --device cuda --batch 1 --input-len 2048 --output-len 1 \
    --repeat 5 2>&1 | tee -a "$out/engine_8b.log" | tag "$m8"
grep -v '^{' "$out/engine_8b.log"
m8q="llama-3.1-8b-shape random, --quantization fp8 --kv-cache-dtype fp8"
echo "== 8B engine, --quantization fp8 --kv-cache-dtype fp8"
timeout 150 hichat bench engine --model /tmp/b8 --quantization fp8 --kv-cache-dtype fp8 --device cuda --batch 1,32,64,128,256 \
    --input-len 128 --output-len 256 --repeat 1 2>&1 | tee "$out/engine_8b_fp8.log" | tag "$m8q"
timeout 120 hichat bench engine --model /tmp/b8 --quantization fp8 --kv-cache-dtype fp8 --device cuda --batch 256 --input-len 1000 \
    --output-len 1000 --repeat 1 2>&1 | tee -a "$out/engine_8b_fp8.log" | tag "$m8q"
timeout 60 hichat bench engine --model /tmp/b8 --quantization fp8 --kv-cache-dtype fp8 --device cuda --batch 1 --input-len 2048 \
    --output-len 1 --repeat 5 2>&1 | tee -a "$out/engine_8b_fp8.log" | tag "$m8q"
grep -v '^{' "$out/engine_8b_fp8.log"

echo "== 8B served (1000/1000, concurrency 256)"
# serve_8b BINARY LOG_NAME [FLAGS...]: hichat serve + hichat bench serve (IN / OUT tokens, 256 prompts at
# concurrency 256 unless IN, OUT, PROMPTS say otherwise); bench output on stdout
serve_8b() {
    local bin=$1 name=$2; shift 2
    "$bin" serve --model /tmp/b8 --device cuda --port 8300 --max-num-seqs 256 --max-num-batched-tokens 8192 \
        --max-model-len 4096 "$@" > "$out/serve_$name.log" 2>&1 &
    local pid=$!
    for _ in $(seq 300); do grep -q "ready:" "$out/serve_$name.log" && break; sleep 0.2; done
    timeout 150 "$bin" bench serve --url http://127.0.0.1:8300 --model b8 --input-len ${IN:-1000} \
        --output-len ${OUT_LEN:-1000} --num-prompts ${PROMPTS:-256} --max-concurrency 256 --vocab-size 128000 2>&1 \
        | tee "$out/bench_serve_$name.log"
    kill -TERM $pid; wait $pid
}
serve_8b hichat 8b | tag "$m8"
grep -v '^{' "$out/bench_serve_8b.log" | tail -20
serve_8b hichat 8b_fp8 --quantization fp8 --kv-cache-dtype fp8 | tag "$m8q"
grep -v '^{' "$out/bench_serve_8b_fp8.log" | tail -20
IN=128 OUT_LEN=128 PROMPTS=1024 serve_8b hichat 8b_fp8_128 --quantization fp8 --kv-cache-dtype fp8 | tag "$m8q"
IN=2048 OUT_LEN=128 PROMPTS=512 serve_8b hichat 8b_fp8_2048 --quantization fp8 --kv-cache-dtype fp8 | tag "$m8q"
if [[ -n ${SERVE_AB:-} ]]; then   # A/B: the same served run with .bundle/bin/$SERVE_AB (console only)
    serve_8b "$SERVE_AB" ab > /dev/null
    echo "A/B $SERVE_AB served: $(grep -o '"output_throughput":[0-9.]*' "$out/bench_serve_ab.log")"
fi

if [[ -z ${SKIP_PEER:-} ]]; then
    echo "== transformers generate (8B)"
    timeout 200 python3 bench/transformers_generate.py /tmp/b8 1:128:256 256:128:256 1:2048:1 \
        2>"$out/hf_8b.err" | tee "$out/hf_8b.log" | tag "$m8"
    cat "$out/hf_8b.log"
fi
rm -rf /tmp/b8

echo "== 1B engine and transformers"
timeout 60 python3 scripts/make_bench_checkpoint.py 1b /tmp/b1 /tmp/tok > "$out/make_1b.log" 2>&1; echo "make 1b rc=$?"
timeout 90 hichat bench engine --model /tmp/b1 --device cuda --batch 1,32,64,128,256 --input-len 128 \
    --output-len 256 --repeat 1 2>&1 | tee "$out/engine_1b.log" | tag "$m1"
grep -v '^{' "$out/engine_1b.log"
timeout 120 python3 bench/transformers_generate.py /tmp/b1 1:128:256 256:128:256 2>"$out/hf_1b.err" \
    | tee "$out/hf_1b.log" | tag "$m1"
cat "$out/hf_1b.log"

echo "== cuda_ops_bench"
timeout 90 cuda_ops_bench > "$out/ops_bench.log" 2>&1; echo "cuda_ops_bench rc=$?"
grep -E "gemv|cublasLt|decode|prefill|sample|argmax|rope" "$out/ops_bench.log"

echo "== summary (engine, model, batch, prompt, output, ms/token, output tok/s, ttft ms)"
python3 - "$results" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    d['model'] = d['model'][:9] + ("/fp8" if "fp8" in d['model'] else "")
    if "num_prompts" in d:   # hichat bench serve
        print(f"served   {d['model']:13} c{d['max_concurrency']:<4} {d['input_len']:>5} {d['output_len']:>5}"
              f"  tpot {d['median_tpot_ms']:7.2f}  {d['output_throughput']:9.1f}  p99 ttft {d['p99_ttft_ms']:.0f}"
              f"  ok {d['completed']}/{d['num_prompts']}")
        continue
    print(f"{d['engine'][:8]:8} {d['model']:13} b{d['batch']:<4} {d['prompt_len']:>5} {d['output_len']:>5}"
          f"  {d['ms_per_token']:7.2f}  {d['output_tok_s']:9.1f}  {d.get('ttft_ms') or 0:8.1f}"
          f"{'' if d.get('overlap', True) else '  (no overlap)'}")
PY
tar -C "$out" -czf "$dest/logs.tar.gz" .
exec > /dev/null 2>&1   # the console is complete once tee has read the last line
wait "$tee_pid"
