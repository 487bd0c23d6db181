// Status and Result<T>: how library code reports bad input or bad files (style rule 10).
// Never thrown; returned up to the caller that can turn it into an HTTP error or a CLI message.
#pragma once

#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace hichat {

enum class StatusCode { kOk, kInvalidArgument, kNotFound, kDataLoss, kUnimplemented, kInternal };

class Status {
public:
    Status() = default;
    Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

    bool ok() const { return code_ == StatusCode::kOk; }
    StatusCode code() const { return code_; }
    const std::string& message() const { return message_; }

private:
    StatusCode code_ = StatusCode::kOk;
    std::string message_;
};

inline Status ok_status() { return {}; }
inline Status invalid_argument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
inline Status not_found(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
inline Status data_loss(std::string msg) { return {StatusCode::kDataLoss, std::move(msg)}; }
inline Status unimplemented(std::string msg) { return {StatusCode::kUnimplemented, std::move(msg)}; }
inline Status internal_error(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

// Either a value or a non-ok Status.
template <typename T>
class Result {
public:
    Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
    Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
        if (std::get<Status>(v_).ok()) std::abort();  // an ok Status carries no value
    }

    bool ok() const { return std::holds_alternative<T>(v_); }
    const Status& status() const {
        static const Status kOk;
        return ok() ? kOk : std::get<Status>(v_);
    }
    T& value() & { return std::get<T>(v_); }
    const T& value() const& { return std::get<T>(v_); }
    T&& value() && { return std::get<T>(std::move(v_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

private:
    std::variant<T, Status> v_;
};

}  // namespace hichat

// Early return of a non-ok Status from a function returning Status or Result<U>.
#define HICHAT_RETURN_IF_ERROR(expr)                   \
    do {                                               \
        ::hichat::Status hichat_status_ = (expr);      \
        if (!hichat_status_.ok()) return hichat_status_; \
    } while (0)
