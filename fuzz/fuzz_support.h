// Helpers shared by the fuzz targets: failing loudly on a broken invariant, scratch files, and the
// fixed inputs (corpus files, reference tokenizers) a target loads once at start-up.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace hichat::fuzz {

// A broken invariant: print it and abort, which libFuzzer reports as a crash with the input saved.
[[noreturn]] inline void fail(const std::string& what) {
    std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

inline void require(bool ok, const std::string& what) {
    if (!ok) fail(what);
}

// Reads a file the target needs to start; a missing file stops the run with its name.
inline std::string read_whole_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "fuzz target: cannot read %s\n", path.c_str());
        std::exit(2);
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline void write_whole_file(const std::string& path, const void* data, size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) fail("cannot write scratch file " + path);
}

// A fresh directory of this process under the system temp dir, removed at exit.
inline const std::string& scratch_dir(const std::string& name) {
    static const std::string* dir = [&] {
        // Never freed: the exit handler below runs after static destructors would have.
        auto* d = new std::string((std::filesystem::temp_directory_path() /
                                   ("hichat_fuzz_" + name + "_" + std::to_string(::getpid())))
                                      .string());
        std::filesystem::remove_all(*d);
        std::filesystem::create_directories(*d);
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove_all(*dir, ignored);
        });
        return d;
    }();
    return *dir;
}

// Files of a corpus folder with the given extension, sorted by name (stable choice by index).
inline std::vector<std::string> corpus_files(const std::string& folder, const std::string& extension) {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
        if (entry.path().extension() == extension) files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) {
        std::fprintf(stderr, "fuzz target: no %s files in %s\n", extension.c_str(), folder.c_str());
        std::exit(2);
    }
    return files;
}

}  // namespace hichat::fuzz
