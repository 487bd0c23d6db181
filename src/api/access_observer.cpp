#include "api/access_observer.h"

#include <any>

namespace hichat::api {

AccessRecord access_record_of(const ExchangeRecord& exchange) {
    AccessRecord record;
    if (const auto* annotated = std::any_cast<AccessRecord>(&exchange.annotation)) record = *annotated;
    record.ts = exchange.start;
    record.method = exchange.method;
    record.path = exchange.target;
    record.status = exchange.status;
    record.remote = exchange.remote;
    record.num_bytes_sent = static_cast<int64_t>(exchange.num_bytes_sent);
    record.duration_ms = exchange.duration_ms;
    return record;
}

ExchangeObserver make_access_observer(AccessLog* log, Metrics* metrics) {
    if (log == nullptr && metrics == nullptr) return nullptr;
    return [log, metrics](const ExchangeRecord& exchange) {
        if (metrics != nullptr) {
            metrics->count_request(exchange.route.empty() ? kNoRouteLabel : exchange.route, exchange.status);
        }
        if (log != nullptr) log->write(access_record_of(exchange));
    };
}

}  // namespace hichat::api
