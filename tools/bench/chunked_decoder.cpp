#include "bench/chunked_decoder.h"

#include <algorithm>

namespace hichat::tools::bench {
namespace {

constexpr size_t kMaxLineBytes = 4096;
constexpr size_t kMaxChunkBytes = size_t{1} << 30;

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

Status ChunkedDecoder::finish_size_line() {
    std::string_view line = line_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = line.substr(0, line.find(';'));  // drop chunk extensions
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line.empty()) return invalid_argument("chunked body: empty chunk-size line");
    size_t size = 0;
    for (char c : line) {
        const int d = hex_digit(c);
        if (d < 0) return invalid_argument("chunked body: chunk size '" + std::string(line) + "' is not hex");
        size = size * 16 + static_cast<size_t>(d);
        if (size > kMaxChunkBytes) return invalid_argument("chunked body: chunk size over 1 GiB");
    }
    line_.clear();
    num_bytes_left_ = size;
    state_ = size == 0 ? State::kTrailer : State::kData;
    return ok_status();
}

Result<size_t> ChunkedDecoder::feed(std::string_view wire, std::string& body) {
    size_t i = 0;
    while (i < wire.size() && state_ != State::kDone) {
        switch (state_) {
            case State::kSizeLine:
            case State::kTrailer: {
                const size_t newline = wire.find('\n', i);
                const size_t end = newline == std::string_view::npos ? wire.size() : newline;
                if (line_.size() + (end - i) > kMaxLineBytes)
                    return invalid_argument("chunked body: line over 4 KiB");
                line_.append(wire.substr(i, end - i));
                i = end;
                if (newline == std::string_view::npos) break;
                ++i;  // the line is complete
                if (state_ == State::kSizeLine) {
                    HICHAT_RETURN_IF_ERROR(finish_size_line());
                } else {
                    // A trailer line was read; an empty one ends the body.
                    const bool empty = line_.empty() || line_ == "\r";
                    line_.clear();
                    if (empty) state_ = State::kDone;
                }
                break;
            }
            case State::kData: {
                const size_t n = std::min(num_bytes_left_, wire.size() - i);
                body.append(wire.substr(i, n));
                i += n;
                num_bytes_left_ -= n;
                if (num_bytes_left_ == 0) {
                    state_ = State::kDataEnd;
                    num_bytes_left_ = 2;
                }
                break;
            }
            case State::kDataEnd: {
                const char expected = num_bytes_left_ == 2 ? '\r' : '\n';
                if (wire[i] != expected)
                    return invalid_argument("chunked body: chunk data not followed by CRLF");
                ++i;
                if (--num_bytes_left_ == 0) state_ = State::kSizeLine;
                break;
            }
            case State::kDone:
                break;
        }
    }
    return i;
}

}  // namespace hichat::tools::bench
