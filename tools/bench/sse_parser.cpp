#include "bench/sse_parser.h"

namespace hichat::tools::bench {

void SseParser::feed(std::string_view bytes, std::vector<std::string>& events) {
    for_each_event(bytes, [&events](std::string_view data) { events.emplace_back(data); });
}

bool SseParser::finish_line(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
        if (has_data_) return true;
        data_.clear();
        return false;
    }
    if (line.substr(0, 5) == "data:") {
        std::string_view value = line.substr(5);
        if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        if (has_data_) data_.push_back('\n');
        data_.append(value);
        has_data_ = true;
    }
    // Anything else: a comment (": ...") or a field we do not use (event, id, retry).
    return false;
}

}  // namespace hichat::tools::bench
