// SafetensorsFile: one .safetensors file, memory-mapped, with its header parsed and validated.
// Layout: u64 little-endian header length N, N bytes of JSON header
//   {"<name>": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}},
// then the data; offsets are relative to the first data byte (8 + N).
// Owns the mapping; the tensors are views into it. Immutable after open(); any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/mapped_file.h"
#include "base/status.h"

namespace hichat::model {

struct SafetensorsTensor {
    std::string name;
    DType dtype = DType::kF32;
    std::vector<int64_t> shape;   // row-major
    const void* data = nullptr;   // into the file mapping; no alignment is guaranteed
    size_t num_bytes = 0;         // == num_elements * dtype_size_bytes(dtype)
};

class SafetensorsFile {
public:
    // Maps `path` and validates its header. Errors name the file, and the tensor where one is at
    // fault: cannot open (kNotFound); shorter than 8 bytes, header length past the end of the
    // file, data past the end of the file (kDataLoss: truncated or corrupt); bad header JSON or
    // entry, bad shape, data_offsets out of order or not shape x dtype size (kInvalidArgument);
    // dtype other than BF16/F16/F32/F8_E4M3/I8/I32/I64 (kUnimplemented).
    static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);

    const std::string& path() const { return file_->path(); }
    const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // sorted by name
    const SafetensorsTensor* find(std::string_view name) const;                 // nullptr if absent

private:
    explicit SafetensorsFile(std::unique_ptr<MappedFile> file) : file_(std::move(file)) {}
    Status parse_header();

    std::unique_ptr<MappedFile> file_;
    std::vector<SafetensorsTensor> tensors_;
};

}  // namespace hichat::model
