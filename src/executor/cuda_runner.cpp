#include "executor/cuda_runner.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <optional>
#include <set>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_event.h"
#include "backend/cuda/cuda_graph.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/pinned_buffer.h"
#include "backend/cuda/gemm.h"
#include "backend/cuda/ops.h"
#include "base/check.h"
#include "executor/cpu_runner.h"
#include "executor/cuda_support.h"
#include "executor/cuda_weights.h"
#include "executor/kv_pool_size.h"

namespace hichat::executor {
namespace {

using cuda::bf16;

template <typename T, typename Buffer>   // cuda::DeviceBuffer or TensorView
T* ptr(const Buffer& b) {
    return static_cast<T*>(b.data());
}

constexpr size_t kSampleWords = sizeof(cuda::SampleRowParams) / sizeof(int32_t);
static_assert(sizeof(cuda::SampleRowParams) % sizeof(int32_t) == 0);
static_assert(cuda::kMaxTopLogprobsDevice == sampling::kMaxTopLogprobs);

// One step's int32 metadata, packed in this order and copied to the device in one transfer. The
// offsets depend only on the counts, so a captured decode graph (fixed counts) always finds its data
// at the captured addresses.
struct StepLayout {
    size_t ids = 0, positions = 0, slots = 0, logit_rows = 0, cu_seqlens = 0, seq_lens_kv = 0, block_tables = 0,
           sampling = 0, total = 0;
    int num_tokens = 0, num_rows = 0;
    StepLayout() = default;
    // sampled: room for one cuda::SampleRowParams (5 words) per logit row.
    StepLayout(int num_tokens, int num_rows, int num_seqs, int table_stride, bool sampled)
        : num_tokens(num_tokens), num_rows(num_rows) {
        size_t at = 0;
        auto take = [&](size_t n) { size_t here = at; at += n; return here; };
        ids = take(static_cast<size_t>(num_tokens));
        positions = take(static_cast<size_t>(num_tokens));
        slots = take(static_cast<size_t>(num_tokens));
        logit_rows = take(static_cast<size_t>(num_rows));
        cu_seqlens = take(static_cast<size_t>(num_seqs) + 1);
        seq_lens_kv = take(static_cast<size_t>(num_seqs));
        block_tables = take(static_cast<size_t>(num_seqs) * table_stride);
        sampling = take(sampled ? static_cast<size_t>(num_rows) * kSampleWords : 0);
        total = at;
    }
};

// A decode step's graph: padded batch size and the power-of-two bucket of its longest context.
struct GraphKey {
    int batch, kv_len;
    bool sampled;   // sample_rows with per-row parameters, else argmax_rows
    bool picks;     // the graph ends with the pick; else with the logits (submit_forward(): pick() follows)
    auto operator<=>(const GraphKey&) const = default;
};

constexpr int kMinGraphKvLen = 256;

// FP8 GEMM: steps of up to kFp8GemvTokens tokens go to the FP8 GEMV; longer ones to cuBLASLt's
// unit-scale product, taken in chunks of fp8_scratch_rows() rows into an fp32 scratch of at most
// kFp8ScratchBytes.
constexpr int kFp8GemvTokens = 8;
constexpr size_t kFp8ScratchBytes = size_t{256} << 20;

int64_t widest_linear(const model::ModelConfig& cfg) {
    const int64_t q = int64_t{cfg.num_heads} * cfg.head_dim, kv = int64_t{cfg.num_kv_heads} * cfg.head_dim;
    return std::max<int64_t>({cfg.hidden_size, q + 2 * kv, 2 * int64_t{cfg.intermediate_size}});
}

int fp8_scratch_rows(const model::ModelConfig& cfg, int max_tokens) {
    const int64_t fit = static_cast<int64_t>(kFp8ScratchBytes / 4) / widest_linear(cfg);
    return static_cast<int>(std::clamp<int64_t>(fit / 16 * 16, 16, std::max(max_tokens, 16)));
}

// Batch sizes that have decode graphs: 1, 2, 4, 8, then every 8 up to 256, then every 32.
int graph_batch_bucket(int n) {
    if (n <= 8) return std::bit_ceil(static_cast<unsigned>(n));
    if (n <= 256) return (n + 7) / 8 * 8;
    return (n + 31) / 32 * 32;
}

}  // namespace

struct CudaRunner::Impl {
    const model::ModelConfig& cfg;
    CudaRunnerConfig config;
    CudaWeights weights;
    cuda::Gemm gemm;
    cudaStream_t stream = nullptr;
    cudaStream_t copy_stream = nullptr;   // host-tier copies
    // Streamed layers: their weights go up on weight_stream into the two staging buffers in turn
    // (layer i of them into stage i % 2), each copy after the layer that used the stage before it is
    // done (freed) and before its own layer runs (loaded). A step's first copies wait for its start.
    cudaStream_t weight_stream = nullptr;
    std::array<cuda::DeviceBuffer, 2> stage;
    std::array<cuda::CudaEvent, 2> stage_loaded, stage_freed;
    cuda::CudaEvent step_begun;
    std::vector<CudaLayerWeights> staged;   // [streamed layers] views into their stage
    int num_device_layers = 0;              // the layers the GPU computes (and keeps KV for)
    std::unique_ptr<CpuRunner> cpu;         // the CPU's layers, when any
    cuda::PinnedBuffer host_x;              // the residual rows crossing to the CPU and back
    int num_blocks = 0, num_host_blocks = 0, max_blocks_per_seq = 0, max_logit_rows = 0, max_graph_batch = 0;
    int32_t scratch_block = 0;   // one KV block outside the pool: where padded decode rows write
    int64_t q_width = 0, kv_width = 0, qkv_width = 0;
    StepLayout layout;           // this step's metadata offsets

    cuda::DeviceBuffer kv;        // [layers][2][(num_blocks + 1) * block_size * kv_width] bf16 or E4M3
    std::vector<std::pair<float, float>> kv_scales;   // FP8 KV: each layer's k_scale, v_scale
    cuda::DeviceBuffer inv_freq;  // [head_dim / 2] fp32
    cuda::DeviceBuffer x, h, qkv, q, attn, gate_up, act, rows, row_norm, logits, ids, meta, attn_workspace,
        sample_workspace, logprobs,   // logprobs: [max tokens per step] cuda::RowLogprobsOut
        masks,                        // a masked step's [max_logit_rows] mask_of_row, then its masks
        act_q, act_scale,             // FP8 weights only: a step's quantized GEMM input and its row scales,
        fp8_scratch;                  // and the unit-scale product of fp8_rows rows (fp32)
    int fp8_rows = 0;
    size_t attn_workspace_bytes = 0;
    cuda::PinnedBuffer host_logits;
    cuda::PinnedBuffer host_kv;   // [num_host_blocks][layers][2][block_size * kv_width] as the pool
    cuda::CudaEvent compute_done, copies_done;   // orders the copy stream after steps and steps after copies
    // Submitted steps, two at most in flight, take the two slots in turn: each has its own pinned
    // metadata (written while the other step runs) and ids, and an event after the ids' copy.
    struct Slot {
        cuda::PinnedBuffer meta, ids, logprobs, masks;
        cuda::CudaEvent done;
        int num_rows = 0;
        bool has_logprobs = false;   // the step computed row logprobs (some row asked)
    };
    std::array<Slot, 2> slots;
    int next_slot = 0, num_outstanding = 0;
    int last_submitted_rows = 0;  // logit rows of the last submitted step: what placeholders index
    std::map<GraphKey, cuda::CudaGraph> graphs;
    std::set<GraphKey> warmed;    // keys run once eagerly (plans made, kernels loaded), ready to capture
    std::vector<sampling::TokenLogprobs> collected_logprobs;   // of the last collected step
    // The step being submitted, from enqueue_forward() to end_step() (submit(), or submit_forward() to pick()).
    struct OpenStep {
        bool open = false;
        bool deferred = false;     // submit_forward(): the pick waits for pick()
        bool graph = false;        // a decode graph ran it
        int num_rows = 0;
        bool sampled = false;
        int num_top = -1;          // the most top logprobs a row asks for; -1: none
    } step;
    int mask_words = 0;            // ceil(vocab / 32)

    Impl(const model::Checkpoint& ckpt, const CudaRunnerConfig& c, CudaWeights w)
        : cfg(ckpt.config()),
          config(c),
          weights(std::move(w)),
          num_device_layers(static_cast<int>(weights.layers.size())),
          max_blocks_per_seq((c.max_context_tokens + c.kv_block_size_tokens - 1) / c.kv_block_size_tokens) {
        // A layer without calibrated scales takes 1.0 (choose_device()'s note says so).
        for (const model::LayerWeights& l : ckpt.weights().layers)
            kv_scales.emplace_back(l.k_scale > 0.0f ? l.k_scale : 1.0f, l.v_scale > 0.0f ? l.v_scale : 1.0f);
    }

    Status allocate();
    Status allocate_stages();
    // The logits of every logit row, to the host; waits for the step.
    void forward(const ForwardBatch& batch, std::vector<float>& logits);
    // Enqueues a step whose ids (argmax, or sampled by `rows` where any row samples) are copied to the
    // next slot; returns at once.
    void submit(const ForwardBatch& batch, std::span<const RowSampling> rows);
    // The step's forward pass, and unless defer_pick its pick; then end_step() (after pick()'s masks).
    void enqueue_forward(const ForwardBatch& batch, std::span<const RowSampling> rows, bool defer_pick);
    void pick(std::span<const uint32_t> masks, int words, std::span<const int32_t> mask_of_row);
    // A deferred step's masks and pick; then every step's ids (and logprobs) to its slot and its event.
    void end_step(std::span<const uint32_t> masks, std::span<const int32_t> mask_of_row);
    void collect(std::vector<int32_t>& ids);
    // Runs decode steps of every graph batch bucket, greedy and sampled, at the shortest context bucket
    // (one-token sequences on the scratch block): each key's first step runs eagerly and its second
    // captures the graph.
    void capture_short_context_graphs();
    // The graph for a pure decode step whose ids come back (every sequence one token), if it has one.
    std::optional<GraphKey> decode_graph_key(const ForwardBatch& batch, bool sampled, bool picks) const;
    // Packs ids, positions, slots, logit rows, sequence boundaries and block tables into the pinned
    // `host_meta` and copies it to the device; with a graph key, pads to key.batch one-token sequences
    // (writing to the scratch block) and sizes the tables for key.kv_len tokens.
    void upload_metadata(const ForwardBatch& batch, const std::optional<GraphKey>& key,
                         std::span<const RowSampling> sampling, const cuda::PinnedBuffer& host_meta,
                         cuda::AttentionMetadata& m);
    // Embedding (placeholder ids resolved from the last step's device ids) and the layers; the CPU's
    // layers (when any) run before this returns, on `batch`.
    void enqueue_layers(const cuda::AttentionMetadata& m, const ForwardBatch& batch);
    // The residual rows to the host, the CPU's layers, and back (the host waits for the GPU's part).
    void run_cpu_layers(const ForwardBatch& batch, int num_tokens);
    // Final norm and LM head of logit rows [begin, begin + n) into `logits`. Logit rows are tokens in
    // increasing order, so when every token is one (decode steps) row i is token i: no gather.
    void enqueue_lm_head(int begin, int n);
    // The ids of logit rows [begin, begin + n) (sampled by the step's parameters, or argmax) into the
    // device ids at `begin`.
    void enqueue_pick(int begin, int n, bool sampled);
    // The logprobs of logit rows [begin, begin + n), whose logits are in `logits` and ids in `ids`.
    void enqueue_logprobs(int begin, int n, int num_top);
    void run_layer(int layer, const CudaLayerWeights& w, const cuda::AttentionMetadata& m, int num_tokens);
    // Streamed layer i's weights (its pinned blob) into its stage on weight_stream, once the stage is free.
    void enqueue_weight_copy(int i, bool wait_freed);
    void linear(const CudaLinear& w, const cuda::DeviceBuffer& in, void* out, cuda::GemmOut type, int t, int n, int k,
                bool accumulate);
    void enqueue_decode_graph(const GraphKey& key, const cuda::AttentionMetadata& m, const ForwardBatch& batch);
    void copy_kv_blocks(std::span<const kv::BlockCopy> copies);
    size_t kv_elem_bytes() const { return config.kv_fp8 ? 1 : 2; }
    // K of one layer for one block: one row of a block's 2D copy.
    size_t kv_block_row_bytes() const {
        return static_cast<size_t>(config.kv_block_size_tokens) * static_cast<size_t>(kv_width) * kv_elem_bytes();
    }
    void* k_cache(int layer) const { return ptr<char>(kv) + kv_layer_bytes() * (2 * layer); }
    void* v_cache(int layer) const { return ptr<char>(kv) + kv_layer_bytes() * (2 * layer + 1); }
    size_t kv_layer_bytes() const {
        return static_cast<size_t>(num_blocks + 1) * config.kv_block_size_tokens * static_cast<size_t>(kv_width) *
               kv_elem_bytes();
    }
    const int32_t* device_meta(size_t offset) const { return ptr<int32_t>(meta) + offset; }
};

Status CudaRunner::Impl::allocate() {
    HICHAT_RETURN_IF_ERROR(allocate_stages());
    q_width = static_cast<int64_t>(cfg.num_heads) * cfg.head_dim;
    kv_width = static_cast<int64_t>(cfg.num_kv_heads) * cfg.head_dim;
    qkv_width = q_width + 2 * kv_width;
    const size_t t = static_cast<size_t>(config.max_num_tokens_per_step);
    max_logit_rows = std::max(1, config.max_num_seqs);
    max_graph_batch = std::min(config.max_num_seqs, config.max_num_tokens_per_step);
    while (max_graph_batch > 0 && graph_batch_bucket(max_graph_batch) > max_graph_batch) --max_graph_batch;
    const size_t meta_ints = StepLayout(config.max_num_tokens_per_step, config.max_num_tokens_per_step,
                                        config.max_num_seqs, max_blocks_per_seq, true).total;
    auto alloc = [](cuda::DeviceBuffer& b, size_t bytes) -> Status {
        auto r = cuda::DeviceBuffer::allocate(bytes);
        if (!r.ok()) return r.status();
        b = std::move(r).value();
        return ok_status();
    };
    HICHAT_RETURN_IF_ERROR(alloc(x, t * cfg.hidden_size * 4));
    HICHAT_RETURN_IF_ERROR(alloc(h, t * cfg.hidden_size * 2));
    HICHAT_RETURN_IF_ERROR(alloc(qkv, t * static_cast<size_t>(qkv_width) * 2));
    HICHAT_RETURN_IF_ERROR(alloc(q, t * static_cast<size_t>(q_width) * 2));
    HICHAT_RETURN_IF_ERROR(alloc(attn, t * static_cast<size_t>(q_width) * 2));
    HICHAT_RETURN_IF_ERROR(alloc(gate_up, t * 2 * cfg.intermediate_size * 2));
    HICHAT_RETURN_IF_ERROR(alloc(act, t * cfg.intermediate_size * 2));
    if (weights.num_fp8_linears > 0) {
        const size_t widest = static_cast<size_t>(std::max<int64_t>({cfg.hidden_size, q_width, cfg.intermediate_size}));
        HICHAT_RETURN_IF_ERROR(alloc(act_q, t * widest));
        HICHAT_RETURN_IF_ERROR(alloc(act_scale, t * 4));
        if (config.max_num_tokens_per_step > kFp8GemvTokens) {
            fp8_rows = fp8_scratch_rows(cfg, config.max_num_tokens_per_step);
            HICHAT_RETURN_IF_ERROR(alloc(fp8_scratch, static_cast<size_t>(fp8_rows) * widest_linear(cfg) * 4));
        }
    }
    HICHAT_RETURN_IF_ERROR(alloc(rows, static_cast<size_t>(max_logit_rows) * cfg.hidden_size * 4));
    HICHAT_RETURN_IF_ERROR(alloc(row_norm, static_cast<size_t>(max_logit_rows) * cfg.hidden_size * 2));
    HICHAT_RETURN_IF_ERROR(alloc(logits, static_cast<size_t>(max_logit_rows) * cfg.vocab_size * 4));
    HICHAT_RETURN_IF_ERROR(alloc(ids, t * 4));   // a step's ids, any number of logit rows
    HICHAT_RETURN_IF_ERROR(alloc(logprobs, t * sizeof(cuda::RowLogprobsOut)));
    const size_t sample_bytes = cuda::sample_rows_workspace_bytes(max_logit_rows, cfg.vocab_size);
    if (sample_bytes > 0) HICHAT_RETURN_IF_ERROR(alloc(sample_workspace, sample_bytes));
    HICHAT_RETURN_IF_ERROR(alloc(meta, meta_ints * 4));
    mask_words = (cfg.vocab_size + 31) / 32;
    const size_t mask_bytes = static_cast<size_t>(max_logit_rows) * (1 + static_cast<size_t>(mask_words)) * 4;
    HICHAT_RETURN_IF_ERROR(alloc(masks, mask_bytes));
    attn_workspace_bytes = cuda::attention_workspace_bytes(config.max_num_tokens_per_step, cfg.num_heads, cfg.head_dim,
                                                           config.max_context_tokens);
    if (attn_workspace_bytes > 0) HICHAT_RETURN_IF_ERROR(alloc(attn_workspace, attn_workspace_bytes));
    const std::vector<float> freqs = model::rope_inv_freq(cfg);
    HICHAT_RETURN_IF_ERROR(alloc(inv_freq, freqs.size() * 4));
    CUDA_CHECK(cudaMemcpy(inv_freq.data(), freqs.data(), freqs.size() * 4, cudaMemcpyHostToDevice));
    auto pinned = [](cuda::PinnedBuffer& b, size_t bytes) -> Status {
        auto r = cuda::PinnedBuffer::allocate(bytes);
        if (!r.ok()) return r.status();
        b = std::move(r).value();
        return ok_status();
    };
    HICHAT_RETURN_IF_ERROR(pinned(host_logits, static_cast<size_t>(max_logit_rows) * cfg.vocab_size * 4));
    if (num_device_layers < cfg.num_layers) HICHAT_RETURN_IF_ERROR(pinned(host_x, t * cfg.hidden_size * 4));
    for (Slot& slot : slots) {
        HICHAT_RETURN_IF_ERROR(pinned(slot.meta, meta_ints * 4));
        HICHAT_RETURN_IF_ERROR(pinned(slot.ids, t * 4));
        HICHAT_RETURN_IF_ERROR(pinned(slot.logprobs, t * sizeof(cuda::RowLogprobsOut)));
        HICHAT_RETURN_IF_ERROR(pinned(slot.masks, mask_bytes));
        auto event = cuda::CudaEvent::create();
        if (!event.ok()) return event.status();
        slot.done = std::move(event).value();
    }

    // The host tier first (pinned host memory), then the KV pool takes what is left of the device, at most
    // max_num_seqs full contexts (or what the config asks for).
    const size_t block_bytes = kv_block_row_bytes() * 2 * static_cast<size_t>(num_device_layers);
    if (config.host_kv_cache_bytes > 0) {
        num_host_blocks = static_cast<int>(std::min<int64_t>(config.host_kv_cache_bytes / static_cast<int64_t>(block_bytes),
                                                             std::numeric_limits<int32_t>::max()));
    }
    if (num_host_blocks > 0) {
        HICHAT_RETURN_IF_ERROR(pinned(host_kv, static_cast<size_t>(num_host_blocks) * block_bytes));
        for (cuda::CudaEvent* e : {&compute_done, &copies_done}) {
            auto event = cuda::CudaEvent::create();
            if (!event.ok()) return event.status();
            *e = std::move(event).value();
        }
        CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking));
    }
    num_blocks = config.num_kv_blocks;
    if (num_blocks <= 0) {
        size_t free_bytes = 0, total_bytes = 0;
        CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
        const auto share = static_cast<int64_t>(static_cast<double>(free_bytes) * config.gpu_memory_fraction);
        num_blocks = kv_pool_blocks({.budget_bytes = config.kv_budget_bytes > 0 ? std::min<int64_t>(config.kv_budget_bytes, share) : share,
                                     .bytes_per_block = static_cast<int64_t>(block_bytes),
                                     .max_num_seqs = config.max_num_seqs,
                                     .context_tokens = config.max_context_tokens,
                                     .block_size_tokens = config.kv_block_size_tokens});
    }
    if (num_host_blocks > 0) {   // every row of a block's 2D copy is one layer's K or V array apart
        int max_pitch = 0;
        CUDA_CHECK(cudaDeviceGetAttribute(&max_pitch, cudaDevAttrMaxPitch, config.device));
        num_blocks = static_cast<int>(std::min<int64_t>(num_blocks, static_cast<int64_t>(max_pitch) /
                                                                        static_cast<int64_t>(kv_block_row_bytes()) - 1));
    }
    if (num_blocks < max_blocks_per_seq) {
        return invalid_argument("not enough device memory for one full-context sequence's KV (" +
                                std::to_string(num_blocks) + " blocks)");
    }
    scratch_block = num_blocks;
    HICHAT_RETURN_IF_ERROR(alloc(kv, static_cast<size_t>(num_blocks + 1) * block_bytes));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return ok_status();
}

std::optional<GraphKey> CudaRunner::Impl::decode_graph_key(const ForwardBatch& batch, bool sampled, bool picks) const {
    const int n = static_cast<int>(batch.seqs.size());
    if (n == 0 || n > max_graph_batch || cpu) return std::nullopt;
    int max_kv = 0;
    for (const ForwardSeq& seq : batch.seqs) {
        if (seq.tokens.size() != 1 || seq.all_logits) return std::nullopt;
        max_kv = std::max(max_kv, seq.pos0 + 1);
    }
    const int kv_cap = max_blocks_per_seq * config.kv_block_size_tokens;
    const int kv_len = std::min(kv_cap, static_cast<int>(std::bit_ceil(static_cast<unsigned>(std::max(max_kv, kMinGraphKvLen)))));
    return GraphKey{graph_batch_bucket(n), kv_len, sampled, picks};
}

void CudaRunner::Impl::capture_short_context_graphs() {
    const std::array<int32_t, 1> table = {scratch_block};
    const std::array<int32_t, 1> token = {0};
    std::vector<int32_t> ids;
    for (const bool sampled : {false, true}) {
        for (int n = 1; n <= max_graph_batch; n = graph_batch_bucket(n) + 1) {
            const int bucket = graph_batch_bucket(n);
            if (bucket > max_graph_batch) break;
            ForwardBatch batch;
            batch.seqs.assign(static_cast<size_t>(bucket), ForwardSeq{.block_table = table, .pos0 = 0, .tokens = token});
            const std::vector<RowSampling> rows(static_cast<size_t>(bucket), RowSampling{.temperature = sampled ? 1.0f : 0.0f});
            for (int pass = 0; pass < 2; ++pass) {
                enqueue_forward(batch, rows, /*defer_pick=*/false);
                end_step({}, {});
                collect(ids);
            }
        }
    }
}

void CudaRunner::Impl::upload_metadata(const ForwardBatch& batch, const std::optional<GraphKey>& key,
                                       std::span<const RowSampling> sampling, const cuda::PinnedBuffer& host_meta,
                                       cuda::AttentionMetadata& m) {
    const int bs = config.kv_block_size_tokens;
    const int num_real = static_cast<int>(batch.seqs.size());
    const int num_seqs = key ? key->batch : num_real;
    CHECK_LE(num_seqs, config.max_num_seqs);
    m = {};
    const int num_tokens = key ? num_seqs : static_cast<int>(batch.num_tokens());
    const int num_rows = key ? num_seqs : static_cast<int>(batch.num_logit_rows());
    int longest = 0;
    for (const ForwardSeq& seq : batch.seqs) longest = std::max(longest, seq.pos0 + static_cast<int>(seq.tokens.size()));
    const int stride = key ? key->kv_len / bs : (longest + bs - 1) / bs;
    CHECK_LE(num_tokens, config.max_num_tokens_per_step);
    CHECK_LE(longest, config.max_context_tokens);
    layout = StepLayout(num_tokens, num_rows, num_seqs, stride, !sampling.empty());

    auto* h = static_cast<int32_t*>(host_meta.data());
    int t = 0, r = 0;
    h[layout.cu_seqlens] = 0;
    for (int s = 0; s < num_seqs; ++s) {
        int32_t* table = h + layout.block_tables + static_cast<size_t>(s) * stride;
        if (s >= num_real) {   // padding: one token at position 0 of the scratch block
            h[layout.ids + t] = 0;
            h[layout.positions + t] = 0;
            h[layout.slots + t] = scratch_block * bs;
            h[layout.logit_rows + r++] = t++;
            h[layout.cu_seqlens + s + 1] = t;
            h[layout.seq_lens_kv + s] = 1;
            table[0] = scratch_block;
            std::fill(table + 1, table + stride, -1);
            continue;
        }
        const ForwardSeq& seq = batch.seqs[static_cast<size_t>(s)];
        const int n = static_cast<int>(seq.tokens.size());
        CHECK_LE(static_cast<int>(seq.block_table.size()), max_blocks_per_seq);
        for (int i = 0; i < n; ++i, ++t) {
            const int pos = seq.pos0 + i;
            const int32_t token = seq.tokens[static_cast<size_t>(i)];
            CHECK(token < cfg.vocab_size && -token <= last_submitted_rows) << "token " << token;
            h[layout.ids + t] = token;
            h[layout.positions + t] = pos;
            h[layout.slots + t] = seq.block_table[static_cast<size_t>(pos / bs)] * bs + pos % bs;
            if (seq.all_logits || i == n - 1) h[layout.logit_rows + r++] = t;
        }
        h[layout.cu_seqlens + s + 1] = t;
        h[layout.seq_lens_kv + s] = seq.pos0 + n;
        const int used = std::min(stride, static_cast<int>(seq.block_table.size()));
        std::copy(seq.block_table.begin(), seq.block_table.begin() + used, table);
        std::fill(table + used, table + stride, -1);
        m.max_seq_len_q = std::max(m.max_seq_len_q, n);
        m.num_single_token_seqs += n == 1;
    }
    m.max_seq_len_q = std::max(m.max_seq_len_q, 1);
    if (!sampling.empty()) {   // padding rows: argmax
        CHECK_EQ(static_cast<int>(sampling.size()), static_cast<int>(batch.num_logit_rows()));
        auto* params = reinterpret_cast<cuda::SampleRowParams*>(h + layout.sampling);
        for (int i = 0; i < num_rows; ++i) {
            const RowSampling rs = i < static_cast<int>(sampling.size()) ? sampling[static_cast<size_t>(i)] : RowSampling{};
            params[i] = {.temperature = rs.temperature, .top_k = rs.top_k, .top_p = rs.top_p, .min_p = rs.min_p, .u = rs.u};
        }
    }
    m.max_seq_len_kv = key ? key->kv_len : longest;
    m.cu_seqlens_q = device_meta(layout.cu_seqlens);
    m.seq_lens_kv = device_meta(layout.seq_lens_kv);
    m.block_tables = device_meta(layout.block_tables);
    m.num_seqs = num_seqs;
    m.num_tokens = t;
    m.max_blocks_per_seq = stride;
    CUDA_CHECK(cudaMemcpyAsync(meta.data(), host_meta.data(), layout.total * 4, cudaMemcpyHostToDevice, stream));
}

Status CudaRunner::Impl::allocate_stages() {
    const int num_streamed = weights.num_streamed();
    if (num_streamed == 0) return ok_status();
    for (int i = 0; i < std::min(num_streamed, 2); ++i) {
        auto buf = cuda::DeviceBuffer::allocate(weights.max_host_blob_bytes);
        if (!buf.ok()) return buf.status();
        stage[static_cast<size_t>(i)] = std::move(buf).value();
    }
    for (cuda::CudaEvent* e : {&step_begun, &stage_loaded[0], &stage_loaded[1], &stage_freed[0], &stage_freed[1]}) {
        auto event = cuda::CudaEvent::create();
        if (!event.ok()) return event.status();
        *e = std::move(event).value();
    }
    const int first = weights.first_streamed();
    for (int i = 0; i < num_streamed; ++i) {
        staged.push_back(weights.layers[static_cast<size_t>(first + i)].rebased(
            weights.host_blobs[static_cast<size_t>(i)].data(), stage[static_cast<size_t>(i % 2)].data()));
    }
    CUDA_CHECK(cudaStreamCreateWithFlags(&weight_stream, cudaStreamNonBlocking));
    return ok_status();
}

void CudaRunner::Impl::enqueue_weight_copy(int i, bool wait_freed) {
    const auto s = static_cast<size_t>(i % 2);
    if (wait_freed) CUDA_CHECK(stage_freed[s].make_wait(weight_stream));
    const cuda::PinnedBuffer& blob = weights.host_blobs[static_cast<size_t>(i)];
    CUDA_CHECK(cudaMemcpyAsync(stage[s].data(), blob.data(), blob.num_bytes(), cudaMemcpyHostToDevice, weight_stream));
    CUDA_CHECK(stage_loaded[s].record(weight_stream));
}

// The resident layers, then the streamed ones: the first two copies start with the step (under the
// resident layers), each later one as soon as the layer two before it has run.
void CudaRunner::Impl::enqueue_layers(const cuda::AttentionMetadata& m, const ForwardBatch& batch) {
    const int num_streamed = weights.num_streamed(), first = weights.first_streamed();
    if (num_streamed > 0) {
        CUDA_CHECK(step_begun.record(stream));
        CUDA_CHECK(step_begun.make_wait(weight_stream));
        for (int i = 0; i < std::min(num_streamed, 2); ++i) enqueue_weight_copy(i, /*wait_freed=*/false);
    }
    CUDA_CHECK(cuda::embedding(device_meta(layout.ids), ptr<int32_t>(ids), m.num_tokens, ptr<bf16>(weights.embed),
                               cfg.hidden_size, ptr<float>(x), stream));
    for (int layer = 0; layer < first; ++layer) run_layer(layer, weights.layers[static_cast<size_t>(layer)], m, m.num_tokens);
    for (int i = 0; i < num_streamed; ++i) {
        const auto s = static_cast<size_t>(i % 2);
        CUDA_CHECK(stage_loaded[s].make_wait(stream));
        run_layer(first + i, staged[static_cast<size_t>(i)], m, m.num_tokens);
        if (i + 2 >= num_streamed) continue;
        CUDA_CHECK(stage_freed[s].record(stream));
        enqueue_weight_copy(i + 2, /*wait_freed=*/true);
    }
    if (cpu) run_cpu_layers(batch, m.num_tokens);
}

void CudaRunner::Impl::run_cpu_layers(const ForwardBatch& batch, int num_tokens) {
    const size_t bytes = static_cast<size_t>(num_tokens) * static_cast<size_t>(cfg.hidden_size) * 4;
    CUDA_CHECK(cudaMemcpyAsync(host_x.data(), x.data(), bytes, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    cpu->run_layers(batch, static_cast<float*>(host_x.data()));
    CUDA_CHECK(cudaMemcpyAsync(x.data(), host_x.data(), bytes, cudaMemcpyHostToDevice, stream));
}

void CudaRunner::Impl::run_layer(int layer, const CudaLayerWeights& w, const cuda::AttentionMetadata& m, int t) {
    const int hidden = cfg.hidden_size, inter = cfg.intermediate_size;
    CUDA_CHECK(cuda::rms_norm(ptr<float>(x), t, hidden, ptr<bf16>(w.attn_norm), cfg.rms_norm_eps, ptr<bf16>(h), stream));
    linear(w.qkv, h, qkv.data(), cuda::GemmOut::kBf16, t, static_cast<int>(qkv_width), hidden, false);
    cuda::QkvRopeParams p{.qkv = ptr<bf16>(qkv),
                          .bias = w.qkv_bias.empty() ? nullptr : ptr<bf16>(w.qkv_bias),
                          .q_norm = w.q_norm.empty() ? nullptr : ptr<bf16>(w.q_norm),
                          .k_norm = w.k_norm.empty() ? nullptr : ptr<bf16>(w.k_norm),
                          .norm_eps = cfg.rms_norm_eps,
                          .positions = device_meta(layout.positions),
                          .inv_freq = ptr<float>(inv_freq),
                          .slot_mapping = device_meta(layout.slots),
                          .num_tokens = t,
                          .num_heads = cfg.num_heads,
                          .num_kv_heads = cfg.num_kv_heads,
                          .head_dim = cfg.head_dim,
                          .q_out = ptr<bf16>(q),
                          .k_cache = k_cache(layer),
                          .v_cache = v_cache(layer),
                          .kv_fp8 = config.kv_fp8,
                          .k_scale = kv_scales[static_cast<size_t>(layer)].first,
                          .v_scale = kv_scales[static_cast<size_t>(layer)].second};
    CUDA_CHECK(cuda::qkv_rope_kv_write(p, stream));
    const float scale = 1.0f / std::sqrt(static_cast<float>(cfg.head_dim));
    if (config.kv_fp8) {
        CUDA_CHECK(cuda::paged_attention_fp8(ptr<bf16>(q), static_cast<const uint8_t*>(k_cache(layer)),
                                             static_cast<const uint8_t*>(v_cache(layer)), m, cfg.num_heads,
                                             cfg.num_kv_heads, cfg.head_dim, config.kv_block_size_tokens, scale,
                                             p.k_scale, p.v_scale, ptr<bf16>(attn), attn_workspace.data(),
                                             attn_workspace_bytes, stream));
    } else {
        CUDA_CHECK(cuda::paged_attention(ptr<bf16>(q), static_cast<const bf16*>(k_cache(layer)),
                                         static_cast<const bf16*>(v_cache(layer)), m, cfg.num_heads, cfg.num_kv_heads,
                                         cfg.head_dim, config.kv_block_size_tokens, scale, ptr<bf16>(attn),
                                         attn_workspace.data(), attn_workspace_bytes, stream));
    }
    linear(w.o_proj, attn, x.data(), cuda::GemmOut::kF32, t, hidden, static_cast<int>(q_width), true);
    CUDA_CHECK(cuda::rms_norm(ptr<float>(x), t, hidden, ptr<bf16>(w.ffn_norm), cfg.rms_norm_eps, ptr<bf16>(h), stream));
    if (w.gate_up.fp8() && t <= kFp8GemvTokens && cuda::fp8_gemv_applies(h.data(), w.gate_up.weight.data(), act.data(), t, hidden)) {
        // SwiGLU in the FP8 GEMV
        CUDA_CHECK(cuda::fp8_gemv_silu_mul(ptr<bf16>(h), ptr<uint8_t>(w.gate_up.weight), ptr<float>(w.gate_up.row_scale),
                                           ptr<bf16>(act), t, inter, hidden, stream));
    } else if (t == 1 && !w.gate_up.fp8() && cuda::gemv_applies(h.data(), w.gate_up.weight.data(), act.data(), 1, hidden)) {
        // SwiGLU in the GEMV
        CUDA_CHECK(cuda::gemv_silu_mul(ptr<bf16>(h), ptr<bf16>(w.gate_up.weight), ptr<bf16>(act), inter, hidden, stream));
    } else {
        linear(w.gate_up, h, gate_up.data(), cuda::GemmOut::kBf16, t, 2 * inter, hidden, false);
        CUDA_CHECK(cuda::silu_mul(ptr<bf16>(gate_up), t, inter, ptr<bf16>(act), stream));
    }
    linear(w.down, act, x.data(), cuda::GemmOut::kF32, t, hidden, inter, true);
}

// out (+)= in W^T for t tokens. A bf16 weight goes to the Gemm (its GEMV at one token); an FP8 one
// to the FP8 GEMV up to kFp8GemvTokens tokens (bf16 activations, weight-only), else to the FP8 GEMM
// after per-token quantization of `in` into act_q / act_scale.
void CudaRunner::Impl::linear(const CudaLinear& w, const cuda::DeviceBuffer& in, void* out, cuda::GemmOut type, int t,
                              int n, int k, bool accumulate) {
    if (!w.fp8()) {
        CUDA_CHECK(gemm.run(ptr<bf16>(in), ptr<bf16>(w.weight), out, type, t, n, k, accumulate, stream));
        return;
    }
    const float* w_scale = ptr<float>(w.row_scale);
    if (t <= kFp8GemvTokens && cuda::fp8_gemv_applies(in.data(), w.weight.data(), out, t, k)) {
        CUDA_CHECK(cuda::fp8_gemv(ptr<bf16>(in), ptr<uint8_t>(w.weight), w_scale, out, type == cuda::GemmOut::kF32, t, n,
                                  k, accumulate, stream));
        return;
    }
    CUDA_CHECK(cuda::quantize_fp8_rows(ptr<bf16>(in), t, k, ptr<uint8_t>(act_q), ptr<float>(act_scale), stream));
    CUDA_CHECK(gemm.run_fp8(ptr<uint8_t>(act_q), ptr<float>(act_scale), ptr<uint8_t>(w.weight), w_scale, out, type, t,
                            n, k, accumulate, ptr<float>(fp8_scratch), fp8_rows, stream));
}

void CudaRunner::Impl::enqueue_lm_head(int begin, int n) {
    const int hidden = cfg.hidden_size, vocab = cfg.vocab_size;
    const bf16* head = weights.lm_head.empty() ? ptr<bf16>(weights.embed) : ptr<bf16>(weights.lm_head);
    const float* src = ptr<float>(x) + static_cast<size_t>(begin) * hidden;
    if (layout.num_rows != layout.num_tokens) {
        CUDA_CHECK(cuda::gather_rows(ptr<float>(x), device_meta(layout.logit_rows) + begin, n, hidden,
                                     ptr<float>(rows), stream));
        src = ptr<float>(rows);
    }
    CUDA_CHECK(cuda::rms_norm(src, n, hidden, ptr<bf16>(weights.final_norm), cfg.rms_norm_eps,
                              ptr<bf16>(row_norm), stream));
    CUDA_CHECK(gemm.run(ptr<bf16>(row_norm), head, logits.data(), cuda::GemmOut::kF32, n, vocab, hidden, false, stream));
}

void CudaRunner::Impl::enqueue_pick(int begin, int n, bool sampled) {
    int32_t* out = ptr<int32_t>(ids) + begin;
    if (sampled) {
        const auto* params = reinterpret_cast<const cuda::SampleRowParams*>(device_meta(layout.sampling)) + begin;
        CUDA_CHECK(cuda::sample_rows(ptr<float>(logits), n, cfg.vocab_size, params, out, sample_workspace.data(),
                                     sample_workspace.num_bytes(), stream));
    } else {
        CUDA_CHECK(cuda::argmax_rows(ptr<float>(logits), n, cfg.vocab_size, out, stream));
    }
}

void CudaRunner::Impl::enqueue_logprobs(int begin, int n, int num_top) {
    CUDA_CHECK(cuda::row_logprobs(ptr<float>(logits), n, cfg.vocab_size, ptr<int32_t>(ids) + begin, num_top,
                                  ptr<cuda::RowLogprobsOut>(logprobs) + begin, stream));
}

// The first step of a key runs eagerly (cuBLASLt plans made, kernels loaded); the second captures the
// graph; from then on a step is one graph launch.
void CudaRunner::Impl::enqueue_decode_graph(const GraphKey& key, const cuda::AttentionMetadata& m,
                                            const ForwardBatch& batch) {
    auto enqueue = [&] {
        enqueue_layers(m, batch);
        enqueue_lm_head(0, key.batch);
        if (key.picks) enqueue_pick(0, key.batch, key.sampled);
    };
    auto it = graphs.find(key);
    if (it == graphs.end()) {
        if (warmed.insert(key).second) return enqueue();
        auto graph = cuda::CudaGraph::capture(stream, enqueue);
        CHECK(graph.ok()) << graph.status().message();
        it = graphs.emplace(key, std::move(graph).value()).first;
    }
    CUDA_CHECK(it->second.launch(stream));
}

// A block is 2 * layers rows (K and V of each layer) of kv_block_row_bytes(), one K/V array apart on the
// device and packed in its host slot: one 2D copy. The copy stream starts after every step submitted so
// far (no copy reads a block a step still writes, nor overwrites one a step still reads), and every step
// submitted later starts after the copies (no step reads a block before it is back, nor overwrites one
// before it is saved).
void CudaRunner::Impl::copy_kv_blocks(std::span<const kv::BlockCopy> copies) {
    CHECK_GT(num_host_blocks, 0) << "copy_kv_blocks() without a host KV tier";
    if (copies.empty()) return;
    CUDA_CHECK(compute_done.record(stream));
    CUDA_CHECK(compute_done.make_wait(copy_stream));
    const size_t row = kv_block_row_bytes(), pitch = kv_layer_bytes();
    const auto rows = static_cast<size_t>(2 * num_device_layers);
    for (const kv::BlockCopy& c : copies) {
        CHECK(c.device_block >= 0 && c.device_block < num_blocks) << "device block " << c.device_block;
        CHECK(c.host_slot >= 0 && c.host_slot < num_host_blocks) << "host slot " << c.host_slot;
        char* device = static_cast<char*>(kv.data()) + static_cast<size_t>(c.device_block) * row;
        char* host = static_cast<char*>(host_kv.data()) + static_cast<size_t>(c.host_slot) * row * rows;
        if (c.direction == kv::BlockCopy::Direction::kToHost) {
            CUDA_CHECK(cudaMemcpy2DAsync(host, row, device, pitch, row, rows, cudaMemcpyDeviceToHost, copy_stream));
        } else {
            CUDA_CHECK(cudaMemcpy2DAsync(device, pitch, host, row, row, rows, cudaMemcpyHostToDevice, copy_stream));
        }
    }
    CUDA_CHECK(copies_done.record(copy_stream));
    CUDA_CHECK(copies_done.make_wait(stream));
}

void CudaRunner::Impl::submit(const ForwardBatch& batch, std::span<const RowSampling> rows) {
    enqueue_forward(batch, rows, /*defer_pick=*/false);
    end_step({}, {});
}

void CudaRunner::Impl::enqueue_forward(const ForwardBatch& batch, std::span<const RowSampling> rows, bool defer_pick) {
    CHECK_LT(num_outstanding, 2) << "submit() with two steps outstanding";
    CHECK(!step.open) << "a step started by submit_forward() has not been picked";
    const int num_rows = static_cast<int>(batch.num_logit_rows());
    CHECK_EQ(static_cast<int>(rows.size()), num_rows);
    step = {.open = true, .deferred = defer_pick, .num_rows = num_rows};
    step.sampled = std::any_of(rows.begin(), rows.end(), [](const RowSampling& r) { return r.temperature > 0; });
    for (const RowSampling& r : rows) step.num_top = std::max(step.num_top, std::min(r.num_logprobs, cuda::kMaxTopLogprobsDevice));
    if (!step.sampled) rows = {};
    if (batch.seqs.empty()) return;   // nothing to run; the slot still answers one collect()
    // A deferred pick needs every row's logits at once.
    CHECK(!defer_pick || num_rows <= max_logit_rows) << num_rows << " masked rows, room for " << max_logit_rows;
    const std::optional<GraphKey> key =
        config.use_cuda_graphs ? decode_graph_key(batch, step.sampled, /*picks=*/!defer_pick) : std::nullopt;
    cuda::AttentionMetadata m;
    upload_metadata(batch, key, rows, slots[static_cast<size_t>(next_slot)].meta, m);
    step.graph = key.has_value();
    if (key) return enqueue_decode_graph(*key, m, batch);   // every row's logits stay in `logits` (key.batch <= max_logit_rows)
    enqueue_layers(m, batch);
    for (int begin = 0; begin < num_rows; begin += max_logit_rows) {
        const int n = std::min(max_logit_rows, num_rows - begin);
        enqueue_lm_head(begin, n);
        if (defer_pick) continue;
        enqueue_pick(begin, n, step.sampled);
        if (step.num_top >= 0) enqueue_logprobs(begin, n, step.num_top);
    }
}

void CudaRunner::Impl::pick(std::span<const uint32_t> masks_in, int words, std::span<const int32_t> mask_of_row) {
    CHECK(step.open && step.deferred) << "pick() without submit_forward()";
    CHECK_EQ(words, mask_words) << "mask words for a vocabulary of " << cfg.vocab_size;
    CHECK_EQ(static_cast<int>(mask_of_row.size()), step.num_rows);
    end_step(masks_in, mask_of_row);
}

// The masks go up in one copy from the slot's pinned buffer (free again: the step that used this slot
// before was collected, after its event).
void CudaRunner::Impl::end_step(std::span<const uint32_t> masks_in, std::span<const int32_t> mask_of_row) {
    Slot& slot = slots[static_cast<size_t>(next_slot)];
    const int num_rows = step.num_rows;
    if (num_rows > 0) {
        if (step.deferred) {
            const bool any_mask = std::any_of(mask_of_row.begin(), mask_of_row.end(), [](int32_t m) { return m >= 0; });
            if (any_mask) {
                const size_t num_masks = masks_in.size() / static_cast<size_t>(mask_words);
                CHECK_LE(num_masks, static_cast<size_t>(max_logit_rows));
                auto* h = static_cast<int32_t*>(slot.masks.data());
                std::copy(mask_of_row.begin(), mask_of_row.end(), h);
                std::memcpy(h + max_logit_rows, masks_in.data(), masks_in.size_bytes());
                CUDA_CHECK(cudaMemcpyAsync(masks.data(), slot.masks.data(), static_cast<size_t>(max_logit_rows) * 4 + masks_in.size_bytes(),
                                           cudaMemcpyHostToDevice, stream));
                const auto* device_rows = ptr<int32_t>(masks);
                const auto* device_masks = reinterpret_cast<const uint32_t*>(device_rows + max_logit_rows);
                CUDA_CHECK(cuda::apply_token_bitmask(ptr<float>(logits), num_rows, cfg.vocab_size, device_masks, mask_words,
                                                     device_rows, stream));
            }
            enqueue_pick(0, num_rows, step.sampled);
            if (step.num_top >= 0) enqueue_logprobs(0, num_rows, step.num_top);
        } else if (step.graph && step.num_top >= 0) {
            enqueue_logprobs(0, num_rows, step.num_top);
        }
        CUDA_CHECK(cudaMemcpyAsync(slot.ids.data(), ids.data(), static_cast<size_t>(num_rows) * 4, cudaMemcpyDeviceToHost,
                                   stream));
        if (step.num_top >= 0) {
            CUDA_CHECK(cudaMemcpyAsync(slot.logprobs.data(), logprobs.data(),
                                       static_cast<size_t>(num_rows) * sizeof(cuda::RowLogprobsOut),
                                       cudaMemcpyDeviceToHost, stream));
        }
        last_submitted_rows = num_rows;
    }
    slot.has_logprobs = num_rows > 0 && step.num_top >= 0;
    slot.num_rows = num_rows;
    CUDA_CHECK(slot.done.record(stream));
    next_slot ^= 1;
    ++num_outstanding;
    step = {};
}

void CudaRunner::Impl::collect(std::vector<int32_t>& out) {
    CHECK_GT(num_outstanding, 0) << "collect() with no step outstanding";
    const Slot& slot = slots[static_cast<size_t>(num_outstanding == 2 ? next_slot : next_slot ^ 1)];
    CUDA_CHECK(slot.done.synchronize());
    const auto* got = static_cast<const int32_t*>(slot.ids.data());
    out.assign(got, got + slot.num_rows);
    collected_logprobs.clear();
    if (slot.has_logprobs) {
        const auto* rows = static_cast<const cuda::RowLogprobsOut*>(slot.logprobs.data());
        collected_logprobs.resize(static_cast<size_t>(slot.num_rows));
        for (int r = 0; r < slot.num_rows; ++r) {
            sampling::TokenLogprobs& lp = collected_logprobs[static_cast<size_t>(r)];
            lp.chosen = rows[r].chosen;
            lp.num_top = rows[r].num_top;
            std::copy_n(rows[r].top_ids, lp.num_top, lp.top_ids.begin());
            std::copy_n(rows[r].top_logprobs, lp.num_top, lp.top_logprobs.begin());
        }
    }
    --num_outstanding;
}

// LM head over the rows that need logits, max_logit_rows at a time, each copied back to the host.
void CudaRunner::Impl::forward(const ForwardBatch& batch, std::vector<float>& logits_out) {
    CHECK_EQ(num_outstanding, 0) << "forward() with a submitted step outstanding";
    cuda::AttentionMetadata m;
    upload_metadata(batch, std::nullopt, {}, slots[static_cast<size_t>(next_slot)].meta, m);
    enqueue_layers(m, batch);
    const int vocab = cfg.vocab_size, num_rows = static_cast<int>(batch.num_logit_rows());
    logits_out.resize(static_cast<size_t>(num_rows) * vocab);
    for (int begin = 0; begin < num_rows; begin += max_logit_rows) {
        const int n = std::min(max_logit_rows, num_rows - begin);
        enqueue_lm_head(begin, n);
        const size_t bytes = static_cast<size_t>(n) * vocab * 4;
        CUDA_CHECK(cudaMemcpyAsync(host_logits.data(), logits.data(), bytes, cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        std::memcpy(logits_out.data() + static_cast<size_t>(begin) * vocab, host_logits.data(), bytes);
    }
}

Result<std::unique_ptr<CudaRunner>> CudaRunner::create(const model::Checkpoint& checkpoint,
                                                        const CudaRunnerConfig& config) {
    // Callers go through choose_device() (runner_factory.h), which refuses these shapes first; checked
    // again here so that no caller reaches a launcher with one.
    const std::optional<std::string> unsupported = cuda_unsupported_reason(
        checkpoint.config(), {.max_num_seqs = config.max_num_seqs, .max_num_tokens_per_step = config.max_num_tokens_per_step});
    if (unsupported) return unimplemented(*unsupported);
    if (config.num_streamed_layers < 0 || config.num_cpu_layers < 0 ||
        config.num_streamed_layers + config.num_cpu_layers > checkpoint.config().num_layers) {
        return invalid_argument("streamed layers " + std::to_string(config.num_streamed_layers) + " and CPU layers " +
                                std::to_string(config.num_cpu_layers) + ": the model has " +
                                std::to_string(checkpoint.config().num_layers));
    }
    if (!cuda::cuda_device_available()) return not_found("no CUDA device is available");
    CUDA_CHECK(cudaSetDevice(config.device));
    CudaRunnerConfig c = config;
    if (c.max_context_tokens <= 0) c.max_context_tokens = checkpoint.config().max_position_embeddings;
    // An FP8 weight stays FP8 where the FP8 GEMV takes its k and, for steps longer than the GEMV's,
    // cuBLASLt's FP8 GEMM has algorithms for it (probed with the runner's workspace size); else it is
    // dequantized to bf16.
    cuda::Gemm probe;
    const int max_tokens = c.max_num_tokens_per_step;
    const int gemm_rows = std::min(max_tokens, fp8_scratch_rows(checkpoint.config(), max_tokens));
    auto weights = CudaWeights::upload(checkpoint, [&](int64_t n, int64_t k) {
        if (k % 64 != 0) return false;
        if (max_tokens <= kFp8GemvTokens) return true;
        return probe.fp8_supported(kFp8GemvTokens + 1, static_cast<int>(n), static_cast<int>(k)) &&
               probe.fp8_supported(gemm_rows, static_cast<int>(n), static_cast<int>(k));
    }, c.num_streamed_layers, c.num_cpu_layers);
    if (!weights.ok()) return weights.status();
    if (c.num_cpu_layers > 0) c.host_kv_cache_bytes = 0;   // a block's KV would be in two places
    auto impl = std::make_unique<Impl>(checkpoint, c, std::move(weights).value());
    HICHAT_RETURN_IF_ERROR(impl->allocate());
    if (c.num_cpu_layers > 0) {   // the same block ids as the device pool (scratch block included)
        impl->cpu = std::make_unique<CpuRunner>(
            checkpoint, CpuRunnerConfig{.num_threads = c.cpu_threads,
                                        .num_kv_blocks = impl->num_blocks + 1,
                                        .kv_block_size_tokens = c.kv_block_size_tokens,
                                        .kv_dtype = DType::kBF16,
                                        .first_layer = checkpoint.config().num_layers - c.num_cpu_layers});
    }
    // Not with streamed layers: their steps (90+ ms on the 8B) dwarf a capture, and 70 start-up steps
    // would each copy the streamed weights.
    if (c.use_cuda_graphs && c.capture_graphs_at_start && !impl->cpu && c.num_streamed_layers == 0)
        impl->capture_short_context_graphs();
    return std::unique_ptr<CudaRunner>(new CudaRunner(std::move(impl)));
}

CudaRunner::CudaRunner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaRunner::~CudaRunner() {
    if (!impl_) return;
    for (cudaStream_t s : {impl_->stream, impl_->copy_stream, impl_->weight_stream}) {
        if (s == nullptr) continue;
        cudaStreamSynchronize(s);
        cudaStreamDestroy(s);
    }
}
const model::ModelConfig& CudaRunner::model_config() const { return impl_->cfg; }
int CudaRunner::num_kv_blocks() const { return impl_->num_blocks; }
int CudaRunner::kv_block_size_tokens() const { return impl_->config.kv_block_size_tokens; }
int CudaRunner::num_host_kv_blocks() const { return impl_->num_host_blocks; }
void CudaRunner::copy_kv_blocks(std::span<const kv::BlockCopy> copies) { impl_->copy_kv_blocks(copies); }
void CudaRunner::forward(const ForwardBatch& batch, std::vector<float>& logits) { impl_->forward(batch, logits); }
void CudaRunner::forward_argmax(const ForwardBatch& batch, std::vector<int32_t>& ids) {
    greedy_rows_.assign(static_cast<size_t>(batch.num_logit_rows()), RowSampling{});
    forward_sample(batch, greedy_rows_, ids);
}
void CudaRunner::forward_sample(const ForwardBatch& batch, std::span<const RowSampling> rows,
                                std::vector<int32_t>& ids) {
    submit(batch, rows);
    collect(ids);
}
void CudaRunner::submit(const ForwardBatch& batch, std::span<const RowSampling> rows) { impl_->submit(batch, rows); }
void CudaRunner::submit_forward(const ForwardBatch& batch, std::span<const RowSampling> rows) {
    impl_->enqueue_forward(batch, rows, /*defer_pick=*/true);
}
void CudaRunner::pick(std::span<const uint32_t> masks, int mask_words, std::span<const int32_t> mask_of_row) {
    impl_->pick(masks, mask_words, mask_of_row);
}
void CudaRunner::collect(std::vector<int32_t>& ids) { impl_->collect(ids); }
std::span<const sampling::TokenLogprobs> CudaRunner::step_logprobs() const { return impl_->collected_logprobs; }
int64_t CudaRunner::num_graphs_captured() const { return static_cast<int64_t>(impl_->graphs.size()); }

}  // namespace hichat::executor
