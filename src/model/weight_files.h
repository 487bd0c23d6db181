// WeightFiles: the safetensors files of a checkpoint folder and the table from tensor name to
// tensor (internal to model/). Either one model.safetensors, or the shards that
// model.safetensors.index.json's weight_map names. Owns the files; immutable once opened.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/safetensors_file.h"

namespace hichat::model {

struct WeightFiles {
    struct Entry {
        const SafetensorsTensor* tensor;  // into one of `files`
        const SafetensorsFile* file;      // the file that holds it
    };

    std::string source;                   // the file that lists the tensors: model.safetensors or the index
    std::vector<std::unique_ptr<SafetensorsFile>> files;
    std::map<std::string, Entry, std::less<>> tensors;  // by Hugging Face name
};

// Opens `dir`/model.safetensors.index.json and its shards if the index exists, otherwise
// `dir`/model.safetensors. Errors name the file and, where one is at fault, the tensor or shard:
// neither file present, bad index JSON or weight_map, a shard that cannot be opened or is bad,
// a tensor the index places in a shard that lacks it, a tensor held by two files.
Result<WeightFiles> open_weight_files(const std::string& dir);

}  // namespace hichat::model
