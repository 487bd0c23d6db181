#include "bench/response_head.h"

#include <cctype>
#include <string>

namespace hichat::tools::bench {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(a[i])) !=
            std::tolower(static_cast<unsigned char>(b[i]))) {
            return false;
        }
    }
    return true;
}

bool iends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && iequals(s.substr(s.size() - suffix.size()), suffix);
}

// "HTTP/1.1 200 OK" -> status 200; HTTP/1.0 defaults to closing the connection.
Status parse_status_line(std::string_view line, ResponseHead& head) {
    const bool valid = line.size() >= 12 && line.substr(0, 7) == "HTTP/1." && line[8] == ' ' &&
                       std::isdigit(static_cast<unsigned char>(line[9])) &&
                       std::isdigit(static_cast<unsigned char>(line[10])) &&
                       std::isdigit(static_cast<unsigned char>(line[11])) &&
                       (line.size() == 12 || line[12] == ' ');
    if (!valid)
        return invalid_argument("HTTP response: bad status line '" + std::string(line.substr(0, 80)) + "'");
    head.status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    head.keep_alive = line[7] != '0';
    return ok_status();
}

Status parse_header(std::string_view name, std::string_view value, ResponseHead& head) {
    if (iequals(name, "Content-Length")) {
        if (value.empty() || value.size() > 15) return invalid_argument("HTTP response: bad Content-Length");
        size_t n = 0;
        for (char c : value) {
            if (!std::isdigit(static_cast<unsigned char>(c)))
                return invalid_argument("HTTP response: bad Content-Length");
            n = n * 10 + static_cast<size_t>(c - '0');
        }
        head.content_length = n;
    } else if (iequals(name, "Transfer-Encoding")) {
        head.chunked = iends_with(value, "chunked");
    } else if (iequals(name, "Connection")) {
        if (iequals(value, "close")) head.keep_alive = false;
        if (iequals(value, "keep-alive")) head.keep_alive = true;
    }
    return ok_status();
}

}  // namespace

Result<ResponseHead> parse_response_head(std::string_view text) {
    ResponseHead head;
    bool first = true;
    while (!text.empty()) {
        const size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (first) {
            HICHAT_RETURN_IF_ERROR(parse_status_line(line, head));
            first = false;
            continue;
        }
        if (line.empty()) break;
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0) {
            return invalid_argument("HTTP response: header line without a name: '" +
                                    std::string(line.substr(0, 80)) + "'");
        }
        HICHAT_RETURN_IF_ERROR(parse_header(trim(line.substr(0, colon)), trim(line.substr(colon + 1)), head));
    }
    if (first) return invalid_argument("HTTP response: empty head");
    // A chunked body ignores any Content-Length (RFC 9112 §6.3).
    if (head.chunked) head.content_length.reset();
    return head;
}

}  // namespace hichat::tools::bench
