// Standard base64 (RFC 4648 section 4: '+' '/' alphabet, '=' padding), as Standard Webhooks uses it
// for secrets and signatures. Pure functions over OpenSSL's block coder.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hichat::api::webhooks {

std::string base64_encode(std::string_view bytes);

// nullopt unless `text` is canonical padded base64: length a multiple of 4, only alphabet
// characters, '=' only as the last one or two; no whitespace.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace hichat::api::webhooks
