#include "model/checkpoint.h"

#include <set>
#include <string>
#include <vector>

#include "model/tensor_layout.h"
#include "model/weight_files.h"

namespace hichat::model {
namespace {

constexpr size_t kMaxProblemsListed = 20;

std::string shape_string(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// Points each expected slot at its tensor; records missing and misshaped tensors, and which were used.
void bind_expected(const WeightFiles& files, const std::vector<ExpectedTensor>& expected, std::set<std::string>& used,
                   std::vector<std::string>& problems) {
    for (const ExpectedTensor& e : expected) {
        auto it = files.tensors.find(e.name);
        if (it == files.tensors.end()) {
            problems.push_back(files.source + ": missing tensor '" + e.name + "'");
            continue;
        }
        used.insert(e.name);
        const SafetensorsTensor& t = *it->second.tensor;
        if (t.shape != e.shape) {
            problems.push_back(it->second.file->path() + ": tensor '" + e.name + "' has shape " +
                               shape_string(t.shape) + ", config.json implies " + shape_string(e.shape));
            continue;
        }
        *e.slot = WeightTensor{t.data, t.dtype, t.shape};
    }
}

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

Status bind_weights(const WeightFiles& files, const ModelConfig& cfg, ModelWeights& weights) {
    std::vector<std::string> problems;
    std::set<std::string> used;
    bind_expected(files, expected_tensors(cfg, weights), used, problems);
    find_unexpected(files, used, cfg, problems);
    HICHAT_RETURN_IF_ERROR(problems_status(problems));
    if (cfg.tie_word_embeddings) weights.lm_head = weights.embed_tokens;
    return ok_status();
}

}  // namespace

// Builds a Checkpoint: config.json, then the weight files, then name -> slot binding.
class CheckpointLoader {
public:
    static Result<std::unique_ptr<Checkpoint>> load(const std::string& dir) {
        std::unique_ptr<Checkpoint> ckpt(new Checkpoint());
        ckpt->dir_ = dir;
        Result<ModelConfig> config = load_model_config(dir);
        if (!config.ok()) return config.status();
        ckpt->config_ = std::move(config.value());
        Result<WeightFiles> files = open_weight_files(dir);
        if (!files.ok()) return files.status();
        HICHAT_RETURN_IF_ERROR(bind_weights(*files, ckpt->config_, ckpt->weights_));
        ckpt->files_ = std::move(files->files);
        return ckpt;
    }
};

Result<std::unique_ptr<Checkpoint>> Checkpoint::open(const std::string& dir) { return CheckpointLoader::load(dir); }

}  // namespace hichat::model
