#include "session/token_blob.h"

#include <bit>
#include <cstring>

namespace hichat::session {

static_assert(std::endian::native == std::endian::little, "token blobs are written little-endian as in memory");

std::string token_blob(const std::vector<int32_t>& ids) {
    std::string blob(ids.size() * sizeof(int32_t), '\0');
    if (!ids.empty()) std::memcpy(blob.data(), ids.data(), blob.size());
    return blob;
}

std::optional<std::vector<int32_t>> token_ids_from_blob(std::string_view blob) {
    if (blob.size() % sizeof(int32_t) != 0) return std::nullopt;
    std::vector<int32_t> ids(blob.size() / sizeof(int32_t));
    if (!ids.empty()) std::memcpy(ids.data(), blob.data(), blob.size());
    return ids;
}

}  // namespace hichat::session
