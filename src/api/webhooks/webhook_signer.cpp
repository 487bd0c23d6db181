#include "api/webhooks/webhook_signer.h"

#include <charconv>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "api/webhooks/base64.h"
#include "base/check.h"

namespace hichat::api::webhooks {
namespace {

constexpr std::string_view kSecretPrefix = "whsec_";
constexpr std::string_view kVersionPrefix = "v1,";

}  // namespace

Result<WebhookSigner> WebhookSigner::from_secret(std::string_view secret) {
    if (secret.substr(0, kSecretPrefix.size()) == kSecretPrefix) secret.remove_prefix(kSecretPrefix.size());
    auto key = base64_decode(secret);
    if (!key) return invalid_argument("webhook secret: not 'whsec_' followed by base64");
    if (key->size() < kMinKeyBytes || key->size() > kMaxKeyBytes) {
        return invalid_argument("webhook secret: the key is " + std::to_string(key->size()) + " bytes, not " +
                                std::to_string(kMinKeyBytes) + " to " + std::to_string(kMaxKeyBytes));
    }
    return WebhookSigner(std::move(*key));
}

std::string WebhookSigner::mac(std::string_view message_id, int64_t timestamp_s, std::string_view body) const {
    std::string content;
    content.reserve(message_id.size() + body.size() + 24);
    content.append(message_id).append(".").append(std::to_string(timestamp_s)).append(".").append(body);
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int out_len = 0;
    const unsigned char* ok = HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
                                   reinterpret_cast<const unsigned char*>(content.data()), content.size(), out, &out_len);
    CHECK(ok != nullptr) << "HMAC-SHA256 failed";
    return std::string(reinterpret_cast<const char*>(out), out_len);
}

std::string WebhookSigner::sign(std::string_view message_id, int64_t timestamp_s, std::string_view body) const {
    return std::string(kVersionPrefix) + base64_encode(mac(message_id, timestamp_s, body));
}

Status WebhookSigner::verify(std::string_view message_id, std::string_view timestamp, std::string_view signatures,
                             std::string_view body, int64_t now_s, int64_t tolerance_s) const {
    int64_t timestamp_s = 0;
    const auto [end, ec] = std::from_chars(timestamp.data(), timestamp.data() + timestamp.size(), timestamp_s);
    if (timestamp.empty() || ec != std::errc() || end != timestamp.data() + timestamp.size()) {
        return invalid_argument("webhook-timestamp '" + std::string(timestamp.substr(0, 32)) + "' is not an integer");
    }
    if (timestamp_s < now_s - tolerance_s || timestamp_s > now_s + tolerance_s) {
        return invalid_argument("webhook-timestamp " + std::to_string(timestamp_s) + " is more than " +
                                std::to_string(tolerance_s) + " s from now (" + std::to_string(now_s) + ")");
    }
    const std::string expected = base64_encode(mac(message_id, timestamp_s, body));
    while (!signatures.empty()) {
        const size_t space = signatures.find(' ');
        const std::string_view entry = signatures.substr(0, space);
        signatures = space == std::string_view::npos ? std::string_view() : signatures.substr(space + 1);
        if (entry.substr(0, kVersionPrefix.size()) != kVersionPrefix) continue;
        const std::string_view given = entry.substr(kVersionPrefix.size());
        if (given.size() == expected.size() && CRYPTO_memcmp(given.data(), expected.data(), expected.size()) == 0) {
            return ok_status();
        }
    }
    return invalid_argument("webhook-signature: no v1 signature matches");
}

}  // namespace hichat::api::webhooks
