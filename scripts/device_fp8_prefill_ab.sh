#!/usr/bin/env bash
# FP8 prefill A/B on one GPU, from the repo root with a bundle in .bundle (bin/ and lib/, or
# .bundle/pack.tar.xz; the Llama-3.2 tokenizer in .bundle/tok.tar.gz): the random 8B's prefill of PROMPT tokens (default
# 2048; batch 1, one output token, --quantization fp8) by each of the hichat binaries in BINARIES
# (default "hichat"), alternating ROUNDS times (default 3). Prints a table; logs in $OUT.
set -uo pipefail
[ -f .bundle/pack.tar.xz ] && [ ! -d .bundle/bin ] && tar -C .bundle -xJf .bundle/pack.tar.xz
. .bundle/env.sh; export PYTHONUNBUFFERED=1
log=$OUT; table=$log/prefill_table.txt; : > $table
row() { printf '%-52s %s\n' "$1" "$2" | tee -a $table; }
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a $table
mkdir -p /tmp/tok && tar -C /tmp/tok -xzf .bundle/tok.tar.gz
[ -f /tmp/b8/config.json ] || timeout 200 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /tmp/tok > $log/make_8b.log 2>&1 || row "make 8b failed" "$(tail -2 $log/make_8b.log)"
for round in $(seq 1 ${ROUNDS:-3}); do
  for b in ${BINARIES:-hichat}; do
    out=$(timeout 150 $b bench engine --model /tmp/b8 --quantization fp8 --device cuda --batch 1 --input-len ${PROMPT:-2048} \
          --output-len 2 --repeat 3 2>&1 | tee -a $log/prefill_$b.log)
    js=$(echo "$out" | grep '^{' | tail -1)
    row "8B fp8 prefill ${PROMPT:-2048} $b round $round" "ttft $(echo "$js" | sed -n 's/.*"ttft_ms":\([0-9.]*\).*/\1/p') ms, prefill $(echo "$js" | sed -n 's/.*"prefill_tok_s":\([0-9.]*\).*/\1/p') tok/s"
  done
done
