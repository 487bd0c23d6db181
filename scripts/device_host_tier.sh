#!/usr/bin/env bash
# GPU-machine check of the host-memory KV tier (issue 17), from the repo root with a bundle in .bundle
# (STRIP=1 scripts/make_bundle.sh build .bundle tools/hichat tests/engine/engine_tests) and the Llama-3.2
# tokenizer files in .bundle/tok.tar.gz:
#   1. engine_tests' host-tier and prefix-cache tests on CUDA;
#   2. compute-sanitizer racecheck, synccheck and memcheck on the host-tier tests of one family (the
#      copy path: D2H after the step that wrote a block, H2D before the step that reads it);
#   3. a random-weight 8B bf16 checkpoint, then bench/prefix_cache_bench.sh shared-prefix (64 groups x 8,
#      2048 system + 128 question, 128 out, 16 at a time) on a device pool of about half the groups'
#      prefixes (--gpu-memory-fraction $FRACTION): host tier on (default size) vs --host-kv-cache-gb 0.
# Prints a table at the end; logs and result lines go to $OUT.
set -uo pipefail; . .bundle/env.sh; export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures
OUT=${OUT:-$(mktemp -d)}; rows=()
row() { rows+=("$(printf '%-52s %s' "$1" "$2")"); }
timeout 240 .bundle/bin/engine_tests --gtest_filter='*PrefixCache*cuda*' > $OUT/engine_prefix_cuda.log 2>&1
row "engine_tests PrefixCache *cuda* rc=$?" "$(grep -E '^\[  PASSED|^\[  FAILED' $OUT/engine_prefix_cuda.log | tr '\n' ' ')"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in racecheck synccheck memcheck; do
  if [[ -z $sanitizer ]]; then row "compute-sanitizer $tool" "not found"; continue; fi
  timeout 240 $sanitizer --tool $tool --error-exitcode 9 .bundle/bin/engine_tests \
      --gtest_filter='*HostTier*llama3_cuda*' > $OUT/sanitizer_$tool.log 2>&1
  row "compute-sanitizer $tool host-tier llama3 rc=$?" "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  PASSED|^\[  FAILED' $OUT/sanitizer_$tool.log | tr '\n' ' ')"
done
mkdir -p /tmp/tok && tar -xzf .bundle/tok.tar.gz -C /tmp/tok
python3 scripts/make_bench_checkpoint.py 8b /tmp/m8b /tmp/tok > $OUT/make_8b.log 2>&1 || row "make 8b" "FAILED"
export HICHAT=hichat HICHAT_COMMIT=${HICHAT_COMMIT:-unknown}
rm -f bench/results/prefix-cache-*.jsonl  # this machine's lines only
flags=(--vocab-size 128000 --seed 1 --gsp-num-groups 64 --gsp-prompts-per-group 8 --gsp-output-len 128
       --max-concurrency 16)
OFF_FLAGS="--host-kv-cache-gb 0" OFF_NAME=no-host-tier ON_NAME=host-tier timeout 420 \
  bench/prefix_cache_bench.sh /tmp/m8b shared-prefix "${flags[@]}" -- --max-model-len 4096 \
  --gpu-memory-fraction ${FRACTION:-0.065} > $OUT/bench_host_tier.txt 2> $OUT/bench_host_tier.err
row "prefix_cache_bench host tier rc=$?" "$(grep -c 'failed' $OUT/bench_host_tier.err) lines with failures"
cp bench/results/prefix-cache-*.jsonl $OUT/ 2>/dev/null
printf '%s\n' "${rows[@]}" | tee $OUT/table.txt
grep -h "KV cache:" $OUT/bench_host_tier.err
cat $OUT/bench_host_tier.txt
grep -E "Successful|Failed requests|Benchmark duration|Output token throughput|Median TTFT|P99 TTFT|served from cache" $OUT/bench_host_tier.err
