#include "executor/runner_factory.h"

#include <sys/sysinfo.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "executor/cpu_capacity.h"
#include "executor/cpu_kv_pool.h"
#include "executor/cpu_runner.h"
#include "executor/cuda_support.h"
#include "executor/kv_pool_size.h"
#ifdef HICHAT_HAVE_CUDA
#include "backend/cuda/device_info.h"
#include "backend/cuda/device_probe.h"
#include "executor/cuda_runner.h"
#endif

namespace hichat::executor {
namespace {

int context_tokens(const model::ModelConfig& cfg, const RunnerOptions& o) {
    return o.max_context_tokens > 0 ? std::min(o.max_context_tokens, cfg.max_position_embeddings)
                                    : cfg.max_position_embeddings;
}

// The step sizes both runners are built for.
CudaStepShape step_shape(const RunnerOptions& o) {
    return {.max_num_seqs = std::max(o.max_num_seqs, 1),
            .max_num_tokens_per_step = std::max(o.max_num_tokens_per_step, 1)};
}

// An explicit --kv-cache-mb is taken as asked; the default is a quarter of the RAM, at most
// max_num_seqs full contexts.
int cpu_kv_blocks(const model::ModelConfig& cfg, const RunnerOptions& o, DType kv_dtype, int context) {
    const int64_t per_block =
        CpuKvPool::bytes_per_token(cfg.num_layers, cfg.num_kv_heads, cfg.head_dim, kv_dtype) * o.kv_block_size_tokens;
    if (o.num_kv_blocks > 0) return o.num_kv_blocks;
    if (o.cpu_kv_cache_bytes > 0) return static_cast<int>(std::max<int64_t>(1, o.cpu_kv_cache_bytes / per_block));
    struct sysinfo si {};
    sysinfo(&si);
    const int64_t quarter_ram = static_cast<int64_t>(si.totalram) * si.mem_unit / 4;
    return std::max(1, kv_pool_blocks({.budget_bytes = quarter_ram,
                                       .bytes_per_block = per_block,
                                       .max_num_seqs = o.max_num_seqs,
                                       .context_tokens = context,
                                       .block_size_tokens = o.kv_block_size_tokens}));
}

int cpu_host_kv_blocks(const model::ModelConfig& cfg, const RunnerOptions& o, DType kv_dtype) {
    if (o.num_host_kv_blocks > 0) return o.num_host_kv_blocks;
    if (o.host_kv_cache_bytes <= 0) return 0;
    const int64_t per_block =
        CpuKvPool::bytes_per_token(cfg.num_layers, cfg.num_kv_heads, cfg.head_dim, kv_dtype) * o.kv_block_size_tokens;
    return static_cast<int>(std::min<int64_t>(o.host_kv_cache_bytes / per_block, INT32_MAX));
}

bool cuda_kv_fp8(const RunnerOptions& o) { return o.kv_cache_dtype == KvCacheDtype::kFp8; }

// K and V of every layer (bf16 or E4M3) for host_kv_blocks blocks.
[[maybe_unused]] int64_t cuda_host_kv_bytes(const model::ModelConfig& cfg, const RunnerOptions& o) {
    if (o.num_host_kv_blocks > 0) {
        return int64_t{cuda_kv_fp8(o) ? 1 : 2} * 2 * cfg.num_layers * cfg.num_kv_heads * cfg.head_dim *
               o.kv_block_size_tokens * o.num_host_kv_blocks;
    }
    return o.host_kv_cache_bytes < 0 ? host_kv_auto_bytes() : o.host_kv_cache_bytes;
}

// What the CUDA runner's workspaces take for a step shape (activations of the largest step, logits of
// the most rows, attention's split workspace left out) plus 512 MiB for cuBLAS, the CUDA context's
// growth and graphs: the part of the GPU budget the planner does not see.
[[maybe_unused]] int64_t cuda_workspace_bytes(const model::ModelConfig& cfg, const CudaStepShape& step) {
    const int64_t t = step.max_num_tokens_per_step, hidden = cfg.hidden_size, inter = cfg.intermediate_size;
    const int64_t q = int64_t{cfg.num_heads} * cfg.head_dim, kv = int64_t{cfg.num_kv_heads} * cfg.head_dim;
    const int64_t per_token = hidden * 4 + hidden * 2 + (q + 2 * kv) * 2 + 2 * q * 2 + 2 * inter * 2 + inter * 2;
    return t * per_token + int64_t{step.max_num_seqs} * cfg.vocab_size * 4 * 2 + (int64_t{512} << 20);
}

// The placement inputs for this model on the probed device: the budget is --gpu-memory-gb or the free
// memory, less the workspaces; the KV to plan for is max_num_seqs full contexts, but at most half the
// budget and at least one full context (the runner's minimum): a server's defaults (256 sequences of
// the model's whole context) would otherwise leave no room for layers, and its pool takes what the
// budget leaves anyway. The step is timed for max_num_seqs tokens.
[[maybe_unused]] PlacementInputs placement_inputs(const model::ModelConfig& cfg, const RunnerOptions& o, int context,
                                                  int64_t free_bytes, double h2d, double hbm, double flops,
                                                  const CpuCapacity& cpu) {
    const bool fp8 = cfg.quant.quantized() && cfg.quant.weight_dtype == DType::kF8E4M3 &&
                     cfg.quant.weight_scale != model::WeightScaleKind::kBlock;
    const int64_t budget = (o.gpu_memory_bytes > 0 ? o.gpu_memory_bytes : free_bytes) -
                           cuda_workspace_bytes(cfg, step_shape(o));
    const ModelFootprint model =
        model_footprint(cfg, fp8 ? DType::kF8E4M3 : DType::kBF16, cuda_kv_fp8(o) ? DType::kF8E4M3 : DType::kBF16);
    const int64_t kv_token_bytes = std::max<int64_t>(1, model.kv_bytes_per_token_layer * model.num_layers);
    const int64_t kv_tokens = std::max<int64_t>(
        context, std::min<int64_t>(int64_t{std::max(1, o.max_num_seqs)} * context, budget / 2 / kv_token_bytes));
    return {.model = model,
            .machine = {.gpu_budget_bytes = std::max<int64_t>(budget, 0),
                        .host_budget_bytes = host_memory_bytes(),
                        .gpu_memory_bytes_per_s = hbm,
                        .gpu_flops_per_s = flops,
                        .pcie_bytes_per_s = h2d,
                        .cpu_memory_bytes_per_s = std::max(cpu.memory_bytes_per_s, 1.0),
                        .cpu_flops_per_s = std::max(cpu.flops_per_s, 1.0)},
            .num_tokens_kv = kv_tokens,
            .num_tokens_step = std::max(1, o.max_num_seqs),
            .gpu_layers = o.gpu_layers,
            .offload = o.offload};
}

Result<std::unique_ptr<ModelRunner>> make_cuda_runner(const model::Checkpoint& checkpoint, const RunnerOptions& o,
                                                      int context, std::string* placement) {
#ifdef HICHAT_HAVE_CUDA
    const CudaStepShape step = step_shape(o);
    const model::ModelConfig& cfg = checkpoint.config();
    int num_streamed = 0, num_cpu = 0, num_kv_blocks = o.num_kv_blocks;
    int64_t kv_budget = 0;
    const bool placing = o.gpu_layers >= 0 || o.gpu_memory_bytes > 0 || o.offload != OffloadMode::kAuto;
    // Without a flag, a first plan on nominal rates says whether the model fits; the rates are measured
    // only when something leaves the GPU.
    auto probe = cuda::probe_device(placing ? size_t{256} << 20 : size_t{1} << 20);
    if (!probe.ok()) return probe.status();
    // The CPU's rates only matter where layers may go to the CPU.
    const bool cpu_possible = o.offload != OffloadMode::kStream;
    CpuCapacity cpu_rates = placing && cpu_possible ? measure_cpu_capacity(o.num_threads) : CpuCapacity{1, 1};
    PlacementInputs in = placement_inputs(cfg, o, context, probe->free_bytes, probe->h2d_bytes_per_s,
                                          probe->memory_bytes_per_s, probe->bf16_flops_per_s, cpu_rates);
    auto plan = plan_placement(in);
    if (placing || (plan.ok() && plan->num_layers_gpu < cfg.num_layers)) {
        if (!placing) {
            probe = cuda::probe_device();
            if (!probe.ok()) return probe.status();
            if (cpu_possible) cpu_rates = measure_cpu_capacity(o.num_threads);
            in = placement_inputs(cfg, o, context, probe->free_bytes, probe->h2d_bytes_per_s, probe->memory_bytes_per_s,
                                  probe->bf16_flops_per_s, cpu_rates);
            plan = plan_placement(in);
        }
        if (!plan.ok()) {
            char what[160];
            std::snprintf(what, sizeof(what), "%s %.3f GiB less the step's workspaces (%.3f GiB): ",
                          o.gpu_memory_bytes > 0 ? "--gpu-memory-gb" : "free GPU memory",
                          static_cast<double>(o.gpu_memory_bytes > 0 ? o.gpu_memory_bytes : probe->free_bytes) / (1 << 30),
                          static_cast<double>(cuda_workspace_bytes(cfg, step)) / (1 << 30));
            return Status(plan.status().code(), what + plan.status().message());
        }
        num_streamed = plan->num_layers_stream;
        num_cpu = plan->num_layers_cpu;
        // CPU layers keep their KV in host RAM, block for block with the device pool: both hold the
        // planned KV (what the host budget was checked for), not whatever the device has free.
        // (plus a partial block per sequence).
        if (num_cpu > 0 && num_kv_blocks == 0) {
            num_kv_blocks = static_cast<int>((in.num_tokens_kv + o.kv_block_size_tokens - 1) / o.kv_block_size_tokens) +
                            std::max(1, o.max_num_seqs);
        }
        if (o.gpu_memory_bytes > 0) kv_budget = in.machine.gpu_budget_bytes - plan->weight_bytes_gpu - plan->stream_buffer_bytes;
        if (placement != nullptr) {
            char line[128], cpu[96] = "";
            std::snprintf(line, sizeof(line),
                          "\nmeasured: PCIe host->device %.1f GB/s, GPU memory %.0f GB/s, bf16 peak %.0f TFLOP/s",
                          probe->h2d_bytes_per_s / 1e9, probe->memory_bytes_per_s / 1e9, probe->bf16_flops_per_s / 1e12);
            if (cpu_possible) {
                std::snprintf(cpu, sizeof(cpu), "; CPU bf16 GEMV %.1f GB/s, 64-token GEMM %.0f GFLOP/s",
                              cpu_rates.memory_bytes_per_s / 1e9, cpu_rates.flops_per_s / 1e9);
            }
            *placement = describe(*plan) + line + cpu;
        }
    }
    auto r = CudaRunner::create(checkpoint, {.gpu_memory_fraction = o.gpu_memory_fraction,
                                             .num_kv_blocks = num_kv_blocks,
                                             .kv_block_size_tokens = o.kv_block_size_tokens,
                                             .max_num_tokens_per_step = step.max_num_tokens_per_step,
                                             .max_num_seqs = step.max_num_seqs,
                                             .max_context_tokens = context,
                                             .capture_graphs_at_start = true,
                                             .kv_fp8 = cuda_kv_fp8(o),
                                             .host_kv_cache_bytes = cuda_host_kv_bytes(checkpoint.config(), o),
                                             .num_streamed_layers = num_streamed,
                                             .num_cpu_layers = num_cpu,
                                             .cpu_threads = o.num_threads,
                                             .kv_budget_bytes = kv_budget});
    if (!r.ok()) return r.status();
    return std::unique_ptr<ModelRunner>(std::move(r).value());
#else
    (void)checkpoint, (void)o, (void)context, (void)placement;
    return unimplemented("--device cuda: this build has no CUDA backend");
#endif
}

}  // namespace

int64_t host_memory_bytes() {
    struct sysinfo si {};
    sysinfo(&si);
    return static_cast<int64_t>(si.totalram) * si.mem_unit;
}

int64_t host_kv_auto_bytes() {
    int64_t available = 0;
    std::ifstream meminfo("/proc/meminfo");
    for (std::string key; meminfo >> key;) {
        int64_t kib = 0;
        meminfo >> kib;
        if (key == "MemAvailable:") available = kib * 1024;
        meminfo.ignore(64, '\n');
    }
    if (available <= 0) {
        struct sysinfo si {};
        sysinfo(&si);
        available = static_cast<int64_t>(si.freeram) * si.mem_unit;
    }
    return std::min<int64_t>(available / 5, int64_t{64} << 30);
}

Result<DeviceKind> parse_device_kind(const std::string& text) {
    if (text == "auto") return DeviceKind::kAuto;
    if (text == "cpu") return DeviceKind::kCpu;
    if (text == "cuda") return DeviceKind::kCuda;
    return invalid_argument("--device must be auto, cpu or cuda, got '" + text + "'");
}

Result<int> parse_gpu_layers(const std::string& text) {
    if (text == "auto") return -1;
    char* end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v < 0 || v > 100000)
        return invalid_argument("--gpu-layers must be auto or a layer count >= 0, got '" + text + "'");
    return static_cast<int>(v);
}

Result<OffloadMode> parse_offload_mode(const std::string& text) {
    if (text == "auto") return OffloadMode::kAuto;
    if (text == "cpu") return OffloadMode::kCpu;
    if (text == "stream") return OffloadMode::kStream;
    return invalid_argument("--offload must be auto, cpu or stream, got '" + text + "'");
}

Result<KvCacheDtype> parse_kv_cache_dtype(const std::string& text) {
    if (text == "auto") return KvCacheDtype::kAuto;
    if (text == "bf16") return KvCacheDtype::kBf16;
    if (text == "f16") return KvCacheDtype::kF16;
    if (text == "fp32" || text == "f32") return KvCacheDtype::kF32;
    if (text == "fp8") return KvCacheDtype::kFp8;
    return invalid_argument("--kv-cache-dtype must be auto, bf16, f16, fp32 or fp8, got '" + text + "'");
}

const char* kv_cache_dtype_name(KvCacheDtype dtype) {
    switch (dtype) {
        case KvCacheDtype::kAuto: return "auto";
        case KvCacheDtype::kBf16: return "bf16";
        case KvCacheDtype::kF16: return "f16";
        case KvCacheDtype::kF32: return "fp32";
        case KvCacheDtype::kFp8: return "fp8";
    }
    return "?";
}

Result<DType> cpu_kv_dtype(KvCacheDtype dtype) {
    switch (dtype) {
        case KvCacheDtype::kAuto: return kCpuKvAutoDtype;
        case KvCacheDtype::kBf16: return DType::kBF16;
        case KvCacheDtype::kF16: return DType::kF16;
        case KvCacheDtype::kF32: return DType::kF32;
        case KvCacheDtype::kFp8: break;
    }
    return unimplemented("--kv-cache-dtype fp8: the CPU runner keeps its KV cache in bf16, f16 or fp32; fp8 is the "
                         "CUDA backend's (use auto, bf16, f16 or fp32)");
}

CudaPresence cuda_presence() {
#ifdef HICHAT_HAVE_CUDA
    return cuda::cuda_device_available() ? CudaPresence::kPresent : CudaPresence::kNoDevice;
#else
    return CudaPresence::kNotBuilt;
#endif
}

bool cuda_available() { return cuda_presence() == CudaPresence::kPresent; }

namespace {

Result<DeviceChoice> choose_backend(const model::ModelConfig& cfg, const RunnerOptions& o, CudaPresence presence) {
    if (o.device == DeviceKind::kCpu) return DeviceChoice{.device = DeviceKind::kCpu};
    const std::optional<std::string> unsupported = cuda_unsupported_reason(cfg, step_shape(o));
    if (o.device == DeviceKind::kAuto) {
        if (presence != CudaPresence::kPresent) return DeviceChoice{.device = DeviceKind::kCpu};
        if (unsupported) return DeviceChoice{.device = DeviceKind::kCpu, .note = "device auto: using the CPU: " + *unsupported};
        return DeviceChoice{.device = DeviceKind::kCuda};
    }
    if (unsupported) return unimplemented("--device cuda: " + *unsupported);
    if (presence == CudaPresence::kNotBuilt) return unimplemented("--device cuda: this build has no CUDA backend");
    if (presence == CudaPresence::kNoDevice) return not_found("--device cuda: no CUDA device is available");
    return DeviceChoice{.device = DeviceKind::kCuda};
}

// The KV cache's type for the log, on CUDA: said when it is FP8 or could be.
std::string kv_cache_note(const model::ModelConfig& cfg, const RunnerOptions& o) {
    if (o.kv_cache_dtype == KvCacheDtype::kFp8) {
        return cfg.quant.kv_cache_fp8
                   ? "KV cache: FP8 (E4M3) with the checkpoint's per-layer k_scale / v_scale"
                   : "KV cache: FP8 (E4M3); warning: the checkpoint has no calibrated KV scales (kv_cache_scheme), "
                     "so layers without k_scale / v_scale use 1.0 and values beyond +-448 saturate";
    }
    if (o.kv_cache_dtype == KvCacheDtype::kAuto && cfg.quant.kv_cache_fp8)
        return "KV cache: bf16 (--kv-cache-dtype auto); the checkpoint carries FP8 KV scales, which "
               "--kv-cache-dtype fp8 would use";
    return "";
}

void append_note(DeviceChoice& choice, const std::string& line) {
    if (line.empty()) return;
    if (!choice.note.empty()) choice.note += "; ";
    choice.note += line;
}

}  // namespace

Result<DeviceChoice> choose_device(const model::ModelConfig& cfg, const RunnerOptions& o, CudaPresence presence) {
    Result<DeviceChoice> choice = choose_backend(cfg, o, presence);
    if (!choice.ok()) return choice;
    if (choice->device == DeviceKind::kCpu && o.kv_cache_dtype == KvCacheDtype::kFp8) {
        return unimplemented(std::string("--kv-cache-dtype fp8: the CPU runner") +
                             (o.device == DeviceKind::kCpu ? "" : " (which runs here)") +
                             " keeps its KV cache in bf16, f16 or fp32; fp8 is the CUDA backend's (use auto, bf16, "
                             "f16 or fp32)");
    }
    if (choice->device == DeviceKind::kCuda &&
        (o.kv_cache_dtype == KvCacheDtype::kF16 || o.kv_cache_dtype == KvCacheDtype::kF32)) {
        return unimplemented(std::string("--kv-cache-dtype ") + kv_cache_dtype_name(o.kv_cache_dtype) +
                             ": the CUDA backend" + (o.device == DeviceKind::kCuda ? "" : " (which runs here)") +
                             " keeps its KV cache in bf16 or fp8 (use auto, bf16 or fp8; f16 and fp32 are the CPU "
                             "runner's)");
    }
    if (choice->device == DeviceKind::kCpu) {
        const char* flag = o.gpu_layers >= 0 ? "--gpu-layers" : o.gpu_memory_bytes > 0 ? "--gpu-memory-gb"
                           : o.offload != OffloadMode::kAuto ? "--offload" : nullptr;
        if (flag != nullptr) {
            return unimplemented(std::string(flag) + ": places layers between the GPU and the host, but the CPU runner" +
                                 (o.device == DeviceKind::kCpu ? "" : " (which runs here)") + " holds every layer");
        }
    }
    if (choice->device == DeviceKind::kCuda) append_note(*choice, kv_cache_note(cfg, o));
    if (!cfg.quant.quantized()) return choice;
    if (!choice->note.empty()) choice->note += "; ";
    const bool cuda = choice->device == DeviceKind::kCuda && cfg.quant.weight_scale != model::WeightScaleKind::kBlock;
    const bool int8 = cfg.quant.weight_dtype == DType::kI8;
    const bool q4 = cfg.quant.weight_dtype == DType::kQ4;
    choice->note += "checkpoint: " + cfg.quant.describe() +
                    (cuda   ? ": linear layers stay FP8 on the GPU (FP8 GEMV up to 8 tokens, cuBLASLt FP8 GEMM "
                              "beyond) where the kernels take their shape, else they run dequantized to bf16"
                     : int8 ? ": linear layers run int8 x int8 (activations quantized per token), integer sums per row"
                     : q4   ? std::string(": linear layers run 4-bit x int8 (activations quantized per token), integer sums "
                                          "per group of 32") +
                                  (cfg.quant.method == model::QuantMethod::kOnLoad ? ", the lm_head int8 x int8" : "")
                            : ": its FP8 weights run dequantized to bf16");
    return choice;
}

Result<std::unique_ptr<ModelRunner>> make_runner(const model::Checkpoint& checkpoint, const RunnerOptions& o,
                                                 std::string* placement) {
    if (placement != nullptr) placement->clear();
    const model::ModelConfig& cfg = checkpoint.config();
    const int context = context_tokens(cfg, o);
    auto choice = choose_device(cfg, o, cuda_presence());
    if (!choice.ok()) return choice.status();
    if (choice->device == DeviceKind::kCuda) return make_cuda_runner(checkpoint, o, context, placement);
    const Result<DType> kv_dtype = cpu_kv_dtype(o.kv_cache_dtype);
    if (!kv_dtype.ok()) return kv_dtype.status();
    return std::unique_ptr<ModelRunner>(std::make_unique<CpuRunner>(
        checkpoint, CpuRunnerConfig{.num_threads = o.num_threads,
                                    .num_kv_blocks = cpu_kv_blocks(cfg, o, *kv_dtype, context),
                                    .kv_block_size_tokens = o.kv_block_size_tokens,
                                    .kv_dtype = *kv_dtype,
                                    .num_host_kv_blocks = cpu_host_kv_blocks(cfg, o, *kv_dtype)}));
}

}  // namespace hichat::executor
