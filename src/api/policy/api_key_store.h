// ApiKeyStore: the set of API keys the server accepts, held only as SHA-256 digests.
// Built once at start-up from --api-key KEY (repeatable) and --api-key-file FILE (one key per line,
// blank lines and '#' comments skipped); read-only afterwards, so any thread may call authenticate().
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/policy/key_id.h"
#include "base/status.h"

namespace hichat::api {

inline constexpr size_t kSha256Bytes = 32;
using Sha256Digest = std::array<uint8_t, kSha256Bytes>;

// SHA-256 through OpenSSL's EVP interface.
Sha256Digest sha256(std::string_view data);

// "key-" + the first 8 hex digits of the digest.
KeyId key_id_from_digest(const Sha256Digest& digest);

class ApiKeyStore {
public:
    struct StoredKey {      // everything the store keeps about one key
        Sha256Digest digest;  // SHA-256 of the key bytes
        KeyId id;             // derived from digest; safe to log
    };

    // Builds a store from the keys of --api-key and the files of --api-key-file. Errors
    // (kInvalidArgument/kNotFound) name the flag or the file and line, never the key text.
    static Result<ApiKeyStore> create(const std::vector<std::string>& keys,
                                      const std::vector<std::string>& key_files);

    // Adds one key. `source` names where it came from in errors ("--api-key", "keys.txt:3").
    // Errors: empty key, a byte outside printable ASCII or a space, a key-id clash with another key.
    // A key given twice is accepted once.
    Status add_key(std::string_view key, const std::string& source);

    // Adds every key of a key file. Errors name the file (and the line for a bad key).
    Status add_key_file(const std::string& path);

    // Parses an Authorization header value "Bearer <key>" (scheme case-insensitive, surrounding
    // whitespace ignored) and returns the id of the matching key. nullopt for a missing, malformed or
    // unknown credential. Compares the digest with every stored digest in constant time, with no early
    // exit, so timing does not reveal which key or how many bytes matched.
    std::optional<KeyId> authenticate(std::string_view authorization_header) const;

    // True when no key was configured: authentication is off (the server warns at start-up).
    bool empty() const { return keys_.empty(); }
    size_t num_keys() const { return keys_.size(); }

    // What the store holds, for tests and audits: digests and ids only.
    const std::vector<StoredKey>& stored_keys() const { return keys_; }

private:
    std::vector<StoredKey> keys_;
};

// Extracts the credential from "Bearer <token>"; nullopt when the header is not of that form.
std::optional<std::string_view> parse_bearer_token(std::string_view authorization_header);

}  // namespace hichat::api
