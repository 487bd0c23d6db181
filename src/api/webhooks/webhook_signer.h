// WebhookSigner: signatures of the Standard Webhooks scheme (standardwebhooks.com).
//
//   webhook-id:        the message id, the same on every attempt ("msg_...")
//   webhook-timestamp: the attempt's time, integer seconds since the Unix epoch
//   webhook-signature: "v1,<base64 HMAC-SHA256(key, id + "." + timestamp + "." + body)>"; a
//                      receiver accepts a space-separated list of such entries (key rotation)
//
// The secret is "whsec_<base64 key>" (the prefix may be left out); the key is the decoded bytes.
// verify() is what a receiver runs; the tests use it and so may users' receivers.
//
// Immutable after from_secret(): any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace hichat::api::webhooks {

class WebhookSigner {
public:
    static constexpr int kMinKeyBytes = 24;  // Standard Webhooks: secrets of 24 to 64 bytes
    static constexpr int kMaxKeyBytes = 64;
    static constexpr int64_t kDefaultToleranceS = 300;  // receivers' replay window, either way

    // Errors (the secret itself is never in a message): not base64 after the optional "whsec_"
    // prefix; a key shorter than 24 or longer than 64 bytes.
    static Result<WebhookSigner> from_secret(std::string_view secret);

    // "v1,<base64>" for one attempt.
    std::string sign(std::string_view message_id, int64_t timestamp_s, std::string_view body) const;

    // The receiver's check: `timestamp` is the header's text (decimal seconds) and must be within
    // tolerance_s of now_s; `signatures` is the webhook-signature header, one matching v1 entry
    // suffices (compared in constant time). Errors name what failed; ok otherwise.
    Status verify(std::string_view message_id, std::string_view timestamp, std::string_view signatures,
                  std::string_view body, int64_t now_s, int64_t tolerance_s = kDefaultToleranceS) const;

private:
    explicit WebhookSigner(std::string key) : key_(std::move(key)) {}
    std::string mac(std::string_view message_id, int64_t timestamp_s, std::string_view body) const;  // 32 bytes

    std::string key_;  // [kMinKeyBytes, kMaxKeyBytes] raw bytes
};

}  // namespace hichat::api::webhooks
