// One request/response exchange on a keep-alive connection, as a Boost.Asio coroutine: write the
// request, read the response head, then the body (chunked, Content-Length or until close), feeding
// the SSE events of a 200 response to a StreamRecorder as they arrive. Internal to run_load().
#pragma once

// clang-format off
#include <functional>
#include <string>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without including it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
// clang-format on

#include "bench/stream_recorder.h"

namespace hichat::tools::bench {

struct ExchangeResult {
    std::string error;            // transport or protocol error, or "HTTP <status>: <body excerpt>"
    bool received_bytes = false;  // any response byte arrived (if not, a stale connection may be retried)
    bool reusable = false;        // the response ended cleanly and the server keeps the connection open
};

// `pending` holds bytes read from `socket` but not yet consumed (empty between responses unless the
// server misbehaves). `now_s` gives the benchmark clock for event timestamps.
boost::asio::awaitable<ExchangeResult> exchange(boost::asio::ip::tcp::socket& socket, std::string& pending,
                                                const std::string& request_bytes, StreamRecorder& recorder,
                                                const std::function<double()>& now_s);

}  // namespace hichat::tools::bench
