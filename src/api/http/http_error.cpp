#include "api/http/http_error.h"

#include <cstdint>
#include <cstdio>

#include "api/http/response_writer.h"

namespace hichat::api {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not valid.
size_t utf8_sequence_length(std::string_view s, size_t i) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = byte(i);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) return 0;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    static constexpr uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

}  // namespace

std::string json_quote(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    append_json_quoted(out, s);
    return out;
}

void append_json_quoted(std::string& out, std::string_view s) {
    out += '"';
    for (size_t i = 0; i < s.size();) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        size_t len = utf8_sequence_length(s, i);
        if (len == 0) {
            out += "\\ufffd";
            ++i;
            continue;
        }
        if (len > 1) {
            out.append(s.substr(i, len));
        } else if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
        i += len;
    }
    out += '"';
}

std::string error_json(std::string_view message, std::string_view type, std::string_view code) {
    std::string out = "{\"error\":{\"message\":";
    out += json_quote(message);
    out += ",\"type\":";
    out += json_quote(type);
    out += ",\"param\":null,\"code\":";
    out += code.empty() ? std::string("null") : json_quote(code);
    out += "}}";
    return out;
}

void send_error(ResponseWriter& writer, int status, std::string_view message, std::string_view code) {
    std::string_view type = status >= 500 ? kServerError : kInvalidRequestError;
    writer.send(status, "application/json", error_json(message, type, code));
}

}  // namespace hichat::api
