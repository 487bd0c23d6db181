// KeyId: the public name of an API key in logs, metrics and quotas ("key-" + 8 hex chars of its SHA-256).
// Never the key itself.
#pragma once

#include <string>

namespace hichat::api {

struct KeyId {
    std::string value;  // e.g. "key-ba7816bf"

    bool operator==(const KeyId&) const = default;
    auto operator<=>(const KeyId&) const = default;
};

}  // namespace hichat::api
