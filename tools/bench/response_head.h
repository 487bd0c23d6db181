// ResponseHead: the status line and the framing headers of an HTTP/1.1 response, which is all the
// load generator needs to read the body and decide whether the connection can be reused.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "base/status.h"

namespace hichat::tools::bench {

struct ResponseHead {
    int status = 0;                        // e.g. 200
    std::optional<size_t> content_length;  // Content-Length, if given
    bool chunked = false;                  // Transfer-Encoding ends in "chunked"
    bool keep_alive = true;                // HTTP/1.1 without "Connection: close"

    // How the body ends: chunked framing, a length, or the connection closing.
    bool body_ends_at_close() const { return !chunked && !content_length; }
};

// Parses `head`: the bytes up to and including the empty line ("\r\n\r\n"). Errors name the problem:
// a status line that is not "HTTP/1.x NNN ...", a header line without ':', a bad Content-Length.
Result<ResponseHead> parse_response_head(std::string_view head);

}  // namespace hichat::tools::bench
