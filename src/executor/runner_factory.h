// make_runner: picks and builds the backend for a checkpoint (`--device cuda|cpu|auto`). The choice is
// choose_device(), a pure function of the model's shape, the options and whether a GPU is present:
// every CUDA shape constraint (cuda_support.h) is checked there, once, before anything is allocated.
#pragma once

#include <memory>
#include <string>

#include "base/dtype.h"
#include "base/status.h"
#include "executor/model_runner.h"
#include "executor/placement_plan.h"
#include "model/checkpoint.h"

namespace hichat::executor {

enum class DeviceKind { kAuto, kCpu, kCuda };

// "auto", "cpu", "cuda"; errors name the flag value.
Result<DeviceKind> parse_device_kind(const std::string& text);

// The KV cache's element type (`--kv-cache-dtype`). auto: bf16 on CUDA (FP8 only when asked for, even
// where the checkpoint carries FP8 KV scales: the choice is the user's and the log says it), fp32 on
// the CPU (kCpuKvAutoDtype). CUDA takes auto, bf16 and fp8; the CPU runner auto, bf16, f16 and fp32
// (bf16 / f16: half the memory). Each refuses the others by name (choose_device).
enum class KvCacheDtype { kAuto, kBf16, kF16, kF32, kFp8 };

// "auto", "bf16", "f16", "fp32" (or "f32"), "fp8"; errors name the flag value.
Result<KvCacheDtype> parse_kv_cache_dtype(const std::string& text);

// The flag's spelling of a value ("auto", "bf16", "f16", "fp32", "fp8"), for messages.
const char* kv_cache_dtype_name(KvCacheDtype dtype);

// The CPU KV pool's element type for the flag: auto kCpuKvAutoDtype (fp32), bf16 kBF16, f16 kF16,
// fp32 kF32; fp8 is kUnimplemented, naming the flag.
Result<DType> cpu_kv_dtype(KvCacheDtype dtype);

struct RunnerOptions {
    DeviceKind device = DeviceKind::kAuto;  // auto: CUDA when a device is present and supports the model, else CPU
    int num_threads = 0;                    // CPU compute threads; 0: all
    int64_t cpu_kv_cache_bytes = 0;         // CPU KV pool; 0: enough for max_num_seqs full contexts, <= 1/4 RAM
    double gpu_memory_fraction = 0.9;       // CUDA KV pool: this fraction of free memory after weights, at
                                            // most max_num_seqs full contexts
    int max_num_seqs = 64;
    int max_num_tokens_per_step = 512;
    int max_context_tokens = 0;             // 0: the model's max_position_embeddings
    int kv_block_size_tokens = 16;
    int num_kv_blocks = 0;                  // > 0: exactly this many KV blocks on either device (tests,
                                            // benchmarks), in place of the memory budgets above
    // The host-memory KV tier (evicted blocks kept in pinned RAM, copied back on a hit): 0 none, -1 auto
    // (CUDA: host_kv_auto_bytes(); the CPU: none, its pool is RAM already), else bytes.
    int64_t host_kv_cache_bytes = 0;
    int num_host_kv_blocks = 0;             // > 0: exactly this many host-tier blocks, on either device (tests)
    KvCacheDtype kv_cache_dtype = KvCacheDtype::kAuto;
    // Layer placement on CUDA (issue 21; placement_plan.h). gpu_layers (--gpu-layers): -1 auto, every
    // decoder layer that fits the GPU budget beside one full context's KV and the step's workspaces;
    // else the first N layers on the GPU. The others run as `offload` says (--offload; today streamed:
    // layers on the CPU inside a CUDA run are refused by name). gpu_memory_bytes (--gpu-memory-gb): the
    // GPU budget for weights, streaming buffers, workspaces and KV; 0: the device's free memory (the
    // KV pool then takes gpu_memory_fraction of what is left, as without placement).
    int gpu_layers = -1;
    OffloadMode offload = OffloadMode::kAuto;
    int64_t gpu_memory_bytes = 0;
};

// "auto" (-1) or a count >= 0, naming --gpu-layers in errors.
Result<int> parse_gpu_layers(const std::string& text);
// "auto", "cpu", "stream", naming --offload in errors.
Result<OffloadMode> parse_offload_mode(const std::string& text);

// The machine's RAM in bytes (sysinfo).
int64_t host_memory_bytes();

// The default host tier on CUDA: a fifth of the available RAM (MemAvailable), at most 64 GiB.
int64_t host_kv_auto_bytes();

// Whether this build has the CUDA backend and this machine a device for it.
enum class CudaPresence { kNotBuilt, kNoDevice, kPresent };
CudaPresence cuda_presence();

// True when this build has the CUDA backend and a device is present.
bool cuda_available();

// The backend make_runner builds (kCpu or kCuda). note: one line for the log when `auto` takes the CPU
// although a GPU is present, saying why ("device auto: using the CPU: the CUDA backend needs head_dim
// 64, 80, 96, 128 or 256, this model has 32"), for a quantized checkpoint how its weights run, and on CUDA the KV
// cache's type when it is FP8 or the checkpoint carries FP8 KV scales; else empty.
struct DeviceChoice {
    DeviceKind device = DeviceKind::kCpu;
    std::string note;
};

// auto: CUDA when `presence` is kPresent and cuda_unsupported_reason() finds nothing, else the CPU.
// Errors, for --device cuda only, checked in this order: the model or the step sizes unsupported on
// CUDA (kUnimplemented, naming the value and what is supported, in every build), no CUDA backend in
// this build (kUnimplemented), no device (kNotFound). On any device: --kv-cache-dtype fp8 where the CPU
// runs, f16 or fp32 where CUDA runs (kUnimplemented, naming the flag and value); a placement flag
// (--gpu-layers, --offload, --gpu-memory-gb) where the CPU runs, and --offload cpu anywhere (CPU layers
// inside a CUDA step are not built yet), kUnimplemented naming the flag.
Result<DeviceChoice> choose_device(const model::ModelConfig& cfg, const RunnerOptions& options, CudaPresence presence);

// Builds the runner on choose_device(cfg, options, cuda_presence())'s device; its errors, and the CUDA
// runner's (not enough device memory). On CUDA, when a placement flag is given or the model does not
// fit the device, the layers are placed by plan_placement() with the device probed (probe_device()),
// its errors (a budget too small) returned as they are; `placement`, when given, gets describe()'s
// block for the log (empty when every layer is on the GPU without planning).
Result<std::unique_ptr<ModelRunner>> make_runner(const model::Checkpoint& checkpoint, const RunnerOptions& options,
                                                 std::string* placement = nullptr);

}  // namespace hichat::executor
