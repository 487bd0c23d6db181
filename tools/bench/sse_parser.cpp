#include "bench/sse_parser.h"

namespace hichat::tools::bench {

void SseParser::feed(std::string_view bytes, std::vector<std::string>& events) {
    while (!bytes.empty()) {
        const size_t end = bytes.find('\n');
        if (end == std::string_view::npos) {
            line_.append(bytes);
            return;
        }
        line_.append(bytes.substr(0, end));
        bytes.remove_prefix(end + 1);
        finish_line(events);
    }
}

void SseParser::finish_line(std::vector<std::string>& events) {
    std::string_view line = line_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
        if (has_data_) events.push_back(std::move(data_));
        data_.clear();
        has_data_ = false;
    } else if (line.substr(0, 5) == "data:") {
        std::string_view value = line.substr(5);
        if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        if (has_data_) data_.push_back('\n');
        data_.append(value);
        has_data_ = true;
    }
    // Anything else: a comment (": ...") or a field we do not use (event, id, retry).
    line_.clear();
}

}  // namespace hichat::tools::bench
