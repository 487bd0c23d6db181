#include "bench/load_generator.h"

// GCC 12 misreads Boost 1.74's recycling allocator for coroutine frames (class operator delete over
// ::operator new memory) as a mismatched new/delete once inlined, e.g. under -fsanitize.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// clang-format off
#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>  // before Asio (see stream_exchange.h)

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
// clang-format on

#include "bench/stream_exchange.h"
#include "bench/stream_recorder.h"

namespace hichat::tools::bench {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

// State shared by the lanes of one run. The io_context thread only.
struct Run {
    const std::vector<LoadRequest>& requests;
    const std::vector<double>& arrivals_s;  // [num_requests]
    tcp::resolver::results_type endpoints;
    Clock::time_point t0;
    size_t next_request = 0;  // the next request a free lane takes
    int num_in_flight = 0;
    LoadResult result;

    double now_s() const { return std::chrono::duration<double>(Clock::now() - t0).count(); }
};

// One request on the lane's connection, reconnecting when it is closed. A reused keep-alive
// connection that the server closed meanwhile fails before any byte comes back; that is retried
// once on a fresh connection.
asio::awaitable<RequestOutcome> run_request(Run& run, tcp::socket& socket, std::string& pending,
                                            const LoadRequest& request) {
    StreamRecorder recorder(run.now_s(), request.num_prompt_tokens);
    const std::function<double()> now_s = [&run] { return run.now_s(); };
    for (int attempt = 0;; ++attempt) {
        error_code ec;
        const bool reused = socket.is_open();
        if (!reused) {
            pending.clear();
            co_await asio::async_connect(socket, run.endpoints,
                                         asio::redirect_error(asio::use_awaitable, ec));
            if (ec) co_return recorder.finish("connect: " + ec.message());
            socket.set_option(tcp::no_delay(true), ec);
        }
        ExchangeResult x = co_await exchange(socket, pending, request.http_bytes, recorder, now_s);
        if (!x.reusable) socket.close(ec);
        if (!x.error.empty() && reused && !x.received_bytes && attempt == 0) continue;
        co_return recorder.finish(x.error);
    }
}

// One concurrency slot: takes requests in arrival order until none are left.
asio::awaitable<void> run_lane(Run& run) {
    auto executor = co_await asio::this_coro::executor;
    tcp::socket socket(executor);
    asio::steady_timer timer(executor);
    std::string pending;
    while (run.next_request < run.requests.size()) {
        const size_t i = run.next_request++;
        timer.expires_at(run.t0 + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(run.arrivals_s[i])));
        error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        run.result.max_concurrent_requests =
            std::max(run.result.max_concurrent_requests, ++run.num_in_flight);
        run.result.outcomes[i] = co_await run_request(run, socket, pending, run.requests[i]);
        --run.num_in_flight;
    }
    error_code ec;
    socket.close(ec);
}

}  // namespace

Result<LoadResult> run_load(const LoadConfig& config, const std::vector<LoadRequest>& requests,
                            const std::vector<double>& arrivals_s) {
    if (arrivals_s.size() != requests.size())
        return invalid_argument("run_load: one arrival time per request");
    asio::io_context io(1);
    error_code ec;
    tcp::resolver resolver(io);
    auto endpoints = resolver.resolve(config.target.host, config.target.port, ec);
    if (ec)
        return invalid_argument("cannot resolve " + config.target.host + ":" + config.target.port + ": " +
                                ec.message());

    Run run{.requests = requests, .arrivals_s = arrivals_s, .endpoints = std::move(endpoints)};
    run.result.outcomes.resize(requests.size());
    const size_t num_lanes =
        std::min(requests.size(), static_cast<size_t>(std::max(config.max_concurrency, 1)));
    run.t0 = Clock::now();
    for (size_t i = 0; i < num_lanes; ++i) {
        asio::co_spawn(io, run_lane(run), [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);  // only allocation failure can get here
        });
    }
    io.run();
    run.result.duration_s = run.now_s();
    return std::move(run.result);
}

}  // namespace hichat::tools::bench
