// start_connection: serves one accepted TCP connection (HTTP/1.1 keep-alive, optional TLS) until it
// closes. Internal to api/http: HttpServer calls it from its accept loop.
//
// Each connection runs on its own strand of the server's io_context, so it never needs a thread of
// its own; it owns itself (shared_ptr kept alive by its pending operations) and registers in
// ConnectionContext::registry until it closes.
#pragma once

#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include "api/http/exchange_record.h"

namespace boost::asio::ssl {
class context;
}

namespace hichat::api {

struct HttpServerConfig;
class Router;
class ConnectionRegistry;

// Shared by all connections of one server; must outlive every handler the io_context may still run.
struct ConnectionContext {
    const HttpServerConfig* config = nullptr;
    const Router* router = nullptr;
    boost::asio::ssl::context* tls = nullptr;  // null: plain HTTP
    ConnectionRegistry* registry = nullptr;
    std::shared_ptr<const ExchangeObserver> observer;  // null: exchanges are not reported
};

// `socket` must use a strand executor of its own (the accept loop passes make_strand(io_context)).
void start_connection(boost::asio::ip::tcp::socket socket, const ConnectionContext& context);

}  // namespace hichat::api
