#!/usr/bin/env bash
# Served FP8 on the GPU machine (the issue's targets), from the repo root with the bundle in .bundle:
# the random 8B behind `hichat serve` (HICHAT, default hichat: the bundle's binary to serve with),
# `hichat bench serve` per run. RUNS picks the runs (default: the 2026-12-03 set, at 256 sequences):
#   bf16_bf16 fp8w_bf16kv fp8w_fp8kv    1000/1000 at concurrency 256: bf16 weights and cache, FP8
#                                       weights with a bf16 cache, FP8 weights with an FP8 cache
#   fp8w_fp8kv_128 fp8w_fp8kv_2048      FP8 weights and cache, 128/128 (1024 prompts), 2048/128 (512)
#   fp8w_fp8kv_ttft fp8w_bf16kv_ttft    TTFT of one 2048-token prompt at concurrency 1 (FP8 weights,
#   bf16_ttft                           FP8 or bf16 cache; bf16 weights and cache)
#   sat_128 sat_1000 sat_2048           saturation: FP8 weights and cache at 512 sequences and
#                                       concurrency 512 (128/128, 1000/1000), 2048/128 at 16384
#                                       batched tokens
# After each run the server's /metrics gives its mean TTFT and step time.
# PACK: the bundle to unpack when .bundle/bin is missing. Skips a run once BUDGET seconds (default 540) have gone. Table in $OUT/table.txt, logs in $OUT.
set -uo pipefail
[ -d .bundle/bin ] || tar -C .bundle -xJf "${PACK:-.bundle/pack.tar.xz}"
. .bundle/env.sh; export PYTHONUNBUFFERED=1
t0=$(date +%s); budget=${BUDGET:-540}
bin=${HICHAT:-hichat}
log=$OUT; table=$log/table.txt; touch $table
row() { printf '%-52s %s\n' "$1" "$2" | tee -a $table; }
if [ ! -f /tmp/b8/config.json ]; then
  mkdir -p /tmp/tok && tar -C /tmp/tok -xzf .bundle/tok.tar.gz
  timeout 150 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /tmp/tok > $log/make_8b.log 2>&1
  row "make 8b rc=$?" ""
fi
summary='import json, sys
d = json.loads(sys.stdin.read() or "{}")
g = lambda k: d.get(k) or 0
print("out %.0f tok/s, tpot %.2f ms, median ttft %.1f ms, p99 ttft %.0f ms, ok %s/%s" % (g("output_throughput"),
      g("median_tpot_ms"), g("median_ttft_ms"), g("p99_ttft_ms"), d.get("completed"), d.get("num_prompts")))'
# The server's own view (GET /metrics): mean TTFT from arrival, mean step time, steps, prefill tokens.
metrics='import re, urllib.request
text = urllib.request.urlopen("http://127.0.0.1:8300/metrics", timeout=10).read().decode()
v = lambda name: sum(float(m) for m in re.findall("^" + name + r"(?:\{[^}]*\})? ([0-9.e+-]+)$", text, re.M))
ttft_n, step_n = v("hichat_time_to_first_token_seconds_count"), v("hichat_step_duration_seconds_count")
print("mean ttft %.2f ms over %d; %d steps, mean %.2f ms; prefill tokens per step %.0f" % (
      1e3 * v("hichat_time_to_first_token_seconds_sum") / max(ttft_n, 1), ttft_n, step_n,
      1e3 * v("hichat_step_duration_seconds_sum") / max(step_n, 1),
      v("hichat_step_prefill_tokens_sum") / max(step_n, 1)))'
serve() {  # name in out prompts concurrency seqs batched-tokens max-len flags...
  local name=$1 in=$2 out=$3 prompts=$4 conc=$5 seqs=$6 tokens=$7 len=$8; shift 8
  case " ${RUNS:-bf16_bf16 fp8w_bf16kv fp8w_fp8kv fp8w_fp8kv_128 fp8w_fp8kv_2048 fp8w_fp8kv_ttft bf16_ttft} " in
    *" $name "*) ;; *) return ;;
  esac
  if [ $(( $(date +%s) - t0 )) -gt "$budget" ]; then row "$name" "skipped (budget)"; return; fi
  $bin serve --model /tmp/b8 --device cuda --port 8300 --max-num-seqs $seqs --max-num-batched-tokens $tokens \
    --max-model-len $len "$@" > $log/serve_$name.log 2>&1 &
  local pid=$!
  for _ in $(seq 400); do grep -q "ready:" $log/serve_$name.log && break; sleep 0.2; done
  timeout 150 $bin bench serve --url http://127.0.0.1:8300 --model b8 --input-len $in --output-len $out \
    --num-prompts $prompts --max-concurrency $conc --vocab-size 128000 > $log/bench_$name.log 2>&1
  python3 -c "$metrics" > $log/metrics_$name.txt 2>&1
  kill -TERM $pid; wait $pid
  row "$name $bin ($in/$out, c$conc, s$seqs, t$tokens)" \
      "$(grep '^{' $log/bench_$name.log | tail -1 | python3 -c "$summary")"
  sed 's/^/  server: /' $log/metrics_$name.txt | tee -a $table
  grep -E "KV cache" $log/serve_$name.log | head -2 | sed 's/^/  /' | tee -a $table
}
fp8=(--quantization fp8 --kv-cache-dtype fp8)
serve bf16_bf16 1000 1000 256 256 256 8192 4096
serve fp8w_bf16kv 1000 1000 256 256 256 8192 4096 --quantization fp8
serve fp8w_fp8kv 1000 1000 256 256 256 8192 4096 "${fp8[@]}"
serve fp8w_fp8kv_128 128 128 1024 256 256 8192 4096 "${fp8[@]}"
serve fp8w_fp8kv_2048 2048 128 512 256 256 8192 4096 "${fp8[@]}"
serve fp8w_fp8kv_ttft 2048 1 8 1 256 8192 4096 "${fp8[@]}"
serve fp8w_bf16kv_ttft 2048 1 8 1 256 8192 4096 --quantization fp8
serve bf16_ttft 2048 1 8 1 256 8192 4096
serve sat_128 128 128 2048 512 512 8192 2048 "${fp8[@]}"
serve sat_1000 1000 1000 512 512 512 8192 2048 "${fp8[@]}"
serve sat_2048 2048 128 512 256 256 16384 4096 "${fp8[@]}"
exit 0
