// CudaRunner: creation, allocation, and a step's host side (submit, pick, collect, forward, KV block
// copies); the forward pass is in cuda_runner_layers.cpp, metadata and graphs in cuda_runner_graphs.cpp.
#include "executor/cuda_runner_impl.h"

namespace hichat::executor {
using namespace cuda_runner_detail;

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
        if (config.max_num_tokens_per_step > kFp8GemvTokens)
            HICHAT_RETURN_IF_ERROR(alloc(fp8_product, t * cfg.hidden_size * 2));
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
    auto weights = CudaWeights::upload(checkpoint, [&](int64_t n, int64_t k) {
        if (k % 64 != 0) return false;
        if (max_tokens <= kFp8GemvTokens) return true;
        return probe.fp8_supported(kFp8GemvTokens + 1, static_cast<int>(n), static_cast<int>(k)) &&
               probe.fp8_supported(max_tokens, static_cast<int>(n), static_cast<int>(k));
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
