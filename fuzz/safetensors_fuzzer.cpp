// safetensors reader: arbitrary bytes as a whole .safetensors file (u64 header length, JSON header,
// data) -> SafetensorsFile::open, then Checkpoint::open of a folder holding that file and a fixed tiny
// Llama config.json (fuzz/data/tiny_llama_config.json). Bad input is a Status naming the
// file; an accepted file's tensors lie inside the file and match their shape x dtype size.
#include <cstdint>
#include <string>

#include "base/dtype.h"
#include "fuzz_support.h"
#include "model/checkpoint.h"
#include "model/safetensors_file.h"

using hichat::fuzz::require;

namespace {

const std::string& model_dir() {
    static const std::string dir = [] {
        const std::string d = hichat::fuzz::scratch_dir("safetensors");
        const std::string config =
            hichat::fuzz::read_whole_file(std::string(HICHAT_FUZZ_DATA_DIR) + "/tiny_llama_config.json");
        hichat::fuzz::write_whole_file(d + "/config.json", config.data(), config.size());
        return d;
    }();
    return dir;
}

void check_tensors(const hichat::model::SafetensorsFile& file, size_t file_size) {
    for (const auto& t : file.tensors()) {
        uint64_t elements = 1;
        for (int64_t d : t.shape) {
            require(d >= 0, "tensor " + t.name + " has a negative dimension");
            elements *= static_cast<uint64_t>(d);
        }
        require(t.num_bytes == elements * hichat::dtype_size_bytes(t.dtype), "tensor " + t.name + ": size mismatch");
        require(t.num_bytes <= file_size, "tensor " + t.name + " is larger than the file");
        if (t.num_bytes > 0) {
            // Touch the first and last byte: ASan reports a view outside the mapping.
            volatile unsigned char first = static_cast<const unsigned char*>(t.data)[0];
            volatile unsigned char last = static_cast<const unsigned char*>(t.data)[t.num_bytes - 1];
            (void)first;
            (void)last;
        }
        require(file.find(t.name) == &t, "find() does not return tensor " + t.name);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = model_dir() + "/model.safetensors";
    hichat::fuzz::write_whole_file(path, data, size);
    auto file = hichat::model::SafetensorsFile::open(path);
    if (!file.ok()) {
        require(file.status().message().find(path) != std::string::npos,
                "error does not name the file: " + file.status().message());
        return 0;
    }
    check_tensors(**file, size);
    auto checkpoint = hichat::model::Checkpoint::open(model_dir());
    if (!checkpoint.ok()) {
        require(!checkpoint.status().message().empty(), "Checkpoint::open failed without a message");
    }
    return 0;
}
