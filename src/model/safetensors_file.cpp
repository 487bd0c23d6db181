#include "model/safetensors_file.h"

#include <algorithm>
#include <string>

#include "model/json_fields.h"

namespace hichat::model {
namespace {

constexpr size_t kHeaderLengthBytes = 8;
constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the limit the safetensors format sets

struct DTypeName {
    const char* name;
    DType dtype;
};
constexpr DTypeName kSupportedDTypes[] = {{"BF16", DType::kBF16}, {"F16", DType::kF16}, {"F32", DType::kF32},
                                        {"F8_E4M3", DType::kF8E4M3}, {"I8", DType::kI8}, {"I32", DType::kI32}, {"I64", DType::kI64}};

uint64_t read_u64_le(const unsigned char* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
    return v;
}

// Where a file's problem is: "<path>: tensor '<name>': <what>".
Status tensor_error(const std::string& path, const std::string& name, const std::string& what) {
    return invalid_argument(path + ": tensor '" + name + "': " + what);
}

Status parse_dtype(const std::string& path, const std::string& name, const Json& entry, DType* out) {
    auto it = entry.find("dtype");
    if (it == entry.end() || !it->is_string()) return tensor_error(path, name, "missing or non-string 'dtype'");
    std::string dtype = it->get<std::string>();
    for (const DTypeName& d : kSupportedDTypes) {
        if (dtype == d.name) {
            *out = d.dtype;
            return ok_status();
        }
    }
    return unimplemented(path + ": tensor '" + name + "': unsupported dtype '" + dtype +
                         "' (supported: BF16, F16, F32, F8_E4M3, I8, I32, I64)");
}

// Parses the shape and returns its element count, guarding against overflow.
Status parse_shape(const std::string& path, const std::string& name, const Json& entry,
                   std::vector<int64_t>* shape, uint64_t* num_elements) {
    auto it = entry.find("shape");
    if (it == entry.end() || !it->is_array()) return tensor_error(path, name, "missing or non-list 'shape'");
    *num_elements = 1;
    for (const Json& dim : *it) {
        int64_t d = 0;
        if (!json_to_int(dim, &d) || d < 0) return tensor_error(path, name, "bad dimension " + dim.dump());
        if (__builtin_mul_overflow(*num_elements, static_cast<uint64_t>(d), num_elements)) {
            return tensor_error(path, name, "shape " + it->dump() + " overflows");
        }
        shape->push_back(d);
    }
    return ok_status();
}

Status parse_offsets(const std::string& path, const std::string& name, const Json& entry, uint64_t* begin,
                     uint64_t* end) {
    auto it = entry.find("data_offsets");
    if (it == entry.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_number_unsigned() ||
        !(*it)[1].is_number_unsigned()) {
        return tensor_error(path, name, "'data_offsets' must be two non-negative integers");
    }
    *begin = (*it)[0].get<uint64_t>();
    *end = (*it)[1].get<uint64_t>();
    if (*begin > *end) return tensor_error(path, name, "data_offsets " + it->dump() + " are out of order");
    return ok_status();
}

// Checks one header entry against the data section [data, data + data_bytes) and builds its view.
Status parse_entry(const std::string& path, const std::string& name, const Json& entry,
                   const unsigned char* data, uint64_t data_bytes, SafetensorsTensor* out) {
    if (!entry.is_object()) return tensor_error(path, name, "header entry is not a JSON object");
    out->name = name;
    HICHAT_RETURN_IF_ERROR(parse_dtype(path, name, entry, &out->dtype));
    uint64_t num_elements = 0;
    HICHAT_RETURN_IF_ERROR(parse_shape(path, name, entry, &out->shape, &num_elements));
    uint64_t begin = 0, end = 0;
    HICHAT_RETURN_IF_ERROR(parse_offsets(path, name, entry, &begin, &end));
    uint64_t expected_bytes = 0;
    if (__builtin_mul_overflow(num_elements, static_cast<uint64_t>(dtype_size_bytes(out->dtype)), &expected_bytes) ||
        end - begin != expected_bytes) {
        return tensor_error(path, name, "data_offsets span " + std::to_string(end - begin) +
                                            " bytes but shape x dtype needs " + std::to_string(expected_bytes));
    }
    if (end > data_bytes) {
        return data_loss(path + ": tensor '" + name + "': data ends at byte " + std::to_string(end) +
                         " of the data section but the file holds only " + std::to_string(data_bytes) +
                         " bytes of data (truncated file?)");
    }
    out->data = data + begin;
    out->num_bytes = static_cast<size_t>(expected_bytes);
    return ok_status();
}

}  // namespace

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
    Result<std::unique_ptr<MappedFile>> mapped = MappedFile::open(path);
    if (!mapped.ok()) return mapped.status();
    std::unique_ptr<SafetensorsFile> file(new SafetensorsFile(std::move(mapped.value())));
    HICHAT_RETURN_IF_ERROR(file->parse_header());
    return file;
}

Status SafetensorsFile::parse_header() {
    const std::string& file = path();
    const uint64_t file_bytes = file_->size_bytes();
    if (file_bytes < kHeaderLengthBytes) {
        return data_loss(file + ": " + std::to_string(file_bytes) +
                         " bytes is too short for a safetensors header length (truncated file?)");
    }
    const uint64_t header_bytes = read_u64_le(file_->data());
    if (header_bytes > file_bytes - kHeaderLengthBytes || header_bytes > kMaxHeaderBytes) {
        return data_loss(file + ": header length " + std::to_string(header_bytes) + " exceeds the " +
                         std::to_string(file_bytes - kHeaderLengthBytes) +
                         " bytes after it (truncated file or bad header length)");
    }
    const char* header_text = reinterpret_cast<const char*>(file_->data() + kHeaderLengthBytes);
    Result<Json> header = parse_json(std::string(header_text, header_bytes), file + " (header)");
    if (!header.ok()) return header.status();
    if (!header->is_object()) return invalid_argument(file + ": header is not a JSON object");

    const unsigned char* data = file_->data() + kHeaderLengthBytes + header_bytes;
    const uint64_t data_bytes = file_bytes - kHeaderLengthBytes - header_bytes;
    for (const auto& [name, entry] : header->items()) {
        if (name == "__metadata__") continue;
        SafetensorsTensor tensor;
        HICHAT_RETURN_IF_ERROR(parse_entry(file, name, entry, data, data_bytes, &tensor));
        tensors_.push_back(std::move(tensor));
    }
    std::sort(tensors_.begin(), tensors_.end(),
              [](const SafetensorsTensor& a, const SafetensorsTensor& b) { return a.name < b.name; });
    return ok_status();
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
    auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                               [](const SafetensorsTensor& t, std::string_view n) { return t.name < n; });
    if (it == tensors_.end() || it->name != name) return nullptr;
    return &*it;
}

}  // namespace hichat::model
