// AccessRecord: what the access log says about one finished request, and its JSON line.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "api/auth/key_id.h"

namespace hichat::api {

struct AccessRecord {
    std::chrono::system_clock::time_point ts;  // when the request arrived
    std::string request_id;
    std::optional<KeyId> key_id;               // nullopt: authentication off (logged as null)
    std::string method;                        // "POST"
    std::string path;                          // as requested, query string included
    int status = 0;                            // HTTP status code sent
    int64_t num_tokens_prompt = 0;
    int64_t num_tokens_completion = 0;
    std::optional<double> ttft_ms;             // nullopt when no token was generated (logged as null)
    double duration_ms = 0;                    // arrival to last byte
    std::string finish_reason;                 // "stop", "length", ...; empty: null
    std::string remote;                        // client address "ip:port"
};

// ISO-8601 UTC with milliseconds: "2024-05-01T12:34:56.789Z".
std::string format_iso8601_utc(std::chrono::system_clock::time_point t);

// One JSON object on one line (no trailing newline), fields: ts, request_id, key_id, method, path,
// status, prompt_tokens, completion_tokens, ttft_ms, duration_ms, finish_reason, remote. Strings are
// escaped by nlohmann::json; invalid UTF-8 in client-supplied fields is replaced, never thrown.
std::string to_json_line(const AccessRecord& record);

}  // namespace hichat::api
