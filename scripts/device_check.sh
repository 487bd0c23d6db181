#!/usr/bin/env bash
# One GPU-machine session's checks, from the repo root with the bundle in .bundle (scripts/make_bundle.sh):
# remake the golden fixtures with transformers, run the executor golden tests (CPU and CUDA) on them,
# the CUDA op tests, then a short 1B engine benchmark beside transformers generate(). Logs in $1.
set -uo pipefail
out=${1:?usage: scripts/device_check.sh OUT_DIR}
. .bundle/env.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

echo "== fixtures"
timeout 90 python3 scripts/make_fixtures.py /tmp/fx > "$out/fixtures.log" 2>&1; echo "rc=$?"
tar -C /tmp -czf "$out/fixtures.tar.gz" fx
export HICHAT_FIXTURES_DIR=/tmp/fx

echo "== executor_tests (CPU + CUDA golden)"
timeout 60 executor_tests > "$out/executor_tests.log" 2>&1; echo "rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) +\]|tests? from .* ran|\[cuda\]" "$out/executor_tests.log" | head -30

echo "== backend_cuda_tests"
timeout 60 backend_cuda_tests > "$out/backend_cuda_tests.log" 2>&1; echo "rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) +\]|tests? from .* ran" "$out/backend_cuda_tests.log" | tail -3

echo "== 1B engine bench"
timeout 60 python3 scripts/make_bench_checkpoint.py 1b /tmp/b1 /nonexistent > "$out/make_1b.log" 2>&1; echo "rc=$?"
for b in 1 32; do
  timeout 60 hichat bench engine --model /tmp/b1 --device cuda --batch $b --input-len 128 --output-len 128 --repeat 2 \
    2>&1 | tee -a "$out/bench_1b.log" | tail -1
done
echo "== transformers generate, same checkpoint"
timeout 60 python3 - <<'PY' 2>&1 | tee -a "$out/bench_1b.log" | tail -2
import json, time, torch
from transformers import AutoModelForCausalLM
m = AutoModelForCausalLM.from_pretrained("/tmp/b1", dtype=torch.bfloat16).cuda().eval()
for b in (1, 32):
    ids = torch.randint(0, 128000, (b, 128), device="cuda")
    m.generate(ids, max_new_tokens=8, min_new_tokens=8, do_sample=False)
    torch.cuda.synchronize(); t = time.time()
    m.generate(ids, max_new_tokens=128, min_new_tokens=128, do_sample=False)
    torch.cuda.synchronize(); dt = time.time() - t
    print(json.dumps({"engine": "transformers-generate", "model": "1b", "batch": b, "prompt_len": 128,
                      "output_len": 128, "output_tok_s": b * 128 / dt, "ms_per_token": dt / 128 * 1e3}))
PY
