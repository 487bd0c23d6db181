#include "backend/cpu/cpu_features.h"

#include <algorithm>
#include <atomic>

namespace hichat::cpu {
namespace {

SimdLevel detect() {
#if defined(__x86_64__) && defined(HICHAT_CPU_X86_KERNELS)
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                __builtin_cpu_supports("f16c");
    bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    if (avx512 && __builtin_cpu_supports("avx512bf16")) return SimdLevel::kAvx512Bf16;
    if (avx512) return SimdLevel::kAvx512;
    if (avx2) return SimdLevel::kAvx2;
#endif
    return SimdLevel::kPortable;
}

bool detect_avx512_vnni() {
#if defined(__x86_64__) && defined(HICHAT_CPU_X86_KERNELS)
    __builtin_cpu_init();
    return detect() >= SimdLevel::kAvx512 && __builtin_cpu_supports("avx512vnni");
#else
    return false;
#endif
}

std::atomic<int>& forced_level() {
    static std::atomic<int> level{-1};  // -1: not forced
    return level;
}

}  // namespace

std::string_view simd_level_name(SimdLevel level) {
    switch (level) {
        case SimdLevel::kPortable: return "portable";
        case SimdLevel::kAvx2: return "avx2";
        case SimdLevel::kAvx512: return "avx512";
        case SimdLevel::kAvx512Bf16: return "avx512_bf16";
    }
    return "?";
}

SimdLevel detected_simd_level() {
    static const SimdLevel level = detect();
    return level;
}

bool cpu_has_avx512_vnni() {
    static const bool vnni = detect_avx512_vnni();
    return vnni;
}

SimdLevel active_simd_level() {
    int forced = forced_level().load(std::memory_order_relaxed);
    return forced < 0 ? detected_simd_level() : static_cast<SimdLevel>(forced);
}

SimdLevel force_simd_level(SimdLevel level) {
    SimdLevel clamped = std::min(level, detected_simd_level());
    forced_level().store(static_cast<int>(clamped), std::memory_order_relaxed);
    return clamped;
}

}  // namespace hichat::cpu
