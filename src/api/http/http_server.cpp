#include "api/http/http_server.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "api/http/connection.h"
#include "api/http/connection_registry.h"
#include "api/http/tls_context.h"

namespace hichat::api {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct HttpServer::Impl {
    Impl(const HttpServerConfig& config_in, Router router_in)
        : config(config_in),
          router(std::move(router_in)),
          io(config.num_io_threads),
          accept_strand(asio::make_strand(io)),
          acceptor(accept_strand),
          accept_retry_timer(accept_strand),
          work(asio::make_work_guard(io)) {}

    Result<tcp::endpoint> resolve_endpoint();
    Status listen();
    void accept_next();
    void on_accept(error_code ec, tcp::socket socket);
    void close_acceptor();  // on accept_strand
    void run_io_thread();

    // Declaration order is destruction order in reverse: the io_context (and the handlers it still
    // holds) goes first, then what those handlers point to.
    HttpServerConfig config;
    Router router;
    std::unique_ptr<asio::ssl::context> tls;
    ConnectionRegistry registry;
    ConnectionContext connection_context;

    asio::io_context io;
    asio::strand<asio::io_context::executor_type> accept_strand;
    tcp::acceptor acceptor;
    asio::steady_timer accept_retry_timer;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
    std::vector<std::thread> threads;
    int port = 0;

    std::mutex mu;
    std::condition_variable changed;
    bool shutdown_begun = false;  // guarded by mu
    bool acceptor_closed = false; // guarded by mu
    bool stopped = false;         // guarded by mu; I/O threads joined
    Clock::time_point drain_deadline;
};

Result<tcp::endpoint> HttpServer::Impl::resolve_endpoint() {
    error_code ec;
    asio::ip::address address = asio::ip::make_address(config.host, ec);
    if (!ec) return tcp::endpoint(address, static_cast<unsigned short>(config.port));
    tcp::resolver resolver(io);
    auto results = resolver.resolve(config.host, std::to_string(config.port), ec);
    if (ec || results.empty()) {
        return invalid_argument("HttpServerConfig.host '" + config.host + "': cannot resolve (" + ec.message() + ")");
    }
    return results.begin()->endpoint();
}

Status HttpServer::Impl::listen() {
    Result<tcp::endpoint> endpoint = resolve_endpoint();
    if (!endpoint.ok()) return endpoint.status();
    std::string where = config.host + ":" + std::to_string(config.port);
    error_code ec;
    acceptor.open(endpoint->protocol(), ec);
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(*endpoint, ec);
    if (!ec) acceptor.listen(config.listen_backlog, ec);
    if (ec) return invalid_argument("cannot listen on " + where + ": " + ec.message());
    port = acceptor.local_endpoint(ec).port();
    return ok_status();
}

void HttpServer::Impl::accept_next() {
    acceptor.async_accept(asio::make_strand(io), [this](error_code ec, tcp::socket socket) {
        on_accept(ec, std::move(socket));
    });
}

void HttpServer::Impl::on_accept(error_code ec, tcp::socket socket) {
    if (!acceptor.is_open()) return;  // closed by begin_shutdown()
    if (ec) {
        // Typically out of file descriptors: back off instead of spinning.
        std::fprintf(stderr, "hichat http: accept failed: %s\n", ec.message().c_str());
        accept_retry_timer.expires_after(std::chrono::milliseconds(50));
        accept_retry_timer.async_wait([this](error_code wait_ec) {
            if (!wait_ec && acceptor.is_open()) accept_next();
        });
        return;
    }
    start_connection(std::move(socket), connection_context);
    accept_next();
}

void HttpServer::Impl::close_acceptor() {
    error_code ignored;
    acceptor.close(ignored);
    accept_retry_timer.cancel();
    std::lock_guard<std::mutex> lock(mu);
    acceptor_closed = true;
    changed.notify_all();
}

void HttpServer::Impl::run_io_thread() {
    for (;;) {
        try {
            io.run();
            return;
        } catch (const std::exception& e) {
            // Handlers catch their own errors (Router); anything reaching here is logged, not fatal.
            std::fprintf(stderr, "hichat http: exception on an I/O thread: %s\n", e.what());
        }
    }
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const HttpServerConfig& config, Router router) {
    HICHAT_RETURN_IF_ERROR(config.validate());
    auto impl = std::make_unique<Impl>(config, std::move(router));
    if (config.tls_enabled()) {
        auto tls = make_tls_context(config.tls_cert_file, config.tls_key_file);
        if (!tls.ok()) return tls.status();
        impl->tls = std::move(tls).value();
    }
    std::shared_ptr<const ExchangeObserver> observer;
    if (config.on_exchange) observer = std::make_shared<const ExchangeObserver>(config.on_exchange);
    impl->connection_context =
        ConnectionContext{&impl->config, &impl->router, impl->tls.get(), &impl->registry, std::move(observer)};
    HICHAT_RETURN_IF_ERROR(impl->listen());
    Impl* raw = impl.get();
    asio::post(raw->accept_strand, [raw] { raw->accept_next(); });
    for (int i = 0; i < config.num_io_threads; ++i) raw->threads.emplace_back([raw] { raw->run_io_thread(); });
    return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
    begin_shutdown_with_drain_ms(0);
    wait();
}

int HttpServer::port() const { return impl_->port; }

size_t HttpServer::num_connections() const { return impl_->registry.size(); }

void HttpServer::begin_shutdown() { begin_shutdown_with_drain_ms(impl_->config.shutdown_drain_ms); }

void HttpServer::begin_shutdown_with_drain_ms(int drain_ms) {
    Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(drain_ms);
    {
        std::lock_guard<std::mutex> lock(impl_->mu);
        if (impl_->shutdown_begun) {
            impl_->drain_deadline = std::min(impl_->drain_deadline, deadline);  // only ever shortened
            impl_->changed.notify_all();
            return;
        }
        impl_->shutdown_begun = true;
        impl_->drain_deadline = deadline;
        impl_->changed.notify_all();
    }
    Impl* impl = impl_.get();
    asio::post(impl->accept_strand, [impl] { impl->close_acceptor(); });
    impl->registry.drain_all();
}

void HttpServer::wait() {
    Impl& impl = *impl_;
    auto current_deadline = [&impl] {
        std::lock_guard<std::mutex> lock(impl.mu);
        return impl.drain_deadline;
    };
    {
        std::unique_lock<std::mutex> lock(impl.mu);
        impl.changed.wait(lock, [&] { return impl.shutdown_begun && impl.acceptor_closed; });
        if (impl.stopped) return;
    }
    // Re-read the deadline every round: the destructor may shorten it while another thread waits.
    constexpr auto kRound = std::chrono::milliseconds(50);
    for (;;) {
        Clock::time_point deadline = current_deadline();
        if (impl.registry.wait_empty_until(std::min(deadline, Clock::now() + kRound))) break;
        if (Clock::now() < current_deadline()) continue;
        impl.registry.force_close_all();
        impl.registry.wait_empty_until(Clock::now() + std::chrono::seconds(2));  // closing runs on the strands
        break;
    }
    {
        std::lock_guard<std::mutex> lock(impl.mu);
        if (impl.stopped) return;
        impl.stopped = true;
    }
    impl.work.reset();
    impl.io.stop();
    for (std::thread& thread : impl.threads) thread.join();
}

}  // namespace hichat::api
