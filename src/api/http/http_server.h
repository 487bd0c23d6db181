// HttpServer: HTTP/1.1 (or HTTPS-only) server on Boost.Beast/Asio that serves a Router.
// Knows nothing about models or the engine.
//
// Threads: config.num_io_threads I/O threads run every connection (each on its own strand), the
// accept loop and all handlers; idle and streaming connections do not hold a thread. start(),
// port(), begin_shutdown() and wait() may be called from any non-I/O thread; begin_shutdown() is not
// async-signal-safe (wire SIGTERM to it from a thread that waits for the signal).
//
// Ownership: the caller owns the server; destroying it force-closes every connection (handlers
// still holding a ResponseWriter see client_gone()) and joins the I/O threads.
#pragma once

#include <memory>

#include "api/http/http_server_config.h"
#include "api/http/router.h"
#include "base/status.h"

namespace hichat::api {

class HttpServer {
public:
    // Validates `config`, loads the TLS files (errors name the file), binds host:port (errors name
    // the address) and starts the I/O threads and the accept loop.
    static Result<std::unique_ptr<HttpServer>> start(const HttpServerConfig& config, Router router);

    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    int port() const;  // the bound port (the OS's pick when config.port was 0)

    // Stops accepting now and closes idle keep-alive connections; requests in progress (also
    // streams) may finish for up to config.shutdown_drain_ms, then every connection is closed.
    // Idempotent; returns at once.
    void begin_shutdown();

    // Blocks until begin_shutdown() was called (by any thread) and every connection is closed, or
    // the drain deadline passed and the rest were force-closed; then stops the I/O threads.
    // Idempotent.
    void wait();

    size_t num_connections() const;  // open connections (for tests and metrics)

private:
    struct Impl;
    explicit HttpServer(std::unique_ptr<Impl> impl);
    void begin_shutdown_with_drain_ms(int drain_ms);

    std::unique_ptr<Impl> impl_;
};

}  // namespace hichat::api
