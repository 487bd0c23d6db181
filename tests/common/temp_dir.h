// TempDir: a fresh directory under the system temp dir, removed with its files at scope exit.
#pragma once

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace hichat::api::test_support {

class TempDir {
public:
    TempDir() {
        std::random_device rd;
        path_ = std::filesystem::temp_directory_path() / ("hichat_auth_" + std::to_string(rd()) + std::to_string(rd()));
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    std::string path() const { return path_.string(); }

    // Writes `contents` to a file in the directory and returns its path.
    std::string write(const std::string& name, const std::string& contents) const {
        std::filesystem::path p = path_ / name;
        std::ofstream(p, std::ios::binary) << contents;
        return p.string();
    }

    static std::string read(const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }

private:
    std::filesystem::path path_;
};

}  // namespace hichat::api::test_support
