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

class IntWeights;
class OnLoadQuantization;

// How open() stores the linear weights: as the files have them, or quantized to FP8 or int8
// (per-channel weight scales, dynamic per-token activations; on_load_quantization.h) from a bf16 /
// f16 / f32 checkpoint. int8 runs on the CPU backend only.
enum class LoadQuantization { kNone, kFp8, kInt8, kQ4 };

// The --quantization flag's value: "none", "fp8" or "int8"; any other is an error naming the flag.
Result<LoadQuantization> parse_load_quantization(const std::string& text);

struct CheckpointOptions {
    LoadQuantization quantization = LoadQuantization::kNone;
    int threads = 0;   // for the quantization; 0: one per hardware thread
};

class Checkpoint {
public:
    // Opens `dir`: config.json, then model.safetensors or model.safetensors.index.json + shards.
    // Errors name the file and, where it applies, the tensor: missing files, bad JSON, unknown
    // architecture, truncated files, unsupported dtypes, missing, unexpected or misshaped tensors.
    // With options.quantization kFp8 or kInt8, a checkpoint that is already quantized is refused.
    static Result<std::unique_ptr<Checkpoint>> open(const std::string& dir, const CheckpointOptions& options = {});
    ~Checkpoint();

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
    std::unique_ptr<OnLoadQuantization> quantized_;         // owns the views of --quantization fp8|int8|q4
    std::unique_ptr<IntWeights> repacked_;                  // owns the views of an integer checkpoint's linears
};

}  // namespace hichat::model
