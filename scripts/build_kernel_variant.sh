#!/usr/bin/env bash
# build_kernel_variant.sh BUILD_DIR NAME SOURCE "NVCC FLAGS" [TARGET...]
#
# One CUDA source of backend_cuda recompiled with extra flags (typically -D knobs a kernel reads for
# measurement) and linked into copies of TARGETs named <exe>_NAME, in BUILD_DIR/variants/NAME; the
# build itself is left as it is. For A/B runs on the GPU machine (scripts/device_fp8_gemv_ab.sh), e.g.
#   scripts/build_kernel_variant.sh build u2 src/backend/cuda/gemv_fp8.cu "-DFP8_UNROLL=2"
# TARGETs default to tools/hichat, tests/backend_cuda/cuda_ops_bench and tests/backend_cuda/backend_cuda_tests.
set -eu
[ $# -ge 4 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
build=$(cd "$1" && pwd); name=$2; source=$(basename "$3"); flags=$4; shift 4
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(tools/hichat tests/backend_cuda/cuda_ops_bench tests/backend_cuda/backend_cuda_tests)
out=$build/variants/$name; mkdir -p "$out"
cd "$build"
object=src/backend/cuda/CMakeFiles/backend_cuda.dir/$source.o
compile=$(ninja -t commands "${targets[0]}" | grep -F -- "-o $object" | head -n 1 || true)
[ -n "$compile" ] || { echo "build_kernel_variant: no compile command for $object in $build" >&2; exit 1; }
compile=${compile/" -o $object"/" -o $out/$source.o"}
compile=${compile/" -MF "/" $flags -MF "}
compile=$(echo "$compile" | sed -E "s# -MF [^ ]+# -MF $out/$source.d#")
eval "$compile"
cp src/backend/cuda/libbackend_cuda.a "$out/"
(cd "$out" && ar r libbackend_cuda.a "$source.o")
for t in "${targets[@]}"; do
  link=$(ninja -t commands "$t" | tail -n 1)
  link=${link//src\/backend\/cuda\/libbackend_cuda.a/$out\/libbackend_cuda.a}
  link=$(echo "$link" | sed -E "s# -o $t # -o $out/$(basename "$t")_$name #")
  eval "$link"
done
ls "$out"
