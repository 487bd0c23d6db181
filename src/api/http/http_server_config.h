// HttpServerConfig: how the HTTP/TLS server listens, how many I/O threads it runs, and its limits.
// Plain data; validated once by HttpServer::start().
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "api/http/exchange_record.h"
#include "base/status.h"

namespace hichat::api {

// Which browser origins may call the server (CORS). Empty: none; responses carry no CORS headers
// and a preflight gets 403.
struct CorsConfig {
    std::vector<std::string> allowed_origins;  // "*" (any origin) or "scheme://host[:port]"
    bool enabled() const { return !allowed_origins.empty(); }
};

// A route whose bodies may be larger (or must be smaller) than max_body_bytes, such as file uploads.
struct RouteBodyLimit {
    std::string method;                      // "POST"
    std::string path;                        // exact path, e.g. "/v1/files"
    size_t max_body_bytes = 0;               // > 0
};

struct HttpServerConfig {
    std::string host = "127.0.0.1";          // address to bind (IPv4 or IPv6 literal)
    int port = 8000;                         // 0: the OS picks a free port (see HttpServer::port())
    int num_io_threads = 2;                  // all connections share these; idle and streaming
                                             // connections cost no thread of their own
    std::string tls_cert_file;               // PEM certificate chain; with tls_key_file set: HTTPS only
    std::string tls_key_file;                // PEM private key
    size_t max_header_bytes = 16 * 1024;     // request line + headers; over: 431 JSON error, close
    size_t max_body_bytes = 8 * 1024 * 1024; // over: 413 JSON error, close
    std::vector<RouteBodyLimit> route_body_limits;  // these routes' limits replace max_body_bytes
    int header_timeout_ms = 10000;           // from connect (or first byte of a later request) to the
                                             // end of the headers; over: 408 if bytes came, else close
    int body_timeout_ms = 30000;             // from end of headers to end of body; over: 408, close
    int idle_keepalive_timeout_ms = 60000;   // between requests on a keep-alive connection; over: close
    int write_timeout_ms = 30000;            // one write of queued response bytes that does not
                                             // complete this long: the client counts as gone
    int shutdown_drain_ms = 30000;           // begin_shutdown(): in-flight responses get this long
    int listen_backlog = 1024;               // pending connections queued by the kernel
    CorsConfig cors;
    ExchangeObserver on_exchange;            // every finished request (see exchange_record.h); may be empty

    // The body limit of a request to `method` `path` (route_body_limits, else max_body_bytes), and the
    // largest of them all (what the parser allows before it knows the route).
    size_t body_limit_for(std::string_view method, std::string_view path) const;
    size_t largest_body_limit() const;

    bool tls_enabled() const { return !tls_cert_file.empty() || !tls_key_file.empty(); }

    // Errors name the field: port in [0, 65535], num_io_threads in [1, 256], positive limits and
    // timeouts, tls_cert_file and tls_key_file both set or both empty.
    Status validate() const;
};

}  // namespace hichat::api
