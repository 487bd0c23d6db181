// LaneConnection: one lane's keep-alive connection to the server under test. Runs requests on it one
// after another, reconnecting when the server closed it. Internal to run_load() and
// run_conversations(); the io_context thread only.
#pragma once

// clang-format off
#include <functional>
#include <string>
#include <utility>  // before Asio (see stream_exchange.h)

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
// clang-format on

#include "bench/load_generator.h"
#include "bench/request_outcome.h"

namespace hichat::tools::bench {

class LaneConnection {
public:
    // `endpoints` and `now_s` (the benchmark clock, seconds) must outlive the connection.
    LaneConnection(boost::asio::any_io_executor executor,
                   const boost::asio::ip::tcp::resolver::results_type& endpoints,
                   const std::function<double()>& now_s);

    // Sends `request` and records its stream; never throws for network or protocol errors (they are
    // a failed outcome). A reused connection that the server closed meanwhile fails before any byte
    // comes back; that is retried once on a fresh connection.
    boost::asio::awaitable<RequestOutcome> run(const LoadRequest& request);

    void close();

private:
    boost::asio::ip::tcp::socket socket_;
    const boost::asio::ip::tcp::resolver::results_type& endpoints_;
    const std::function<double()>& now_s_;
    std::string pending_;  // bytes read but not yet consumed
};

}  // namespace hichat::tools::bench
