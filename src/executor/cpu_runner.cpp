#include "executor/cpu_runner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "backend/cpu/ops.h"
#include "base/check.h"

namespace hichat::executor {
namespace {

int resolve_threads(int requested) {
    if (requested > 0) return requested;
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void grow(std::vector<float>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
}

}  // namespace

CpuRunner::CpuRunner(const model::Checkpoint& checkpoint, const CpuRunnerConfig& config)
    : cfg_(checkpoint.config()),
      first_layer_(config.first_layer),
      host_weights_(checkpoint.weights(), resolve_threads(config.num_threads), config.first_layer),
      weights_(host_weights_.weights()),
      inv_freq_(model::rope_inv_freq(cfg_)),
      pool_(resolve_threads(config.num_threads)),
      kv_(cfg_.num_layers - config.first_layer, cfg_.num_kv_heads, cfg_.head_dim, config.num_kv_blocks, config.kv_block_size_tokens,
          config.kv_dtype),
      num_host_blocks_(config.num_host_kv_blocks),
      host_kv_(static_cast<size_t>(std::max(num_host_blocks_, 0) * kv_.block_bytes())) {}

void CpuRunner::copy_kv_blocks(std::span<const kv::BlockCopy> copies) {
    for (const kv::BlockCopy& c : copies) {
        CHECK(c.host_slot >= 0 && c.host_slot < num_host_blocks_) << "host slot " << c.host_slot;
        std::byte* host = host_kv_.data() + static_cast<int64_t>(c.host_slot) * kv_.block_bytes();
        if (c.direction == kv::BlockCopy::Direction::kToHost) {
            kv_.save_block(c.device_block, host);
        } else {
            kv_.load_block(c.device_block, host);
        }
    }
}

std::vector<int32_t> identity_block_table(int num_tokens, int block_size_tokens) {
    std::vector<int32_t> table(static_cast<size_t>((num_tokens + block_size_tokens - 1) / block_size_tokens));
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
    return table;
}

void CpuRunner::forward(const ForwardBatch& batch, std::vector<float>& logits) {
    CHECK_EQ(first_layer_, 0) << "forward() on a runner of the later layers only";
    prepare(batch);
    const int64_t num_tokens = batch.num_tokens();
    std::vector<int32_t> ids;
    ids.reserve(static_cast<size_t>(num_tokens));
    for (const auto& s : batch.seqs) ids.insert(ids.end(), s.tokens.begin(), s.tokens.end());
    cpu::embedding(ids.data(), num_tokens, weights_.embed_tokens, ws_.x.data());
    for (int layer = 0; layer < cfg_.num_layers; ++layer) run_layer(layer, batch);
    compute_logits(batch, logits);
}

void CpuRunner::run_layers(const ForwardBatch& batch, float* x) {
    prepare(batch);
    const size_t count = static_cast<size_t>(batch.num_tokens()) * static_cast<size_t>(cfg_.hidden_size);
    std::memcpy(ws_.x.data(), x, count * sizeof(float));
    for (int layer = first_layer_; layer < cfg_.num_layers; ++layer) run_layer(layer, batch);
    std::memcpy(x, ws_.x.data(), count * sizeof(float));
}

// Sizes the workspaces, lays out each token's position and its RoPE angles (shared by all layers).
void CpuRunner::prepare(const ForwardBatch& batch) {
    const int64_t t = batch.num_tokens();
    CHECK_GT(t, 0);
    const int64_t q_width = static_cast<int64_t>(cfg_.num_heads) * cfg_.head_dim;
    const int64_t kv_width = static_cast<int64_t>(cfg_.num_kv_heads) * cfg_.head_dim;
    grow(ws_.x, t * cfg_.hidden_size);
    grow(ws_.h, t * cfg_.hidden_size);
    grow(ws_.q, t * q_width);
    grow(ws_.k, t * kv_width);
    grow(ws_.v, t * kv_width);
    grow(ws_.attn, t * q_width);
    grow(ws_.gate, t * cfg_.intermediate_size);
    grow(ws_.up, t * cfg_.intermediate_size);
    ws_.positions.clear();
    for (const auto& s : batch.seqs) {
        const int end = s.pos0 + static_cast<int>(s.tokens.size());
        CHECK_LE(end, static_cast<int64_t>(s.block_table.size()) * kv_.block_size_tokens());
        for (int p = s.pos0; p < end; ++p) ws_.positions.push_back(p);
    }
    grow(ws_.rope, t * cfg_.head_dim);
    cpu::rope_cos_sin(ws_.positions.data(), t, inv_freq_.data(), cfg_.head_dim, ws_.rope.data());
}

// x += attention(norm(x)); x += mlp(norm(x))
void CpuRunner::run_layer(int layer, const ForwardBatch& batch) {
    const model::LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
    const int64_t t = batch.num_tokens();
    const int64_t hidden = cfg_.hidden_size;

    cpu::rms_norm(ws_.x.data(), t, hidden, w.attn_norm, cfg_.rms_norm_eps, ws_.h.data());
    const cpu::LinearOutput qkv[] = {{&w.q_proj, &w.q_bias, ws_.q.data()},
                                     {&w.k_proj, &w.k_bias, ws_.k.data()},
                                     {&w.v_proj, &w.v_bias, ws_.v.data()}};
    cpu::linear_fused(ws_.h.data(), t, qkv, pool_);
    if (cfg_.qk_norm) {
        cpu::rms_norm(ws_.q.data(), t * cfg_.num_heads, cfg_.head_dim, w.q_norm, cfg_.rms_norm_eps, ws_.q.data());
        cpu::rms_norm(ws_.k.data(), t * cfg_.num_kv_heads, cfg_.head_dim, w.k_norm, cfg_.rms_norm_eps,
                      ws_.k.data());
    }
    const int64_t q_width = static_cast<int64_t>(cfg_.num_heads) * cfg_.head_dim;
    const int64_t kv_width = static_cast<int64_t>(cfg_.num_kv_heads) * cfg_.head_dim;
    cpu::rope_apply(ws_.q.data(), t, q_width, cfg_.num_heads, cfg_.head_dim, ws_.rope.data());
    cpu::rope_apply(ws_.k.data(), t, kv_width, cfg_.num_kv_heads, cfg_.head_dim, ws_.rope.data());
    attention(layer, batch);
    cpu::linear(ws_.attn.data(), t, w.o_proj, &w.o_bias, ws_.h.data(), pool_);
    cpu::add_inplace(ws_.x.data(), ws_.h.data(), t * hidden);

    cpu::rms_norm(ws_.x.data(), t, hidden, w.ffn_norm, cfg_.rms_norm_eps, ws_.h.data());
    const cpu::LinearOutput gate_up[] = {{&w.gate_proj, &w.gate_bias, ws_.gate.data()},
                                         {&w.up_proj, &w.up_bias, ws_.up.data()}};
    cpu::linear_fused(ws_.h.data(), t, gate_up, pool_);
    cpu::silu_mul(ws_.gate.data(), ws_.up.data(), t, cfg_.intermediate_size, ws_.gate.data());
    cpu::linear(ws_.gate.data(), t, w.down_proj, &w.down_bias, ws_.h.data(), pool_);
    cpu::add_inplace(ws_.x.data(), ws_.h.data(), t * hidden);
}

// Writes the new K/V rows into each sequence's blocks (rounded to the pool's dtype), then attends over
// its whole prefix.
void CpuRunner::attention(int layer, const ForwardBatch& batch) {
    const int64_t q_width = static_cast<int64_t>(cfg_.num_heads) * cfg_.head_dim;
    const int64_t kv_width = kv_.row_elements();
    const float scale = 1.0f / std::sqrt(static_cast<float>(cfg_.head_dim));
    int64_t row = 0;
    for (const auto& s : batch.seqs) {
        const auto n = static_cast<int64_t>(s.tokens.size());
        for (int64_t i = 0; i < n; ++i) {
            kv_.write(layer - first_layer_, s.block_table, s.pos0 + static_cast<int>(i), ws_.k.data() + (row + i) * kv_width,
                      ws_.v.data() + (row + i) * kv_width);
        }
        cpu::paged_attention(ws_.q.data() + row * q_width, q_width, n, s.pos0, kv_.keys(layer - first_layer_), kv_.values(layer - first_layer_),
                             kv_.dtype(), kv_width, s.block_table.data(), kv_.block_size_tokens(), cfg_.num_heads,
                             cfg_.num_kv_heads, cfg_.head_dim, scale, ws_.attn.data() + row * q_width, pool_);
        row += n;
    }
}

// Final norm and LM head on the rows that need logits only.
void CpuRunner::compute_logits(const ForwardBatch& batch, std::vector<float>& logits) {
    const int64_t hidden = cfg_.hidden_size;
    const int64_t num_rows = batch.num_logit_rows();
    grow(ws_.rows, num_rows * hidden);
    int64_t src = 0, dst = 0;
    for (const auto& s : batch.seqs) {
        const auto n = static_cast<int64_t>(s.tokens.size());
        const int64_t first = s.all_logits ? 0 : n - 1;
        std::memcpy(ws_.rows.data() + dst * hidden, ws_.x.data() + (src + first) * hidden,
                    sizeof(float) * (n - first) * hidden);
        dst += n - first;
        src += n;
    }
    cpu::rms_norm(ws_.rows.data(), num_rows, hidden, weights_.final_norm, cfg_.rms_norm_eps, ws_.rows.data());
    logits.resize(static_cast<size_t>(num_rows * cfg_.vocab_size));
    cpu::linear(ws_.rows.data(), num_rows, weights_.lm_head, nullptr, logits.data(), pool_);
}

}  // namespace hichat::executor
