// Helpers for tests that read the transformers-golden fixtures under tests/fixtures/.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hichat::testing {

// HICHAT_FIXTURES_DIR in the environment overrides the path compiled in (for relocated test binaries).
inline std::string fixtures_root() {
    const char* env = std::getenv("HICHAT_FIXTURES_DIR");
    return env != nullptr && *env != '\0' ? env : HICHAT_FIXTURES_DIR;
}

inline std::string fixture_dir(const std::string& name) { return fixtures_root() + "/" + name; }

inline const std::vector<std::string>& fixture_names() {
    static const std::vector<std::string> kNames = {"llama3", "llama_tied", "qwen2", "qwen3", "mistral"};
    return kNames;
}

inline nlohmann::json read_golden(const std::string& name) {
    std::ifstream in(fixture_dir(name) + "/golden.json");
    return nlohmann::json::parse(in);
}

inline std::vector<float> read_floats(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    std::vector<float> v(static_cast<size_t>(in.tellg()) / sizeof(float));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
    return v;
}

// ||a - b|| / ||b||; infinite if sizes differ or any value is not finite.
inline double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size() || b.empty()) return INFINITY;
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (!std::isfinite(a[i])) return INFINITY;
        double d = static_cast<double>(a[i]) - b[i];
        num += d * d;
        den += static_cast<double>(b[i]) * b[i];
    }
    return std::sqrt(num / den);
}

// Share of the rows of two [rows, vocab] logit arrays whose argmax (lowest index on ties) agrees.
inline double top1_agreement(const std::vector<float>& a, const std::vector<float>& b, size_t vocab) {
    const size_t rows = a.size() / vocab;
    size_t same = 0;
    for (size_t r = 0; r < rows; ++r) {
        const auto row_a = a.begin() + static_cast<std::ptrdiff_t>(r * vocab);
        const auto row_b = b.begin() + static_cast<std::ptrdiff_t>(r * vocab);
        same += std::max_element(row_a, row_a + static_cast<std::ptrdiff_t>(vocab)) - row_a ==
                std::max_element(row_b, row_b + static_cast<std::ptrdiff_t>(vocab)) - row_b;
    }
    return rows == 0 ? 0.0 : static_cast<double>(same) / static_cast<double>(rows);
}

}  // namespace hichat::testing
