#include "api/http/http_server_config.h"

#include "api/http/cors.h"

#include <algorithm>
#include <string>

namespace hichat::api {
namespace {

Status check_positive(long long value, const char* field) {
    if (value > 0) return ok_status();
    return invalid_argument(std::string("HttpServerConfig.") + field + " must be > 0, got " +
                            std::to_string(value));
}

}  // namespace

Status HttpServerConfig::validate() const {
    if (host.empty()) return invalid_argument("HttpServerConfig.host must not be empty");
    if (port < 0 || port > 65535) {
        return invalid_argument("HttpServerConfig.port must be in [0, 65535], got " + std::to_string(port));
    }
    if (num_io_threads < 1 || num_io_threads > 256) {
        return invalid_argument("HttpServerConfig.num_io_threads must be in [1, 256], got " +
                                std::to_string(num_io_threads));
    }
    if (tls_cert_file.empty() != tls_key_file.empty()) {
        return invalid_argument("HttpServerConfig: tls_cert_file and tls_key_file must both be set or both empty");
    }
    // Beast keeps the header limit in 32 bits.
    if (max_header_bytes < 64 || max_header_bytes > (1u << 30)) {
        return invalid_argument("HttpServerConfig.max_header_bytes must be in [64, 2^30], got " +
                                std::to_string(max_header_bytes));
    }
    HICHAT_RETURN_IF_ERROR(check_positive(static_cast<long long>(max_body_bytes), "max_body_bytes"));
    HICHAT_RETURN_IF_ERROR(check_positive(header_timeout_ms, "header_timeout_ms"));
    HICHAT_RETURN_IF_ERROR(check_positive(body_timeout_ms, "body_timeout_ms"));
    HICHAT_RETURN_IF_ERROR(check_positive(idle_keepalive_timeout_ms, "idle_keepalive_timeout_ms"));
    HICHAT_RETURN_IF_ERROR(check_positive(write_timeout_ms, "write_timeout_ms"));
    HICHAT_RETURN_IF_ERROR(check_positive(listen_backlog, "listen_backlog"));
    if (shutdown_drain_ms < 0) {
        return invalid_argument("HttpServerConfig.shutdown_drain_ms must be >= 0, got " +
                                std::to_string(shutdown_drain_ms));
    }
    for (const RouteBodyLimit& r : route_body_limits) {
        if (r.max_body_bytes == 0 || r.method.empty() || r.path.empty()) {
            return invalid_argument("HttpServerConfig.route_body_limits: " + r.method + " " + r.path +
                                    " needs a method, a path and a limit > 0");
        }
    }
    for (const std::string& origin : cors.allowed_origins) {
        Status s = check_allowed_origin(origin);
        if (!s.ok()) return invalid_argument("HttpServerConfig.cors.allowed_origins: " + s.message());
    }
    return ok_status();
}

size_t HttpServerConfig::body_limit_for(std::string_view method, std::string_view path) const {
    for (const RouteBodyLimit& r : route_body_limits) {
        if (r.method == method && r.path == path) return r.max_body_bytes;
    }
    return max_body_bytes;
}

size_t HttpServerConfig::largest_body_limit() const {
    size_t largest = max_body_bytes;
    for (const RouteBodyLimit& r : route_body_limits) largest = std::max(largest, r.max_body_bytes);
    return largest;
}

}  // namespace hichat::api
