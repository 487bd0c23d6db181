// Which SIMD code path the CPU ops run: detected once at run time, so the binary runs on any
// x86-64 (and the portable path builds anywhere). Tests may force a lower level.
#pragma once

#include <string_view>

namespace hichat::cpu {

enum class SimdLevel { kPortable, kAvx2, kAvx512, kAvx512Bf16 };  // ordered: each implies the ones before

std::string_view simd_level_name(SimdLevel level);

// The best level this CPU and this build support (AVX2 also needs FMA and F16C; AVX-512 needs F, BW,
// VL, DQ; AVX-512 BF16 also AVX512_BF16, for vdpbf16ps). Computed once.
SimdLevel detected_simd_level();

// Whether this CPU and build have AVX512_VNNI (vpdpbusd) beside the AVX-512 level: the int8
// kernels' fast path. Computed once.
bool cpu_has_avx512_vnni();

// The level the ops use now: detected_simd_level() unless forced lower.
SimdLevel active_simd_level();

// Forces the ops onto `level`, clamped to detected_simd_level(); returns the level now active.
// For tests and benchmarks; not to be called while ops are running.
SimdLevel force_simd_level(SimdLevel level);

}  // namespace hichat::cpu
