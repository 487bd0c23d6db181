// One PostOp per request, on its own strand: resolve -> connect -> [TLS handshake] -> write ->
// read the response header -> close. One steady_timer is the deadline of the current phase
// (connect_timeout_ms for lookup + connect, then response_timeout_ms); when it fires it cancels the
// lookup and closes the socket, and the step then in progress fails with "timed out".
#include "api/http/http_client.h"

#include <chrono>
#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace hichat::api {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;
using tcp = asio::ip::tcp;

Result<std::shared_ptr<ssl::context>> make_client_tls_context(const std::string& ca_file) {
    std::shared_ptr<ssl::context> context;
    try {
        context = std::make_shared<ssl::context>(ssl::context::tls_client);
    } catch (const boost::system::system_error& e) {
        return internal_error(std::string("cannot create the TLS client context: ") + e.what());
    }
    error_code ec;
    context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                             ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                         ec);
    if (ec) return internal_error("cannot set TLS client options: " + ec.message());
    context->set_verify_mode(ssl::verify_peer, ec);
    if (ec) return internal_error("cannot require TLS peer verification: " + ec.message());
    if (ca_file.empty()) {
        context->set_default_verify_paths(ec);
        if (ec) return internal_error("cannot load the system's trusted certificates: " + ec.message());
    } else {
        context->load_verify_file(ca_file, ec);
        if (ec) return invalid_argument("ca_file '" + ca_file + "': cannot load PEM certificates (" + ec.message() + ")");
    }
    return context;
}

class PostOp : public std::enable_shared_from_this<PostOp> {
public:
    PostOp(asio::io_context& io, std::shared_ptr<ssl::context> tls, const HttpClientConfig& config, HttpPost post,
           HttpPostDone done)
        : strand_(asio::make_strand(io)),
          resolver_(strand_),
          socket_(strand_),
          deadline_(strand_),
          tls_context_(std::move(tls)),
          config_(config),
          post_(std::move(post)),
          done_(std::move(done)) {}

    void start() {
        asio::dispatch(strand_, [self = shared_from_this()] { self->resolve(); });
    }

private:
    void resolve() {
        arm_deadline(config_.connect_timeout_ms);
        resolver_.async_resolve(post_.url.host, std::to_string(post_.url.port),
                                [self = shared_from_this()](error_code ec, tcp::resolver::results_type results) {
                                    if (ec) return self->fail("lookup", ec);
                                    self->connect(results);
                                });
    }

    void connect(const tcp::resolver::results_type& results) {
        asio::async_connect(socket_, results, [self = shared_from_this()](error_code ec, const tcp::endpoint&) {
            if (ec) return self->fail("connect", ec);
            self->arm_deadline(self->config_.response_timeout_ms);
            if (self->post_.url.tls()) return self->handshake();
            self->write();
        });
    }

    void handshake() {
        tls_.emplace(socket_, *tls_context_);
        SSL* ssl = tls_->native_handle();
        const std::string& host = post_.url.host;
        X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
        if (is_ip_literal(host)) {
            X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());  // SNI carries names only
        } else {
            SSL_set_tlsext_host_name(ssl, host.c_str());
            X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
        }
        tls_->async_handshake(ssl::stream_base::client, [self = shared_from_this()](error_code ec) {
            if (ec) return self->fail("TLS handshake", ec, self->verify_detail());
            self->write();
        });
    }

    std::string verify_detail() {
        const long result = SSL_get_verify_result(tls_->native_handle());
        if (result == X509_V_OK) return "";
        return std::string(" (") + X509_verify_cert_error_string(result) + ")";
    }

    void write() {
        request_ = {http::verb::post, post_.url.target, 11};
        const Url& url = post_.url;
        const bool default_port = url.port == (url.tls() ? 443 : 80);
        std::string host = url.host_is_ipv6() ? "[" + url.host + "]" : url.host;
        if (!default_port) host += ":" + std::to_string(url.port);
        request_.set(http::field::host, host);
        request_.set(http::field::user_agent, "hichat-webhooks");
        request_.set(http::field::content_type, post_.content_type);
        request_.set(http::field::connection, "close");
        for (const auto& [name, value] : post_.headers) request_.set(name, value);
        request_.body() = std::move(post_.body);
        request_.prepare_payload();
        auto on_written = [self = shared_from_this()](error_code ec, size_t) {
            if (ec) return self->fail("write", ec);
            self->read();
        };
        if (tls_) {
            http::async_write(*tls_, request_, std::move(on_written));
        } else {
            http::async_write(socket_, request_, std::move(on_written));
        }
    }

    void read() {
        auto on_read = [self = shared_from_this()](error_code ec, size_t) {
            if (ec) return self->fail("read", ec);
            self->finish(static_cast<int>(self->parser_.get().result_int()));
        };
        if (tls_) {
            http::async_read_header(*tls_, buffer_, parser_, std::move(on_read));
        } else {
            http::async_read_header(socket_, buffer_, parser_, std::move(on_read));
        }
    }

    // Each phase re-arms: the generation tells a stale expiry (queued before the re-arm) apart.
    void arm_deadline(int timeout_ms) {
        const uint64_t generation = ++deadline_generation_;
        deadline_.expires_after(std::chrono::milliseconds(timeout_ms));
        deadline_.async_wait([self = shared_from_this(), generation, timeout_ms](error_code ec) {
            if (ec || generation != self->deadline_generation_ || self->finished_) return;
            self->timed_out_ms_ = timeout_ms;
            self->resolver_.cancel();
            error_code ignored;
            self->socket_.close(ignored);
        });
    }

    void fail(const char* step, const error_code& ec, const std::string& detail = "") {
        std::string why = timed_out_ms_ > 0 ? "timed out after " + std::to_string(timed_out_ms_) + " ms"
                                            : ec.message() + detail;
        finish(Status(StatusCode::kInternal, "POST " + post_.url.origin() + ": " + step + ": " + why));
    }

    void finish(Result<int> result) {
        if (finished_) return;
        finished_ = true;
        deadline_.cancel();
        error_code ignored;
        socket_.close(ignored);
        HttpPostDone done = std::move(done_);
        done(std::move(result));
    }

    asio::strand<asio::io_context::executor_type> strand_;
    tcp::resolver resolver_;
    tcp::socket socket_;
    asio::steady_timer deadline_;
    std::shared_ptr<ssl::context> tls_context_;
    std::optional<ssl::stream<tcp::socket&>> tls_;  // https only, over socket_
    HttpClientConfig config_;
    HttpPost post_;
    HttpPostDone done_;
    http::request<http::string_body> request_;
    beast::flat_buffer buffer_;
    http::response_parser<http::empty_body> parser_;
    uint64_t deadline_generation_ = 0;
    int timed_out_ms_ = 0;  // > 0 once the deadline fired
    bool finished_ = false;
};

}  // namespace

Status HttpClientConfig::validate() const {
    if (connect_timeout_ms <= 0) {
        return invalid_argument("connect_timeout_ms must be positive, got " + std::to_string(connect_timeout_ms));
    }
    if (response_timeout_ms <= 0) {
        return invalid_argument("response_timeout_ms must be positive, got " + std::to_string(response_timeout_ms));
    }
    return ok_status();
}

struct HttpClient::Impl {
    asio::io_context& io;
    HttpClientConfig config;
    std::shared_ptr<ssl::context> tls;  // shared with requests in flight
};

HttpClient::HttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::~HttpClient() = default;

Result<std::unique_ptr<HttpClient>> HttpClient::create(asio::io_context& io, const HttpClientConfig& config) {
    HICHAT_RETURN_IF_ERROR(config.validate());
    auto tls = make_client_tls_context(config.ca_file);
    if (!tls.ok()) return tls.status();
    return std::unique_ptr<HttpClient>(new HttpClient(std::make_unique<Impl>(Impl{io, config, std::move(tls).value()})));
}

void HttpClient::post(HttpPost request, HttpPostDone done) {
    std::make_shared<PostOp>(impl_->io, impl_->tls, impl_->config, std::move(request), std::move(done))->start();
}

}  // namespace hichat::api
