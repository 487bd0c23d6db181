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
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
// clang-format on

#include "bench/lane_connection.h"

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

// One concurrency slot: takes requests in arrival order until none are left.
asio::awaitable<void> run_lane(Run& run) {
    auto executor = co_await asio::this_coro::executor;
    const std::function<double()> now_s = [&run] { return run.now_s(); };
    LaneConnection connection(executor, run.endpoints, now_s);
    asio::steady_timer timer(executor);
    while (run.next_request < run.requests.size()) {
        const size_t i = run.next_request++;
        timer.expires_at(run.t0 + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(run.arrivals_s[i])));
        error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        run.result.max_concurrent_requests =
            std::max(run.result.max_concurrent_requests, ++run.num_in_flight);
        run.result.outcomes[i] = co_await connection.run(run.requests[i]);
        --run.num_in_flight;
    }
    connection.close();
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
