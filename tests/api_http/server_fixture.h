// Shared by the server tests: a config with short timeouts on port 0, and a running server.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "api/http/http_server.h"

namespace hichat::api::test {

inline HttpServerConfig short_timeout_config() {
    HttpServerConfig config;
    config.port = 0;
    config.num_io_threads = 2;
    config.header_timeout_ms = 2000;
    config.body_timeout_ms = 2000;
    config.idle_keepalive_timeout_ms = 5000;
    config.shutdown_drain_ms = 5000;
    return config;
}

inline std::unique_ptr<HttpServer> start_or_fail(const HttpServerConfig& config, Router router) {
    auto server = HttpServer::start(config, std::move(router));
    EXPECT_TRUE(server.ok()) << server.status().message();
    if (!server.ok()) return nullptr;
    return std::move(server).value();
}

inline std::string get_request(const std::string& path, const std::string& extra_headers = "") {
    return "GET " + path + " HTTP/1.1\r\nHost: test\r\n" + extra_headers + "\r\n";
}

}  // namespace hichat::api::test
