#!/usr/bin/env bash
# GPU-machine check of constrained decoding on the device (issue 18), from the repo root with a bundle in
# .bundle (STRIP=1 scripts/make_bundle.sh build .bundle tools/hichat tests/engine/engine_tests) and the
# Llama-3.2 tokenizer files in .bundle/tok.tar.gz:
#   1. engine_tests' grammar and logprobs tests on CUDA (masks picked on the device, sync and pipelined),
#      and compute-sanitizer memcheck on the pipelined grammar test;
#   2. a random-weight 8B bf16 checkpoint served with --device cuda; hichat bench serve (random ids, 128
#      in, 256 out) at 64 concurrent and at 1, each unconstrained and then with a json_schema
#      response_format (an array of at least 60 small objects, so every reply runs to max_tokens) in the
#      same server run.
# Prints a table at the end; logs and result lines go to $OUT.
set -uo pipefail; . .bundle/env.sh; export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures
OUT=${OUT:-$(mktemp -d)}; rows=()
row() { rows+=("$(printf '%-48s %s' "$1" "$2")"); }
timeout 240 .bundle/bin/engine_tests --gtest_filter='*GrammarEngine*:*Logprobs*cuda*' > $OUT/engine_grammar.log 2>&1
row "engine_tests grammar + logprobs rc=$?" "$(grep -E '^\[  PASSED|^\[  FAILED|SKIPPED' $OUT/engine_grammar.log | sort | uniq -c | tr '\n' ' ')"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [[ -n $sanitizer ]]; then
  timeout 240 $sanitizer --tool memcheck --error-exitcode 9 .bundle/bin/engine_tests \
      --gtest_filter='*GrammarEngine*cuda*' > $OUT/memcheck_grammar.log 2>&1
  row "memcheck grammar cuda rc=$?" "$(grep -E 'ERROR SUMMARY|^\[  PASSED|^\[  FAILED' $OUT/memcheck_grammar.log | tr '\n' ' ')"
fi
mkdir -p /tmp/tok && tar -xzf .bundle/tok.tar.gz -C /tmp/tok
python3 scripts/make_bench_checkpoint.py 8b /tmp/m8b /tmp/tok > $OUT/make_8b.log 2>&1 || row "make 8b" "FAILED"
hichat serve --model /tmp/m8b --device cuda --port 18791 --max-model-len 4096 --session-db :memory: \
  > $OUT/serve.log 2>&1 & pid=$!
for _ in $(seq 240); do grep -q "ready:" $OUT/serve.log && break; sleep 0.5; done
schema='{"type":"object","properties":{"items":{"type":"array","minItems":60,"items":{"type":"object","properties":{"id":{"type":"integer","minimum":0,"maximum":9999},"name":{"type":"string","maxLength":12},"kind":{"enum":["a","b","c"]}},"required":["id","name","kind"],"additionalProperties":false}}},"required":["items"],"additionalProperties":false}'
rf="{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"list\",\"strict\":true,\"schema\":$schema}}}"
b() { local name=$1; shift
  timeout 200 hichat bench serve --url http://127.0.0.1:18791 --model m8b --vocab-size 128000 --seed 1 --input-len 128 \
    --result-file $OUT/grammar_bench.jsonl "$@" > $OUT/bench_$name.txt 2>&1
  row "bench $name rc=$?" "$(grep -E 'Output token throughput|Mean ITL|Median ITL' $OUT/bench_$name.txt | awk -F: '{gsub(/ +/," ",$2); printf "%s:%s  ", $1, $2}')"; }
b warmup --num-prompts 16 --output-len 32 --max-concurrency 16
b c64_free --num-prompts 128 --output-len 256 --max-concurrency 64
b c64_json_schema --num-prompts 128 --output-len 256 --max-concurrency 64 --extra-body "$rf"
b c1_free --num-prompts 8 --output-len 256 --max-concurrency 1
b c1_json_schema --num-prompts 8 --output-len 256 --max-concurrency 1 --extra-body "$rf"
b c64_free_again --num-prompts 128 --output-len 256 --max-concurrency 64
b c1_free_again --num-prompts 8 --output-len 256 --max-concurrency 1
curl -s http://127.0.0.1:18791/v1/completions -H 'Content-Type: application/json' \
  -d "{\"model\":\"m8b\",\"prompt\":\"List:\",\"max_tokens\":400,\"temperature\":1,\"seed\":2,${rf:1:-1}}" > $OUT/sample.json
python3 -c "
import json,sys; r=json.load(open('$OUT/sample.json')); t=r['choices'][0]['text']; print('sample finish', r['choices'][0]['finish_reason'], 'chars', len(t)); print(t[:300])" > $OUT/sample.txt 2>&1
curl -s http://127.0.0.1:18791/v1/completions -H 'Content-Type: application/json' \
  -d '{"model":"m8b","prompt":"The capital of France is","max_tokens":4,"temperature":0,"echo":true,"logprobs":2}' > $OUT/echo.json
python3 -c "
import json; r=json.load(open('$OUT/echo.json')); c=r['choices'][0]; lp=c['logprobs']
ok = c['text'].startswith('The capital of France is') and len(lp['tokens']) == r['usage']['prompt_tokens'] + 4 \
     and lp['token_logprobs'][0] is None and all(v <= 0 for v in lp['token_logprobs'][1:])
print('echo+logprobs', 'OK' if ok else 'BAD', 'tokens', len(lp['tokens']), 'prompt', r['usage']['prompt_tokens'])" > $OUT/echo.txt 2>&1
row "completions echo + logprobs (8B, cuda)" "$(cat $OUT/echo.txt | tr '\n' ' ')"
kill $pid; wait $pid 2>/dev/null
printf '%s\n' "${rows[@]}" | tee $OUT/table.txt
cat $OUT/sample.txt
grep -h "Failure" -A5 $OUT/engine_grammar.log | head -20
