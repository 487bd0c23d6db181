#include "api/http/response_writer.h"

#include <utility>

#include "base/check.h"

namespace hichat::api {
namespace {

// Framing headers belong to the server; a handler setting them would corrupt the stream.
bool is_reserved_header(std::string_view name) {
    return equals_ignore_case(name, "Content-Length") || equals_ignore_case(name, "Transfer-Encoding") ||
           equals_ignore_case(name, "Connection");
}

ResponsePart make_part(ResponsePart::Kind kind) {
    ResponsePart part;
    part.kind = kind;
    return part;
}

bool has_line_break(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

void check_head(int status, std::string_view content_type, const HeaderList& extra) {
    CHECK(status >= 200 && status <= 599) << "ResponseWriter: final status must be in [200, 599], got " << status;
    CHECK(!has_line_break(content_type)) << "ResponseWriter: CR/LF in content type";
    for (const auto& [name, value] : extra) {
        CHECK(!name.empty() && !has_line_break(name) && !has_line_break(value))
            << "ResponseWriter: bad header '" << name << "'";
        CHECK(!is_reserved_header(name)) << "ResponseWriter: header '" << name << "' is set by the server";
    }
}

}  // namespace

ResponseWriter::ResponseWriter(std::weak_ptr<ResponseSink> sink, std::shared_ptr<Exchange> exchange)
    : sink_(std::move(sink)), exchange_(std::move(exchange)) {
    if (exchange_) exchange_->join();
}

ResponseWriter::~ResponseWriter() {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == State::kDone) return;
    leave_exchange_locked();
    deliver_locked(make_part(ResponsePart::Kind::kAbandoned));
}

// Before the final part is delivered: the connection, which queues that part, then leaves last and
// the observer runs before the last bytes go out.
void ResponseWriter::leave_exchange_locked() {
    if (!exchange_) return;
    exchange_->leave_handler();
    exchange_.reset();
}

void ResponseWriter::annotate(std::any annotation) {
    std::lock_guard<std::mutex> lock(mu_);
    if (exchange_) exchange_->annotate(std::move(annotation));
}

void ResponseWriter::deliver_locked(ResponsePart part) {
    // Holding mu_ while delivering keeps parts in call order and makes detach() a barrier.
    if (auto sink = sink_.lock()) sink->deliver(std::move(part));
}

void ResponseWriter::send(int status, std::string content_type, std::string body, HeaderList extra) {
    check_head(status, content_type, extra);
    CHECK(body.empty() || (status != 204 && status != 304)) << "ResponseWriter::send: a " << status
                                                            << " response has no body";
    std::lock_guard<std::mutex> lock(mu_);
    CHECK(state_ == State::kNew) << "ResponseWriter::send: a response was already started";
    state_ = State::kDone;
    on_gone_ = nullptr;
    leave_exchange_locked();
    if (client_gone()) return;
    deliver_locked(ResponsePart{ResponsePart::Kind::kFull, status, std::move(content_type), std::move(body),
                                std::move(extra)});
}

void ResponseWriter::start_stream(int status, std::string content_type, HeaderList extra) {
    check_head(status, content_type, extra);
    std::lock_guard<std::mutex> lock(mu_);
    CHECK(state_ == State::kNew) << "ResponseWriter::start_stream: a response was already started";
    state_ = State::kStreaming;
    if (client_gone()) return;
    deliver_locked(ResponsePart{ResponsePart::Kind::kStreamHead, status, std::move(content_type), {},
                                std::move(extra)});
}

bool ResponseWriter::write(std::string chunk) {
    std::lock_guard<std::mutex> lock(mu_);
    CHECK(state_ == State::kStreaming) << "ResponseWriter::write outside start_stream()/finish()";
    if (client_gone()) return false;
    if (chunk.empty()) return true;
    ResponsePart part = make_part(ResponsePart::Kind::kChunk);
    part.data = std::move(chunk);
    deliver_locked(std::move(part));
    return true;
}

void ResponseWriter::finish() {
    std::lock_guard<std::mutex> lock(mu_);
    CHECK(state_ == State::kStreaming) << "ResponseWriter::finish without start_stream()";
    state_ = State::kDone;
    on_gone_ = nullptr;
    leave_exchange_locked();
    if (client_gone()) return;
    deliver_locked(make_part(ResponsePart::Kind::kStreamEnd));
}

bool ResponseWriter::response_started() const {
    std::lock_guard<std::mutex> lock(mu_);
    return state_ != State::kNew;
}

void ResponseWriter::on_client_gone(std::function<void()> cb) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (state_ == State::kDone) return;
        if (!client_gone()) {
            on_gone_ = std::move(cb);
            return;
        }
    }
    if (cb) cb();
}

void ResponseWriter::notify_client_gone() {
    std::function<void()> cb;
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (client_gone_.exchange(true, std::memory_order_acq_rel)) return;
        cb = std::move(on_gone_);
        on_gone_ = nullptr;
    }
    // Outside the lock: the callback may call write() / finish().
    if (cb) cb();
}

void ResponseWriter::detach() {
    std::function<void()> drop;  // destroyed outside the lock
    std::lock_guard<std::mutex> lock(mu_);
    sink_.reset();
    drop = std::move(on_gone_);
    on_gone_ = nullptr;
}

}  // namespace hichat::api
