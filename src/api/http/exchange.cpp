#include "api/http/exchange.h"

#include <cstdio>
#include <exception>
#include <utility>

namespace hichat::api {

Exchange::Exchange(std::shared_ptr<const ExchangeObserver> observer, std::string remote)
    : observer_(observer != nullptr && *observer ? std::move(observer) : nullptr),
      start_steady_(std::chrono::steady_clock::now()) {
    record_.start = std::chrono::system_clock::now();
    record_.remote = std::move(remote);
}

void Exchange::set_request(std::string method, std::string target) {
    std::lock_guard<std::mutex> lock(mu_);
    record_.method = std::move(method);
    record_.target = std::move(target);
}

void Exchange::set_route(std::string route) {
    std::lock_guard<std::mutex> lock(mu_);
    record_.route = std::move(route);
}

void Exchange::set_status(int status) {
    std::lock_guard<std::mutex> lock(mu_);
    record_.status = status;
}

void Exchange::annotate(std::any annotation) {
    std::lock_guard<std::mutex> lock(mu_);
    record_.annotation = std::move(annotation);
}

void Exchange::join() {
    std::lock_guard<std::mutex> lock(mu_);
    ++num_parties_;
}

void Exchange::leave_handler() {
    std::unique_lock<std::mutex> lock(mu_);
    leave_locked(lock);
}

void Exchange::leave_connection(bool complete, uint64_t num_bytes_sent) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!complete) record_.status = kStatusClientGone;
    record_.num_bytes_sent = num_bytes_sent;
    record_.duration_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_steady_).count();
    leave_locked(lock);
}

void Exchange::leave_locked(std::unique_lock<std::mutex>& lock) {
    if (--num_parties_ > 0) return;
    ExchangeRecord record = std::move(record_);
    lock.unlock();
    report(record);
}

void Exchange::report(const ExchangeRecord& record) const {
    if (observer_ == nullptr) return;
    try {
        (*observer_)(record);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "hichat http: exchange observer failed: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "hichat http: exchange observer failed\n");
    }
}

}  // namespace hichat::api
