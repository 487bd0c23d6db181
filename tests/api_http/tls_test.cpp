// HTTPS: a self-signed certificate made by the openssl CLI in a temp dir; curl is the client.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "server_fixture.h"
#include "test_client.h"

namespace hichat::api::test {
namespace {

namespace fs = std::filesystem;

class TlsTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        char pattern[] = "/tmp/hichat_tls_XXXXXX";
        ASSERT_NE(mkdtemp(pattern), nullptr);
        dir_ = pattern;
        for (const char* name : {"server", "other"}) {
            std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
                              " -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
                              dir_ + "/" + name + "_key.pem -out " + dir_ + "/" + name + "_cert.pem 2>&1";
            auto result = run_command(cmd);
            ASSERT_EQ(result.exit_code, 0) << result.output;
        }
        std::ofstream(dir_ + "/garbage.pem") << "this is not PEM\n";
    }
    static void TearDownTestSuite() { fs::remove_all(dir_); }

    static std::string path(const std::string& name) { return dir_ + "/" + name; }

    static HttpServerConfig tls_config() {
        HttpServerConfig config = short_timeout_config();
        config.tls_cert_file = path("server_cert.pem");
        config.tls_key_file = path("server_key.pem");
        return config;
    }

    static Router router() {
        Router router;
        router.add("GET", "/hello", [](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
            w->send(200, "text/plain", "hello " + req.remote.substr(req.remote.rfind(':') + 1) + "\n");
        });
        router.add("POST", "/echo", [](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
            w->send(200, "text/plain", req.body);
        });
        router.add("GET", "/stream", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
            // Written from another thread, as the engine would.
            std::thread([w] {
                w->start_stream(200);
                for (int i = 0; i < 3; ++i) w->write("data: " + std::to_string(i) + "\n\n");
                w->finish();
            }).detach();
        });
        return router;
    }

    std::string curl(const std::string& args) {
        return "curl -sS --max-time 10 --cacert " + path("server_cert.pem") + " " + args + " 2>&1";
    }
    std::string url(const HttpServer& server, const std::string& route) {
        return "https://127.0.0.1:" + std::to_string(server.port()) + route;
    }

    static inline std::string dir_;
};

TEST_F(TlsTest, HttpsGetPostStreamAndKeepAlive) {
    auto server = start_or_fail(tls_config(), router());
    ASSERT_NE(server, nullptr);
    auto get = run_command(curl(url(*server, "/hello")));
    EXPECT_EQ(get.exit_code, 0) << get.output;
    EXPECT_EQ(get.output.rfind("hello ", 0), 0u) << get.output;

    auto post = run_command(curl("--data-binary secret " + url(*server, "/echo")));
    EXPECT_EQ(post.exit_code, 0) << post.output;
    EXPECT_EQ(post.output, "secret");

    auto stream = run_command(curl("-N " + url(*server, "/stream")));
    EXPECT_EQ(stream.exit_code, 0) << stream.output;
    EXPECT_EQ(stream.output, "data: 0\n\ndata: 1\n\ndata: 2\n\n");

    // Two URLs in one curl run share the TLS connection: the handler sees the same client port.
    auto twice = run_command(curl(url(*server, "/hello") + " " + url(*server, "/hello")));
    EXPECT_EQ(twice.exit_code, 0) << twice.output;
    size_t newline = twice.output.find('\n');
    ASSERT_NE(newline, std::string::npos);
    EXPECT_EQ(twice.output.substr(0, newline + 1), twice.output.substr(newline + 1));
}

TEST_F(TlsTest, PlainHttpAndSilentClientsAreRejected) {
    HttpServerConfig config = tls_config();
    config.header_timeout_ms = 300;
    auto server = start_or_fail(config, router());
    ASSERT_NE(server, nullptr);
    auto plain = run_command("curl -sS --max-time 5 http://127.0.0.1:" + std::to_string(server->port()) +
                             "/hello 2>&1");
    EXPECT_NE(plain.exit_code, 0);
    EXPECT_EQ(plain.output.find("hello"), std::string::npos);

    auto silent = RawClient::connect(server->port());  // never starts the handshake
    ASSERT_NE(silent, nullptr);
    EXPECT_TRUE(silent->wait_closed(3000));
}

TEST_F(TlsTest, BadFilesAreErrorsNamingTheFile) {
    HttpServerConfig config = tls_config();
    config.tls_cert_file = path("missing_cert.pem");
    auto missing = HttpServer::start(config, router());
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.status().message().find(path("missing_cert.pem")), std::string::npos)
        << missing.status().message();

    config = tls_config();
    config.tls_cert_file = path("garbage.pem");
    auto bad_cert = HttpServer::start(config, router());
    ASSERT_FALSE(bad_cert.ok());
    EXPECT_NE(bad_cert.status().message().find(path("garbage.pem")), std::string::npos)
        << bad_cert.status().message();

    config = tls_config();
    config.tls_key_file = path("garbage.pem");
    auto bad_key = HttpServer::start(config, router());
    ASSERT_FALSE(bad_key.ok());
    EXPECT_NE(bad_key.status().message().find("tls_key_file '" + path("garbage.pem")), std::string::npos)
        << bad_key.status().message();

    config = tls_config();
    config.tls_key_file = path("other_key.pem");
    auto mismatched = HttpServer::start(config, router());
    ASSERT_FALSE(mismatched.ok());
    EXPECT_NE(mismatched.status().message().find(path("other_key.pem")), std::string::npos)
        << mismatched.status().message();
}

}  // namespace
}  // namespace hichat::api::test
