#include "api/text_input.h"

namespace hichat::api {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 if it is invalid (overlong, surrogate, > U+10FFFF,
// truncated or a stray continuation byte).
size_t valid_sequence_length(std::string_view s, size_t i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        len = 3;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        len = 4;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (i + len > s.size()) return 0;
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (b1 < lo || b1 > hi) return 0;
    for (size_t k = 2; k < len; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if (b < 0x80 || b > 0xBF) return 0;
    }
    return len;
}

}  // namespace

bool mark_invalid_utf8(std::string& body) {
    std::string out;
    bool replaced = false;
    size_t i = 0;
    while (i < body.size()) {
        size_t len = valid_sequence_length(body, i);
        if (len == 0) {
            if (!replaced) out.assign(body, 0, i);
            replaced = true;
            out += kInvalidUtf8Marker;
            ++i;
            continue;
        }
        if (replaced) out.append(body, i, len);
        i += len;
    }
    if (replaced) body = std::move(out);
    return replaced;
}

std::string strip_control_chars(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) continue;
        // C1 controls U+0080..U+009F are encoded C2 80 .. C2 9F.
        if (c == 0xC2 && i + 1 < text.size()) {
            const auto n = static_cast<unsigned char>(text[i + 1]);
            if (n >= 0x80 && n <= 0x9F) {
                ++i;
                continue;
            }
        }
        out += static_cast<char>(c);
    }
    return out;
}

}  // namespace hichat::api
