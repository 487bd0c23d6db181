// HttpClient against the test receiver: plain HTTP, HTTPS with a CA file (by IP and by name, SNI),
// HTTPS refused (untrusted certificate, name mismatch), connection refused and a response timeout.
// Each test runs the client's io_context on the test thread until the request completes.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "../common/temp_dir.h"
#include "api/http/http_client.h"
#include "test_receiver.h"

namespace hichat::api::webhooks::test {
namespace {

namespace asio = boost::asio;
using api::test_support::TempDir;

Result<int> post_and_wait(const HttpClientConfig& config, const std::string& url_text, const std::string& body = "{}") {
    asio::io_context io;
    auto client = HttpClient::create(io, config);
    if (!client.ok()) return client.status();
    auto url = parse_url(url_text);
    if (!url.ok()) return url.status();
    std::optional<Result<int>> result;
    const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    HttpPost post{.url = *url,
                  .headers = {{"webhook-id", "msg_1"},
                              {"webhook-timestamp", std::to_string(now)},
                              {"webhook-signature", test_signer().sign("msg_1", now, body)}},
                  .body = body};
    (*client)->post(std::move(post), [&](Result<int> r) { result = std::move(r); });
    io.run();  // returns when the request is done
    if (!result) return internal_error("no completion");
    return *result;
}

int accept_all(const ReceivedRequest&) { return 204; }

TEST(HttpClient, PostsOverPlainHttp) {
    auto receiver = TestReceiver::start([](const ReceivedRequest&) { return 202; }, test_signer());
    ASSERT_NE(receiver, nullptr);
    auto result = post_and_wait({}, receiver->url() + "?k=v", R"({"a":1})");
    ASSERT_TRUE(result.ok()) << result.status().message();
    EXPECT_EQ(*result, 202);
    auto requests = receiver->requests();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0].method, "POST");
    EXPECT_EQ(requests[0].target, "/hook?k=v");
    EXPECT_EQ(requests[0].content_type, "application/json");
    EXPECT_EQ(requests[0].body, R"({"a":1})");
    EXPECT_TRUE(requests[0].signature_ok);
}

TEST(HttpClient, HttpsVerifiesAgainstTheCaFileByIpAndByName) {
    TempDir dir;
    TestCertificate cert = make_test_certificate("DNS:localhost,IP:127.0.0.1");
    auto receiver = TestReceiver::start(accept_all, test_signer(), 0, cert);
    ASSERT_NE(receiver, nullptr);
    HttpClientConfig config;
    config.ca_file = dir.write("ca.pem", cert.cert_pem);

    auto by_ip = post_and_wait(config, receiver->url("127.0.0.1"));
    ASSERT_TRUE(by_ip.ok()) << by_ip.status().message();
    EXPECT_EQ(*by_ip, 204);
    auto by_name = post_and_wait(config, receiver->url("localhost"));
    ASSERT_TRUE(by_name.ok()) << by_name.status().message();
    EXPECT_EQ(*by_name, 204);

    auto requests = receiver->requests();
    ASSERT_EQ(requests.size(), 2u);
    EXPECT_EQ(requests[0].sni, "");  // no SNI for an IP address
    EXPECT_EQ(requests[1].sni, "localhost");
}

TEST(HttpClient, HttpsRefusesAnUntrustedCertificate) {
    TestCertificate cert = make_test_certificate("DNS:localhost,IP:127.0.0.1");
    auto receiver = TestReceiver::start(accept_all, test_signer(), 0, cert);
    ASSERT_NE(receiver, nullptr);
    auto result = post_and_wait({}, receiver->url());  // the system store does not hold it
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.status().message().find("TLS handshake"), std::string::npos) << result.status().message();
    EXPECT_NE(result.status().message().find("certificate"), std::string::npos) << result.status().message();
    EXPECT_TRUE(receiver->requests().empty());
}

TEST(HttpClient, HttpsRefusesACertificateForAnotherHost) {
    TempDir dir;
    TestCertificate cert = make_test_certificate("DNS:other.example");
    auto receiver = TestReceiver::start(accept_all, test_signer(), 0, cert);
    ASSERT_NE(receiver, nullptr);
    HttpClientConfig config;
    config.ca_file = dir.write("ca.pem", cert.cert_pem);
    for (const char* host : {"127.0.0.1", "localhost"}) {
        auto result = post_and_wait(config, receiver->url(host));
        ASSERT_FALSE(result.ok()) << host;
        EXPECT_NE(result.status().message().find("mismatch"), std::string::npos) << result.status().message();
    }
    EXPECT_TRUE(receiver->requests().empty());
}

TEST(HttpClient, ReportsConnectionRefused) {
    auto result = post_and_wait({}, "http://127.0.0.1:" + std::to_string(unused_port()) + "/hook");
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.status().message().find("connect"), std::string::npos) << result.status().message();
    EXPECT_NE(result.status().message().find("http://127.0.0.1:"), std::string::npos);
}

TEST(HttpClient, TimesOutWhenNoResponseComes) {
    // Listening but never accepting: the kernel completes the connection and takes the request,
    // and no answer ever comes.
    asio::io_context io;
    asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});
    HttpClientConfig config;
    config.response_timeout_ms = 200;
    auto result = post_and_wait(config, "http://127.0.0.1:" + std::to_string(silent.local_endpoint().port()) + "/");
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.status().message().find("timed out after 200 ms"), std::string::npos) << result.status().message();
}

TEST(HttpClient, RefusesABadConfig) {
    asio::io_context io;
    HttpClientConfig config;
    config.connect_timeout_ms = 0;
    EXPECT_NE(HttpClient::create(io, config).status().message().find("connect_timeout_ms"), std::string::npos);
    config = {};
    config.ca_file = "/nonexistent/ca.pem";
    EXPECT_NE(HttpClient::create(io, config).status().message().find("/nonexistent/ca.pem"), std::string::npos);
}

}  // namespace
}  // namespace hichat::api::webhooks::test
