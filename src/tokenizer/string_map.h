// unordered_map keyed by std::string that can be queried with a std::string_view.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

namespace hichat::tokenizer {

struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

}  // namespace hichat::tokenizer
