#!/usr/bin/env bash
# GPU-machine check of the hardening issue (16), from the repo root with a bundle in .bundle
# (STRIP=1 scripts/make_bundle.sh build .bundle): the CUDA op and executor tests, then a head_dim 32
# checkpoint under every command: `--device auto` must run it on the CPU (saying why), `--device cuda`
# must refuse it with exit 2 naming head_dim; and a head_dim 64 fixture must still take the GPU.
# Prints a table at the end; logs go to $OUT.
set -uo pipefail; . .bundle/env.sh; export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures
OUT=${OUT:-$(mktemp -d)}; rows=()
row() { rows+=("$(printf '%-58s %s' "$1" "$2")"); }
timeout 150 backend_cuda_tests > $OUT/backend_cuda_tests.log 2>&1; rc=$?
row "backend_cuda_tests rc=$rc" "$(grep -E '^\[  PASSED|^\[  FAILED' $OUT/backend_cuda_tests.log | tr '\n' ' ')"
timeout 150 executor_tests > $OUT/executor_tests.log 2>&1; rc=$?
row "executor_tests rc=$rc" "$(grep -E '^\[  PASSED|^\[  FAILED' $OUT/executor_tests.log | tr '\n' ' ')"
python3 scripts/make_head_dim_checkpoint.py /tmp/hd32 32 > $OUT/make_hd32.log 2>&1 || row "make hd32" "FAILED"
check() {  # check NAME EXPECTED_RC GREP_PATTERN COMMAND...
  local name=$1 want=$2 pat=$3; shift 3
  timeout 120 "$@" > $OUT/$name.out 2> $OUT/$name.err; local rc=$?
  local line; line=$(grep -m1 -E "$pat" $OUT/$name.err)
  if [[ $rc == "$want" && -n $line ]]; then row "$name rc=$rc" "ok: $line"; else row "$name rc=$rc (want $want)" "FAIL: $(tail -2 $OUT/$name.err | tr '\n' ' ')"; fi
}
check score_hd32_auto 0 "using the CPU" hichat score --model /tmp/hd32 --ids 1,2,3 --out /tmp/hd32.bin --device auto
check score_hd32_cuda 2 "head_dim" hichat score --model /tmp/hd32 --ids 1,2,3 --out /tmp/hd32.bin --device cuda
check generate_hd32_auto 0 "using the CPU" hichat generate --model /tmp/hd32 --prompt "In the beginning" --max-tokens 8 --device auto
check generate_hd32_cuda 2 "head_dim" hichat generate --model /tmp/hd32 --prompt "In the beginning" --max-tokens 8 --device cuda
check serve_hd32_cuda 2 "head_dim" hichat serve --model /tmp/hd32 --port 8401 --device cuda
hichat serve --model /tmp/hd32 --port 8402 --device auto > $OUT/serve_hd32_auto.out 2> $OUT/serve_hd32_auto.err & pid=$!
for _ in $(seq 100); do grep -q "ready:" $OUT/serve_hd32_auto.err && break; sleep 0.3; done
reply=$(curl -s http://127.0.0.1:8402/v1/completions -H 'Content-Type: application/json' \
        -d '{"prompt": "In the beginning", "max_tokens": 8, "temperature": 0}')
kill -TERM $pid; wait $pid; rc=$?
if [[ $reply == *'"finish_reason"'* ]] && grep -q "using the CPU" $OUT/serve_hd32_auto.err; then
  row "serve_hd32_auto rc=$rc" "ok: $(grep -m1 'using the CPU' $OUT/serve_hd32_auto.err)"
else row "serve_hd32_auto rc=$rc" "FAIL: $reply $(tail -2 $OUT/serve_hd32_auto.err | tr '\n' ' ')"; fi
for dev in auto cuda; do  # a head_dim 64 fixture still takes the GPU
  timeout 120 hichat score --model tests/fixtures/llama3 --ids 1,2,3 --out /tmp/f.bin --device $dev > /dev/null 2> $OUT/fixture_$dev.err
  rc=$?; if [[ $rc == 0 ]] && ! grep -q "using the CPU" $OUT/fixture_$dev.err; then row "score_fixture_$dev rc=$rc" "ok: no CPU fallback"
  else row "score_fixture_$dev rc=$rc" "FAIL: $(tail -2 $OUT/fixture_$dev.err | tr '\n' ' ')"; fi
done
printf '%s\n' "${rows[@]}" | tee $OUT/table.txt
