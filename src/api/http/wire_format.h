// HTTP/1.1 response serialisation: status line + headers, and chunked-transfer framing.
// Pure functions; any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "api/http/http_request.h"

namespace hichat::api {

struct ResponseHead {
    int status = 200;
    std::string_view content_type;              // empty: no Content-Type header
    const HeaderList* extra = nullptr;          // handler headers, may be null
    std::optional<size_t> content_length;       // set: Content-Length header (never on 204 / 304)
    bool chunked = false;                       // Transfer-Encoding: chunked
    bool keep_alive = true;                     // false: Connection: close
};

// "HTTP/1.1 <status> <reason>\r\n" + headers + "\r\n".
std::string format_response_head(const ResponseHead& head);
// One chunk: "<hex size>\r\n<data>\r\n". `data` must not be empty (that is the last chunk).
std::string format_chunk(std::string_view data);
// The head of a chunk of `size` bytes: "<hex size>\r\n" (data and "\r\n" follow). `size` > 0.
std::string chunk_size_line(size_t size);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";
inline constexpr std::string_view kContinueResponse = "HTTP/1.1 100 Continue\r\n\r\n";

std::string_view reason_phrase(int status);  // "OK", "Not Found", ...; "Unknown" if not listed

}  // namespace hichat::api
