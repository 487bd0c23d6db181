// Token ids <-> the BLOB stored for them: int32 values, little-endian, back to back. Pure; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hichat::session {

std::string token_blob(const std::vector<int32_t>& ids);
// nullopt when the size is not a multiple of 4 (a damaged row).
std::optional<std::vector<int32_t>> token_ids_from_blob(std::string_view blob);

}  // namespace hichat::session
