// CudaRunner::Impl's forward pass: embedding, layers (resident, streamed, on the CPU), linears, LM head,
// pick and logprobs.
#include "executor/cuda_runner_impl.h"

namespace hichat::executor {
using namespace cuda_runner_detail;

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
    const int hidden = cfg.hidden_size;
    const bool qkv_unit = fp8_gemm(w.qkv, h, qkv.data(), t, hidden);   // through the FP8 GEMM
    norm(w.attn_norm, t, qkv_unit);
    bool qkv_needs_scales = false;   // an FP8 unit-scale product: qkv_rope_kv_write applies its scales
    if (qkv_unit) {
        qkv_needs_scales = !fp8_gemm_into(w.qkv, qkv, t, static_cast<int>(qkv_width), hidden);
    } else {
        linear(w.qkv, h, qkv.data(), cuda::GemmOut::kBf16, t, static_cast<int>(qkv_width), hidden, false);
    }
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
                          .v_scale = kv_scales[static_cast<size_t>(layer)].second,
                          .row_scale = qkv_needs_scales ? ptr<float>(act_scale) : nullptr,
                          .col_scale = qkv_needs_scales ? ptr<float>(w.qkv.row_scale) : nullptr};
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
    run_mlp(w, t);
}

// rms_norm of x into h, or (fp8_input) straight into the FP8 GEMM's input act_q / act_scale.
void CudaRunner::Impl::norm(const TensorView& weight, int t, bool fp8_input) {
    if (fp8_input) {
        CUDA_CHECK(cuda::rms_norm_fp8(ptr<float>(x), t, cfg.hidden_size, ptr<bf16>(weight), cfg.rms_norm_eps,
                                      ptr<uint8_t>(act_q), ptr<float>(act_scale), stream));
    } else {
        CUDA_CHECK(cuda::rms_norm(ptr<float>(x), t, cfg.hidden_size, ptr<bf16>(weight), cfg.rms_norm_eps, ptr<bf16>(h),
                                  stream));
    }
}

// x += down(SwiGLU(gate_up(rms_norm(x)))). Few tokens: the SwiGLU in the gate/up GEMV. Else the gate/up
// projection into gate_up (an FP8 one scaled by cuBLASLt, or its unit-scale product whose scales the
// SwiGLU applies as it reads it), then the SwiGLU: straight into the FP8 input of an FP8 down
// projection, else to act.
void CudaRunner::Impl::run_mlp(const CudaLayerWeights& w, int t) {
    const int hidden = cfg.hidden_size, inter = cfg.intermediate_size;
    const bool gate_up_unit = fp8_gemm(w.gate_up, h, act.data(), t, hidden);
    norm(w.ffn_norm, t, gate_up_unit);
    if (w.gate_up.fp8() && !gate_up_unit) {
        CUDA_CHECK(cuda::fp8_gemv_silu_mul(ptr<bf16>(h), ptr<uint8_t>(w.gate_up.weight), ptr<float>(w.gate_up.row_scale),
                                           ptr<bf16>(act), t, inter, hidden, stream));
        linear(w.down, act, x.data(), cuda::GemmOut::kF32, t, hidden, inter, true);
        return;
    }
    if (t == 1 && !w.gate_up.fp8() && cuda::gemv_applies(h.data(), w.gate_up.weight.data(), act.data(), 1, hidden)) {
        CUDA_CHECK(cuda::gemv_silu_mul(ptr<bf16>(h), ptr<bf16>(w.gate_up.weight), ptr<bf16>(act), inter, hidden, stream));
        linear(w.down, act, x.data(), cuda::GemmOut::kF32, t, hidden, inter, true);
        return;
    }
    const float *a_scale = nullptr, *w_scale = nullptr;   // gate_up's scales, when an FP8 unit-scale product
    if (gate_up_unit) {
        if (!fp8_gemm_into(w.gate_up, gate_up, t, 2 * inter, hidden)) {
            a_scale = ptr<float>(act_scale);
            w_scale = ptr<float>(w.gate_up.row_scale);
        }
    } else {
        linear(w.gate_up, h, gate_up.data(), cuda::GemmOut::kBf16, t, 2 * inter, hidden, false);
    }
    if (fp8_gemm(w.down, act, x.data(), t, inter)) {
        CUDA_CHECK(cuda::silu_mul_fp8(ptr<bf16>(gate_up), a_scale, w_scale, t, inter, ptr<uint8_t>(act_q),
                                      ptr<float>(act_scale), stream));
        fp8_linear(w.down, x.data(), cuda::GemmOut::kF32, t, hidden, inter, true);
        return;
    }
    CUDA_CHECK(cuda::silu_mul(ptr<bf16>(gate_up), t, inter, ptr<bf16>(act), stream, a_scale, w_scale));
    linear(w.down, act, x.data(), cuda::GemmOut::kF32, t, hidden, inter, true);
}

// The FP8 product of act_q / act_scale and w into bf16 `out` ([t, n]): scaled by cuBLASLt itself where it
// can (true), else at unit scales (false: the consumer applies act_scale and w.row_scale as it reads it).
bool CudaRunner::Impl::fp8_gemm_into(const CudaLinear& w, const cuda::DeviceBuffer& out, int t, int n, int k) {
    const cudaError_t scaled = gemm.run_fp8_scaled(ptr<uint8_t>(act_q), ptr<float>(act_scale), ptr<uint8_t>(w.weight),
                                                   ptr<float>(w.row_scale), out.data(), cuda::GemmOut::kBf16, t, n, k,
                                                   false, stream);
    if (scaled != cudaErrorNotSupported) {
        CUDA_CHECK(scaled);
        return true;
    }
    CUDA_CHECK(gemm.run_fp8_unit(ptr<uint8_t>(act_q), ptr<uint8_t>(w.weight), ptr<bf16>(out), t, n, k, stream));
    return false;
}

bool CudaRunner::Impl::fp8_gemm(const CudaLinear& w, const cuda::DeviceBuffer& in, const void* out, int t, int k) const {
    return w.fp8() && !(t <= kFp8GemvTokens && cuda::fp8_gemv_applies(in.data(), w.weight.data(), out, t, k));
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
    if (!fp8_gemm(w, in, out, t, k)) {
        CUDA_CHECK(cuda::fp8_gemv(ptr<bf16>(in), ptr<uint8_t>(w.weight), ptr<float>(w.row_scale), out,
                                  type == cuda::GemmOut::kF32, t, n, k, accumulate, stream));
        return;
    }
    CUDA_CHECK(cuda::quantize_fp8_rows(ptr<bf16>(in), t, k, ptr<uint8_t>(act_q), ptr<float>(act_scale), stream));
    fp8_linear(w, out, type, t, n, k, accumulate);
}

// out (+)= the FP8 product of act_q / act_scale (the input, quantized) and w, through the unit-scale
// product in fp8_product (in chunks of rows where n is wider than hidden_size).
void CudaRunner::Impl::fp8_linear(const CudaLinear& w, void* out, cuda::GemmOut type, int t, int n, int k,
                                  bool accumulate) {
    const int rows = static_cast<int>(std::min<size_t>(fp8_product.num_bytes() / 2 / static_cast<size_t>(n), t));
    CUDA_CHECK(gemm.run_fp8(ptr<uint8_t>(act_q), ptr<float>(act_scale), ptr<uint8_t>(w.weight), ptr<float>(w.row_scale),
                            out, type, t, n, k, accumulate, ptr<bf16>(fp8_product), std::max(rows, 1), stream));
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

}  // namespace hichat::executor
