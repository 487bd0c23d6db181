// Connection: one client connection, driven by callbacks on its own strand.
//
// Phases of one request: [kHandshake] -> kHeader -> [kBody] -> kHandling -> (kIdle -> kHeader ...)
// A bad request goes kHeader/kBody -> kErrorReply; a final response goes -> kLingering -> kClosed.
// While kHandling, a background read waits on the socket: it completes with an error when the
// client goes away (reported through ResponseWriter::notify_client_gone), and it doubles as the
// idle wait for the next keep-alive request once the response is written.
//
// One steady_timer serves every phase: header / body / idle timeouts while reading, and a
// no-progress timeout on writes while answering. The write deadline is armed once per stretch of
// writing and moved lazily: each write only notes its start time, and an expiry that finds a newer
// write re-arms for that one (a streamed response makes one write per token; re-arming the timer
// for each cost more than the write).
//
// Each request is an Exchange from its first byte to its end (reported to the server's observer):
// the connection leaves it once the final response part is queued (before that part is written) or
// when the connection closes first; a connection that closes before any byte of a request came
// reports nothing. Error replies made here (400, 408, 413, 431) are exchanges without a handler.
//
// Response parts from other threads land in a mailbox (inbox_) that is drained by one posted
// handler: parts that arrive while that handler is pending ride along, and consecutive chunks go
// out as one HTTP chunk in one write (OutboundBytes). Plain TCP writes are tried at once, without
// waiting for the reactor; only what the socket does not take goes to async_write.
#include "api/http/connection.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include "api/http/connection_registry.h"
#include "api/http/cors.h"
#include "api/http/exchange.h"
#include "api/http/http_error.h"
#include "api/http/http_server_config.h"
#include "api/http/outbound_bytes.h"
#include "api/http/response_writer.h"
#include "api/http/router.h"
#include "api/http/transport.h"
#include "api/http/wire_format.h"
#include "base/check.h"

namespace hichat::api {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;
using tcp = asio::ip::tcp;

constexpr size_t kBackgroundReadBytes = 4096;
constexpr int kLingerMs = 2000;                  // after a final response, discard input this long at most
constexpr size_t kLingerMaxBytes = 64u << 20;   // ... and at most this much

std::string describe_peer(const tcp::socket& socket) {
    error_code ec;
    tcp::endpoint peer = socket.remote_endpoint(ec);
    if (ec) return "unknown";
    std::string host = peer.address().to_string();
    if (peer.address().is_v6()) host = "[" + host + "]";
    return host + ":" + std::to_string(peer.port());
}

bool is_http_parse_error(const error_code& ec) {
    return ec.category() == http::make_error_code(http::error::bad_method).category() &&
           ec != http::error::end_of_stream && ec != http::error::partial_message;
}

class Connection final : public ResponseSink,
                         public ConnectionControl,
                         public std::enable_shared_from_this<Connection> {
public:
    Connection(tcp::socket socket, const ConnectionContext& context)
        : context_(context),
          config_(*context.config),
          strand_(socket.get_executor()),
          remote_(describe_peer(socket)),
          transport_(std::move(socket), context.tls),
          timer_(strand_) {
        error_code ignored;
        transport_.socket().set_option(tcp::no_delay(true), ignored);  // SSE chunks leave at once
        // For try_write_now(): a plain socket that cannot take bytes says so instead of blocking.
        if (!transport_.is_tls()) transport_.socket().non_blocking(true, ignored);
    }

    const asio::any_io_executor& executor() const { return strand_; }
    void start();

    // ResponseSink, ConnectionControl: any thread; the work runs on the strand.
    void deliver(ResponsePart part) override;
    void drain() override { asio::post(strand_, [self = shared_from_this()] { self->on_drain(); }); }
    void force_close() override { asio::post(strand_, [self = shared_from_this()] { self->close_now(); }); }

private:
    enum class Phase { kHandshake, kHeader, kBody, kHandling, kErrorReply, kIdle, kLingering, kClosed };

    // Reading a request.
    void on_handshake(error_code ec);
    void read_header();
    void on_header(error_code ec);
    void read_body();
    size_t route_body_limit() const;  // of the request whose header parser_ holds
    void on_body(error_code ec);
    void on_read_error(error_code ec);

    // Handling it.
    void dispatch();
    HttpRequest take_request();
    void read_in_background();
    void on_background_read(error_code ec, size_t num_bytes);
    void on_inbox();
    void on_part(ResponsePart& part);
    void on_drain();

    // Writing the response.
    void queue_head(int status, std::string_view content_type, const HeaderList& extra,
                    std::optional<size_t> content_length, bool chunked);
    void queue(std::string bytes) { outbound_.queue(std::move(bytes)); }
    void flush();
    void write_queued();
    bool try_write_now();
    void on_write(error_code ec, size_t num_bytes);
    void reply_error(int status, const std::string& message, std::string_view code);
    void maybe_response_done();
    void on_response_done();

    // The exchange of the request being read or answered.
    void begin_exchange();
    void note_request_head();
    void note_request_line();
    void finish_exchange(bool complete);

    // Timer and closing.
    void arm_timer(int timeout_ms);
    void arm_timer_at(std::chrono::steady_clock::time_point expiry);
    void disarm_timer();
    void watch_write();
    void on_timer(uint64_t generation, error_code ec);
    void linger_then_close();
    void close_now();

    template <class Fn>
    auto bind(Fn fn) {  // completion handler that keeps the connection alive
        return [self = shared_from_this(), fn](auto&&... args) { (self.get()->*fn)(args...); };
    }

    const ConnectionContext context_;
    const HttpServerConfig& config_;
    asio::any_io_executor strand_;
    std::string remote_;
    Transport transport_;
    asio::steady_timer timer_;
    uint64_t timer_generation_ = 0;  // stale expiries (re-armed since) are ignored
    bool timed_out_ = false;         // the current read was cancelled by the timer
    std::optional<uint64_t> id_;     // in context_.registry
    Phase phase_ = Phase::kHeader;
    bool shutting_down_ = false;

    beast::flat_buffer buffer_;      // bytes read, not yet parsed
    std::optional<http::request_parser<http::string_body>> parser_;
    bool background_read_pending_ = false;
    size_t num_bytes_lingered_ = 0;
    size_t body_limit_ = 0;          // of the request being read: its route's (HttpServerConfig::body_limit_for)

    // The request being answered.
    std::shared_ptr<Exchange> exchange_;             // null between requests and once reported
    uint64_t exchange_first_byte_ = 0;               // outbound_.num_bytes_queued() at its start
    bool exchange_has_head_ = false;                 // method and target known
    std::string cors_origin_;                        // the request's Origin if CORS allows it
    std::weak_ptr<ResponseWriter> writer_;
    int request_version_ = 11;
    bool request_keep_alive_ = true;
    bool request_is_head_ = false;
    bool response_started_ = false;
    bool response_chunked_ = false;
    bool response_complete_ = false;  // every part is queued
    bool close_after_response_ = false;

    OutboundBytes outbound_;
    bool write_pending_ = false;                     // an async_write of outbound_.batch() is in flight
    std::chrono::steady_clock::time_point write_started_;  // of the write in flight
    bool write_watched_ = false;                     // the timer watches writes (see watch_write)

    // Mailbox of parts from deliver() (any thread), drained on the strand by on_inbox().
    std::mutex inbox_mu_;
    std::vector<ResponsePart> inbox_;                // guarded by inbox_mu_
    bool inbox_posted_ = false;                      // guarded by inbox_mu_: on_inbox() is pending
    std::vector<ResponsePart> draining_;             // strand only: the batch on_inbox() handles
};

void Connection::deliver(ResponsePart part) {
    {
        std::lock_guard<std::mutex> lock(inbox_mu_);
        if (part.kind == ResponsePart::Kind::kChunk && !inbox_.empty() &&
            inbox_.back().kind == ResponsePart::Kind::kChunk) {
            inbox_.back().data += part.data;  // consecutive chunks: one write, one HTTP chunk
        } else {
            inbox_.push_back(std::move(part));
        }
        if (inbox_posted_) return;
        inbox_posted_ = true;
    }
    asio::post(strand_, [self = shared_from_this()] { self->on_inbox(); });
}

void Connection::on_inbox() {
    {
        std::lock_guard<std::mutex> lock(inbox_mu_);
        inbox_posted_ = false;
        std::swap(inbox_, draining_);  // both keep their capacity
    }
    for (ResponsePart& part : draining_) on_part(part);
    draining_.clear();
    flush();
}

void Connection::start() {
    id_ = context_.registry->add(weak_from_this());
    if (!id_) return close_now();  // the server is shutting down
    if (!transport_.is_tls()) return read_header();
    phase_ = Phase::kHandshake;
    arm_timer(config_.header_timeout_ms);
    transport_.tls().async_handshake(asio::ssl::stream_base::server, bind(&Connection::on_handshake));
}

void Connection::on_handshake(error_code ec) {
    if (phase_ == Phase::kClosed) return;
    if (ec) return close_now();
    read_header();
}

void Connection::read_header() {
    phase_ = Phase::kHeader;
    begin_exchange();
    arm_timer(config_.header_timeout_ms);
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(config_.max_header_bytes));
    // The route's own limit is applied once the request line is known (on_header).
    parser_->body_limit(static_cast<uint64_t>(config_.largest_body_limit()));
    body_limit_ = config_.max_body_bytes;
    http::async_read_header(transport_, buffer_, *parser_,
                            [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
}

void Connection::on_header(error_code ec) {
    if (phase_ == Phase::kClosed) return;
    if (ec) return on_read_error(ec);
    note_request_head();
    body_limit_ = route_body_limit();
    if (auto length = parser_->content_length(); length && *length > body_limit_) {
        return on_read_error(http::error::body_limit);
    }
    parser_->body_limit(static_cast<uint64_t>(body_limit_));  // a chunked body is counted as it comes
    if (parser_->is_done()) return dispatch();
    read_body();
}

size_t Connection::route_body_limit() const {
    const auto& head = parser_->get();
    const std::string_view target(head.target().data(), head.target().size());
    return config_.body_limit_for(std::string_view(head.method_string().data(), head.method_string().size()),
                                  target.substr(0, target.find('?')));
}

void Connection::read_body() {
    phase_ = Phase::kBody;
    arm_timer(config_.body_timeout_ms);
    auto read = [self = shared_from_this()] {
        http::async_read(self->transport_, self->buffer_, *self->parser_,
                         [self](error_code ec, size_t) { self->on_body(ec); });
    };
    auto expect = parser_->get()[http::field::expect];
    if (!equals_ignore_case(std::string_view(expect.data(), expect.size()), "100-continue")) return read();
    asio::async_write(transport_, asio::buffer(kContinueResponse.data(), kContinueResponse.size()),
                      [self = shared_from_this(), read](error_code ec, size_t) {
                          if (self->phase_ == Phase::kClosed) return;
                          if (ec) return self->close_now();
                          read();
                      });
}

void Connection::on_body(error_code ec) {
    if (phase_ == Phase::kClosed) return;
    if (ec) return on_read_error(ec);
    dispatch();
}

void Connection::on_read_error(error_code ec) {
    if (ec == http::error::body_limit) {
        // A Content-Length over every limit fails inside the header parse: the request line is known.
        if (parser_ && !parser_->get().target().empty()) body_limit_ = route_body_limit();
        return reply_error(413, "request body exceeds the limit of " + std::to_string(body_limit_) + " bytes",
                           "request_too_large");
    }
    if (ec == http::error::header_limit) {
        return reply_error(431,
                           "request headers exceed the limit of " + std::to_string(config_.max_header_bytes) + " bytes",
                           "request_header_fields_too_large");
    }
    if (timed_out_) {
        bool in_body = phase_ == Phase::kBody;
        if (!in_body && buffer_.size() == 0) return close_now();  // nothing sent: nobody to answer
        int timeout_ms = in_body ? config_.body_timeout_ms : config_.header_timeout_ms;
        return reply_error(408,
                           std::string("request ") + (in_body ? "body" : "headers") + " not received within " +
                               std::to_string(timeout_ms) + " ms",
                           "request_timeout");
    }
    if (is_http_parse_error(ec)) return reply_error(400, "malformed HTTP request: " + ec.message(), "bad_request");
    close_now();  // the client closed or reset the connection
}

HttpRequest Connection::take_request() {
    auto& message = parser_->get();
    HttpRequest request;
    request.method = std::string(message.method_string());  // boost::string_view -> std::string
    request.target = std::string(message.target());
    std::tie(request.path, request.query) = split_target(request.target);
    for (const auto& field : message) {
        request.headers.add(std::string(field.name_string()), std::string(field.value()));
    }
    request.body = std::move(message.body());
    request.remote = remote_;
    request.version = static_cast<int>(message.version());
    request_version_ = request.version;
    request_keep_alive_ = message.keep_alive();
    request_is_head_ = message.method() == http::verb::head;
    parser_.reset();
    return request;
}

void Connection::dispatch() {
    phase_ = Phase::kHandling;
    disarm_timer();
    HttpRequest request = take_request();
    std::shared_ptr<Exchange> exchange = exchange_;
    auto writer = std::make_shared<ResponseWriter>(weak_from_this(), exchange);
    writer_ = writer;
    // Pipelined bytes already buffered: they wait; otherwise watch the socket for a disconnect.
    if (buffer_.size() == 0) read_in_background();
    if (is_preflight(request)) return answer_preflight(request, !cors_origin_.empty(), *writer);
    std::string_view route = context_.router->dispatch(std::move(request), writer);
    exchange->set_route(std::string(route));
}

void Connection::begin_exchange() {
    exchange_ = std::make_shared<Exchange>(context_.observer, remote_);
    exchange_first_byte_ = outbound_.num_bytes_queued();
    exchange_has_head_ = false;
    cors_origin_.clear();
}

// The request line and headers are parsed (also when the body is then refused).
void Connection::note_request_head() {
    if (!parser_ || !exchange_ || exchange_has_head_) return;
    const auto& message = parser_->get();
    exchange_has_head_ = true;
    exchange_->set_request(std::string(message.method_string()), std::string(message.target()));
    auto origin = message[http::field::origin];
    if (origin_allowed(config_.cors, std::string_view(origin.data(), origin.size()))) {
        cors_origin_.assign(origin.data(), origin.size());
    }
}

// Refused or cut off before the headers were parsed: the request line as far as it is known (the
// parser has it once the line was complete, else it is still in the buffer).
void Connection::note_request_line() {
    if (!exchange_ || exchange_has_head_) return;
    exchange_has_head_ = true;
    if (parser_ && !parser_->get().target().empty()) {
        const auto& message = parser_->get();
        return exchange_->set_request(std::string(message.method_string()), std::string(message.target()));
    }
    auto bytes = buffer_.data();
    auto [method, target] = peek_request_line(std::string_view(static_cast<const char*>(bytes.data()), bytes.size()));
    exchange_->set_request(std::move(method), std::move(target));
}

// `complete`: the final response part is queued; else the connection closed first.
void Connection::finish_exchange(bool complete) {
    if (!exchange_) return;
    note_request_line();
    exchange_->leave_connection(complete, outbound_.num_bytes_queued() - exchange_first_byte_);
    exchange_.reset();
}

void Connection::read_in_background() {
    background_read_pending_ = true;
    transport_.async_read_some(buffer_.prepare(kBackgroundReadBytes), bind(&Connection::on_background_read));
}

void Connection::on_background_read(error_code ec, size_t num_bytes) {
    background_read_pending_ = false;
    if (phase_ == Phase::kClosed) return;
    if (ec) return close_now();  // client gone, idle timeout, or lingering finished
    buffer_.commit(num_bytes);
    switch (phase_) {
        case Phase::kHandling:
            return;  // start of a pipelined request: parsed once this response is written
        case Phase::kIdle:
            return read_header();
        case Phase::kLingering:
            num_bytes_lingered_ += num_bytes;
            buffer_.consume(buffer_.size());
            if (num_bytes_lingered_ > kLingerMaxBytes) return close_now();
            return read_in_background();
        default:
            CHECK(false) << "background read completed in phase " << static_cast<int>(phase_);
    }
}

void Connection::on_drain() {
    shutting_down_ = true;
    bool idle = phase_ == Phase::kHandshake || phase_ == Phase::kIdle ||
                (phase_ == Phase::kHeader && buffer_.size() == 0);
    if (idle) close_now();
    // Otherwise the request in progress is answered (Connection: close) and then the connection closes.
}

void Connection::on_part(ResponsePart& part) {
    if (phase_ != Phase::kHandling || response_complete_) return;  // connection closed meanwhile
    using Kind = ResponsePart::Kind;
    switch (part.kind) {
        case Kind::kFull:
            response_complete_ = true;
            queue_head(part.status, part.content_type, part.headers, part.data.size(), /*chunked=*/false);
            if (!request_is_head_) queue(std::move(part.data));
            finish_exchange(/*complete=*/true);
            break;
        case Kind::kStreamHead:
            // HTTP/1.0 has no chunked encoding: the body then ends when the connection closes.
            response_chunked_ = request_version_ >= 11;
            outbound_.set_chunked(response_chunked_);
            if (!response_chunked_) close_after_response_ = true;
            queue_head(part.status, part.content_type, part.headers, std::nullopt, response_chunked_);
            break;
        case Kind::kChunk:
            if (!request_is_head_) outbound_.add_stream_data(std::move(part.data));
            break;
        case Kind::kStreamEnd:
            response_complete_ = true;
            if (response_chunked_ && !request_is_head_) queue(std::string(kLastChunk));
            finish_exchange(/*complete=*/true);
            break;
        case Kind::kAbandoned: {
            if (response_started_) return close_now();  // cut short: the client sees a truncated body
            response_complete_ = true;
            std::string body = error_json("the handler ended without a response", kServerError, "internal_error");
            queue_head(500, "application/json", {}, body.size(), false);
            if (!request_is_head_) queue(std::move(body));
            finish_exchange(/*complete=*/true);
            break;
        }
    }
    // on_inbox() flushes once the whole batch of parts is queued.
}

void Connection::queue_head(int status, std::string_view content_type, const HeaderList& extra,
                            std::optional<size_t> content_length, bool chunked) {
    response_started_ = true;
    close_after_response_ = close_after_response_ || !request_keep_alive_ || shutting_down_;
    if (exchange_) exchange_->set_status(status);
    ResponseHead head{status, content_type, &extra, content_length, chunked, !close_after_response_};
    HeaderList with_cors;
    if (config_.cors.enabled()) {
        with_cors = extra;
        append_cors_headers(config_.cors, cors_origin_, extra, with_cors);
        head.extra = &with_cors;
    }
    queue(format_response_head(head));
}

// Starts writing what is queued, unless a write is in flight (on_write() continues then).
void Connection::flush() {
    if (write_pending_ || phase_ == Phase::kClosed) return;
    if (!outbound_.has_queued()) return maybe_response_done();
    write_queued();
}

void Connection::write_queued() {
    outbound_.start_batch();
    if (try_write_now()) return flush();
    if (phase_ == Phase::kClosed) return;
    write_pending_ = true;
    write_started_ = std::chrono::steady_clock::now();
    watch_write();
    asio::async_write(transport_, outbound_.batch(),
                      [self = shared_from_this()](error_code ec, size_t n) { self->on_write(ec, n); });
}

// Plain TCP: one non-blocking send of the whole batch; true if the socket took all of it. What it
// did not take stays in the batch for async_write. (A send that fails closes the connection.)
bool Connection::try_write_now() {
    if (transport_.is_tls()) return false;
    error_code ec;
    const size_t num_bytes = transport_.socket().write_some(outbound_.batch(), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) return false;
    if (ec) {
        close_now();
        return false;
    }
    return outbound_.consume(num_bytes);
}

void Connection::on_write(error_code ec, size_t num_bytes) {
    write_pending_ = false;
    if (phase_ == Phase::kClosed) return;
    if (ec) return close_now();
    CHECK(outbound_.consume(num_bytes)) << "async_write completed without writing the whole batch";
    flush();
}

void Connection::reply_error(int status, const std::string& message, std::string_view code) {
    // The rest of the request may still be on its way: answer, then close (never parse on).
    if (parser_ && parser_->is_header_done()) note_request_head();
    note_request_line();
    phase_ = Phase::kErrorReply;
    parser_.reset();
    request_is_head_ = false;
    close_after_response_ = true;
    response_complete_ = true;
    std::string body = error_json(message, status >= 500 ? kServerError : kInvalidRequestError, code);
    queue_head(status, "application/json", {}, body.size(), false);
    queue(std::move(body));
    finish_exchange(/*complete=*/true);
    flush();
}

void Connection::maybe_response_done() {
    if (response_complete_ && !write_pending_ && !outbound_.has_queued()) on_response_done();
}

void Connection::on_response_done() {
    if (auto writer = writer_.lock()) writer->detach();
    writer_.reset();
    bool close = close_after_response_ || shutting_down_;
    response_started_ = response_chunked_ = response_complete_ = close_after_response_ = false;
    if (close) return linger_then_close();
    if (buffer_.size() > 0 && !background_read_pending_) return read_header();  // pipelined request
    phase_ = Phase::kIdle;
    arm_timer(config_.idle_keepalive_timeout_ms);
    if (!background_read_pending_) read_in_background();
}

void Connection::arm_timer(int timeout_ms) {
    arm_timer_at(std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms));
}

void Connection::arm_timer_at(std::chrono::steady_clock::time_point expiry) {
    timed_out_ = false;
    write_watched_ = false;
    uint64_t generation = ++timer_generation_;
    timer_.expires_at(expiry);
    timer_.async_wait([self = shared_from_this(), generation](error_code ec) { self->on_timer(generation, ec); });
}

void Connection::disarm_timer() {
    write_watched_ = false;
    ++timer_generation_;
    timer_.cancel();
}

// A write just started (write_started_): make sure the timer fires write_timeout_ms after it at the
// latest. The timer is armed only when it does not watch writes yet; on_timer() moves it along.
void Connection::watch_write() {
    if (write_watched_) return;
    arm_timer_at(write_started_ + std::chrono::milliseconds(config_.write_timeout_ms));
    write_watched_ = true;
}

void Connection::on_timer(uint64_t generation, error_code ec) {
    if (ec || generation != timer_generation_ || phase_ == Phase::kClosed) return;
    if (write_watched_) {
        write_watched_ = false;
        if (!write_pending_) return;  // the writes so far completed; the next one re-arms
        const auto deadline = write_started_ + std::chrono::milliseconds(config_.write_timeout_ms);
        if (std::chrono::steady_clock::now() < deadline) return watch_write();  // a later write is in flight
        return close_now();  // a write without progress: the client counts as gone
    }
    if (phase_ == Phase::kHeader || phase_ == Phase::kBody) {
        // Cancel the read; on_read_error() then answers 408 if the client sent anything.
        timed_out_ = true;
        error_code ignored;
        transport_.socket().cancel(ignored);
        return;
    }
    // Handshake or idle timeout, a write without progress, or lingering over.
    close_now();
}

void Connection::linger_then_close() {
    // Half-close, then read and drop what the client still sends, so that closing does not reset
    // the connection (and destroy the response) while request bytes are unread.
    phase_ = Phase::kLingering;
    // The response is out: shutdown no longer waits for this connection (io_context teardown closes it).
    if (id_) context_.registry->remove(*id_);
    id_.reset();
    error_code ec;
    transport_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return close_now();
    arm_timer(kLingerMs);
    if (background_read_pending_) return;  // it continues as the linger read
    buffer_.consume(buffer_.size());
    read_in_background();
}

void Connection::close_now() {
    if (phase_ == Phase::kClosed) return;
    const bool no_request = (phase_ == Phase::kHeader || phase_ == Phase::kHandshake) && buffer_.size() == 0;
    if (no_request) exchange_.reset();  // nothing came: no request to report
    finish_exchange(/*complete=*/false);
    phase_ = Phase::kClosed;
    disarm_timer();
    error_code ignored;
    transport_.socket().close(ignored);
    if (auto writer = writer_.lock()) {
        if (!response_complete_) writer->notify_client_gone();
        writer->detach();
    }
    writer_.reset();
    if (id_) context_.registry->remove(*id_);
}

}  // namespace

void start_connection(tcp::socket socket, const ConnectionContext& context) {
    auto connection = std::make_shared<Connection>(std::move(socket), context);
    asio::dispatch(connection->executor(), [connection] { connection->start(); });
}

}  // namespace hichat::api
