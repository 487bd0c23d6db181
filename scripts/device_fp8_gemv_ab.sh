#!/usr/bin/env bash
# FP8 GEMV variants A/B on one GPU, from the repo root with a bundle in .bundle (bin/ and lib/, or
# PACK, default .bundle/pack.tar.xz, holding them; the Llama-3.2 tokenizer in .bundle/tok.tar.gz). VARIANTS names
# builds: bin/cuda_ops_bench_V, bin/hichat_V and (TESTS=1) bin/backend_cuda_tests_V for each V ("base": the
# unsuffixed binaries), one
# build per set of compile-time knobs (scripts/build_kernel_variant.sh makes them). TESTS=1 first runs each build's FP8 op tests, and its GEMV
# tests under compute-sanitizer memcheck. Then cuda_ops_bench fp8 per variant, and the random 8B's
# batch-1 decode with --quantization fp8, the variants alternating ROUNDS times (default 2). Prints a
# table; logs in $OUT.
set -uo pipefail
[ -d .bundle/bin ] || tar -C .bundle -xJf "${PACK:-.bundle/pack.tar.xz}"
. .bundle/env.sh; export PYTHONUNBUFFERED=1
variants=${VARIANTS:?set VARIANTS}
sfx() { [ "$1" = base ] && echo "" || echo "_$1"; }   # "base": the unsuffixed binaries
log=$OUT; table=$log/table.txt; : > $table
row() { printf '%-44s %s\n' "$1" "$2" | tee -a $table; }
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee -a $table
mkdir -p /tmp/tok && tar -C /tmp/tok -xzf .bundle/tok.tar.gz
[ -f /tmp/b8/config.json ] || timeout 200 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /tmp/tok > $log/make_8b.log 2>&1
for v in $variants; do
  if [ "${TESTS:-0}" = 1 ]; then
    timeout 120 backend_cuda_tests$(sfx $v) --gtest_filter='Fp8*' > $log/tests_$v.log 2>&1
    row "backend_cuda_tests$(sfx $v) Fp8* rc=$?" "$(grep -E '^\[  (PASSED|FAILED)' $log/tests_$v.log | tr '\n' ' ')"
    timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 backend_cuda_tests$(sfx $v) \
      --gtest_filter='Fp8Test.Gemv*' > $log/memcheck_$v.log 2>&1
    row "memcheck Fp8Test.Gemv* ($v) rc=$?" "$(grep -E 'ERROR SUMMARY' $log/memcheck_$v.log | tail -1)"
  fi
  command -v cuda_ops_bench$(sfx $v) > /dev/null || continue   # a runner-only variant: the engine runs below
  timeout 90 cuda_ops_bench$(sfx $v) fp8 > $log/ops_$v.log 2>&1
  row "cuda_ops_bench$(sfx $v) fp8 rc=$?" ""; grep -E "m=1 |m=8 " $log/ops_$v.log | sed 's/^/  /' | tee -a $table
done
[ -f /tmp/b8/config.json ] || row "make 8b failed" "$(tail -2 $log/make_8b.log)"
for round in $(seq 1 ${ROUNDS:-2}); do
  for v in $variants; do
    out=$(timeout 120 hichat$(sfx $v) bench engine --model /tmp/b8 --quantization fp8 --device cuda --batch 1 \
          --input-len 128 --output-len 256 --repeat 2 2>&1 | tee -a $log/engine_$v.log)
    ms=$(echo "$out" | sed -n 's/.*"ms_per_token":\([0-9.]*\).*/\1/p' | tail -1)
    row "8B fp8 batch 1 (128 / 256) $v round $round" "$ms ms/token"
  done
done
