#include "bench/stream_exchange.h"

// GCC 12 misreads Boost 1.74's recycling allocator for coroutine frames (class operator delete over
// ::operator new memory) as a mismatched new/delete once inlined, e.g. under -fsanitize.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <algorithm>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <vector>

#include "bench/chunked_decoder.h"
#include "bench/response_head.h"
#include "bench/sse_parser.h"

namespace hichat::tools::bench {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

constexpr size_t kMaxHeadBytes = 64 * 1024;
constexpr size_t kMaxErrorBodyBytes = 300;  // of a non-200 body, quoted in the error
constexpr size_t kReadBytes = 4 * 1024;  // per read: a token chunk is ~200 bytes

// Where body bytes go: the SSE parser and the recorder for a 200 response, else an error excerpt.
class BodySink {
public:
    BodySink(bool is_stream, StreamRecorder& recorder, const std::function<double()>& now_s)
        : is_stream_(is_stream), recorder_(recorder), now_s_(now_s) {}

    void consume(std::string_view bytes) {
        if (!is_stream_) {
            error_body_.append(
                bytes.substr(0, kMaxErrorBodyBytes - std::min(kMaxErrorBodyBytes, error_body_.size())));
            return;
        }
        double now = -1;  // events of one read share its arrival time, as in vLLM's client
        sse_.for_each_event(bytes, [this, &now](std::string_view event) {
            if (now < 0) now = now_s_();
            recorder_.on_event(event, now);
        });
    }

    const std::string& error_body() const { return error_body_; }

private:
    bool is_stream_;
    StreamRecorder& recorder_;
    const std::function<double()>& now_s_;
    SseParser sse_;
    std::string error_body_;
};

std::string read_error(const error_code& ec, const char* where) {
    if (ec == asio::error::eof) return std::string("connection closed ") + where;
    return std::string("read ") + where + ": " + ec.message();
}

// Appends what the socket has to `pending` (read in place: no buffer in the coroutine frame, which
// would cost an allocation per read); sets `ec` at EOF or on error.
asio::awaitable<void> read_more(tcp::socket& socket, std::string& pending, error_code& ec) {
    const size_t old_size = pending.size();
    pending.resize(old_size + kReadBytes);
    const size_t n = co_await socket.async_read_some(asio::buffer(pending.data() + old_size, kReadBytes),
                                                     asio::redirect_error(asio::use_awaitable, ec));
    pending.resize(old_size + n);
}

// Reads the body as the head frames it. Returns an error message, empty on success.
asio::awaitable<std::string> read_body(tcp::socket& socket, std::string& pending, const ResponseHead& head,
                                       BodySink& sink) {
    error_code ec;
    if (head.status / 100 == 1 || head.status == 204 || head.status == 304) co_return "";
    if (head.chunked) {  // the streaming case: one read per token chunk, so no nested coroutine here
        ChunkedDecoder decoder;
        std::string decoded;
        for (;;) {
            Result<size_t> used = decoder.feed(pending, decoded);
            if (!used.ok()) co_return used.status().message();
            pending.erase(0, *used);
            sink.consume(decoded);
            decoded.clear();
            if (decoder.done()) co_return "";
            const size_t old_size = pending.size();
            pending.resize(old_size + kReadBytes);
            const size_t n = co_await socket.async_read_some(asio::buffer(pending.data() + old_size, kReadBytes),
                                                             asio::redirect_error(asio::use_awaitable, ec));
            pending.resize(old_size + n);
            if (ec) co_return read_error(ec, "inside a chunked body");
        }
    }
    if (head.content_length) {
        size_t num_bytes_left = *head.content_length;
        for (;;) {
            const size_t n = std::min(num_bytes_left, pending.size());
            sink.consume(std::string_view(pending).substr(0, n));
            pending.erase(0, n);
            num_bytes_left -= n;
            if (num_bytes_left == 0) co_return "";
            co_await read_more(socket, pending, ec);
            if (ec) co_return read_error(ec, "inside the body");
        }
    }
    for (;;) {  // the body ends when the server closes the connection
        sink.consume(pending);
        pending.clear();
        co_await read_more(socket, pending, ec);
        if (ec == asio::error::eof) co_return "";
        if (ec) co_return read_error(ec, "inside the body");
    }
}

}  // namespace

asio::awaitable<ExchangeResult> exchange(tcp::socket& socket, std::string& pending,
                                         const std::string& request_bytes, StreamRecorder& recorder,
                                         const std::function<double()>& now_s) {
    ExchangeResult result;
    error_code ec;
    co_await asio::async_write(socket, asio::buffer(request_bytes),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        result.error = "write: " + ec.message();
        co_return result;
    }
    size_t head_end = 0;
    while ((head_end = pending.find("\r\n\r\n")) == std::string::npos) {
        if (pending.size() > kMaxHeadBytes) {
            result.error = "HTTP response head over 64 KiB";
            co_return result;
        }
        co_await read_more(socket, pending, ec);
        if (!pending.empty()) result.received_bytes = true;
        if (ec) {
            result.error = read_error(ec, "before the response head ended");
            co_return result;
        }
    }
    Result<ResponseHead> head = parse_response_head(std::string_view(pending).substr(0, head_end + 4));
    if (!head.ok()) {
        result.error = head.status().message();
        co_return result;
    }
    pending.erase(0, head_end + 4);
    BodySink sink(head->status == 200, recorder, now_s);
    result.error = co_await read_body(socket, pending, *head, sink);
    const bool body_complete = result.error.empty();
    result.reusable = body_complete && head->keep_alive && !head->body_ends_at_close();
    if (body_complete && head->status != 200) {
        result.error = "HTTP " + std::to_string(head->status) + ": " + sink.error_body();
    }
    co_return result;
}

}  // namespace hichat::tools::bench
