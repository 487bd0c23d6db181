// CORS (the Fetch standard's cross-origin protocol) for browser clients: which origins are allowed,
// the answer to a preflight, and the headers every response carries. Pure functions; any thread.
//
// A request whose Origin is allowed gets Access-Control-Allow-Origin (the origin echoed) on every
// response, errors and streams included; with CORS configured every response says Vary: Origin.
// A preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered before routing:
// 204 with the allowed methods and headers for an allowed origin, else 403 with a JSON error that
// says why (the browser then refuses the call; the error is what shows in its network panel).
#pragma once

#include <string>
#include <string_view>

#include "api/http/http_request.h"
#include "api/http/http_server_config.h"
#include "base/status.h"

namespace hichat::api {

class ResponseWriter;

inline constexpr std::string_view kCorsAllowedMethods = "GET, HEAD, POST, OPTIONS";
inline constexpr std::string_view kCorsBaseAllowedHeaders = "Authorization, Content-Type";
inline constexpr std::string_view kCorsMaxAgeSeconds = "600";

// OK for "*" or a serialized origin "scheme://host[:port]" (no path, no trailing '/'); else an error
// quoting `origin` and saying what is expected.
Status check_allowed_origin(std::string_view origin);

// True if `cors` allows requests from `origin` (the Origin header's value; "" when absent: false).
bool origin_allowed(const CorsConfig& cors, std::string_view origin);

bool is_preflight(const HttpRequest& request);

// Answers a preflight: 204 with Access-Control-Allow-Methods / -Allow-Headers (Authorization,
// Content-Type and every header the request asked for) / -Max-Age when `origin_allowed`, else 403.
void answer_preflight(const HttpRequest& request, bool origin_allowed, ResponseWriter& writer);

// Appends the CORS headers of a response to `out`: Vary: Origin when CORS is on; for an allowed
// origin also Access-Control-Allow-Origin and Access-Control-Expose-Headers (the names in `extra`,
// the handler's headers, so that scripts can read X-Request-Id or Retry-After).
void append_cors_headers(const CorsConfig& cors, std::string_view allowed_origin, const HeaderList& extra,
                         HeaderList& out);

}  // namespace hichat::api
