#include "test_receiver.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

namespace hichat::api::webhooks::test {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;
using tcp = asio::ip::tcp;

std::string bio_text(BIO* bio) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    return std::string(data, static_cast<size_t>(n));
}

void add_extension(X509* cert, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    ASSERT_NE(ext, nullptr) << value;
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
}

int64_t now_s() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

TestCertificate make_test_certificate(const std::string& subject_alt_name) {
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* cert = X509_new();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("hichat test"), -1, -1, 0);
    X509_set_issuer_name(cert, name);
    add_extension(cert, NID_basic_constraints, "critical,CA:TRUE");
    add_extension(cert, NID_subject_alt_name, subject_alt_name);
    X509_sign(cert, key, EVP_sha256());
    BIO* cert_bio = BIO_new(BIO_s_mem());
    BIO* key_bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(cert_bio, cert);
    PEM_write_bio_PrivateKey(key_bio, key, nullptr, nullptr, 0, nullptr, nullptr);
    TestCertificate out{bio_text(cert_bio), bio_text(key_bio)};
    BIO_free(cert_bio);
    BIO_free(key_bio);
    X509_free(cert);
    EVP_PKEY_free(key);
    return out;
}

struct TestReceiver::Impl {
    Impl(Policy p, const WebhookSigner& s) : policy(std::move(p)), signer(s), acceptor(io) {}

    void accept_next() {
        acceptor.async_accept([this](error_code ec, tcp::socket socket) {
            if (ec) return;  // closed by the destructor
            {
                std::lock_guard lock(mu);
                ++num_connections;
            }
            serve(std::move(socket));
            accept_next();
        });
    }

    // Synchronous: the tests' senders write their request at once, and a stuck peer is cut off by
    // the receive timeout.
    void serve(tcp::socket socket) {
        timeval timeout{10, 0};
        setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        if (!tls) return exchange(socket, "");
        ssl::stream<tcp::socket&> stream(socket, *tls);
        error_code ec;
        stream.handshake(ssl::stream_base::server, ec);
        if (ec) return;
        const char* sni = SSL_get_servername(stream.native_handle(), TLSEXT_NAMETYPE_host_name);
        exchange(stream, sni != nullptr ? sni : "");
    }

    template <typename Stream>
    void exchange(Stream& stream, const std::string& sni) {
        beast::flat_buffer buffer;
        http::request<http::string_body> req;
        error_code ec;
        http::read(stream, buffer, req, ec);
        if (ec) return;
        ReceivedRequest r{.method = std::string(req.method_string()), .target = std::string(req.target()),
                          .content_type = std::string(req[http::field::content_type]),
                          .id = std::string(req["webhook-id"]), .timestamp = std::string(req["webhook-timestamp"]),
                          .signature = std::string(req["webhook-signature"]), .body = req.body(), .sni = sni};
        r.signature_ok = signer.verify(r.id, r.timestamp, r.signature, r.body, now_s()).ok();
        {
            std::lock_guard lock(mu);
            for (const auto& earlier : received) r.num_attempt_of_id += earlier.id == r.id ? 1 : 0;
        }
        ++r.num_attempt_of_id;
        r.answered = r.signature_ok ? policy(r) : 401;
        http::response<http::string_body> res{static_cast<http::status>(r.answered), 11};
        res.set(http::field::connection, "close");
        if (r.answered != 204) res.body() = "{}";  // a 204 has no body (Beast refuses one)
        res.prepare_payload();
        // Recorded before the answer leaves, so that whatever the sender does after reading it
        // happens after the record (tests check the records when the sender reports).
        {
            std::lock_guard lock(mu);
            received.push_back(std::move(r));
        }
        changed.notify_all();
        http::write(stream, res, ec);
    }

    Policy policy;
    const WebhookSigner& signer;
    std::unique_ptr<ssl::context> tls;
    asio::io_context io;
    tcp::acceptor acceptor;
    std::thread thread;
    mutable std::mutex mu;
    mutable std::condition_variable changed;
    std::vector<ReceivedRequest> received;  // guarded by mu
    size_t num_connections = 0;             // guarded by mu
};

std::unique_ptr<TestReceiver> TestReceiver::start(Policy policy, const WebhookSigner& signer, int port,
                                                  std::optional<TestCertificate> tls) {
    auto impl = std::make_unique<Impl>(std::move(policy), signer);
    if (tls) {
        impl->tls = std::make_unique<ssl::context>(ssl::context::tls_server);
        impl->tls->use_certificate_chain(asio::buffer(tls->cert_pem));
        impl->tls->use_private_key(asio::buffer(tls->key_pem), ssl::context::pem);
    }
    error_code ec;
    const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port));
    impl->acceptor.open(endpoint.protocol(), ec);
    if (!ec) impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) impl->acceptor.bind(endpoint, ec);
    if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        ADD_FAILURE() << "test receiver cannot listen on 127.0.0.1:" << port << ": " << ec.message();
        return nullptr;
    }
    impl->accept_next();
    Impl* raw = impl.get();
    raw->thread = std::thread([raw] { raw->io.run(); });
    return std::unique_ptr<TestReceiver>(new TestReceiver(std::move(impl)));
}

TestReceiver::TestReceiver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TestReceiver::~TestReceiver() {
    asio::post(impl_->io, [impl = impl_.get()] {
        error_code ignored;
        impl->acceptor.close(ignored);
    });
    impl_->thread.join();  // run() returns once the accept loop ended
}

int TestReceiver::port() const { return impl_->acceptor.local_endpoint().port(); }

std::string TestReceiver::url(const std::string& host) const {
    return std::string(impl_->tls ? "https" : "http") + "://" + host + ":" + std::to_string(port()) + "/hook";
}

size_t TestReceiver::num_connections() const {
    std::lock_guard lock(impl_->mu);
    return impl_->num_connections;
}

std::vector<ReceivedRequest> TestReceiver::requests() const {
    std::lock_guard lock(impl_->mu);
    return impl_->received;
}

std::vector<ReceivedRequest> TestReceiver::requests_with_id(const std::string& id) const {
    std::vector<ReceivedRequest> out;
    for (auto& r : requests()) {
        if (r.id == id) out.push_back(std::move(r));
    }
    return out;
}

bool TestReceiver::wait_for(const std::function<bool(const std::vector<ReceivedRequest>&)>& done) const {
    std::unique_lock lock(impl_->mu);
    return impl_->changed.wait_for(lock, kDeadline, [&] { return done(impl_->received); });
}

DeliveryObserver ReportLog::observer() {
    return [this](const DeliveryReport& report) {
        {
            std::lock_guard lock(mu_);
            reports_.push_back(report);
        }
        changed_.notify_all();
    };
}

std::vector<DeliveryReport> ReportLog::reports() const {
    std::lock_guard lock(mu_);
    return reports_;
}

std::vector<DeliveryReport> ReportLog::finals() const {
    std::vector<DeliveryReport> out;
    for (auto& r : reports()) {
        if (r.state != DeliveryState::kRetrying) out.push_back(std::move(r));
    }
    return out;
}

bool ReportLog::wait_for(const std::function<bool(const std::vector<DeliveryReport>&)>& done) const {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, kDeadline, [&] { return done(reports_); });
}

bool ReportLog::wait_for_finals(size_t n) const {
    return wait_for([n](const std::vector<DeliveryReport>& all) {
        size_t num_finals = 0;
        for (const auto& r : all) num_finals += r.state != DeliveryState::kRetrying ? 1 : 0;
        return num_finals >= n;
    });
}

int unused_port() {
    asio::io_context io;
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    return acceptor.local_endpoint().port();
}

const WebhookSigner& test_signer() {
    static const WebhookSigner signer = WebhookSigner::from_secret(kSecret).value();
    return signer;
}

}  // namespace hichat::api::webhooks::test
