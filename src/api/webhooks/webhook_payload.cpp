#include "api/webhooks/webhook_payload.h"

#include <time.h>

#include <cstdio>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "base/check.h"

namespace hichat::api::webhooks {

namespace {

// prefix + the first 16 bytes in lower-case hex.
std::string hex_id(const char* prefix, const unsigned char* bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id = prefix;
    for (int i = 0; i < 16; ++i) {
        id += kHex[bytes[i] >> 4];
        id += kHex[bytes[i] & 15];
    }
    return id;
}

std::string random_id(const char* prefix) {
    unsigned char bytes[16];
    CHECK_EQ(RAND_bytes(bytes, sizeof bytes), 1) << "OpenSSL's random generator failed";
    return hex_id(prefix, bytes);
}

// NUL separates the parts: neither an id nor an event type holds one, so no two inputs hash alike.
std::string derived_id(const char* prefix, std::string_view object_id, std::string_view event_type) {
    std::string input = std::string("hichat-webhook-") + prefix;
    input += '\0';
    input += object_id;
    input += '\0';
    input += event_type;
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    CHECK_EQ(EVP_Digest(input.data(), input.size(), digest, &size, EVP_sha256(), nullptr), 1) << "SHA-256 failed";
    return hex_id(prefix, digest);
}

}  // namespace

std::string new_message_id() { return random_id("msg_"); }
std::string new_event_id() { return random_id("evt_"); }

std::string message_id_for(std::string_view object_id, std::string_view event_type) {
    return derived_id("msg_", object_id, event_type);
}
std::string event_id_for(std::string_view object_id, std::string_view event_type) {
    return derived_id("evt_", object_id, event_type);
}

std::string iso8601_utc(int64_t unix_ms) {
    const time_t seconds = static_cast<time_t>(unix_ms / 1000);
    tm utc{};
    gmtime_r(&seconds, &utc);
    char buf[80];  // room for any int year, so the compiler sees no truncation
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                  utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(unix_ms % 1000));
    return buf;
}

Status check_event_type(std::string_view event_type) {
    bool ok = !event_type.empty() && event_type.size() <= 64;
    for (char c : event_type) {
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-');
    }
    if (ok) return ok_status();
    return invalid_argument("webhook event type '" + std::string(event_type.substr(0, 64)) +
                            "' is not 1 to 64 characters of [a-z0-9._-]");
}

Result<std::string> make_payload(std::string_view event_type, std::string_view data_json, int64_t unix_ms,
                                 std::string_view event_id) {
    HICHAT_RETURN_IF_ERROR(check_event_type(event_type));
    nlohmann::ordered_json data = nlohmann::ordered_json::parse(data_json, nullptr, /*allow_exceptions=*/false);
    if (!data.is_object()) return invalid_argument("webhook data for '" + std::string(event_type) + "' is not a JSON object");
    nlohmann::ordered_json payload;
    payload["object"] = "event";
    payload["id"] = event_id;
    payload["type"] = event_type;
    payload["created_at"] = unix_ms / 1000;
    payload["data"] = std::move(data);
    return payload.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace hichat::api::webhooks
