#!/usr/bin/env bash
# Issue 21, item 4 (CUDA head sizes 64, 80, 96, 128, 256) on one GPU, from the repo root with a bundle in
# .bundle (backend_cuda_tests and hichat; bin/ and lib/ may come as .bundle/pack.tar.xz):
#  1. backend_cuda_tests in full, then memcheck and racecheck on the attention cases of the new sizes;
#  2. per head size, a random model of models/default's shape (scripts/make_head_dim_checkpoint.py)
#     scored by transformers (fp32), by HiChat on the CPU and on CUDA (bf16 KV and FP8 KV):
#     relative error and top-1 agreement (scripts/compare_logits.py); and greedy generation on the
#     CPU and on CUDA (decode kernel), compared.
# Prints a table; logs in $OUT.
set -uo pipefail
[ -f .bundle/pack.tar.xz ] && tar -C .bundle -xJf .bundle/pack.tar.xz
. .bundle/env.sh
export PATH="$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer"
log=$OUT; table=$log/table.txt; : > $table
row() { printf '%-44s %s\n' "$1" "$2" | tee -a $table; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee -a $table

timeout 300 backend_cuda_tests > $log/tests.log 2>&1
row "backend_cuda_tests rc=$?" "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $log/tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED" $log/tests.log | head -20 | tee -a $table
filter='DecodeAttentionTest.PaddedAndLarge*:PrefillAttentionTest.MixedDecodesAndPrefills:Fp8KvAttentionTest.MixedBatch*:QkvRopeTest.*'
timeout 240 compute-sanitizer --tool memcheck --log-file $log/memcheck.log backend_cuda_tests --gtest_filter="$filter" \
    > $log/memcheck_gtest.log 2>&1
row "memcheck rc=$?" "$(tail -1 $log/memcheck.log) | $(grep -E '^\[  (PASSED|FAILED) ' $log/memcheck_gtest.log | tr '\n' ' ')"
timeout 200 compute-sanitizer --tool racecheck --log-file $log/racecheck.log backend_cuda_tests \
    --gtest_filter='Fp8KvAttentionTest.MixedBatch*:PrefillAttentionTest.MixedDecodesAndPrefills' > $log/racecheck_gtest.log 2>&1
row "racecheck rc=$?" "$(tail -1 $log/racecheck.log) | $(grep -E '^\[  (PASSED|FAILED) ' $log/racecheck_gtest.log | tr '\n' ' ')"

ids=$(python3 -c "print(','.join(str((i * 977 + 13) % 8000 + 10) for i in range(96)))")
for hd in 64 80 96 128 256; do
  m=/tmp/hd$hd
  python3 scripts/make_head_dim_checkpoint.py $m $hd > $log/make_hd$hd.log 2>&1 || { row "make head_dim $hd" FAILED; continue; }
  hichat score --model $m --ids $ids --out $m/cpu.bin --device cpu 2> $log/score_cpu_$hd.log; a=$?
  hichat score --model $m --ids $ids --out $m/cuda.bin --device cuda 2> $log/score_cuda_$hd.log; b=$?
  hichat score --model $m --ids $ids --out $m/cuda_fp8kv.bin --device cuda --kv-cache-dtype fp8 2> $log/score_fp8_$hd.log; c=$?
  row "head_dim $hd score rc cpu/cuda/cuda-fp8kv" "$a/$b/$c"
  python3 scripts/compare_logits.py $m $ids cpu=$m/cpu.bin cuda=$m/cuda.bin cuda_fp8kv=$m/cuda_fp8kv.bin \
      > $log/compare_$hd.log 2>&1 || tail -3 $log/compare_$hd.log
  sed 's/^/  /' $log/compare_$hd.log | grep "relative error" | tee -a $table
  for dev in cpu cuda; do
    hichat generate --model $m --prompt "Once upon a time there was" --max-tokens 64 --temperature 0 --ignore-eos \
        --device $dev > $m/gen_$dev.txt 2> $log/gen_${dev}_$hd.log
  done
  if cmp -s $m/gen_cpu.txt $m/gen_cuda.txt; then same=identical; else
    same="differ from byte $(cmp $m/gen_cpu.txt $m/gen_cuda.txt | sed -n 's/.*byte \([0-9]*\).*/\1/p') of $(wc -c < $m/gen_cpu.txt)"; fi
  row "  greedy 64 tokens cpu vs cuda" "$same"
  cp $m/gen_*.txt $log/ 2>/dev/null; for f in $m/gen_*.txt; do cp $f $log/hd${hd}_$(basename $f); done
done
