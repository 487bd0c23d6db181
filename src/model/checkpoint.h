// Checkpoint: a Hugging Face model folder opened for inference. Owns the memory maps of its
// safetensors files; the ModelWeights views point into them. Immutable after open(); any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/model_config.h"
#include "model/safetensors_file.h"
#include "model/weights.h"

namespace hichat::model {

class Checkpoint {
public:
    // Opens `dir`: config.json, then model.safetensors or model.safetensors.index.json + shards.
    // Errors name the file and, where it applies, the tensor: missing files, bad JSON, unknown
    // architecture, truncated files, unsupported dtypes, missing, unexpected or misshaped tensors.
    static Result<std::unique_ptr<Checkpoint>> open(const std::string& dir);

    const std::string& dir() const { return dir_; }
    const ModelConfig& config() const { return config_; }
    const ModelWeights& weights() const { return weights_; }

private:
    Checkpoint() = default;
    friend class CheckpointLoader;

    std::string dir_;
    ModelConfig config_;
    ModelWeights weights_;
    std::vector<std::unique_ptr<SafetensorsFile>> files_;  // own the maps weights_ views
};

}  // namespace hichat::model
