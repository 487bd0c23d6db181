// CudaRunner::Impl's step metadata (StepLayout, upload_metadata) and decode graphs (their keys, the
// start-up captures, and a step as one graph launch).
#include "executor/cuda_runner_impl.h"

namespace hichat::executor {
using namespace cuda_runner_detail;

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

}  // namespace hichat::executor
