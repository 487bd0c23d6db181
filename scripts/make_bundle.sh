#!/usr/bin/env bash
# make_bundle.sh BUILD_DIR OUT_DIR [EXECUTABLE...]
#
# Makes a relocatable bundle of built executables for a GPU machine (Ubuntu 24.04, CUDA 13 under
# /usr/local/cuda): OUT_DIR/bin/<exe>, OUT_DIR/lib/<the shared libraries they need>, OUT_DIR/env.sh
# and OUT_DIR/run.sh. EXECUTABLE paths are relative to BUILD_DIR; by default tools/hichat and the test
# and bench binaries a GPU run needs, where they were built.
#
# Left out of lib/, because the target machine has them (and newer): glibc (libc, libm, libpthread,
# libdl, librt, ld-linux), libstdc++ and libgcc_s (backward compatible), the driver (libcuda,
# libnvidia-*) and the CUDA toolkit's libcublas*/libcudart* (too big; env.sh puts CUDA's lib64 on
# LD_LIBRARY_PATH). Everything else ldd names is copied (pcre2, sentencepiece, protobuf-lite, utf8proc,
# OpenSSL, ...). With patchelf the binaries get RUNPATH $ORIGIN/../lib (and the libraries $ORIGIN);
# without it, run.sh / env.sh put lib/ on LD_LIBRARY_PATH instead.
#
# Usage on the GPU machine:  . OUT_DIR/env.sh && backend_cuda_tests      or  OUT_DIR/run.sh hichat ...
# Set STRIP=1 to strip debug info from the copies (smaller bundle, no line numbers in backtraces).
set -euo pipefail

if [[ $# -lt 2 ]]; then
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
build_dir=$(cd "$1" && pwd)
out_dir=$2
shift 2
default_exes=(tools/hichat tests/backend_cuda/backend_cuda_tests tests/backend_cuda/cuda_ops_bench
              tests/executor/executor_tests)
if [[ $# -gt 0 ]]; then
    exes=("$@")
    explicit=1
else
    exes=("${default_exes[@]}")
    explicit=0
fi

is_excluded() {
    case "$1" in
        linux-vdso.so* | ld-linux*.so* | libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | \
            libresolv.so* | libutil.so* | libstdc++.so* | libgcc_s.so* | libcuda.so* | libnvidia-*.so* | \
            libcublas*.so* | libcudart*.so*)
            return 0 ;;
    esac
    return 1
}

rm -rf "$out_dir"
mkdir -p "$out_dir/bin" "$out_dir/lib"
out_dir=$(cd "$out_dir" && pwd)

num_copied=0
for exe in "${exes[@]}"; do
    src="$build_dir/$exe"
    if [[ ! -x "$src" ]]; then
        if [[ $explicit == 1 ]]; then
            echo "make_bundle: $src: no such executable" >&2
            exit 1
        fi
        echo "make_bundle: skipping $exe (not built in $build_dir)" >&2
        continue
    fi
    cp "$src" "$out_dir/bin/"
    num_copied=$((num_copied + 1))
    # Lines look like "libfoo.so.1 => /path/libfoo.so.1 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)".
    while read -r name arrow path _; do
        [[ "$arrow" == "=>" ]] || continue
        if [[ "$path" == "not" ]]; then
            is_excluded "$name" && continue
            echo "make_bundle: $exe needs $name, which ldd cannot find here" >&2
            exit 1
        fi
        is_excluded "$name" && continue
        [[ -e "$out_dir/lib/$name" ]] || cp -L "$path" "$out_dir/lib/$name"
    done < <(ldd "$src")
done
if [[ $num_copied == 0 ]]; then
    echo "make_bundle: nothing to bundle in $build_dir" >&2
    exit 1
fi

chmod u+w "$out_dir"/bin/* "$out_dir"/lib/* 2>/dev/null || true
if [[ "${STRIP:-0}" == 1 ]]; then
    strip --strip-debug "$out_dir"/bin/* "$out_dir"/lib/* 2>/dev/null || true
fi
rpath_note="LD_LIBRARY_PATH (no patchelf here)"
if command -v patchelf > /dev/null; then
    for f in "$out_dir"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
    for f in "$out_dir"/lib/*; do [[ -e "$f" ]] && patchelf --set-rpath '$ORIGIN' "$f"; done
    rpath_note="RUNPATH \$ORIGIN/../lib"
fi

cat > "$out_dir/env.sh" << 'ENV'
# Source this (". env.sh") on the GPU machine: bundle binaries on PATH, CUDA's libraries and the
# bundle's lib/ on LD_LIBRARY_PATH (lib/ too in case the binaries carry no RUNPATH).
hichat_bundle_dir=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)
for hichat_d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$hichat_d" ] && LD_LIBRARY_PATH="$hichat_d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
export LD_LIBRARY_PATH="$hichat_bundle_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$hichat_bundle_dir/bin:$PATH"
# AddressSanitizer builds: CUDA needs the shadow gap left unprotected.
export ASAN_OPTIONS="${ASAN_OPTIONS:-protect_shadow_gap=0}"
unset hichat_d
ENV

cat > "$out_dir/run.sh" << 'RUN'
#!/usr/bin/env bash
# run.sh EXECUTABLE [ARGS...]: runs bin/EXECUTABLE with env.sh's environment.
set -e
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
exe=$1
shift
exec "$hichat_bundle_dir/bin/$exe" "$@"
RUN
chmod +x "$out_dir/run.sh"

echo "make_bundle: $num_copied executables, $(ls "$out_dir/lib" | wc -l) libraries, $rpath_note," \
     "$(du -sh "$out_dir" | cut -f1) in $out_dir"
