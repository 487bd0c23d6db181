#include "api/http/wire_format.h"

#include <cstdio>

#include "base/check.h"

namespace hichat::api {

std::string_view reason_phrase(int status) {
    switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 201: return "Created";
        case 202: return "Accepted";
        case 204: return "No Content";
        case 206: return "Partial Content";
        case 301: return "Moved Permanently";
        case 302: return "Found";
        case 304: return "Not Modified";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 409: return "Conflict";
        case 413: return "Content Too Large";
        case 415: return "Unsupported Media Type";
        case 422: return "Unprocessable Content";
        case 429: return "Too Many Requests";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        default: return "Unknown";
    }
}

std::string format_response_head(const ResponseHead& head) {
    std::string out;
    out.reserve(256);
    out += "HTTP/1.1 ";
    out += std::to_string(head.status);
    out += ' ';
    out += reason_phrase(head.status);
    out += "\r\n";
    auto add = [&out](std::string_view name, std::string_view value) {
        out.append(name).append(": ").append(value).append("\r\n");
    };
    if (!head.content_type.empty()) add("Content-Type", head.content_type);
    // RFC 9110 8.6: no Content-Length on 204 and 304 (they never have a body).
    if (head.content_length && head.status != 204 && head.status != 304) {
        add("Content-Length", std::to_string(*head.content_length));
    }
    if (head.chunked) add("Transfer-Encoding", "chunked");
    add("Connection", head.keep_alive ? "keep-alive" : "close");
    if (head.extra) {
        for (const auto& [name, value] : *head.extra) add(name, value);
    }
    out += "\r\n";
    return out;
}

std::string chunk_size_line(size_t size) {
    CHECK(size > 0) << "an empty chunk would end the stream";
    char line[2 * sizeof(size_t) + 2];  // hex digits, filled from the end, then CRLF
    char* end = line + sizeof(line);
    char* p = end - 2;
    p[0] = '\r';
    p[1] = '\n';
    for (; size > 0; size >>= 4) *--p = "0123456789abcdef"[size & 15];
    return std::string(p, end);
}

std::string format_chunk(std::string_view data) {
    std::string out = chunk_size_line(data.size());
    out.reserve(out.size() + data.size() + 2);
    out.append(data).append("\r\n");
    return out;
}

}  // namespace hichat::api
