// plan_placement(): where each decoder layer runs when the GPU cannot hold the whole model (issue 21):
// on the GPU, on the CPU, or streamed (weights in pinned host memory, copied to the GPU just ahead of
// use on a copy stream into one of two buffers, then computed on the GPU). A pure function of sizes,
// budgets and measured bandwidths, so every decision is tested without a GPU. No runner carries a plan
// out yet, and no flag reaches it yet (--gpu-layers, --offload, --gpu-memory-gb come with split execution).
//
// The shape of every plan: layers 0 .. G-1 on the GPU and all layers after them placed one way, CPU or
// streamed. A contiguous GPU prefix means the step crosses between CPU and GPU at most twice (to the
// host after layer G-1, back before the final norm, since lm_head stays on the GPU). One way for all
// off-GPU layers loses nothing: every layer costs the same under a given way and the step time is a sum
// over layers, so a mix is never faster than the better way alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "model/model_config.h"

namespace hichat::executor {

enum class LayerPlace { kGpu, kCpu, kStream };

// --offload: how the layers that leave the GPU run. kAuto: whichever gives the shorter step at the
// planned batch. A model that fits the GPU runs there whatever this says.
enum class OffloadMode { kAuto, kCpu, kStream };

// The sizes that decide placement. Decoder layers are taken as equal, as they are in every architecture
// the loader takes (Llama, Mistral, Qwen2, Qwen3).
struct ModelFootprint {
    int num_layers = 0;
    int64_t layer_weight_bytes = 0;          // one decoder layer's weights as the runner holds them
    int64_t layer_flops_per_token = 0;       // 2 x the layer's matrix parameters (attention scores left out)
    int64_t resident_weight_bytes = 0;       // embedding, final norm, lm_head: on the GPU whenever it is used
    int64_t resident_flops_per_token = 0;    // lm_head: 2 x vocab x hidden
    int64_t kv_bytes_per_token_layer = 0;    // K and V of one token in one layer
    int64_t activation_bytes_per_token = 0;  // the residual row that crosses a CPU/GPU boundary
};

// What the plan may use of this machine; the bandwidths are measured at start-up by the caller.
struct MachineCapacity {
    int64_t gpu_budget_bytes = 0;       // free VRAM x --gpu-memory-fraction, or --gpu-memory-gb
    int64_t host_budget_bytes = 0;      // host RAM for CPU layers, their KV and streamed weights
    double gpu_memory_bytes_per_s = 0;  // HBM read bandwidth
    double gpu_flops_per_s = 0;         // bf16 matrix FLOP/s
    double pcie_bytes_per_s = 0;        // pinned host -> device copy bandwidth (used for both directions)
    double cpu_memory_bytes_per_s = 0;  // read bandwidth of all compute threads together
    double cpu_flops_per_s = 0;         // the CPU linear kernels' FLOP/s on all compute threads
};

struct PlacementInputs {
    ModelFootprint model;
    MachineCapacity machine;
    int64_t num_tokens_kv = 0;  // KV the configured batch needs: max_num_seqs x context
    int num_tokens_step = 1;    // tokens per decode step the plan is timed for (the batch)
    int gpu_layers = -1;        // --gpu-layers: -1 auto (as many as fit), else N (N >= num_layers: all)
    OffloadMode offload = OffloadMode::kAuto;

    // kInvalidArgument naming the first bad field: a negative size, count or budget, num_layers or
    // num_tokens_step < 1, gpu_layers < -1, or a bandwidth or FLOP rate that is not positive.
    Status validate() const;
};

// The plan's step time, a lower bound from bytes and FLOPs (attention's KV reads, launch gaps and
// transfer latency left out). Each part is max(bytes / bandwidth, FLOPs / FLOP rate) per layer.
struct StepTimeBound {
    double gpu_ms = 0;       // resident weights and the GPU layers
    double cpu_ms = 0;       // the CPU layers
    double stream_ms = 0;    // the streamed layers, each max(its copy, its GPU compute): double buffering
                             // overlaps the copy of layer i + 1 with the compute of layer i
    double crossing_ms = 0;  // the residual rows over PCIe at each CPU/GPU boundary
    std::string limit;       // what bounds the largest part: "GPU memory bandwidth", "GPU compute",
                             // "CPU memory bandwidth", "CPU compute" or "PCIe"

    double total_ms() const { return gpu_ms + cpu_ms + stream_ms + crossing_ms; }
};

// Where everything lives and what a step costs. The weight bytes of the three places add up to the
// model's (resident + num_layers x layer); KV of a streamed layer stays on the GPU, where it is computed.
struct PlacementPlan {
    std::vector<LayerPlace> layers;  // [num_layers] kGpu for 0 .. num_layers_gpu - 1, then one place
    int num_layers_gpu = 0;
    int num_layers_cpu = 0;
    int num_layers_stream = 0;
    int64_t weight_bytes_gpu = 0;     // resident weights + the GPU layers'
    int64_t weight_bytes_cpu = 0;     // the CPU layers', in host RAM
    int64_t weight_bytes_stream = 0;  // the streamed layers', in pinned host memory
    int64_t stream_buffer_bytes = 0;  // on the GPU: 2 x a layer when any layer streams, else 0
    int64_t kv_bytes_gpu = 0;         // KV of the GPU and streamed layers for num_tokens_kv tokens
    int64_t kv_bytes_host = 0;        // KV of the CPU layers
    int64_t pcie_bytes_per_step = 0;  // streamed weights + residual rows at each CPU/GPU boundary
    int64_t gpu_budget_bytes = 0;     // the inputs', for describe()
    int num_tokens_step = 1;          // the inputs', for describe()
    StepTimeBound bound;

    int64_t gpu_bytes() const { return weight_bytes_gpu + stream_buffer_bytes + kv_bytes_gpu; }
    int64_t host_bytes() const { return weight_bytes_cpu + weight_bytes_stream + kv_bytes_host; }
};

// The plan for `in` (validated here first). The GPU keeps the most layers that fit its budget beside
// the resident weights, the KV of every layer it computes and, when layers stream, the two streaming
// buffers (or exactly in.gpu_layers); every layer when all fit. The rest run as in.offload says; under
// kAuto both ways are planned and the one with the shorter step at num_tokens_step is taken (the CPU on
// a tie). Errors (kInvalidArgument, one line naming every number in GiB): the GPU budget below what the
// plan needs with no layer on the GPU, or with in.gpu_layers layers; host RAM below the off-GPU layers'
// weights (and the CPU layers' KV); under kAuto, when neither way fits, both reasons in one line.
Result<PlacementPlan> plan_placement(const PlacementInputs& in);

// The start-up log block: layers and GiB per place, bytes over PCIe per step, the step time bound in ms
// and tokens/s with its parts and what limits it. Several lines, no trailing newline.
std::string describe(const PlacementPlan& plan);

// A Llama-family model as the CUDA runner holds it: the decoder layers' matrices in `linear_dtype`
// (kBF16, kF16, or kF8E4M3 / kI8, whose per-row scales, under 0.1%, are left out), norms, biases,
// embedding and lm_head in bf16 (one table when tied), KV in `kv_dtype`, and a residual row of fp32 (the
// runners keep the residual stream in fp32, so that is what crosses a boundary).
ModelFootprint model_footprint(const model::ModelConfig& cfg, DType linear_dtype, DType kv_dtype);

}  // namespace hichat::executor
