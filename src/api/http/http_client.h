// HttpClient: outbound HTTP/1.1 POSTs over http:// and https:// on Boost.Beast/Asio (the webhook
// sender's client). One request per connection ("Connection: close"); redirects are not followed
// (a 3xx is returned as it is). HTTPS verifies the server's chain against the system's trust store
// (or HttpClientConfig::ca_file) and its name or IP address against the URL's host, and sends SNI
// for names.
//
// The client does no allow-listing: callers check Url::host before calling post() (the webhook
// sender does, before any DNS lookup).
//
// Ownership: the caller owns the client and the io_context; a request in flight keeps what it
// needs alive by itself, so the client may be destroyed first. Threads: post() from any thread; the
// completion runs on a thread that runs the io_context. Public header free of Beast and OpenSSL.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/http/url.h"
#include "base/status.h"

namespace boost::asio {
class io_context;
}

namespace hichat::api {

struct HttpClientConfig {
    int connect_timeout_ms = 5000;    // DNS lookup + TCP connect
    int response_timeout_ms = 10000;  // from connected to the response's header: TLS handshake,
                                      // writing the request, waiting for the status line
    std::string ca_file;              // PEM file of trusted CAs; empty: the system's default store
    Status validate() const;          // positive timeouts; errors name the field
};

struct HttpPost {
    Url url;
    std::vector<std::pair<std::string, std::string>> headers;  // besides Host, Content-Type,
                                                               // Content-Length, Connection, User-Agent
    std::string content_type = "application/json";
    std::string body;
};

// The response's status code, or an error naming the URL's origin and the step that failed
// (lookup, connect, TLS handshake incl. certificate verification, write, read, timeout).
using HttpPostDone = std::function<void(Result<int>)>;

class HttpClient {
public:
    // Errors: an invalid config (field named), a ca_file that cannot be loaded (path named).
    static Result<std::unique_ptr<HttpClient>> create(boost::asio::io_context& io, const HttpClientConfig& config);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    // Starts the request and returns at once; `done` runs exactly once (not if the io_context is
    // stopped and destroyed first).
    void post(HttpPost request, HttpPostDone done);

private:
    struct Impl;
    explicit HttpClient(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace hichat::api
