// The HTTP server's exchange observer for `hichat serve`: one access-log line and one
// hichat_requests_total count per finished request, whatever answered it (a handler, the router's
// 404 / 405, or the HTTP layer's 400 / 408 / 413 / 431). Handlers add what only they know by
// annotating their ResponseWriter with an AccessRecord (request id, key id, tokens, finish reason);
// the HTTP layer's facts (method, path, status, remote, bytes, duration) always win.
#pragma once

#include "api/telemetry/access_log.h"
#include "api/telemetry/metrics.h"
#include "api/http/exchange_record.h"

namespace hichat::api {

// The metrics endpoint label of an exchange: its route pattern, "none" when no route took it.
inline constexpr const char* kNoRouteLabel = "none";

// `log` and `metrics` may be null (that part is off); both must outlive every exchange (the server
// and any ResponseWriter still held, e.g. by the engine's sinks).
ExchangeObserver make_access_observer(AccessLog* log, Metrics* metrics);

// The access-log record of one exchange: the handler's annotation (if an AccessRecord) completed
// with what the HTTP layer saw.
AccessRecord access_record_of(const ExchangeRecord& exchange);

}  // namespace hichat::api
