// ChunkedDecoder: incremental decoder of an HTTP/1.1 `Transfer-Encoding: chunked` body (RFC 9112 §7.1).
// Bytes may arrive split anywhere; chunk extensions and trailers are read and ignored.
// Owned by one response reader; single thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace hichat::tools::bench {

class ChunkedDecoder {
public:
    // Decodes what it can of `wire`, appending body bytes to `body`. Returns how many bytes of `wire`
    // it consumed: all of them unless the last chunk ended inside `wire` (the rest is not this body's).
    // Errors: a size line that is not hex, a size over 1 GiB, a missing CRLF after a chunk's data, or a
    // size or trailer line over 4 KiB.
    Result<size_t> feed(std::string_view wire, std::string& body);

    bool done() const { return state_ == State::kDone; }

private:
    enum class State { kSizeLine, kData, kDataEnd, kTrailer, kDone };

    Status finish_size_line();

    State state_ = State::kSizeLine;
    std::string line_;           // partial size or trailer line, without its line end
    size_t num_bytes_left_ = 0;  // of the current chunk's data (kData) or its CRLF (kDataEnd)
};

}  // namespace hichat::tools::bench
