// OpenAI-style JSON error bodies:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": null, "code": "..."}}
// Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

namespace hichat::api {

class ResponseWriter;

inline constexpr std::string_view kInvalidRequestError = "invalid_request_error";
inline constexpr std::string_view kServerError = "server_error";

// `code` empty: "code": null. `message` may hold any bytes; invalid UTF-8 becomes U+FFFD.
std::string error_json(std::string_view message, std::string_view type, std::string_view code);

// A JSON string literal (with quotes) for `s`; invalid UTF-8 becomes U+FFFD.
std::string json_quote(std::string_view s);
// The same, appended to `out` (no allocation beyond growing `out`).
void append_json_quoted(std::string& out, std::string_view s);

// Sends error_json(message, type, code) with `status` (type: server_error for 5xx, else
// invalid_request_error).
void send_error(ResponseWriter& writer, int status, std::string_view message, std::string_view code);

}  // namespace hichat::api
