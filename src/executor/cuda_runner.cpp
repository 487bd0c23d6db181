#include "executor/cuda_runner.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/pinned_buffer.h"
#include "backend/cuda/gemm.h"
#include "backend/cuda/ops.h"
#include "base/check.h"
#include "executor/cuda_weights.h"

namespace hichat::executor {
namespace {

using cuda::bf16;

template <typename T>
T* ptr(const cuda::DeviceBuffer& b) {
    return static_cast<T*>(b.data());
}

// Host-side layout of one step's int32 metadata; copied to the device in one transfer.
struct MetaLayout {
    size_t ids, positions, slots, cu_seqlens, seq_lens_kv, block_tables, logit_rows, total;
    MetaLayout(int max_tokens, int max_seqs, int max_blocks_per_seq) {
        size_t at = 0;
        auto take = [&](size_t n) { size_t here = at; at += n; return here; };
        ids = take(static_cast<size_t>(max_tokens));
        positions = take(static_cast<size_t>(max_tokens));
        slots = take(static_cast<size_t>(max_tokens));
        cu_seqlens = take(static_cast<size_t>(max_seqs) + 1);
        seq_lens_kv = take(static_cast<size_t>(max_seqs));
        block_tables = take(static_cast<size_t>(max_seqs) * max_blocks_per_seq);
        logit_rows = take(static_cast<size_t>(max_tokens));
        total = at;
    }
};

}  // namespace

struct CudaRunner::Impl {
    const model::ModelConfig& cfg;
    CudaRunnerConfig config;
    CudaWeights weights;
    cuda::Gemm gemm;
    cudaStream_t stream = nullptr;
    int num_blocks = 0, max_blocks_per_seq = 0, max_logit_rows = 0;
    int64_t q_width = 0, kv_width = 0, qkv_width = 0;
    MetaLayout meta_layout;

    cuda::DeviceBuffer kv;        // [layers][2][num_blocks * block_size * kv_width] bf16
    cuda::DeviceBuffer inv_freq;  // [head_dim / 2] fp32
    cuda::DeviceBuffer x, h, qkv, q, attn, gate_up, act, rows, row_norm, logits, ids, meta, attn_workspace;
    size_t attn_workspace_bytes = 0;
    cuda::PinnedBuffer host_meta, host_logits, host_ids;

    Impl(const model::Checkpoint& ckpt, const CudaRunnerConfig& c, CudaWeights w)
        : cfg(ckpt.config()),
          config(c),
          weights(std::move(w)),
          max_blocks_per_seq((c.max_context_tokens + c.kv_block_size_tokens - 1) / c.kv_block_size_tokens),
          meta_layout(c.max_num_tokens_per_step, c.max_num_seqs, max_blocks_per_seq) {}

    Status allocate(const model::Checkpoint& ckpt);
    // Runs the layers; then logits to the host (logits != null) or their argmax ids (ids != null).
    void forward(const ForwardBatch& batch, std::vector<float>* logits, std::vector<int32_t>* ids);
    void stage_metadata(const ForwardBatch& batch, cuda::AttentionMetadata& meta_out);
    void run_layer(int layer, const cuda::AttentionMetadata& meta, int num_tokens);
    void compute_logits(int num_rows, std::vector<float>* logits_out, std::vector<int32_t>* ids_out);
    bf16* k_cache(int layer) const { return ptr<bf16>(kv) + kv_layer_elems() * (2 * layer); }
    bf16* v_cache(int layer) const { return ptr<bf16>(kv) + kv_layer_elems() * (2 * layer + 1); }
    size_t kv_layer_elems() const {
        return static_cast<size_t>(num_blocks) * config.kv_block_size_tokens * static_cast<size_t>(kv_width);
    }
};

Status CudaRunner::Impl::allocate(const model::Checkpoint& ckpt) {
    q_width = static_cast<int64_t>(cfg.num_heads) * cfg.head_dim;
    kv_width = static_cast<int64_t>(cfg.num_kv_heads) * cfg.head_dim;
    qkv_width = q_width + 2 * kv_width;
    const size_t t = static_cast<size_t>(config.max_num_tokens_per_step);
    max_logit_rows = std::max(1, config.max_num_seqs);
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
    HICHAT_RETURN_IF_ERROR(alloc(rows, static_cast<size_t>(max_logit_rows) * cfg.hidden_size * 4));
    HICHAT_RETURN_IF_ERROR(alloc(row_norm, static_cast<size_t>(max_logit_rows) * cfg.hidden_size * 2));
    HICHAT_RETURN_IF_ERROR(alloc(logits, static_cast<size_t>(max_logit_rows) * cfg.vocab_size * 4));
    HICHAT_RETURN_IF_ERROR(alloc(ids, static_cast<size_t>(max_logit_rows) * 4));
    HICHAT_RETURN_IF_ERROR(alloc(meta, meta_layout.total * 4));
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
    HICHAT_RETURN_IF_ERROR(pinned(host_meta, meta_layout.total * 4));
    HICHAT_RETURN_IF_ERROR(pinned(host_logits, static_cast<size_t>(max_logit_rows) * cfg.vocab_size * 4));
    HICHAT_RETURN_IF_ERROR(pinned(host_ids, static_cast<size_t>(max_logit_rows) * 4));

    // The KV pool takes what is left (or what the config asks for).
    const size_t block_bytes = static_cast<size_t>(config.kv_block_size_tokens) * kv_width * 2 * 2 * cfg.num_layers;
    num_blocks = config.num_kv_blocks;
    if (num_blocks <= 0) {
        size_t free_bytes = 0, total_bytes = 0;
        CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
        num_blocks = static_cast<int>(static_cast<double>(free_bytes) * config.gpu_memory_fraction / block_bytes);
    }
    if (num_blocks < max_blocks_per_seq) {
        return invalid_argument("not enough device memory for one full-context sequence's KV (" +
                                std::to_string(num_blocks) + " blocks)");
    }
    HICHAT_RETURN_IF_ERROR(alloc(kv, static_cast<size_t>(num_blocks) * block_bytes));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    (void)ckpt;
    return ok_status();
}

// Packs ids, positions, slots, sequence boundaries, block tables and logit rows into pinned memory
// and sends them in one copy.
void CudaRunner::Impl::stage_metadata(const ForwardBatch& batch, cuda::AttentionMetadata& m) {
    auto* h = static_cast<int32_t*>(host_meta.data());
    const int bs = config.kv_block_size_tokens;
    const int num_seqs = static_cast<int>(batch.seqs.size());
    CHECK_LE(num_seqs, config.max_num_seqs);
    int t = 0, r = 0;
    h[meta_layout.cu_seqlens] = 0;
    m = {};
    for (int s = 0; s < num_seqs; ++s) {
        const ForwardSeq& seq = batch.seqs[static_cast<size_t>(s)];
        const int n = static_cast<int>(seq.tokens.size());
        CHECK_LE(static_cast<int>(seq.block_table.size()), max_blocks_per_seq);
        for (int i = 0; i < n; ++i, ++t) {
            const int pos = seq.pos0 + i;
            h[meta_layout.ids + t] = seq.tokens[static_cast<size_t>(i)];
            h[meta_layout.positions + t] = pos;
            h[meta_layout.slots + t] = seq.block_table[static_cast<size_t>(pos / bs)] * bs + pos % bs;
            if (seq.all_logits || i == n - 1) h[meta_layout.logit_rows + r++] = t;
        }
        h[meta_layout.cu_seqlens + s + 1] = t;
        h[meta_layout.seq_lens_kv + s] = seq.pos0 + n;
        int32_t* table = h + meta_layout.block_tables + static_cast<size_t>(s) * max_blocks_per_seq;
        for (int b = 0; b < max_blocks_per_seq; ++b) {
            table[b] = b < static_cast<int>(seq.block_table.size()) ? seq.block_table[static_cast<size_t>(b)] : -1;
        }
        m.max_seq_len_q = std::max(m.max_seq_len_q, n);
        m.max_seq_len_kv = std::max(m.max_seq_len_kv, seq.pos0 + n);
    }
    CHECK_LE(t, config.max_num_tokens_per_step);
    CHECK_LE(m.max_seq_len_kv, config.max_context_tokens);
    CUDA_CHECK(cudaMemcpyAsync(meta.data(), host_meta.data(), meta_layout.total * 4, cudaMemcpyHostToDevice, stream));
    const auto* d = ptr<int32_t>(meta);
    m.cu_seqlens_q = d + meta_layout.cu_seqlens;
    m.seq_lens_kv = d + meta_layout.seq_lens_kv;
    m.block_tables = d + meta_layout.block_tables;
    m.num_seqs = num_seqs;
    m.num_tokens = t;
    m.max_blocks_per_seq = max_blocks_per_seq;
}

void CudaRunner::Impl::run_layer(int layer, const cuda::AttentionMetadata& m, int t) {
    const CudaLayerWeights& w = weights.layers[static_cast<size_t>(layer)];
    const auto* d = ptr<int32_t>(meta);
    const int hidden = cfg.hidden_size, inter = cfg.intermediate_size;
    CUDA_CHECK(cuda::rms_norm(ptr<float>(x), t, hidden, ptr<bf16>(w.attn_norm), cfg.rms_norm_eps, ptr<bf16>(h), stream));
    CUDA_CHECK(gemm.run(ptr<bf16>(h), ptr<bf16>(w.qkv), qkv.data(), cuda::GemmOut::kBf16, t,
                        static_cast<int>(qkv_width), hidden, false, stream));
    cuda::QkvRopeParams p{.qkv = ptr<bf16>(qkv),
                          .bias = w.qkv_bias.empty() ? nullptr : ptr<bf16>(w.qkv_bias),
                          .q_norm = w.q_norm.empty() ? nullptr : ptr<bf16>(w.q_norm),
                          .k_norm = w.k_norm.empty() ? nullptr : ptr<bf16>(w.k_norm),
                          .norm_eps = cfg.rms_norm_eps,
                          .positions = d + meta_layout.positions,
                          .inv_freq = ptr<float>(inv_freq),
                          .slot_mapping = d + meta_layout.slots,
                          .num_tokens = t,
                          .num_heads = cfg.num_heads,
                          .num_kv_heads = cfg.num_kv_heads,
                          .head_dim = cfg.head_dim,
                          .q_out = ptr<bf16>(q),
                          .k_cache = k_cache(layer),
                          .v_cache = v_cache(layer)};
    CUDA_CHECK(cuda::qkv_rope_kv_write(p, stream));
    CUDA_CHECK(cuda::paged_attention(ptr<bf16>(q), k_cache(layer), v_cache(layer), m, cfg.num_heads, cfg.num_kv_heads,
                                     cfg.head_dim, config.kv_block_size_tokens,
                                     1.0f / std::sqrt(static_cast<float>(cfg.head_dim)), ptr<bf16>(attn),
                                     attn_workspace.data(), attn_workspace_bytes, stream));
    CUDA_CHECK(gemm.run(ptr<bf16>(attn), ptr<bf16>(w.o_proj), x.data(), cuda::GemmOut::kF32, t, hidden,
                        static_cast<int>(q_width), true, stream));
    CUDA_CHECK(cuda::rms_norm(ptr<float>(x), t, hidden, ptr<bf16>(w.ffn_norm), cfg.rms_norm_eps, ptr<bf16>(h), stream));
    CUDA_CHECK(gemm.run(ptr<bf16>(h), ptr<bf16>(w.gate_up), gate_up.data(), cuda::GemmOut::kBf16, t, 2 * inter, hidden,
                        false, stream));
    CUDA_CHECK(cuda::silu_mul(ptr<bf16>(gate_up), t, inter, ptr<bf16>(act), stream));
    CUDA_CHECK(gemm.run(ptr<bf16>(act), ptr<bf16>(w.down), x.data(), cuda::GemmOut::kF32, t, hidden, inter, true, stream));
}

// LM head over the rows that need logits, max_logit_rows at a time; copies the logits (or only their
// argmax ids) back to the host.
void CudaRunner::Impl::compute_logits(int num_rows, std::vector<float>* logits_out, std::vector<int32_t>* ids_out) {
    const int hidden = cfg.hidden_size, vocab = cfg.vocab_size;
    const bf16* head = weights.lm_head.empty() ? ptr<bf16>(weights.embed) : ptr<bf16>(weights.lm_head);
    if (logits_out != nullptr) logits_out->resize(static_cast<size_t>(num_rows) * vocab);
    if (ids_out != nullptr) ids_out->resize(static_cast<size_t>(num_rows));
    const auto* row_ids = ptr<int32_t>(meta) + meta_layout.logit_rows;
    for (int begin = 0; begin < num_rows; begin += max_logit_rows) {
        const int n = std::min(max_logit_rows, num_rows - begin);
        CUDA_CHECK(cuda::gather_rows(ptr<float>(x), row_ids + begin, n, hidden, ptr<float>(rows), stream));
        CUDA_CHECK(cuda::rms_norm(ptr<float>(rows), n, hidden, ptr<bf16>(weights.final_norm), cfg.rms_norm_eps,
                                  ptr<bf16>(row_norm), stream));
        CUDA_CHECK(gemm.run(ptr<bf16>(row_norm), head, logits.data(), cuda::GemmOut::kF32, n, vocab, hidden, false, stream));
        if (ids_out != nullptr) {
            CUDA_CHECK(cuda::argmax_rows(ptr<float>(logits), n, vocab, ptr<int32_t>(ids), stream));
            CUDA_CHECK(cudaMemcpyAsync(host_ids.data(), ids.data(), static_cast<size_t>(n) * 4, cudaMemcpyDeviceToHost,
                                       stream));
            CUDA_CHECK(cudaStreamSynchronize(stream));
            std::memcpy(ids_out->data() + begin, host_ids.data(), static_cast<size_t>(n) * 4);
            continue;
        }
        const size_t bytes = static_cast<size_t>(n) * vocab * 4;
        CUDA_CHECK(cudaMemcpyAsync(host_logits.data(), logits.data(), bytes, cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        std::memcpy(logits_out->data() + static_cast<size_t>(begin) * vocab, host_logits.data(), bytes);
    }
}

void CudaRunner::Impl::forward(const ForwardBatch& batch, std::vector<float>* logits_out,
                               std::vector<int32_t>* ids_out) {
    cuda::AttentionMetadata m;
    stage_metadata(batch, m);
    const auto* d = ptr<int32_t>(meta);
    CUDA_CHECK(cuda::embedding(d + meta_layout.ids, m.num_tokens, ptr<bf16>(weights.embed), cfg.hidden_size,
                               ptr<float>(x), stream));
    for (int layer = 0; layer < cfg.num_layers; ++layer) run_layer(layer, m, m.num_tokens);
    compute_logits(static_cast<int>(batch.num_logit_rows()), logits_out, ids_out);
}

Result<std::unique_ptr<CudaRunner>> CudaRunner::create(const model::Checkpoint& checkpoint,
                                                        const CudaRunnerConfig& config) {
    if (!cuda::cuda_device_available()) return not_found("no CUDA device is available");
    CUDA_CHECK(cudaSetDevice(config.device));
    CudaRunnerConfig c = config;
    if (c.max_context_tokens <= 0) c.max_context_tokens = checkpoint.config().max_position_embeddings;
    auto weights = CudaWeights::upload(checkpoint);
    if (!weights.ok()) return weights.status();
    auto impl = std::make_unique<Impl>(checkpoint, c, std::move(weights).value());
    HICHAT_RETURN_IF_ERROR(impl->allocate(checkpoint));
    return std::unique_ptr<CudaRunner>(new CudaRunner(std::move(impl)));
}

CudaRunner::CudaRunner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaRunner::~CudaRunner() {
    if (impl_ && impl_->stream != nullptr) {
        cudaStreamSynchronize(impl_->stream);
        cudaStreamDestroy(impl_->stream);
    }
}
const model::ModelConfig& CudaRunner::model_config() const { return impl_->cfg; }
int CudaRunner::num_kv_blocks() const { return impl_->num_blocks; }
int CudaRunner::kv_block_size_tokens() const { return impl_->config.kv_block_size_tokens; }
void CudaRunner::forward(const ForwardBatch& batch, std::vector<float>& logits) {
    impl_->forward(batch, &logits, nullptr);
}
void CudaRunner::forward_argmax(const ForwardBatch& batch, std::vector<int32_t>& ids) {
    impl_->forward(batch, nullptr, &ids);
}

}  // namespace hichat::executor
