#include "bench/lane_connection.h"

// GCC 12 misreads Boost 1.74's recycling allocator for coroutine frames (see load_generator.cpp).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// clang-format off
#include <utility>  // before Asio (see stream_exchange.h)

#include <boost/asio/connect.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
// clang-format on

#include "bench/stream_exchange.h"
#include "bench/stream_recorder.h"

namespace hichat::tools::bench {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

LaneConnection::LaneConnection(asio::any_io_executor executor, const tcp::resolver::results_type& endpoints,
                               const std::function<double()>& now_s)
    : socket_(std::move(executor)), endpoints_(endpoints), now_s_(now_s) {}

asio::awaitable<RequestOutcome> LaneConnection::run(const LoadRequest& request) {
    StreamRecorder recorder(now_s_(), request.num_prompt_tokens, request.keep_text, request.responses_events);
    for (int attempt = 0;; ++attempt) {
        error_code ec;
        const bool reused = socket_.is_open();
        if (!reused) {
            pending_.clear();
            co_await asio::async_connect(socket_, endpoints_, asio::redirect_error(asio::use_awaitable, ec));
            if (ec) co_return recorder.finish("connect: " + ec.message());
            socket_.set_option(tcp::no_delay(true), ec);
        }
        ExchangeResult x = co_await exchange(socket_, pending_, request.http_bytes, recorder, now_s_);
        if (!x.reusable) socket_.close(ec);
        if (!x.error.empty() && reused && !x.received_bytes && attempt == 0) continue;
        co_return recorder.finish(x.error);
    }
}

void LaneConnection::close() {
    error_code ec;
    socket_.close(ec);
}

}  // namespace hichat::tools::bench
