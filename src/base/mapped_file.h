// A read-only memory map of a whole file; the one owner of the mapping.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "base/status.h"

namespace hichat {

class MappedFile {
public:
    // Errors: kNotFound if the file cannot be opened, kDataLoss if it cannot be mapped.
    static Result<std::unique_ptr<MappedFile>> open(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const unsigned char* data() const { return data_; }
    size_t size_bytes() const { return size_bytes_; }
    const std::string& path() const { return path_; }

private:
    MappedFile(std::string path, const unsigned char* data, size_t size_bytes)
        : path_(std::move(path)), data_(data), size_bytes_(size_bytes) {}

    std::string path_;
    const unsigned char* data_;
    size_t size_bytes_;
};

// Reads a whole file into a string. Errors: kNotFound naming the path.
Result<std::string> read_file(const std::string& path);

}  // namespace hichat
