#include "api/http/multipart_form.h"

#include "api/http/http_request.h"

namespace hichat::api {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// A header value's parameters ("form-data; name=\"a\"; filename=b"): the value of `key` (quoted
// strings unescaped), or nullopt when absent. The first item (the type itself) is not a parameter.
std::optional<std::string> header_parameter(std::string_view value, std::string_view key) {
    size_t at = value.find(';');
    while (at != std::string_view::npos) {
        std::string_view rest = trim(value.substr(at + 1));
        const size_t eq = rest.find('=');
        if (eq == std::string_view::npos) return std::nullopt;
        const std::string_view name = trim(rest.substr(0, eq));
        rest = trim(rest.substr(eq + 1));
        std::string parsed;
        size_t end = 0;
        if (!rest.empty() && rest.front() == '"') {
            for (end = 1; end < rest.size() && rest[end] != '"'; ++end) {
                if (rest[end] == '\\' && end + 1 < rest.size()) ++end;
                parsed += rest[end];
            }
            end = end < rest.size() ? end + 1 : end;
        } else {
            end = std::min(rest.find(';'), rest.size());
            parsed = std::string(trim(rest.substr(0, end)));
        }
        if (equals_ignore_case(name, key)) return parsed;
        at = rest.find(';', end);
        value = rest;
    }
    return std::nullopt;
}

// One part's header block (without the blank line) into `part`.
Status parse_part_headers(std::string_view headers, size_t index, MultipartPart& part) {
    bool has_disposition = false;
    while (!headers.empty()) {
        const size_t eol = headers.find("\r\n");
        const std::string_view line = headers.substr(0, eol);
        headers = eol == std::string_view::npos ? std::string_view() : headers.substr(eol + 2);
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos) {
            return invalid_argument("multipart part " + std::to_string(index) + ": header line without ':'");
        }
        const std::string_view name = trim(line.substr(0, colon));
        const std::string_view value = trim(line.substr(colon + 1));
        if (equals_ignore_case(name, "Content-Type")) part.content_type = std::string(value);
        if (!equals_ignore_case(name, "Content-Disposition")) continue;
        if (!equals_ignore_case(trim(value.substr(0, value.find(';'))), "form-data")) {
            return invalid_argument("multipart part " + std::to_string(index) + ": Content-Disposition is not form-data");
        }
        auto field = header_parameter(value, "name");
        if (!field) return invalid_argument("multipart part " + std::to_string(index) + ": Content-Disposition has no name");
        part.name = std::move(*field);
        part.filename = header_parameter(value, "filename");
        has_disposition = true;
    }
    if (!has_disposition) {
        return invalid_argument("multipart part " + std::to_string(index) + ": no Content-Disposition header");
    }
    return ok_status();
}

}  // namespace

std::optional<std::string> multipart_boundary(std::string_view content_type) {
    if (!equals_ignore_case(trim(content_type.substr(0, content_type.find(';'))), "multipart/form-data")) {
        return std::nullopt;
    }
    auto boundary = header_parameter(content_type, "boundary");
    if (!boundary || boundary->empty() || boundary->size() > 70) return std::nullopt;
    return boundary;
}

Result<std::vector<MultipartPart>> parse_multipart_form(std::string_view body, std::string_view boundary) {
    const std::string delimiter = "\r\n--" + std::string(boundary);
    // The first delimiter may open the body (no CRLF before it) or follow a preamble.
    const std::string_view opening = std::string_view(delimiter).substr(2);
    size_t at = 0;
    if (body.substr(0, opening.size()) == opening) {
        at = opening.size();
    } else {
        at = body.find(delimiter);
        if (at == std::string_view::npos) return invalid_argument("multipart body: the boundary does not occur");
        at += delimiter.size();
    }
    std::vector<MultipartPart> parts;
    while (true) {
        if (body.substr(at, 2) == "--") return parts;  // the closing delimiter
        while (at < body.size() && (body[at] == ' ' || body[at] == '\t')) ++at;
        if (body.substr(at, 2) != "\r\n") return invalid_argument("multipart body: no line break after a boundary");
        at += 2;
        // An empty header block: the part starts with its blank line.
        const size_t headers_end = body.substr(at, 2) == "\r\n" ? at : body.find("\r\n\r\n", at);
        if (headers_end == std::string_view::npos) {
            return invalid_argument("multipart part " + std::to_string(parts.size()) + ": headers never end");
        }
        MultipartPart part;
        HICHAT_RETURN_IF_ERROR(parse_part_headers(body.substr(at, headers_end - at), parts.size(), part));
        const size_t data_start = headers_end + (headers_end == at ? 2 : 4);
        const size_t data_end = body.find(delimiter, data_start);
        if (data_end == std::string_view::npos) {
            return invalid_argument("multipart part " + std::to_string(parts.size()) +
                                    ": the body ends before the closing boundary");
        }
        part.data = body.substr(data_start, data_end - data_start);
        parts.push_back(std::move(part));
        at = data_end + delimiter.size();
    }
}

const MultipartPart* find_part(const std::vector<MultipartPart>& parts, std::string_view name) {
    for (const MultipartPart& p : parts) {
        if (p.name == name) return &p;
    }
    return nullptr;
}

}  // namespace hichat::api
