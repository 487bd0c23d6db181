// ExchangeRecord: what the server reports about one finished request/response exchange, and the
// observer that receives it (HttpServerConfig::on_exchange). Plain data; any thread.
#pragma once

#include <any>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace hichat::api {

inline constexpr int kStatusClientGone = 499;  // the client left before the response was complete

struct ExchangeRecord {
    std::chrono::system_clock::time_point start;  // the server began reading the request
    double duration_ms = 0;      // start to the last response byte queued (or to the client leaving)
    std::string method;          // as sent; empty when the request line could not be read
    std::string target;          // as sent, query included; empty likewise
    std::string remote;          // peer "ip:port"
    std::string route;           // the Router pattern that took it ("/v1/models/*"); empty: none
                                 // (unknown path, preflight, or refused before routing)
    int status = 0;              // response status; kStatusClientGone if the client left first
    uint64_t num_bytes_sent = 0; // response bytes (head, body, chunk framing) queued for the client
    std::any annotation;         // what the handler attached (ResponseWriter::annotate); may be empty
};

// Called exactly once per request that the server received bytes of (a connection that never sent
// a byte made no request). Runs on an I/O thread, or on the thread that completed the response
// after the client had left; must be thread-safe and must not block. For a response that completes
// normally it runs before its last bytes are written, so a client that has the response can count
// on the observer having seen it.
using ExchangeObserver = std::function<void(const ExchangeRecord&)>;

}  // namespace hichat::api
