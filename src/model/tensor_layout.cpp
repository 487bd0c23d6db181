#include "model/tensor_layout.h"

namespace hichat::model {
namespace {

using Shape = std::vector<int64_t>;

void add_attention(const ModelConfig& cfg, const std::string& prefix, LayerWeights& layer,
                   std::vector<ExpectedTensor>& out) {
    const int64_t hidden = cfg.hidden_size;
    const int64_t q_dim = static_cast<int64_t>(cfg.num_heads) * cfg.head_dim;
    const int64_t kv_dim = static_cast<int64_t>(cfg.num_kv_heads) * cfg.head_dim;
    const std::string attn = prefix + "self_attn.";
    out.push_back({attn + "q_proj.weight", Shape{q_dim, hidden}, &layer.q_proj, true});
    out.push_back({attn + "k_proj.weight", Shape{kv_dim, hidden}, &layer.k_proj, true});
    out.push_back({attn + "v_proj.weight", Shape{kv_dim, hidden}, &layer.v_proj, true});
    out.push_back({attn + "o_proj.weight", Shape{hidden, q_dim}, &layer.o_proj, true});
    if (cfg.qkv_bias) {
        out.push_back({attn + "q_proj.bias", Shape{q_dim}, &layer.q_bias});
        out.push_back({attn + "k_proj.bias", Shape{kv_dim}, &layer.k_bias});
        out.push_back({attn + "v_proj.bias", Shape{kv_dim}, &layer.v_bias});
    }
    if (cfg.o_bias) out.push_back({attn + "o_proj.bias", Shape{hidden}, &layer.o_bias});
    if (cfg.qk_norm) {
        out.push_back({attn + "q_norm.weight", Shape{cfg.head_dim}, &layer.q_norm});
        out.push_back({attn + "k_norm.weight", Shape{cfg.head_dim}, &layer.k_norm});
    }
}

void add_mlp(const ModelConfig& cfg, const std::string& prefix, LayerWeights& layer, std::vector<ExpectedTensor>& out) {
    const int64_t hidden = cfg.hidden_size;
    const int64_t inter = cfg.intermediate_size;
    const std::string mlp = prefix + "mlp.";
    out.push_back({mlp + "gate_proj.weight", Shape{inter, hidden}, &layer.gate_proj, true});
    out.push_back({mlp + "up_proj.weight", Shape{inter, hidden}, &layer.up_proj, true});
    out.push_back({mlp + "down_proj.weight", Shape{hidden, inter}, &layer.down_proj, true});
    if (cfg.mlp_bias) {
        out.push_back({mlp + "gate_proj.bias", Shape{inter}, &layer.gate_bias});
        out.push_back({mlp + "up_proj.bias", Shape{inter}, &layer.up_bias});
        out.push_back({mlp + "down_proj.bias", Shape{hidden}, &layer.down_bias});
    }
}

void add_layer(const ModelConfig& cfg, int index, LayerWeights& layer, std::vector<ExpectedTensor>& out) {
    const std::string prefix = "model.layers." + std::to_string(index) + ".";
    const Shape norm{cfg.hidden_size};
    out.push_back({prefix + "input_layernorm.weight", norm, &layer.attn_norm});
    add_attention(cfg, prefix, layer, out);
    out.push_back({prefix + "post_attention_layernorm.weight", norm, &layer.ffn_norm});
    add_mlp(cfg, prefix, layer, out);
}

}  // namespace

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& cfg, ModelWeights& weights) {
    weights.layers.assign(static_cast<size_t>(cfg.num_layers), LayerWeights{});
    const Shape embedding{cfg.vocab_size, cfg.hidden_size};
    std::vector<ExpectedTensor> out;
    out.push_back({"model.embed_tokens.weight", embedding, &weights.embed_tokens});
    for (int i = 0; i < cfg.num_layers; ++i) add_layer(cfg, i, weights.layers[static_cast<size_t>(i)], out);
    out.push_back({"model.norm.weight", Shape{cfg.hidden_size}, &weights.final_norm});
    if (!cfg.tie_word_embeddings) out.push_back({"lm_head.weight", embedding, &weights.lm_head, true});
    return out;
}

bool is_ignored_tensor(std::string_view name, const ModelConfig& cfg) {
    constexpr std::string_view kInvFreq = "rotary_emb.inv_freq";
    if (name.size() >= kInvFreq.size() && name.substr(name.size() - kInvFreq.size()) == kInvFreq) return true;
    return cfg.tie_word_embeddings && name == "lm_head.weight";
}

std::string shape_string(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

}  // namespace hichat::model
