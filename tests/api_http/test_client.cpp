#include "test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

namespace hichat::api::test {
namespace {

namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

// Not boost::none: Beast 1.74 compares Content-Length against an empty optional as "exceeded".
constexpr uint64_t kMaxBodyBytes = uint64_t{1} << 32;

int remaining_ms(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left < 0 ? 0 : static_cast<int>(left);
}

ClientResponse to_client_response(http::response_parser<http::string_body>& parser) {
    auto& message = parser.get();
    ClientResponse response;
    response.status = static_cast<int>(message.result_int());
    for (const auto& field : message) {
        response.headers.add(std::string(field.name_string()), std::string(field.value()));
    }
    response.body = message.body();
    response.keep_alive = message.keep_alive();
    response.chunked = parser.chunked();
    return response;
}

}  // namespace

std::optional<ClientResponse> parse_response(std::string_view bytes, bool head_request) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxBodyBytes);
    parser.eager(true);
    parser.skip(head_request);
    boost::system::error_code ec;
    parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
    if (!parser.is_done() && !ec) parser.put_eof(ec);
    if (ec || !parser.is_done()) return std::nullopt;
    return to_client_response(parser);
}

std::unique_ptr<RawClient> RawClient::connect(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return nullptr;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
        ::close(fd);
        return nullptr;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return std::unique_ptr<RawClient>(new RawClient(fd));
}

RawClient::~RawClient() { close(); }

void RawClient::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

bool RawClient::send_all(std::string_view bytes, int timeout_ms) {
    Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!bytes.empty()) {
        pollfd p{fd_, POLLOUT, 0};
        if (::poll(&p, 1, remaining_ms(deadline)) <= 0) return false;
        ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
}

long RawClient::receive_some(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, timeout_ms);
    if (ready == 0) return -1;
    if (ready < 0) return 0;
    char buffer[65536];
    ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
    if (n <= 0) return 0;
    pending_.append(buffer, static_cast<size_t>(n));
    return n;
}

std::optional<ClientResponse> RawClient::read_response(int timeout_ms, bool head_request) {
    Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxBodyBytes);
    parser.eager(true);
    parser.skip(head_request);
    for (;;) {
        boost::system::error_code ec;
        if (!pending_.empty()) {
            size_t used = parser.put(boost::asio::buffer(pending_), ec);
            pending_.erase(0, used);
            if (parser.is_done()) return to_client_response(parser);
            if (ec && ec != http::error::need_more) return std::nullopt;
            if (!ec && used > 0) continue;
        }
        long n = receive_some(remaining_ms(deadline));
        if (n < 0) return std::nullopt;  // timeout
        if (n == 0) {                    // EOF: ends a close-delimited body
            parser.put_eof(ec);
            if (ec || !parser.is_done()) return std::nullopt;
            return to_client_response(parser);
        }
    }
}

bool RawClient::read_until(std::string_view needle, int timeout_ms) {
    Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (pending_.find(needle) == std::string::npos) {
        if (receive_some(remaining_ms(deadline)) <= 0) return false;
    }
    return true;
}

bool RawClient::wait_closed(int timeout_ms) {
    Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        long n = receive_some(remaining_ms(deadline));
        if (n == 0) return true;
        if (n < 0) return false;
    }
}

CommandResult run_command(const std::string& command) {
    CommandResult result;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return result;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
    int status = ::pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

int count_process_threads() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
    }
    return -1;
}

}  // namespace hichat::api::test
