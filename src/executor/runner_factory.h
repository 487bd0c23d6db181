// make_runner: picks and builds the backend for a checkpoint (`--device cuda|cpu|auto`).
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "executor/model_runner.h"
#include "model/checkpoint.h"

namespace hichat::executor {

enum class DeviceKind { kAuto, kCpu, kCuda };

// "auto", "cpu", "cuda"; errors name the flag value.
Result<DeviceKind> parse_device_kind(const std::string& text);

struct RunnerOptions {
    DeviceKind device = DeviceKind::kAuto;  // auto: CUDA when a device is present, else CPU
    int num_threads = 0;                    // CPU compute threads; 0: all
    int64_t cpu_kv_cache_bytes = 0;         // CPU KV pool; 0: enough for max_num_seqs full contexts, <= 1/4 RAM
    double gpu_memory_fraction = 0.9;       // CUDA KV pool: this fraction of free memory after weights
    int max_num_seqs = 64;
    int max_num_tokens_per_step = 512;
    int max_context_tokens = 0;             // 0: the model's max_position_embeddings
    int kv_block_size_tokens = 16;
};

// Errors: CUDA asked for but not built in or no device; the CUDA path's unsupported features.
Result<std::unique_ptr<ModelRunner>> make_runner(const model::Checkpoint& checkpoint, const RunnerOptions& options);

// True when this build has the CUDA backend and a device is present.
bool cuda_available();

}  // namespace hichat::executor
