// Exchange: one request/response exchange while it is in progress, shared by the connection that
// serves it and the ResponseWriter its handler holds. It reports one ExchangeRecord to the observer
// once every party has left: the connection (response fully queued, or the connection closed) and
// the writer (response complete, or the writer dropped). Internal to api/http.
//
// Threads: thread-safe; the record fields are set by the connection's strand, the annotation by the
// handler's threads.
#pragma once

#include <any>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "api/http/exchange_record.h"

namespace hichat::api {

class Exchange {
public:
    // `observer` may be null or empty (nothing is reported); it is kept alive by the exchange, which
    // may outlive the server (a writer held past shutdown). The connection is the first party.
    Exchange(std::shared_ptr<const ExchangeObserver> observer, std::string remote);

    void set_request(std::string method, std::string target);
    void set_route(std::string route);
    void set_status(int status);
    void annotate(std::any annotation);

    void join();  // a ResponseWriter becomes a party
    // A writer leaves: its response is complete, or it was dropped.
    void leave_handler();
    // The connection leaves: `complete` false when the connection closed before the response was
    // fully queued (reported as kStatusClientGone). `num_bytes_sent`: response bytes queued. The
    // duration ends here.
    void leave_connection(bool complete, uint64_t num_bytes_sent);

private:
    void leave_locked(std::unique_lock<std::mutex>& lock);
    void report(const ExchangeRecord& record) const;

    const std::shared_ptr<const ExchangeObserver> observer_;
    const std::chrono::steady_clock::time_point start_steady_;
    std::mutex mu_;
    ExchangeRecord record_;  // guarded by mu_
    int num_parties_ = 1;    // guarded by mu_
};

}  // namespace hichat::api
