#include "model/checkpoint.h"

#include <thread>

#include "model/int_weights.h"
#include "model/on_load_quantization.h"
#include "model/packed_linear.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "model/tensor_layout.h"
#include "model/weight_files.h"

namespace hichat::model {
namespace {

constexpr size_t kMaxProblemsListed = 20;


// Binds names to slots for one checkpoint, collecting every problem (each naming its file and
// tensor) and the names it used.
class WeightBinder {
public:
    WeightBinder(const WeightFiles& files, const ModelConfig& cfg) : files_(files), cfg_(cfg) {}

    // Points each expected slot at its tensor, with its scales when it is FP8; the linear layers of an
    // integer checkpoint are collected in packed() instead, for IntWeights to repack.
    void bind_expected(const std::vector<ExpectedTensor>& expected) {
        const TakeTensor take_fn = [this](const std::string& name) { return take(name); };
        for (const ExpectedTensor& e : expected) {
            if (e.linear && cfg_.quant.packing != IntPacking::kNone &&
                find_packed_linear(files_, cfg_.quant, e.name, e.shape, e.slot, take_fn, packed_, problems_)) {
                continue;
            }
            const WeightFiles::Entry* entry = take(e.name);
            if (entry == nullptr) {
                problems_.push_back(files_.source + ": missing tensor '" + e.name + "'");
                continue;
            }
            const SafetensorsTensor& t = *entry->tensor;
            if (t.shape != e.shape) {
                problems_.push_back(entry->file->path() + ": tensor '" + e.name + "' has shape " +
                                    shape_string(t.shape) + ", config.json implies " + shape_string(e.shape));
                continue;
            }
            if (t.dtype == DType::kI8 || t.dtype == DType::kI32 || t.dtype == DType::kI64) {
                problem(*entry, "is " + std::string(dtype_name(t.dtype)) + "; integer tensors are only the packed weights "
                                "of an integer checkpoint's linear layers (" + cfg_.quant.describe() + ")");
                continue;
            }
            *e.slot = WeightTensor{t.data, t.dtype, t.shape, {}};
            if (t.dtype == DType::kF8E4M3) bind_fp8(e, *entry);
        }
    }

    // The per-layer FP8 KV scales, under the names the producers use: compressed-tensors (k_scale),
    // ModelOpt (k_proj.k_scale) and AutoFP8's one deprecated kv_scale for both.
    void bind_kv_scales(ModelWeights& weights) {
        for (size_t l = 0; l < weights.layers.size(); ++l) {
            const std::string attn = "model.layers." + std::to_string(l) + ".self_attn.";
            LayerWeights& layer = weights.layers[l];
            layer.k_scale = take_scalar({attn + "k_scale", attn + "k_proj.k_scale", attn + "kv_scale"}, 0.0f);
            layer.v_scale = take_scalar({attn + "v_scale", attn + "v_proj.v_scale", attn + "kv_scale"}, 0.0f);
        }
    }

    const std::set<std::string>& used() const { return used_; }
    std::vector<PackedLinear>& packed() { return packed_; }
    std::vector<std::string>& problems() { return problems_; }

private:
    const WeightFiles::Entry* take(const std::string& name) {
        auto it = files_.tensors.find(name);
        if (it == files_.tensors.end()) return nullptr;
        used_.insert(name);
        return &it->second;
    }

    void problem(const WeightFiles::Entry& entry, const std::string& what) {
        problems_.push_back(entry.file->path() + ": tensor '" + entry.tensor->name + "' " + what);
    }

    // The first of `names` present, as one positive finite float; `fallback` when none is.
    float take_scalar(std::initializer_list<std::string> names, float fallback) {
        for (const std::string& name : names) {
            const WeightFiles::Entry* entry = take(name);
            if (entry == nullptr) continue;
            const SafetensorsTensor& t = *entry->tensor;
            if (t.dtype == DType::kF8E4M3 || t.dtype == DType::kI8 || t.dtype == DType::kI32 || t.dtype == DType::kI64 ||
                t.num_bytes != static_cast<size_t>(dtype_size_bytes(t.dtype)) ||
                t.shape.size() > 1) {
                problem(*entry, "must be one F32/BF16/F16 scale (shape [] or [1]), has " + std::string(dtype_name(t.dtype)) +
                                    " " + shape_string(t.shape));
                return fallback;
            }
            const float v = load_as_f32(t.data, t.dtype, 0);
            if (!(v > 0.0f) || !std::isfinite(v)) {
                problem(*entry, "must be a positive finite scale, is " + std::to_string(v));
                return fallback;
            }
            return v;
        }
        return fallback;
    }

    // The weight scales of the FP8 weight in `e`, and its static input scale.
    void bind_fp8(const ExpectedTensor& e, const WeightFiles::Entry& weight) {
        const QuantConfig& q = cfg_.quant;
        const std::string module = e.name.substr(0, e.name.size() - std::string_view(".weight").size());
        if (!e.linear) return problem(weight, "is F8_E4M3; only the weights of linear layers can be FP8");
        if (!q.quantized()) {
            return problem(weight, "is F8_E4M3, but config.json has no quantization_config (nor hf_quant_config.json)");
        }
        const std::string scale_name = module + "." + q.scale_name;
        const WeightFiles::Entry* scale = take(scale_name);
        if (scale == nullptr) {
            problems_.push_back(files_.source + ": missing tensor '" + scale_name + "' (the scales of FP8 weight '" +
                                e.name + "')");
            return;
        }
        QuantScales& out = e.slot->scales;
        if (!scale_grid(*scale, e.shape[0], e.shape[1], out)) return;
        out.data = scale->tensor->data;
        out.dtype = scale->tensor->dtype;
        const bool static_input = q.activations == ActivationQuant::kStaticTensor;
        out.input_scale = take_scalar({module + ".input_scale"}, 0.0f);
        if (static_input && out.input_scale == 0.0f && files_.tensors.count(module + ".input_scale") == 0) {
            problems_.push_back(files_.source + ": missing tensor '" + module +
                                ".input_scale' (static FP8 activations need their scale)");
        }
        if (!static_input) out.input_scale = 0.0f;
    }

    // Checks the scale tensor's dtype and shape against the config's granularity for a [n, k] weight.
    bool scale_grid(const WeightFiles::Entry& scale, int64_t n, int64_t k, QuantScales& out) {
        const SafetensorsTensor& t = *scale.tensor;
        if (t.dtype != DType::kF32 && t.dtype != DType::kBF16 && t.dtype != DType::kF16) {
            problem(scale, "is " + std::string(dtype_name(t.dtype)) + "; scales must be F32, BF16 or F16");
            return false;
        }
        const QuantConfig& q = cfg_.quant;
        using Shape = std::vector<int64_t>;
        std::vector<Shape> allowed;
        switch (q.weight_scale) {
            case WeightScaleKind::kTensor:
                allowed = {Shape{}, Shape{1}};
                out.block_rows = n;
                out.block_cols = k;
                break;
            case WeightScaleKind::kChannel:
                allowed = {Shape{n}, Shape{n, 1}};
                out.block_rows = 1;
                out.block_cols = k;
                break;
            case WeightScaleKind::kBlock:
                out.block_rows = q.block_rows;
                out.block_cols = q.block_cols;
                allowed = {Shape{(n + q.block_rows - 1) / q.block_rows, (k + q.block_cols - 1) / q.block_cols}};
                break;
        }
        for (const Shape& s : allowed) {
            if (t.shape == s) return true;
        }
        std::string expected;
        for (const Shape& s : allowed) expected += (expected.empty() ? "" : " or ") + shape_string(s);
        problem(scale, "has shape " + shape_string(t.shape) + "; " + q.describe() + " for a " +
                           shape_string(Shape{n, k}) + " weight need " + expected);
        return false;
    }

    const WeightFiles& files_;
    const ModelConfig& cfg_;
    std::set<std::string> used_;
    std::vector<std::string> problems_;
    std::vector<PackedLinear> packed_;
};

void find_unexpected(const WeightFiles& files, const std::set<std::string>& used, const ModelConfig& cfg,
                     std::vector<std::string>& problems) {
    for (const auto& [name, entry] : files.tensors) {
        if (used.count(name) != 0 || is_ignored_tensor(name, cfg)) continue;
        problems.push_back(entry.file->path() + ": unexpected tensor '" + name + "' for " + cfg.architecture_name);
    }
}

// One Status listing up to kMaxProblemsListed problems, each naming its file and tensor.
Status problems_status(const std::vector<std::string>& problems) {
    if (problems.empty()) return ok_status();
    if (problems.size() == 1) return invalid_argument(problems[0]);
    std::string msg = std::to_string(problems.size()) + " problems with the checkpoint's tensors: ";
    for (size_t i = 0; i < problems.size() && i < kMaxProblemsListed; ++i) msg += (i ? "; " : "") + problems[i];
    if (problems.size() > kMaxProblemsListed) {
        msg += "; and " + std::to_string(problems.size() - kMaxProblemsListed) + " more";
    }
    return invalid_argument(msg);
}

// Binds every slot of `weights` but the linear layers of an integer checkpoint, which it returns.
Result<std::vector<PackedLinear>> bind_weights(const WeightFiles& files, const ModelConfig& cfg, ModelWeights& weights) {
    WeightBinder binder(files, cfg);
    binder.bind_expected(expected_tensors(cfg, weights));
    binder.bind_kv_scales(weights);
    find_unexpected(files, binder.used(), cfg, binder.problems());
    HICHAT_RETURN_IF_ERROR(problems_status(binder.problems()));
    if (cfg.tie_word_embeddings) weights.lm_head = weights.embed_tokens;
    return std::move(binder.packed());
}

int thread_count(const CheckpointOptions& options) {
    return options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

// Builds a Checkpoint: config.json, then the weight files, then name -> slot binding.
class CheckpointLoader {
public:
    static Result<std::unique_ptr<Checkpoint>> load(const std::string& dir, const CheckpointOptions& options) {
        std::unique_ptr<Checkpoint> ckpt(new Checkpoint());
        ckpt->dir_ = dir;
        Result<ModelConfig> config = load_model_config(dir);
        if (!config.ok()) return config.status();
        ckpt->config_ = std::move(config.value());
        Result<WeightFiles> files = open_weight_files(dir);
        if (!files.ok()) return files.status();
        Result<std::vector<PackedLinear>> packed = bind_weights(*files, ckpt->config_, ckpt->weights_);
        if (!packed.ok()) return packed.status();
        if (!packed->empty()) {
            auto repacked = IntWeights::repack(*packed, ckpt->config_.quant, ckpt->weights_, thread_count(options));
            if (!repacked.ok()) return Status(repacked.status().code(), dir + ": " + repacked.status().message());
            ckpt->repacked_ = std::move(repacked).value();
        }
        ckpt->files_ = std::move(files->files);
        if (options.quantization != LoadQuantization::kNone) HICHAT_RETURN_IF_ERROR(quantize(*ckpt, options));
        return ckpt;
    }

private:
    static Status quantize(Checkpoint& ckpt, const CheckpointOptions& options) {
        const bool q4 = options.quantization == LoadQuantization::kQ4;
        const bool int8 = options.quantization == LoadQuantization::kInt8 || q4;  // q4's lm_head is int8
        const char* flag = q4 ? "--quantization q4" : int8 ? "--quantization int8" : "--quantization fp8";
        if (ckpt.config_.quant.quantized()) {
            return invalid_argument(ckpt.dir_ + "/config.json: " + flag + " needs a bf16, f16 or f32 checkpoint; this one is "
                                    "already quantized (" + ckpt.config_.quant.describe() + ")");
        }
        const ModelConfig& c = ckpt.config_;
        if (int8 && std::max({int64_t{c.intermediate_size}, int64_t{c.hidden_size}, int64_t{c.num_heads} * c.head_dim}) > kIntegerKernelsMaxK) {
            return invalid_argument(ckpt.dir_ + "/config.json: " + flag + " takes linear layers of at most " +
                                    std::to_string(kIntegerKernelsMaxK) + " inputs; hidden_size is " + std::to_string(c.hidden_size) +
                                    ", intermediate_size " + std::to_string(c.intermediate_size) +
                                    ", num_attention_heads * head_dim " + std::to_string(int64_t{c.num_heads} * c.head_dim));
        }
        const int threads = thread_count(options);
        const DType codes = q4 ? DType::kQ4 : int8 ? DType::kI8 : DType::kF8E4M3;
        ckpt.quantized_ = std::make_unique<OnLoadQuantization>(ckpt.weights_, codes, threads);
        ckpt.config_.quant = OnLoadQuantization::config(codes);
        return ok_status();
    }
};

Result<std::unique_ptr<Checkpoint>> Checkpoint::open(const std::string& dir, const CheckpointOptions& options) {
    return CheckpointLoader::load(dir, options);
}

Checkpoint::~Checkpoint() = default;

Result<LoadQuantization> parse_load_quantization(const std::string& text) {
    if (text == "none") return LoadQuantization::kNone;
    if (text == "fp8") return LoadQuantization::kFp8;
    if (text == "int8") return LoadQuantization::kInt8;
    if (text == "q4") return LoadQuantization::kQ4;
    return invalid_argument("--quantization must be none, fp8, int8 or q4, not '" + text + "'");
}

}  // namespace hichat::model
