// OutboundBytes: one connection's response bytes on their way to the socket, in order: ready-made
// pieces (a head, a body, the last chunk), streamed body data not yet framed as a chunk, and the
// batch now being written. Consecutive streamed pieces become one chunk, and everything queued
// meanwhile goes out in one gathered write. Internal to api/http; used on its connection's strand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <boost/asio/buffer.hpp>

namespace hichat::api {

class OutboundBytes {
public:
    // Streamed data is framed with chunked encoding (HTTP/1.1) or sent as is (HTTP/1.0).
    void set_chunked(bool chunked) { chunked_ = chunked; }
    // Body data of a streamed response; what arrives before the next queue() / start_batch() forms
    // one chunk. Empty data is ignored.
    void add_stream_data(std::string data);
    // Bytes sent exactly as given, after everything added before. Empty bytes are ignored.
    void queue(std::string bytes);
    bool has_queued() const { return !queued_.empty() || !stream_data_.empty(); }
    // Bytes queued so far (framing included; streamed data once framed), over the connection's life.
    uint64_t num_bytes_queued() const { return num_bytes_queued_; }

    // Moves everything queued into the batch and returns views of it. Requires !batch_in_progress().
    const std::vector<boost::asio::const_buffer>& start_batch();
    bool batch_in_progress() const { return !writing_.empty(); }
    // The socket took `num_bytes` more of the batch; true once all of it is written (the batch then
    // ends). batch() then views what is left.
    bool consume(size_t num_bytes);
    const std::vector<boost::asio::const_buffer>& batch() const { return buffers_; }
    void end_batch();

private:
    void frame_stream_data();
    void push(std::string bytes);

    bool chunked_ = false;
    uint64_t num_bytes_queued_ = 0;
    std::deque<std::string> queued_;                    // wire bytes waiting for the next batch
    std::string stream_data_;                           // not yet framed
    std::vector<std::string> writing_;                  // the batch being written
    std::vector<boost::asio::const_buffer> buffers_;    // [<= writing_.size()] unwritten parts of it
};

}  // namespace hichat::api
