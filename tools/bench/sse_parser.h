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

    // Bytes held back: an unfinished line or event.
    size_t num_bytes_pending() const { return line_.size() + data_.size(); }

private:
    void finish_line(std::vector<std::string>& events);

    std::string line_;  // the current line so far, without its line end
    std::string data_;  // data of the current event so far
    bool has_data_ = false;
};

}  // namespace hichat::tools::bench
