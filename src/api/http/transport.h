// Transport: a plain TCP socket or TLS over one, behind a single stream type, so that the Beast and
// asio composed operations in connection.cpp are instantiated once for both (one Connection class,
// not a template per stream). Internal to api/http; used only on its connection's strand.
#pragma once

#include <optional>
#include <utility>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>

namespace hichat::api {

class Transport {
public:
    using Socket = boost::asio::ip::tcp::socket;
    using TlsStream = boost::asio::ssl::stream<Socket>;
    using executor_type = Socket::executor_type;

    // `tls` null: plain TCP. Otherwise the context must outlive the transport.
    Transport(Socket socket, boost::asio::ssl::context* tls) : plain_(std::move(socket)) {
        if (tls != nullptr) tls_.emplace(std::move(plain_), *tls);
    }

    executor_type get_executor() { return socket().get_executor(); }
    bool is_tls() const { return tls_.has_value(); }
    Socket& socket() { return tls_ ? tls_->next_layer() : plain_; }
    TlsStream& tls() { return *tls_; }

    // AsyncReadStream / AsyncWriteStream. Called with plain completion handlers only (the composed
    // operations in connection.cpp), so both branches return void.
    template <class MutableBuffers, class ReadHandler>
    void async_read_some(const MutableBuffers& buffers, ReadHandler&& handler) {
        if (tls_) {
            tls_->async_read_some(buffers, std::forward<ReadHandler>(handler));
        } else {
            plain_.async_read_some(buffers, std::forward<ReadHandler>(handler));
        }
    }
    template <class ConstBuffers, class WriteHandler>
    void async_write_some(const ConstBuffers& buffers, WriteHandler&& handler) {
        if (tls_) {
            tls_->async_write_some(buffers, std::forward<WriteHandler>(handler));
        } else {
            plain_.async_write_some(buffers, std::forward<WriteHandler>(handler));
        }
    }

private:
    Socket plain_;                   // moved into tls_ when TLS is on
    std::optional<TlsStream> tls_;
};

}  // namespace hichat::api
