#!/usr/bin/env bash
# Hardware counters of chosen kernels on the GPU machine (Nsight Compute; the Firecracker machines read
# them, gVisor ones do not: ../.library/device/KINDS.md), from the repo root with a bundle in .bundle
# (bin/ and lib/, or PACK holding them). Runs `cuda_ops_bench$SUFFIX $BENCH` (default fp8) under ncu for
# the kernels whose names match KERNELS (a regex, default fp8_gemv), skipping SKIP launches (default 20,
# past the warm-up) and profiling COUNT (default 8), with the clocks left alone (--clock-control none, as
# METHOD.md asks). Prints per launch: grid, duration, DRAM and memory throughput, achieved occupancy,
# registers and the top warp stall reasons; the report and the full details page in $OUT. E.g.
#   PACK=.bundle/next2.tar.xz KERNELS=fp8_gemv BENCH=fp8 bash scripts/device_ncu.sh
#   KERNELS='decode_kernel' BENCH=attention COUNT=4 bash scripts/device_ncu.sh
set -uo pipefail
[ -d .bundle/bin ] || tar -C .bundle -xJf "${PACK:-.bundle/pack.tar.xz}"
. .bundle/env.sh
ncu_bin=$(command -v ncu || ls -d /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
[ -n "$ncu_bin" ] || { echo "device_ncu: no ncu on this machine"; exit 1; }
timeout "${TIMEOUT:-400}" "$ncu_bin" --clock-control none --kernel-name "regex:${KERNELS:-fp8_gemv}" \
  --launch-skip "${SKIP:-20}" --launch-count "${COUNT:-8}" \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
  --section WarpStateStats -f -o "$OUT/ncu" "cuda_ops_bench${SUFFIX:-}" "${BENCH:-fp8}" > "$OUT/ncu_run.log" 2>&1
echo "ncu rc=$? ($ncu_bin)"
"$ncu_bin" --import "$OUT/ncu.ncu-rep" --page details > "$OUT/ncu_details.txt" 2>&1
grep -E '^  [^ ].*\(|Grid Size|Duration|DRAM Throughput|^    Memory Throughput|Achieved Occupancy|Registers Per Thread|Stall' \
  "$OUT/ncu_details.txt" | head -n 200
