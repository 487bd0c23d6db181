#!/usr/bin/env bash
# One GPU-machine session's checks, from the repo root with the bundle in .bundle (scripts/make_bundle.sh):
# remake the golden fixtures with transformers, run the executor golden tests (CPU and CUDA) on them,
# then the CUDA op tests. Logs in $1. (Speed: scripts/gpu_bench.sh.)
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
