#include "api/policy/api_key_store.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "api/policy/config_lines.h"
#include "base/check.h"

namespace hichat::api {
namespace {

constexpr std::string_view kBearerScheme = "bearer";

bool is_ows(char c) { return c == ' ' || c == '\t'; }

std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
    return s;
}

char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool equals_ascii_nocase(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    }
    return true;
}

// Keys travel in an HTTP header as a bearer token: printable ASCII without spaces.
Status validate_key(std::string_view key, const std::string& source) {
    if (key.empty()) return invalid_argument(source + ": API key is empty");
    for (size_t i = 0; i < key.size(); ++i) {
        auto c = static_cast<unsigned char>(key[i]);
        if (c <= 0x20 || c >= 0x7f) {
            return invalid_argument(source + ": API key has a space, control or non-ASCII byte at position " +
                                    std::to_string(i) + " (keys must be printable ASCII without spaces)");
        }
    }
    return ok_status();
}

}  // namespace

Sha256Digest sha256(std::string_view data) {
    Sha256Digest digest{};
    unsigned int num_bytes = 0;
    int ok = EVP_Digest(data.data(), data.size(), digest.data(), &num_bytes, EVP_sha256(), nullptr);
    CHECK(ok == 1) << "EVP_Digest(SHA-256) failed";
    CHECK_EQ(num_bytes, kSha256Bytes);
    return digest;
}

KeyId key_id_from_digest(const Sha256Digest& digest) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id = "key-";
    for (int i = 0; i < 4; ++i) {
        id += kHex[digest[i] >> 4];
        id += kHex[digest[i] & 0xf];
    }
    return KeyId{std::move(id)};
}

std::optional<std::string_view> parse_bearer_token(std::string_view header) {
    header = trim_ows(header);
    if (header.size() <= kBearerScheme.size()) return std::nullopt;
    if (!equals_ascii_nocase(header.substr(0, kBearerScheme.size()), kBearerScheme)) return std::nullopt;
    std::string_view rest = header.substr(kBearerScheme.size());
    if (!is_ows(rest.front())) return std::nullopt;  // "Bearerxyz"
    std::string_view token = trim_ows(rest);
    if (token.empty()) return std::nullopt;
    for (char c : token) {
        if (is_ows(c)) return std::nullopt;  // "Bearer a b": not one token
    }
    return token;
}

Status ApiKeyStore::add_key(std::string_view key, const std::string& source) {
    HICHAT_RETURN_IF_ERROR(validate_key(key, source));
    StoredKey stored{sha256(key), {}};
    stored.id = key_id_from_digest(stored.digest);
    for (const StoredKey& other : keys_) {
        if (other.digest == stored.digest) return ok_status();  // duplicate key: keep one
        if (other.id == stored.id) {
            return invalid_argument(source + ": API key has the same key id (" + stored.id.value +
                                    ") as another key; use a different key");
        }
    }
    keys_.push_back(std::move(stored));
    return ok_status();
}

Status ApiKeyStore::add_key_file(const std::string& path) {
    Result<std::vector<ConfigLine>> lines = read_config_lines(path);
    if (!lines.ok()) return lines.status();
    Status status;
    for (ConfigLine& line : *lines) {
        if (status.ok()) status = add_key(line.text, path + ":" + std::to_string(line.line_number));
        wipe(line.text);
    }
    return status;
}

Result<ApiKeyStore> ApiKeyStore::create(const std::vector<std::string>& keys,
                                        const std::vector<std::string>& key_files) {
    ApiKeyStore store;
    for (size_t i = 0; i < keys.size(); ++i) {
        HICHAT_RETURN_IF_ERROR(store.add_key(keys[i], "--api-key #" + std::to_string(i + 1)));
    }
    for (const std::string& path : key_files) {
        HICHAT_RETURN_IF_ERROR(store.add_key_file(path));
    }
    return store;
}

std::optional<KeyId> ApiKeyStore::authenticate(std::string_view authorization_header) const {
    std::optional<std::string_view> token = parse_bearer_token(authorization_header);
    if (!token) return std::nullopt;
    Sha256Digest digest = sha256(*token);
    // Visit every stored digest whatever matches; the index is selected without branching on the result.
    size_t num_matches = 0;
    size_t match_index = 0;
    for (size_t i = 0; i < keys_.size(); ++i) {
        size_t equal = static_cast<size_t>(CRYPTO_memcmp(digest.data(), keys_[i].digest.data(), kSha256Bytes) == 0);
        num_matches += equal;
        match_index |= i & (0 - equal);
    }
    OPENSSL_cleanse(digest.data(), digest.size());
    if (num_matches == 0) return std::nullopt;
    CHECK_EQ(num_matches, 1u) << "duplicate digests in ApiKeyStore";
    return keys_[match_index].id;
}

}  // namespace hichat::api
