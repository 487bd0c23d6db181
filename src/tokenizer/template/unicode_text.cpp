#include "tokenizer/template/unicode_text.h"

namespace hichat::tokenizer::jinja {

uint32_t decode_utf8(std::string_view s, size_t* pos) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
    const size_t i = *pos;
    const uint8_t b0 = byte(i);
    int num_bytes = 0;
    uint32_t cp = 0;
    if (b0 < 0x80) {
        *pos = i + 1;
        return b0;
    } else if ((b0 & 0xE0) == 0xC0) {
        num_bytes = 2;
        cp = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
        num_bytes = 3;
        cp = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
        num_bytes = 4;
        cp = b0 & 0x07;
    }
    if (num_bytes == 0 || i + num_bytes > s.size()) {
        *pos = i + 1;
        return b0;
    }
    for (int k = 1; k < num_bytes; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) {
            *pos = i + 1;
            return b0;
        }
        cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    *pos = i + num_bytes;
    return cp;
}

void append_utf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

bool is_js_space(uint32_t cp) {
    if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    switch (cp) {
        case 0x00A0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
        case 0xFEFF:
            return true;
        default:
            return cp >= 0x2000 && cp <= 0x200A;
    }
}

size_t js_space_length(std::string_view s, size_t pos) {
    if (pos >= s.size()) return 0;
    size_t next = pos;
    const uint32_t cp = decode_utf8(s, &next);
    // A lone invalid byte decodes to its own value; only a real sequence counts as a code point.
    if (cp >= 0x80 && next - pos == 1) return 0;
    return is_js_space(cp) ? next - pos : 0;
}

std::string_view js_trim_start(std::string_view s) {
    size_t pos = 0;
    while (size_t n = js_space_length(s, pos)) pos += n;
    return s.substr(pos);
}

std::string_view js_trim_end(std::string_view s) {
    // Walk forward remembering where the trailing run of whitespace began.
    size_t pos = 0, end = 0;
    while (pos < s.size()) {
        if (size_t n = js_space_length(s, pos)) {
            pos += n;
        } else {
            decode_utf8(s, &pos);
            end = pos;
        }
    }
    return s.substr(0, end);
}

std::string_view js_trim(std::string_view s) { return js_trim_end(js_trim_start(s)); }

int64_t utf16_length(std::string_view s) {
    int64_t n = 0;
    for (size_t pos = 0; pos < s.size();) n += decode_utf8(s, &pos) > 0xFFFF ? 2 : 1;
    return n;
}

std::vector<std::string_view> split_code_points(std::string_view s) {
    std::vector<std::string_view> parts;
    for (size_t pos = 0; pos < s.size();) {
        const size_t begin = pos;
        decode_utf8(s, &pos);
        parts.push_back(s.substr(begin, pos - begin));
    }
    return parts;
}

std::string ascii_upper(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    return out;
}

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

bool is_word_byte(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace hichat::tokenizer::jinja
