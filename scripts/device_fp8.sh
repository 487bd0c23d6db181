#!/usr/bin/env bash
# FP8 on the GPU machine, from the repo root with the bundle in .bundle (hichat, executor_tests,
# backend_cuda_tests, cuda_ops_bench; Llama-3.2 tokenizer in .bundle/tok.tar.gz):
#  0. the FP8 op tests (and memcheck on them), cuda_ops_bench fp8;
#  1. the FP8 golden tests (every fixture x layout, CUDA against the CPU on the dequantized weights) and
#     compute-sanitizer memcheck on a few of them;
#  2. the random 1B written as bf16 by transformers and as FP8 by scripts/make_fp8_checkpoint.py in each
#     layout; `hichat score` on CUDA for 128 ids against transformers' logits of the bf16 weights and,
#     where transformers loads the FP8 folder (quant_method fp8), of the FP8 weights; relative error and
#     top-1 agreement;
#  3. `hichat bench engine` batch 1, 8 and 64 on the random 8B, bf16 and `--quantization fp8`, same run.
set -uo pipefail; . .bundle/env.sh; export HICHAT_FIXTURES_DIR=$PWD/tests/fixtures PYTHONUNBUFFERED=1
export PATH="$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer"
log=$OUT; table=$log/table.txt; : > $table
row() { printf '%-48s %s\n' "$1" "$2" | tee -a $table; }

timeout 120 backend_cuda_tests --gtest_filter='Fp8Test.*:Gemm*:*Gemv*' > $log/ops.log 2>&1
row "backend_cuda_tests Fp8Test+Gemm rc=$?" "$(grep -E '^\[  (PASSED|FAILED) +\]' $log/ops.log | tr '\n' ' ')"
grep -E "Failure|Which is|seed" $log/ops.log | head -12 | sed 's/^/  /' | tee -a $table
timeout 150 compute-sanitizer --tool memcheck backend_cuda_tests --gtest_filter='Fp8Test.*' > $log/memcheck_ops.log 2>&1
row "memcheck Fp8Test rc=$?" "$(grep -E 'ERROR SUMMARY' $log/memcheck_ops.log | tail -1)"
timeout 120 cuda_ops_bench fp8 > $log/bench_fp8.log 2>&1
row "cuda_ops_bench fp8 rc=$?" ""; grep -E "per layer|CUDA_CHECK" $log/bench_fp8.log | sed 's/^/  /' | tee -a $table

timeout 240 executor_tests --gtest_filter='Fixtures/Fp8GoldenTest.*:Fixtures/CudaGoldenTest.*' > $log/fp8_golden.log 2>&1
row "executor_tests Fp8Golden+CudaGolden rc=$?" "$(grep -E '^\[  (PASSED|FAILED) +\]' $log/fp8_golden.log | tr '\n' ' ')"
grep -E '^\[cuda fp8\]' $log/fp8_golden.log | sed 's/^/  /' | tee -a $table
timeout 200 compute-sanitizer --tool memcheck executor_tests \
  --gtest_filter='Fixtures/Fp8GoldenTest.Cuda*/llama3_ct_channel_dynamic:Fixtures/Fp8GoldenTest.Cuda*/qwen3_ct_tensor_static' > $log/memcheck.log 2>&1
row "memcheck Fp8GoldenTest cuda rc=$?" "$(grep -E 'ERROR SUMMARY' $log/memcheck.log | tail -1) $(grep -E '^\[  (PASSED|FAILED)' $log/memcheck.log | tr '\n' ' ')"

mkdir -p /tmp/tok && tar -C /tmp/tok -xzf .bundle/tok.tar.gz
timeout 60 python3 scripts/make_bench_checkpoint.py 1b /tmp/b1 /tmp/tok > $log/make_1b.log 2>&1 || row "make 1b failed" "$(tail -2 $log/make_1b.log)"
for layout in ct_tensor_static ct_channel_dynamic ct_block hf_block; do
  timeout 120 python3 scripts/make_fp8_checkpoint.py $layout /tmp/b1 /tmp/b1_$layout >> $log/make_fp8.log 2>&1 \
    || row "make_fp8 $layout failed" "$(tail -2 $log/make_fp8.log)"
done
ids=$(python3 -c "import random; r=random.Random(7); print(','.join(str(r.randrange(128000)) for _ in range(128)))")
for m in b1 b1_ct_tensor_static b1_ct_channel_dynamic b1_ct_block b1_hf_block; do
  timeout 120 hichat score --model /tmp/$m --device cuda --ids $ids --out /tmp/score_$m.bin > $log/score_$m.log 2>&1 \
    || row "hichat score $m failed" "$(tail -2 $log/score_$m.log)"
done
timeout 300 python3 - "$ids" > $log/compare.log 2>&1 <<'PY'
import sys, numpy as np, torch
from transformers import AutoModelForCausalLM
ids = [int(x) for x in sys.argv[1].split(",")]
def tf_logits(d):
    try:
        m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16, device_map="cuda")
        with torch.no_grad():
            out = m(torch.tensor([ids], device="cuda")).logits[0].float().cpu().numpy()
        del m; torch.cuda.empty_cache(); return out
    except Exception as e:
        print(f"transformers cannot load {d}: {type(e).__name__}: {str(e)[:200]}"); return None
def cmp(a, b):
    err = np.linalg.norm(a - b) / np.linalg.norm(b); top1 = float(np.mean(a.argmax(1) == b.argmax(1)))
    return f"rel err {err:.3e}, top-1 {top1:.4f}"
hc = {m: np.fromfile(f"/tmp/score_{m}.bin", dtype=np.float32).reshape(len(ids), -1)
      for m in ["b1", "b1_ct_tensor_static", "b1_ct_channel_dynamic", "b1_ct_block", "b1_hf_block"]}
ref = tf_logits("/tmp/b1")
print("hichat bf16 vs transformers bf16:", cmp(hc["b1"], ref))
for m in ["b1_ct_tensor_static", "b1_ct_channel_dynamic", "b1_ct_block", "b1_hf_block"]:
    print(f"hichat {m[3:]} vs transformers bf16 weights:", cmp(hc[m], ref), "| vs hichat bf16:", cmp(hc[m], hc["b1"]))
tf8 = tf_logits("/tmp/b1_hf_block")
if tf8 is not None:
    print("hichat hf_block vs transformers hf_block (FineGrainedFP8, w8a8 block):", cmp(hc["b1_hf_block"], tf8))
    print("transformers hf_block vs transformers bf16:", cmp(tf8, ref))
PY
row "compare 1B logits rc=$?" ""; sed 's/^/  /' $log/compare.log | grep -v Warning | tail -12 | tee -a $table

timeout 150 python3 scripts/make_bench_checkpoint.py 8b /tmp/b8 /tmp/tok > $log/make_8b.log 2>&1
rm -rf /tmp/b1_*  # disk
for batch in 1 8 64; do
  for q in none fp8; do
    start=$(date +%s)
    out=$(timeout 150 hichat bench engine --model /tmp/b8 --quantization $q --device cuda --batch $batch --input-len 128 \
          --output-len 256 --repeat 3 2>&1 | tee -a $log/engine.log)
    ms=$(echo "$out" | sed -n 's/.*"ms_per_token":\([0-9.]*\).*/\1/p' | tail -1)
    tps=$(echo "$out" | sed -n 's/.*"decode_tok_s":\([0-9.]*\).*/\1/p' | tail -1)
    ttft=$(echo "$out" | sed -n 's/.*"ttft_ms":\([0-9.]*\).*/\1/p' | tail -1)
    row "8B --quantization $q batch $batch (128 / 256)" "$ms ms/step, decode $tps tok/s, prefill $ttft ms ($(( $(date +%s) - start )) s with load)"
  done
done

