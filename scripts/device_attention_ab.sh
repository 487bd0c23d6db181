#!/usr/bin/env bash
# Decode-attention variants A/B on one GPU, from the repo root with a bundle in .bundle (bin/ and lib/,
# or PACK, default .bundle/pack.tar.xz, holding them). VARIANTS names builds by suffix: bin/cuda_ops_bench_V and (TESTS=1)
# bin/backend_cuda_tests_V for each V ("base" means the unsuffixed binaries), one build per set of
# compile-time knobs (scripts/build_kernel_variant.sh BUILD V src/backend/cuda/attention_decode_fp8.cu
# "-DATTN_FP8_STAGES=... -DATTN_FP8_MINB=..." tests/backend_cuda/cuda_ops_bench tests/backend_cuda/backend_cuda_tests).
# TESTS=1 first runs each build's FP8-KV and attention op tests, and the FP8-KV ones (or the filter
# MEMCHECK) under memcheck.
# Then `cuda_ops_bench attention` per variant. Prints a table of the decode rows; logs in $OUT/attn_logs.tgz.
set -uo pipefail
[ -d .bundle/bin ] || tar -C .bundle -xJf "${PACK:-.bundle/pack.tar.xz}"
. .bundle/env.sh
variants=${VARIANTS:?set VARIANTS}
log=/tmp/attn_logs; mkdir -p $log; table=$OUT/attn_table.txt; : > $table
row() { printf '%-52s %s\n' "$1" "$2" | tee -a $table; }
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a $table
for v in $variants; do
  s=_$v; [ "$v" = base ] && s=
  if [ "${TESTS:-0}" = 1 ]; then
    timeout 150 backend_cuda_tests$s --gtest_filter='*Fp8Kv*:*Attention*' > $log/tests_$v.log 2>&1
    row "backend_cuda_tests$s Fp8Kv+Attention rc=$?" "$(grep -E '^\[  (PASSED|FAILED)' $log/tests_$v.log | tr '\n' ' ')"
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 backend_cuda_tests$s --gtest_filter="${MEMCHECK:-*Fp8Kv*}" \
      > $log/memcheck_$v.log 2>&1
    row "memcheck Fp8Kv ($v) rc=$?" "$(grep 'ERROR SUMMARY' $log/memcheck_$v.log | tail -1)"
  fi
  timeout 90 cuda_ops_bench$s attention > $log/attn_$v.log 2>&1
  row "cuda_ops_bench$s attention rc=$?" ""
  grep -E '^decode attention' $log/attn_$v.log | grep -v graph | sed 's/^/  /' | tee -a $table
done
tar -C $log -czf $OUT/attn_logs.tgz .
