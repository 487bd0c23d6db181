// Test helpers: a blocking HTTP/1.1 client over a raw socket with deadlines (responses parsed by
// Boost.Beast's parser, the reference), and a shell-command runner for curl / openssl.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "api/http/http_request.h"

namespace hichat::api::test {

struct ClientResponse {
    int status = 0;
    HttpHeaders headers;
    std::string body;
    bool keep_alive = false;  // as Beast reads the response (HTTP/1.1 without Connection: close)
    bool chunked = false;
};

// Parses exactly one response from `bytes` with Beast; nullopt if incomplete or malformed.
std::optional<ClientResponse> parse_response(std::string_view bytes, bool head_request = false);

class RawClient {
public:
    // nullptr if the connection is refused.
    static std::unique_ptr<RawClient> connect(int port);
    ~RawClient();

    bool send_all(std::string_view bytes, int timeout_ms = 5000);
    // Reads one full response; nullopt on timeout, EOF before the end, or a malformed response.
    std::optional<ClientResponse> read_response(int timeout_ms = 5000, bool head_request = false);
    // Receives until `needle` is among the bytes received and not yet consumed; returns whether it
    // appeared in time. The bytes stay available to read_response() / received().
    bool read_until(std::string_view needle, int timeout_ms);
    // True if the server closed (EOF or reset) within timeout_ms; bytes received meanwhile are kept.
    bool wait_closed(int timeout_ms);
    const std::string& received() const { return pending_; }
    void close();

private:
    explicit RawClient(int fd) : fd_(fd) {}
    // Appends what arrives within timeout_ms to pending_: >0 bytes, 0 on EOF/reset, -1 on timeout.
    long receive_some(int timeout_ms);

    int fd_ = -1;
    std::string pending_;  // received, not yet consumed
};

struct CommandResult {
    int exit_code = -1;
    std::string output;  // stdout
};
CommandResult run_command(const std::string& command);

int count_process_threads();  // from /proc/self/status

}  // namespace hichat::api::test
