// make_tls_context: the server's TLS settings (TLS 1.2+) with a PEM certificate chain and key.
// Internal to api/http. Called once by HttpServer::start(); the context is then shared read-only
// by all connections.
#pragma once

#include <memory>
#include <string>

#include <boost/asio/ssl/context.hpp>

#include "base/status.h"

namespace hichat::api {

// Errors name the file and the problem: missing/unreadable file, not PEM, key does not match.
Result<std::unique_ptr<boost::asio::ssl::context>> make_tls_context(const std::string& cert_file,
                                                                    const std::string& key_file);

}  // namespace hichat::api
