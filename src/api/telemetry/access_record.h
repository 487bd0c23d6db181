// AccessRecord: what the access log says about one finished request, and its JSON line.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "api/policy/key_id.h"

namespace hichat::api {

struct AccessRecord {
    std::chrono::system_clock::time_point ts;  // when the server began reading the request
    std::string request_id;
    std::optional<KeyId> key_id;               // nullopt: authentication off (logged as null)
    std::string method;                        // "POST"
    std::string path;                          // as requested, query string included
    int status = 0;                            // HTTP status code sent; 499: the client left first
    int64_t num_tokens_prompt = 0;
    int64_t num_tokens_completion = 0;
    std::optional<double> ttft_ms;             // nullopt when no token was generated (logged as null)
    double duration_ms = 0;                    // ts to the last byte queued (or the client leaving)
    std::string finish_reason;                 // "stop", "length", ...; empty: null
    std::string remote;                        // client address "ip:port"
    int64_t num_bytes_sent = 0;                // response bytes (head and body) sent or queued
};

// ISO-8601 UTC with milliseconds: "2024-05-01T12:34:56.789Z".
std::string format_iso8601_utc(std::chrono::system_clock::time_point t);

// One JSON object on one line (no trailing newline), fields: ts, request_id, key_id, method, path,
// status, prompt_tokens, completion_tokens, ttft_ms, duration_ms, finish_reason, remote, bytes_sent.
// Strings are escaped by nlohmann::json; invalid UTF-8 in client-supplied fields is replaced, never
// thrown. The method and path are "" for a request refused before its request line could be read.
std::string to_json_line(const AccessRecord& record);

}  // namespace hichat::api
