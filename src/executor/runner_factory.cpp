#include "executor/runner_factory.h"

#include <sys/sysinfo.h>

#include <algorithm>

#include "executor/cpu_kv_pool.h"
#include "executor/cpu_runner.h"
#ifdef HICHAT_HAVE_CUDA
#include "backend/cuda/device_info.h"
#include "executor/cuda_runner.h"
#endif

namespace hichat::executor {
namespace {

int cpu_kv_blocks(const model::ModelConfig& cfg, const RunnerOptions& o, int context) {
    const int64_t per_token = CpuKvPool::bytes_per_token(cfg.num_layers, cfg.num_kv_heads, cfg.head_dim);
    int64_t bytes = o.cpu_kv_cache_bytes;
    if (bytes == 0) {
        struct sysinfo si {};
        sysinfo(&si);
        const int64_t quarter_ram = static_cast<int64_t>(si.totalram) * si.mem_unit / 4;
        const int64_t blocks_per_seq = (context + o.kv_block_size_tokens - 1) / o.kv_block_size_tokens;
        bytes = std::min(quarter_ram, per_token * o.kv_block_size_tokens * blocks_per_seq * std::max(1, o.max_num_seqs));
    }
    return static_cast<int>(std::max<int64_t>(1, bytes / (per_token * o.kv_block_size_tokens)));
}

}  // namespace

Result<DeviceKind> parse_device_kind(const std::string& text) {
    if (text == "auto") return DeviceKind::kAuto;
    if (text == "cpu") return DeviceKind::kCpu;
    if (text == "cuda") return DeviceKind::kCuda;
    return invalid_argument("--device must be auto, cpu or cuda, got '" + text + "'");
}

bool cuda_available() {
#ifdef HICHAT_HAVE_CUDA
    return cuda::cuda_device_available();
#else
    return false;
#endif
}

Result<std::unique_ptr<ModelRunner>> make_runner(const model::Checkpoint& checkpoint, const RunnerOptions& o) {
    const model::ModelConfig& cfg = checkpoint.config();
    const int context = o.max_context_tokens > 0 ? std::min(o.max_context_tokens, cfg.max_position_embeddings)
                                                 : cfg.max_position_embeddings;
    DeviceKind device = o.device;
    if (device == DeviceKind::kAuto) device = cuda_available() ? DeviceKind::kCuda : DeviceKind::kCpu;
    if (device == DeviceKind::kCuda) {
#ifdef HICHAT_HAVE_CUDA
        auto r = CudaRunner::create(checkpoint, {.gpu_memory_fraction = o.gpu_memory_fraction,
                                                 .kv_block_size_tokens = o.kv_block_size_tokens,
                                                 .max_num_tokens_per_step = std::max(o.max_num_tokens_per_step, 1),
                                                 .max_num_seqs = std::max(o.max_num_seqs, 1),
                                                 .max_context_tokens = context});
        if (!r.ok()) return r.status();
        return std::unique_ptr<ModelRunner>(std::move(r).value());
#else
        return unimplemented("--device cuda: this build has no CUDA backend");
#endif
    }
    return std::unique_ptr<ModelRunner>(std::make_unique<CpuRunner>(
        checkpoint, CpuRunnerConfig{.num_threads = o.num_threads,
                                    .num_kv_blocks = cpu_kv_blocks(cfg, o, context),
                                    .kv_block_size_tokens = o.kv_block_size_tokens}));
}

}  // namespace hichat::executor
