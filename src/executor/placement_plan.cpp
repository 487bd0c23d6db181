#include "executor/placement_plan.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "base/check.h"

namespace hichat::executor {

namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

std::string printf_string(const char* format, double a, double b = 0, double c = 0) {
    char buf[128];
    std::snprintf(buf, sizeof(buf), format, a, b, c);
    return buf;
}

std::string gib(int64_t bytes) {
    return printf_string("%.2f GiB", static_cast<double>(bytes) / kBytesPerGiB);
}

// Per-step traffic spans KiB (residual rows) to GiB (streamed layers).
std::string human_bytes(int64_t bytes) {
    const double b = static_cast<double>(bytes);
    if (b >= kBytesPerGiB) return gib(bytes);
    if (b >= 1024.0 * 1024.0) return printf_string("%.1f MiB", b / (1024.0 * 1024.0));
    return printf_string("%.1f KiB", b / 1024.0);
}

LayerPlace place_of(OffloadMode mode) {
    return mode == OffloadMode::kStream ? LayerPlace::kStream : LayerPlace::kCpu;
}

int64_t kv_bytes_per_layer(const PlacementInputs& in) {
    return in.model.kv_bytes_per_token_layer * in.num_tokens_kv;
}

// What the GPU holds with `num_gpu` layers on it and the others placed `off`, by part.
struct GpuNeeds {
    int num_gpu = 0;
    int64_t resident = 0;
    int64_t layers = 0;
    int64_t kv = 0;       // the GPU layers', and the streamed layers' (they are computed there)
    int64_t buffers = 0;  // two streaming buffers when any layer streams
    int64_t total() const { return resident + layers + kv + buffers; }
};

GpuNeeds gpu_needs(const PlacementInputs& in, int num_gpu, LayerPlace off) {
    const ModelFootprint& m = in.model;
    const bool streams = off == LayerPlace::kStream && num_gpu < m.num_layers;
    return {.num_gpu = num_gpu,
            .resident = m.resident_weight_bytes,
            .layers = num_gpu * m.layer_weight_bytes,
            .kv = (streams ? m.num_layers : num_gpu) * kv_bytes_per_layer(in),
            .buffers = streams ? 2 * m.layer_weight_bytes : 0};
}

// "resident weights 2.00 GiB + 12 layers 4.87 GiB + KV 4.00 GiB + streaming buffers 0.81 GiB": the parts
// that take memory, so a message names every number that adds up to the need.
std::string gpu_need_terms(const GpuNeeds& n) {
    std::string s = "resident weights " + gib(n.resident);
    if (n.num_gpu > 0) s += " + " + std::to_string(n.num_gpu) + " layers " + gib(n.layers);
    if (n.kv > 0) s += " + KV " + gib(n.kv);
    if (n.buffers > 0) s += " + streaming buffers " + gib(n.buffers);
    return s;
}

// The number of GPU layers: in.gpu_layers when it fits, else the most that fit.
Result<int> choose_num_gpu(const PlacementInputs& in, LayerPlace off) {
    const int num_layers = in.model.num_layers;
    const int64_t budget = in.machine.gpu_budget_bytes;
    if (in.gpu_layers >= 0) {
        const GpuNeeds need = gpu_needs(in, std::min(in.gpu_layers, num_layers), off);
        if (need.total() <= budget) return need.num_gpu;
        return invalid_argument("--gpu-layers " + std::to_string(in.gpu_layers) + " needs " +
                                gib(need.total()) + " of GPU memory (" + gpu_need_terms(need) +
                                "), the GPU budget is " + gib(budget));
    }
    // Fewer GPU layers never need more memory, so the first count that fits is the most.
    for (int num_gpu = num_layers; num_gpu >= 0; --num_gpu) {
        if (gpu_needs(in, num_gpu, off).total() <= budget) return num_gpu;
    }
    const GpuNeeds least = gpu_needs(in, 0, off);
    return invalid_argument("GPU budget " + gib(budget) + " is too small: " + gpu_need_terms(least) +
                            " need " + gib(least.total()));
}

struct Term {
    double ms = 0;
    const char* limit = "";
};

// A roofline: the slower of reading the bytes and doing the FLOPs.
Term roofline(double bytes, double bytes_per_s, double flops, double flops_per_s, const char* memory_name,
              const char* compute_name) {
    const double memory_ms = 1e3 * bytes / bytes_per_s;
    const double compute_ms = 1e3 * flops / flops_per_s;
    return memory_ms >= compute_ms ? Term{memory_ms, memory_name} : Term{compute_ms, compute_name};
}

Term times(Term t, int n) { return {t.ms * n, t.limit}; }
Term larger(Term a, Term b) { return b.ms > a.ms ? b : a; }
Term sum(Term a, Term b) { return {a.ms + b.ms, larger(a, b).limit}; }

int num_crossings(const PlacementPlan& p) { return p.num_layers_cpu > 0 ? 2 : 0; }

StepTimeBound step_time(const PlacementInputs& in, const PlacementPlan& p) {
    const ModelFootprint& m = in.model;
    const MachineCapacity& c = in.machine;
    const double tokens = in.num_tokens_step;
    const auto layer_bytes = static_cast<double>(m.layer_weight_bytes);
    const double layer_flops = tokens * static_cast<double>(m.layer_flops_per_token);
    const Term gpu_layer = roofline(layer_bytes, c.gpu_memory_bytes_per_s, layer_flops, c.gpu_flops_per_s,
                                    "GPU memory bandwidth", "GPU compute");
    const Term resident = roofline(static_cast<double>(m.resident_weight_bytes), c.gpu_memory_bytes_per_s,
                                   tokens * static_cast<double>(m.resident_flops_per_token),
                                   c.gpu_flops_per_s, "GPU memory bandwidth", "GPU compute");
    const Term cpu_layer = roofline(layer_bytes, c.cpu_memory_bytes_per_s, layer_flops, c.cpu_flops_per_s,
                                    "CPU memory bandwidth", "CPU compute");
    const Term stream_layer = larger(Term{1e3 * layer_bytes / c.pcie_bytes_per_s, "PCIe"}, gpu_layer);
    const double crossing_bytes =
        num_crossings(p) * tokens * static_cast<double>(m.activation_bytes_per_token);

    const Term gpu = sum(resident, times(gpu_layer, p.num_layers_gpu));
    const Term cpu = times(cpu_layer, p.num_layers_cpu);
    const Term stream = times(stream_layer, p.num_layers_stream);
    const Term crossing{1e3 * crossing_bytes / c.pcie_bytes_per_s, "PCIe"};
    return {.gpu_ms = gpu.ms,
            .cpu_ms = cpu.ms,
            .stream_ms = stream.ms,
            .crossing_ms = crossing.ms,
            .limit = larger(larger(gpu, cpu), larger(stream, crossing)).limit};
}

// The plan with layers 0 .. num_gpu - 1 on the GPU and the rest placed `off`.
PlacementPlan lay_out(const PlacementInputs& in, int num_gpu, LayerPlace off) {
    const ModelFootprint& m = in.model;
    const int num_off = m.num_layers - num_gpu;
    PlacementPlan p;
    p.layers.assign(static_cast<size_t>(m.num_layers), off);
    std::fill_n(p.layers.begin(), num_gpu, LayerPlace::kGpu);
    p.num_layers_gpu = num_gpu;
    p.num_layers_cpu = off == LayerPlace::kCpu ? num_off : 0;
    p.num_layers_stream = off == LayerPlace::kStream ? num_off : 0;

    const GpuNeeds need = gpu_needs(in, num_gpu, off);
    p.weight_bytes_gpu = need.resident + need.layers;
    p.weight_bytes_cpu = p.num_layers_cpu * m.layer_weight_bytes;
    p.weight_bytes_stream = p.num_layers_stream * m.layer_weight_bytes;
    p.stream_buffer_bytes = need.buffers;
    p.kv_bytes_gpu = need.kv;
    p.kv_bytes_host = p.num_layers_cpu * kv_bytes_per_layer(in);
    p.pcie_bytes_per_step =
        p.weight_bytes_stream + int64_t{num_crossings(p)} * in.num_tokens_step * m.activation_bytes_per_token;
    p.gpu_budget_bytes = in.machine.gpu_budget_bytes;
    p.num_tokens_step = in.num_tokens_step;
    p.bound = step_time(in, p);
    return p;
}

Status check_host_memory(const PlacementInputs& in, const PlacementPlan& p) {
    const int64_t budget = in.machine.host_budget_bytes;
    if (p.host_bytes() <= budget) return ok_status();
    const std::string need = p.num_layers_cpu > 0
                                 ? std::to_string(p.num_layers_cpu) + " layers on the CPU need weights " +
                                       gib(p.weight_bytes_cpu) + " + KV " + gib(p.kv_bytes_host) + " = " +
                                       gib(p.host_bytes())
                                 : std::to_string(p.num_layers_stream) + " streamed layers need " +
                                       gib(p.weight_bytes_stream) + " of pinned weights";
    return invalid_argument("host RAM " + gib(budget) + " is too small: " + need);
}

Result<PlacementPlan> plan_with(const PlacementInputs& in, LayerPlace off) {
    auto num_gpu = choose_num_gpu(in, off);
    if (!num_gpu.ok()) return num_gpu.status();
    PlacementPlan p = lay_out(in, *num_gpu, off);
    HICHAT_RETURN_IF_ERROR(check_host_memory(in, p));
    return p;
}

// kAuto: the shorter step, the CPU on a tie (no pinned memory, no buffers); both plans are the same
// when everything fits the GPU.
Result<PlacementPlan> faster_of(Result<PlacementPlan> cpu, Result<PlacementPlan> stream) {
    if (cpu.ok() && stream.ok()) {
        return stream->bound.total_ms() < cpu->bound.total_ms() ? std::move(stream) : std::move(cpu);
    }
    if (cpu.ok()) return cpu;
    if (stream.ok()) return stream;
    if (cpu.status().message() == stream.status().message()) return cpu.status();
    return invalid_argument("no placement fits: with the other layers on the CPU, " + cpu.status().message() +
                            "; with them streamed, " + stream.status().message());
}

Status positive(double value, const char* name) {
    if (value > 0) return ok_status();
    return invalid_argument(std::string(name) + " must be positive, got " + printf_string("%g", value));
}

Status not_negative(int64_t value, const char* name) {
    if (value >= 0) return ok_status();
    return invalid_argument(std::string(name) + " must not be negative, got " + std::to_string(value));
}

// "layers 0-15", "layer 31".
std::string layer_range(int first, int count) {
    if (count == 1) return "layer " + std::to_string(first);
    return "layers " + std::to_string(first) + "-" + std::to_string(first + count - 1);
}

}  // namespace

Status PlacementInputs::validate() const {
    HICHAT_RETURN_IF_ERROR(positive(model.num_layers, "num_layers"));
    HICHAT_RETURN_IF_ERROR(positive(num_tokens_step, "num_tokens_step"));
    const std::pair<int64_t, const char*> sizes[] = {
        {model.layer_weight_bytes, "layer_weight_bytes"},
        {model.layer_flops_per_token, "layer_flops_per_token"},
        {model.resident_weight_bytes, "resident_weight_bytes"},
        {model.resident_flops_per_token, "resident_flops_per_token"},
        {model.kv_bytes_per_token_layer, "kv_bytes_per_token_layer"},
        {model.activation_bytes_per_token, "activation_bytes_per_token"},
        {machine.gpu_budget_bytes, "gpu_budget_bytes"},
        {machine.host_budget_bytes, "host_budget_bytes"},
        {num_tokens_kv, "num_tokens_kv"}};
    for (const auto& [value, name] : sizes) HICHAT_RETURN_IF_ERROR(not_negative(value, name));
    const std::pair<double, const char*> rates[] = {
        {machine.gpu_memory_bytes_per_s, "gpu_memory_bytes_per_s"},
        {machine.gpu_flops_per_s, "gpu_flops_per_s"},
        {machine.pcie_bytes_per_s, "pcie_bytes_per_s"},
        {machine.cpu_memory_bytes_per_s, "cpu_memory_bytes_per_s"},
        {machine.cpu_flops_per_s, "cpu_flops_per_s"}};
    for (const auto& [value, name] : rates) HICHAT_RETURN_IF_ERROR(positive(value, name));
    if (gpu_layers < -1)
        return invalid_argument("--gpu-layers must be auto or >= 0, got " + std::to_string(gpu_layers));
    return ok_status();
}

Result<PlacementPlan> plan_placement(const PlacementInputs& in) {
    HICHAT_RETURN_IF_ERROR(in.validate());
    if (in.offload != OffloadMode::kAuto) return plan_with(in, place_of(in.offload));
    return faster_of(plan_with(in, LayerPlace::kCpu), plan_with(in, LayerPlace::kStream));
}

std::string describe(const PlacementPlan& p) {
    const int num_layers = static_cast<int>(p.layers.size());
    const int num_off = num_layers - p.num_layers_gpu;
    std::string s = "placement for " + std::to_string(p.num_tokens_step) +
                    (p.num_tokens_step == 1 ? " token" : " tokens") +
                    " per step: " + std::to_string(p.num_layers_gpu) + " of " + std::to_string(num_layers) +
                    " layers on the GPU";
    if (p.num_layers_cpu > 0) s += ", " + std::to_string(p.num_layers_cpu) + " on the CPU";
    if (p.num_layers_stream > 0) s += ", " + std::to_string(p.num_layers_stream) + " streamed";

    s += "\n  GPU     " + (p.num_layers_gpu > 0 ? layer_range(0, p.num_layers_gpu) + " + " : std::string()) +
         "resident weights: weights " + gib(p.weight_bytes_gpu) + ", KV " + gib(p.kv_bytes_gpu);
    if (p.stream_buffer_bytes > 0) s += ", streaming buffers " + gib(p.stream_buffer_bytes);
    s += "; " + gib(p.gpu_bytes()) + " of the " + gib(p.gpu_budget_bytes) + " budget";
    if (p.num_layers_cpu > 0) {
        s += "\n  CPU     " + layer_range(p.num_layers_gpu, num_off) + ": weights " +
             gib(p.weight_bytes_cpu) + ", KV " + gib(p.kv_bytes_host) + " in host RAM";
    }
    if (p.num_layers_stream > 0) {
        s += "\n  stream  " + layer_range(p.num_layers_gpu, num_off) + ": weights " +
             gib(p.weight_bytes_stream) + " in pinned host memory, copied ahead of use into 2 GPU buffers";
    }
    s += "\n  PCIe    " + (p.pcie_bytes_per_step > 0 ? human_bytes(p.pcie_bytes_per_step) : "nothing") +
         " per step";
    if (p.num_layers_stream > 0) s += " (streamed weights)";
    if (p.num_layers_cpu > 0) s += " (residual rows, 2 CPU/GPU crossings)";

    const StepTimeBound& b = p.bound;
    s += "\n  bound   " +
         printf_string("%.2f ms per step, %.1f tokens/s", b.total_ms(),
                       1e3 * p.num_tokens_step / b.total_ms()) +
         printf_string(": GPU %.2f ms + CPU %.2f ms + streamed %.2f ms", b.gpu_ms, b.cpu_ms, b.stream_ms) +
         printf_string(" + crossings %.3f ms; limited by ", b.crossing_ms) + b.limit;
    return s;
}

ModelFootprint model_footprint(const model::ModelConfig& cfg, DType linear_dtype, DType kv_dtype) {
    CHECK_GT(dtype_size_bytes(linear_dtype), 0) << dtype_name(linear_dtype);
    const int64_t hidden = cfg.hidden_size, inter = cfg.intermediate_size;
    const int64_t q_width = int64_t{cfg.num_heads} * cfg.head_dim,
                  kv_width = int64_t{cfg.num_kv_heads} * cfg.head_dim;
    const int64_t matrix_params = hidden * (q_width + 2 * kv_width) + q_width * hidden + 3 * hidden * inter;
    const int64_t vector_params = 2 * hidden + (cfg.qk_norm ? 2 * cfg.head_dim : 0) +
                                  (cfg.qkv_bias ? q_width + 2 * kv_width : 0) + (cfg.o_bias ? hidden : 0) +
                                  (cfg.mlp_bias ? 2 * inter + hidden : 0);
    const int64_t table_params = int64_t{cfg.vocab_size} * hidden;
    const int64_t bf16_bytes = dtype_size_bytes(DType::kBF16);
    return {.num_layers = cfg.num_layers,
            .layer_weight_bytes = matrix_params * dtype_size_bytes(linear_dtype) + vector_params * bf16_bytes,
            .layer_flops_per_token = 2 * matrix_params,
            .resident_weight_bytes = ((cfg.tie_word_embeddings ? 1 : 2) * table_params + hidden) * bf16_bytes,
            .resident_flops_per_token = 2 * table_params,
            .kv_bytes_per_token_layer = 2 * kv_width * dtype_size_bytes(kv_dtype),
            .activation_bytes_per_token = hidden * static_cast<int64_t>(sizeof(float))};
}

}  // namespace hichat::executor
