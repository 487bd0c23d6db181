#include "model/weight_files.h"

#include <filesystem>
#include <set>

#include "base/mapped_file.h"
#include "model/json_fields.h"

namespace hichat::model {
namespace {

constexpr char kSingleFile[] = "model.safetensors";
constexpr char kIndexFile[] = "model.safetensors.index.json";

// Adds every tensor of `file` to the table; a name already there is an error naming both files.
Status add_tensors(const SafetensorsFile& file, WeightFiles& out) {
    for (const SafetensorsTensor& t : file.tensors()) {
        auto [it, inserted] = out.tensors.try_emplace(t.name, WeightFiles::Entry{&t, &file});
        if (!inserted) {
            return invalid_argument(file.path() + ": tensor '" + t.name + "' is also in " + it->second.file->path());
        }
    }
    return ok_status();
}

Result<WeightFiles> open_single(const std::string& path) {
    WeightFiles out;
    out.source = path;
    Result<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::open(path);
    if (!file.ok()) return file.status();
    out.files.push_back(std::move(file.value()));
    HICHAT_RETURN_IF_ERROR(add_tensors(*out.files.back(), out));
    return out;
}

// weight_map: tensor name -> shard file name (a plain name inside the checkpoint folder).
Result<std::map<std::string, std::string>> read_weight_map(const std::string& index_path) {
    Result<std::string> text = read_file(index_path);
    if (!text.ok()) return text.status();
    Result<Json> doc = parse_json(*text, index_path);
    if (!doc.ok()) return doc.status();
    JsonFields fields(*doc, index_path);
    const Json* map = fields.find("weight_map");
    if (map == nullptr || !map->is_object()) return fields.error("weight_map", "is missing or not a JSON object");
    std::map<std::string, std::string> weight_map;
    for (const auto& [name, shard] : map->items()) {
        if (!shard.is_string()) return fields.error("weight_map." + name, "must be a file name string");
        std::string file = shard.get<std::string>();
        if (file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos) {
            return fields.error("weight_map." + name, "names '" + file + "', not a file in the checkpoint folder");
        }
        weight_map.emplace(name, std::move(file));
    }
    return weight_map;
}

Status open_shard(const std::string& dir, const std::string& index_path, const std::string& shard,
                  const std::string& first_tensor, WeightFiles& out) {
    Result<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::open(dir + "/" + shard);
    if (!file.ok()) {
        return Status(file.status().code(), index_path + ": shard '" + shard + "' (holding tensor '" + first_tensor +
                                                "'): " + file.status().message());
    }
    out.files.push_back(std::move(file.value()));
    return add_tensors(*out.files.back(), out);
}

// Every tensor the index lists must be in the shard it names.
Status check_index_matches_shards(const std::string& index_path, const std::map<std::string, std::string>& weight_map,
                                  const WeightFiles& files) {
    for (const auto& [name, shard] : weight_map) {
        auto it = files.tensors.find(name);
        if (it == files.tensors.end() || std::filesystem::path(it->second.file->path()).filename() != shard) {
            return invalid_argument(index_path + ": tensor '" + name + "' is listed in shard '" + shard +
                                    "', which does not contain it");
        }
    }
    return ok_status();
}

Result<WeightFiles> open_sharded(const std::string& dir, const std::string& index_path) {
    Result<std::map<std::string, std::string>> weight_map = read_weight_map(index_path);
    if (!weight_map.ok()) return weight_map.status();
    WeightFiles out;
    out.source = index_path;
    std::set<std::string> opened;
    for (const auto& [name, shard] : *weight_map) {
        if (!opened.insert(shard).second) continue;
        HICHAT_RETURN_IF_ERROR(open_shard(dir, index_path, shard, name, out));
    }
    HICHAT_RETURN_IF_ERROR(check_index_matches_shards(index_path, *weight_map, out));
    return out;
}

}  // namespace

Result<WeightFiles> open_weight_files(const std::string& dir) {
    std::string index_path = dir + "/" + kIndexFile;
    std::string single_path = dir + "/" + kSingleFile;
    std::error_code ec;
    if (std::filesystem::exists(index_path, ec)) return open_sharded(dir, index_path);
    if (std::filesystem::exists(single_path, ec)) return open_single(single_path);
    return not_found(dir + ": neither " + kSingleFile + " nor " + kIndexFile + " found");
}

}  // namespace hichat::model
