#include "api/http/outbound_bytes.h"

#include <utility>

#include "api/http/wire_format.h"
#include "base/check.h"

namespace hichat::api {

void OutboundBytes::add_stream_data(std::string data) {
    if (stream_data_.empty()) {
        stream_data_ = std::move(data);
    } else {
        stream_data_ += data;
    }
}

void OutboundBytes::queue(std::string bytes) {
    frame_stream_data();  // bytes stay in order
    if (!bytes.empty()) push(std::move(bytes));
}

void OutboundBytes::push(std::string bytes) {
    num_bytes_queued_ += bytes.size();
    queued_.push_back(std::move(bytes));
}

void OutboundBytes::frame_stream_data() {
    if (stream_data_.empty()) return;
    if (chunked_) {  // size line, data, CRLF: three buffers of one write, the data not copied again
        push(chunk_size_line(stream_data_.size()));
        push(std::move(stream_data_));
        push("\r\n");
    } else {
        push(std::move(stream_data_));
    }
    stream_data_.clear();
}

const std::vector<boost::asio::const_buffer>& OutboundBytes::start_batch() {
    CHECK(!batch_in_progress()) << "OutboundBytes: a batch is already being written";
    frame_stream_data();
    for (std::string& bytes : queued_) writing_.push_back(std::move(bytes));
    queued_.clear();
    buffers_.clear();
    for (const std::string& bytes : writing_) buffers_.push_back(boost::asio::buffer(bytes));
    return buffers_;
}

bool OutboundBytes::consume(size_t num_bytes) {
    size_t i = 0;
    while (i < buffers_.size() && num_bytes >= buffers_[i].size()) num_bytes -= buffers_[i++].size();
    if (i == buffers_.size()) {
        end_batch();
        return true;
    }
    buffers_[i] += num_bytes;
    buffers_.erase(buffers_.begin(), buffers_.begin() + static_cast<std::ptrdiff_t>(i));
    return false;
}

void OutboundBytes::end_batch() {
    writing_.clear();
    buffers_.clear();
}

}  // namespace hichat::api
