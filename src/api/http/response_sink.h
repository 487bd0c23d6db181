// ResponsePart and ResponseSink: how a ResponseWriter hands a response, piece by piece, to the
// connection that owns the socket. Internal to api/http; handlers only see ResponseWriter.
#pragma once

#include <string>

#include "api/http/http_request.h"

namespace hichat::api {

struct ResponsePart {
    enum class Kind {
        kFull,        // status + content_type + headers + data (the whole body)
        kStreamHead,  // status + content_type + headers; chunked body follows
        kChunk,       // data: one piece of the streamed body, sent as soon as possible
        kStreamEnd,   // end of a streamed body
        kAbandoned,   // the handler dropped its writer without completing the response
    };
    Kind kind = Kind::kFull;
    int status = 0;
    std::string content_type;
    std::string data;
    HeaderList headers;
};

// Implemented by the connection. deliver() is thread-safe; parts are handled on the connection's
// I/O strand in the order they were delivered.
class ResponseSink {
public:
    virtual ~ResponseSink() = default;
    virtual void deliver(ResponsePart part) = 0;
};

}  // namespace hichat::api
