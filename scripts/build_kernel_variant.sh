#!/usr/bin/env bash
# build_kernel_variant.sh BUILD_DIR NAME SOURCES "NVCC FLAGS" [TARGET...]
#
# Sources of the project's libraries (SOURCES: one path, or several joined by commas; each source's
# library is found from its object, e.g. src/executor/cuda_runner.cpp in libexecutor.a) recompiled
# with extra flags (typically -D knobs a kernel or the runner reads for measurement) and linked into
# copies of TARGETs named
# <exe>_NAME, in BUILD_DIR/variants/NAME; the build itself is left as it is. With SRC_ROOT set to
# another checkout (a worktree with a patch applied), the sources and the headers under its src/ are
# compiled instead of the build's. For A/B runs on the GPU machine (scripts/device_fp8_gemv_ab.sh,
# scripts/device_attention_ab.sh), e.g.
#   scripts/build_kernel_variant.sh build u2 src/backend/cuda/gemv_fp8.cu "-DFP8_UNROLL=2"
#   SRC_ROOT=/tmp/wt scripts/build_kernel_variant.sh build kreg \
#     src/backend/cuda/attention.cu,src/backend/cuda/attention_decode.cu,src/backend/cuda/attention_decode_fp8.cu ""
# TARGETs default to tools/hichat, tests/backend_cuda/cuda_ops_bench and tests/backend_cuda/backend_cuda_tests.
set -eu
[ $# -ge 4 ] || { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd); name=$2; sources=$3; flags=$4; shift 4
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(tools/hichat tests/backend_cuda/cuda_ops_bench tests/backend_cuda/backend_cuda_tests)
src_root=${SRC_ROOT:-}
[ -z "$src_root" ] || src_root=$(cd "$src_root" && pwd)
out=$build/variants/$name; mkdir -p "$out"
cd "$build"
commands=$(ninja -t commands "${targets[0]}")   # every compile and link command the first target needs
IFS=, read -r -a list <<< "$sources"
libs=()   # the libraries rebuilt, as paths in the build (src/backend/cuda/libbackend_cuda.a)
for path in "${list[@]}"; do
  source=$(basename "$path"); dir=$(dirname "$path")
  object=$(echo "$commands" | grep -oE -- "-o $dir/CMakeFiles/[a-z_]+\.dir/$source\.o" | head -n 1 || true)
  object=${object#-o }
  [ -n "$object" ] || { echo "build_kernel_variant: no object for $path in $build" >&2; exit 1; }
  lib=$(basename "$(dirname "$object")" .dir); lib=$dir/lib$lib.a
  case " ${libs[*]} " in *" $lib "*) ;; *) cp "$lib" "$out/"; libs+=("$lib") ;; esac
  compile=$(echo "$commands" | grep -F -- "-o $object" | head -n 1 || true)
  [ -n "$compile" ] || { echo "build_kernel_variant: no compile command for $object in $build" >&2; exit 1; }
  compile=${compile/" -o $object"/" -o $out/$source.o"}
  compile=${compile/" -MF "/" $flags -MF "}
  compile=$(echo "$compile" | sed -E "s# -MF [^ ]+# -MF $out/$source.d#")
  [ -z "$src_root" ] || compile=${compile//$repo\/src/$src_root\/src}
  eval "$compile"
  (cd "$out" && ar r "$(basename "$lib")" "$source.o")
done
for t in "${targets[@]}"; do
  link=$(ninja -t commands "$t" | tail -n 1)
  for lib in "${libs[@]}"; do link=${link//$lib/$out\/$(basename "$lib")}; done
  link=$(echo "$link" | sed -E "s# -o $t # -o $out/$(basename "$t")_$name #")
  eval "$link"
done
ls "$out"
