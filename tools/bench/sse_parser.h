// SseParser: incremental parser of a text/event-stream body (the WHATWG "server-sent events" format as
// OpenAI-compatible servers use it). Yields the data of each event; comment lines (": ping") and
// fields other than `data` are skipped. Lines end with LF or CRLF. Single thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hichat::tools::bench {

class SseParser {
public:
    // Appends to `events` the data of every event completed by `bytes` (an event ends at an empty
    // line; several `data:` lines of one event are joined with '\n'). Events without data are dropped.
    void feed(std::string_view bytes, std::vector<std::string>& events);

    // The same events, handed to on_event(std::string_view data) as they complete; the view is valid
    // during the call only. Allocates nothing once the buffers have grown to the longest event.
    template <class OnEvent>
    void for_each_event(std::string_view bytes, OnEvent&& on_event);

    // Bytes held back: an unfinished line or event.
    size_t num_bytes_pending() const { return line_.size() + data_.size(); }

private:
    // Takes one complete line (without its LF); true if it ended an event with data (in data_).
    bool finish_line(std::string_view line);

    std::string line_;  // the current line so far, without its line end, while it spans feeds
    std::string data_;  // data of the current event so far
    bool has_data_ = false;
};

template <class OnEvent>
void SseParser::for_each_event(std::string_view bytes, OnEvent&& on_event) {
    while (!bytes.empty()) {
        const size_t end = bytes.find('\n');
        if (end == std::string_view::npos) {
            line_.append(bytes);
            return;
        }
        std::string_view line = bytes.substr(0, end);
        if (!line_.empty()) {  // the line began in an earlier feed
            line_.append(line);
            line = line_;
        }
        bytes.remove_prefix(end + 1);
        if (finish_line(line)) {
            on_event(std::string_view(data_));
            data_.clear();
            has_data_ = false;
        }
        line_.clear();
    }
}

}  // namespace hichat::tools::bench
