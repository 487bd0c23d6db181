#include "bench/conversation_runner.h"

// GCC 12 misreads Boost 1.74's recycling allocator for coroutine frames (see load_generator.cpp).
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
struct ConversationRun {
    const ConversationLoad& load;
    const TurnRequestFn& next_request;
    tcp::resolver::results_type endpoints;
    Clock::time_point t0;
    int next_conversation = 0;  // the next conversation a free lane takes
    int num_in_flight = 0;
    LoadResult result;

    double now_s() const { return std::chrono::duration<double>(Clock::now() - t0).count(); }
    RequestOutcome& outcome(int conversation, int turn) {
        return result.outcomes[static_cast<size_t>(conversation) * load.num_turns + turn];
    }
};

// Turns 0.. of one conversation on the lane's connection, each after the previous one's answer.
asio::awaitable<void> run_turns(ConversationRun& run, LaneConnection& connection, int conversation) {
    std::vector<RequestOutcome> earlier;
    for (int turn = 0; turn < run.load.num_turns; ++turn) {
        const LoadRequest request = run.next_request(conversation, turn, earlier);
        run.result.max_concurrent_requests =
            std::max(run.result.max_concurrent_requests, ++run.num_in_flight);
        RequestOutcome out = co_await connection.run(request);
        --run.num_in_flight;
        run.outcome(conversation, turn) = out;
        if (!out.success) {
            for (int later = turn + 1; later < run.load.num_turns; ++later) {
                run.outcome(conversation, later).error = "an earlier turn of the conversation failed";
            }
            co_return;
        }
        earlier.push_back(std::move(out));
    }
}

// One concurrency slot: takes conversations in arrival order until none are left.
asio::awaitable<void> run_lane(ConversationRun& run) {
    auto executor = co_await asio::this_coro::executor;
    const std::function<double()> now_s = [&run] { return run.now_s(); };
    LaneConnection connection(executor, run.endpoints, now_s);
    asio::steady_timer timer(executor);
    while (run.next_conversation < run.load.num_conversations) {
        const int c = run.next_conversation++;
        timer.expires_at(run.t0 + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(run.load.arrivals_s[c])));
        error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        co_await run_turns(run, connection, c);
    }
    connection.close();
}

}  // namespace

Result<LoadResult> run_conversations(const LoadConfig& config, const ConversationLoad& load,
                                     const TurnRequestFn& next_request) {
    if (load.arrivals_s.size() != static_cast<size_t>(load.num_conversations) || load.num_turns < 1)
        return invalid_argument("run_conversations: one arrival time per conversation, at least one turn");
    asio::io_context io(1);
    error_code ec;
    tcp::resolver resolver(io);
    auto endpoints = resolver.resolve(config.target.host, config.target.port, ec);
    if (ec)
        return invalid_argument("cannot resolve " + config.target.host + ":" + config.target.port + ": " +
                                ec.message());

    ConversationRun run{.load = load, .next_request = next_request, .endpoints = std::move(endpoints)};
    run.result.outcomes.resize(static_cast<size_t>(load.num_conversations) * load.num_turns);
    const int num_lanes = std::min(load.num_conversations, std::max(config.max_concurrency, 1));
    run.t0 = Clock::now();
    for (int i = 0; i < num_lanes; ++i) {
        asio::co_spawn(io, run_lane(run), [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);  // only allocation failure can get here
        });
    }
    io.run();
    run.result.duration_s = run.now_s();
    return std::move(run.result);
}

}  // namespace hichat::tools::bench
