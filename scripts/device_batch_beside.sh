#!/usr/bin/env bash
# Issue 22: a 10,000-line batch beside interactive load. Random 8B (bf16) behind `hichat serve`; interactive:
# `hichat bench serve` 128/128, Poisson arrivals at 8 requests/s, 200 prompts. Per server (--batch-concurrency
# 16, then 64): interactive alone (A), then a 10,000-line /v1/chat/completions batch (max_tokens 64) uploaded
# and created, interactive again while it runs (B), then the batch cancelled and interactive alone again (A2).
# BATCH_CONCURRENCY="64": only that server. From the repo root with a bundle (hichat) as .bundle/pack.tar.xz and the tokenizer as .bundle/tok.tar.gz.
set -uo pipefail
tar -C .bundle -xJf .bundle/pack.tar.xz
. .bundle/env.sh; export PYTHONUNBUFFERED=1
log=$OUT; table=$log/table.txt; : > $table
row() { printf '%-34s %s\n' "$1" "$2" | tee -a $table; }
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a $table
mkdir -p /tmp/tok && tar -C /tmp/tok -xzf .bundle/tok.tar.gz
[ -f /tmp/b8/config.json ] || { timeout 150 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /tmp/tok > $log/make_8b.log 2>&1; row "make rc=$?" ""; }
python3 - <<'PY'
import json, random
random.seed(1)
words = "the of and to in is was he for it with as his on be at by had are but from not have".split()
with open("/tmp/batch.jsonl", "w") as f:
    for i in range(10000):
        text = " ".join(random.choice(words) for _ in range(40))
        f.write(json.dumps({"custom_id": f"line-{i}", "method": "POST", "url": "/v1/chat/completions",
                            "body": {"model": "b8", "messages": [{"role": "user", "content": text}], "max_tokens": 64}}) + "\n")
PY
summary='import json, sys
d = json.loads(sys.stdin.read() or "{}")
g = lambda k: d.get(k) or 0
print("TTFT p50 %.1f p99 %.1f ms, ITL p50 %.1f p99 %.1f ms, out %.0f tok/s, ok %s/%s" % (g("median_ttft_ms"), g("p99_ttft_ms"),
      g("median_itl_ms"), g("p99_itl_ms"), g("output_throughput"), d.get("completed"), d.get("num_prompts")))'
load() {  # name
  timeout 90 hichat bench serve --url http://127.0.0.1:8300 --model b8 --input-len 128 --output-len 128 \
    --num-prompts 200 --request-rate 8 --seed 7 --vocab-size 128000 > $log/bench_$1.log 2>&1
  row "$1" "$(grep '^{' $log/bench_$1.log | tail -1 | python3 -c "$summary")"
}
counts() { curl -s http://127.0.0.1:8300/v1/batches/$1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], d["request_counts"])'; }
for bc in ${BATCH_CONCURRENCY:-16 64}; do
  hichat serve --model /tmp/b8 --device cuda --port 8300 --max-model-len 4096 --batch-concurrency $bc \
    --session-db /tmp/s$bc.db --step-log $log/steps_$bc.jsonl > $log/serve_$bc.log 2>&1 &
  pid=$!
  for _ in $(seq 600); do grep -q "ready:" $log/serve_$bc.log && break; sleep 0.2; done
  load "bc${bc}_A_alone"
  fid=$(curl -s http://127.0.0.1:8300/v1/files -F purpose=batch -F file=@/tmp/batch.jsonl | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  bid=$(curl -s http://127.0.0.1:8300/v1/batches -H 'Content-Type: application/json' \
    -d "{\"input_file_id\":\"$fid\",\"endpoint\":\"/v1/chat/completions\",\"completion_window\":\"24h\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  sleep 3; row "  batch $bid before B" "$(counts $bid)"
  load "bc${bc}_B_beside_batch"
  row "  batch after B" "$(counts $bid)"
  curl -s -X POST http://127.0.0.1:8300/v1/batches/$bid/cancel > /dev/null
  for _ in $(seq 100); do counts $bid | grep -q "^cancelled" && break; sleep 0.2; done
  row "  batch after cancel" "$(counts $bid)"
  load "bc${bc}_A2_alone"
  kill -TERM $pid; wait $pid
done
