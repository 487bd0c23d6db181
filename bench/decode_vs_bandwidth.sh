#!/usr/bin/env bash
# CPU decode against the read bandwidth measured right around it, for hosts whose memory bandwidth moves
# between minutes (shared VMs): ROUNDS x (bandwidth probe, one decode run, bandwidth probe). Per round:
# the decode's effective read rate (weight bytes read per step / ms per step) over the mean of its two
# probes. Prints each round and the median; appends one JSON line to bench/results/cpu-<host>-<date>.jsonl.
# QUANTIZATION (none|int8|q4, default none) is passed to `hichat bench engine --quantization`; with int8
# the bytes per step count each linear weight and the lm_head (tied or not) as one byte per element plus
# a 4-byte scale per row; with q4 each linear weight as its 4-bit rows (whole 64-byte lines of 128
# elements) plus a 2-byte scale per 32 of them, and the lm_head as int8.
# Usage: bench/decode_vs_bandwidth.sh CHECKPOINT_DIR [BUILD_DIR] [ROUNDS] [QUANTIZATION]
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: bench/decode_vs_bandwidth.sh CHECKPOINT_DIR [BUILD_DIR] [ROUNDS] [QUANTIZATION]}
build=${2:-build}
rounds=${3:-5}
quant=${4:-none}
out=bench/results/cpu-$(hostname)-$(date -u +%Y-%m-%d).jsonl
probe() {
    "$build"/tests/backend_cpu/cpu_ops_bench --threads 2 --no-gemv --no-gemm --no-attention |
        sed -n 's/.*"threads":2,"gbps":\([0-9.]*\).*/\1/p'
}
# Bytes a decode step reads: every tensor, except the embedding table when an untied lm_head exists
# (then only one embedding row is read).
bytes=$(python3 - "$model" "$quant" <<'PY'
import glob, json, math, struct, sys
sizes = {}
for path in glob.glob(sys.argv[1] + "/*.safetensors"):
    with open(path, "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    for k, v in header.items():
        if k == "__metadata__":
            continue
        size = v["data_offsets"][1] - v["data_offsets"][0]
        sizes[k] = (size, v["shape"])
if "lm_head.weight" in sizes:
    sizes.pop("model.embed_tokens.weight", None)
else:  # tied: the embedding table is the lm_head
    sizes["lm_head.weight"] = sizes.pop("model.embed_tokens.weight")
def read(k, size, shape):
    linear = ".layers." in k and k.endswith("_proj.weight")
    if sys.argv[2] == "q4" and linear:
        lines = (shape[1] + 127) // 128
        return shape[0] * lines * (64 + 4 * 2)
    if sys.argv[2] in ("int8", "q4") and (k == "lm_head.weight" or linear):
        return math.prod(shape) + 4 * shape[0]
    return size
print(sum(read(k, *v) for k, v in sizes.items()))
PY
)
echo "weights read per decode step: $bytes bytes"
ratios=()
mss=()
for r in $(seq "$rounds"); do
    before=$(probe)
    ms=$("$build"/tools/hichat bench engine --model "$model" --input-len 128 --output-len 16 --batch 1 --threads 2 \
        --repeat 1 --quantization "$quant" | sed -n 's/.*"ms_per_token":\([0-9.]*\).*/\1/p')
    after=$(probe)
    ratio=$(python3 -c "b=$bytes/($ms*1e-3)/1e9; print(f'{b:.2f} {b/(($before+$after)/2):.3f}')")
    echo "round $r: bandwidth $before / $after GB/s, decode $ms ms/step ($(python3 -c "print(f'{1000/$ms:.1f}')") tok/s) = ${ratio% *} GB/s, ratio ${ratio#* }"
    ratios+=("${ratio#* }")
    mss+=("$ms")
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
echo "median ratio of decode read rate to measured bandwidth: $median"
echo "{\"bench\":\"decode_vs_bandwidth\",\"commit\":\"$(git rev-parse --short HEAD)\",\"date\":\"$(date -u +%FT%TZ)\",\"model\":\"$model\",\"quantization\":\"$quant\",\"threads\":2,\"rounds\":$rounds,\"ms_per_token\":[$(IFS=,; echo "${mss[*]}")],\"ratios\":[$(IFS=,; echo "${ratios[*]}")],\"median_ratio\":$median}" >> "$out"
