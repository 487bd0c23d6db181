// ApiError: a client-facing error, rendered as OpenAI's {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <string>

namespace hichat::api {

struct ApiError {
    int http_status = 400;
    std::string message;
    std::string type = "invalid_request_error";
    std::string param;  // the offending field, e.g. "messages[1].content"; empty: null
    std::string code;   // empty: null

    std::string to_json() const;
};

inline ApiError bad_field(std::string param, std::string message) {
    return {.http_status = 400, .message = std::move(message), .param = std::move(param)};
}

}  // namespace hichat::api
