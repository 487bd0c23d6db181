#include "tokenizer/utf8.h"

namespace hichat::tokenizer {
namespace {

// Allowed range of the second byte of a sequence starting with lead (Unicode table 3-7).
void second_byte_range(uint8_t lead, uint8_t& lo, uint8_t& hi) {
    lo = 0x80;
    hi = 0xBF;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
}

enum class SeqState { kValid, kInvalid, kIncomplete };

// Examines the sequence at bytes[pos]; sets len to the bytes it covers (for kInvalid: the maximal
// subpart to replace by one U+FFFD).
SeqState examine_sequence(std::string_view bytes, size_t pos, size_t& len) {
    const uint8_t lead = static_cast<uint8_t>(bytes[pos]);
    const int need = utf8_sequence_length(lead);
    len = 1;
    if (lead < 0x80) return SeqState::kValid;
    if (need == 1) return SeqState::kInvalid;
    uint8_t lo, hi;
    second_byte_range(lead, lo, hi);
    for (int i = 1; i < need; ++i) {
        if (pos + i >= bytes.size()) return SeqState::kIncomplete;
        const uint8_t b = static_cast<uint8_t>(bytes[pos + i]);
        if (b < lo || b > hi) return SeqState::kInvalid;
        len = i + 1;
        lo = 0x80;
        hi = 0xBF;
    }
    return SeqState::kValid;
}

}  // namespace

size_t append_lossy_utf8(std::string_view bytes, bool final, std::string& out) {
    size_t pos = 0;
    size_t run_begin = 0;  // start of the pending run of valid bytes, copied in one go
    while (pos < bytes.size()) {
        if (static_cast<uint8_t>(bytes[pos]) < 0x80) {
            ++pos;
            continue;
        }
        size_t len = 0;
        const SeqState state = examine_sequence(bytes, pos, len);
        if (state == SeqState::kValid) {
            pos += len;
            continue;
        }
        out.append(bytes.substr(run_begin, pos - run_begin));
        if (state == SeqState::kIncomplete && !final) return pos;
        if (state == SeqState::kIncomplete) len = bytes.size() - pos;
        out.append(kReplacementChar);
        pos += len;
        run_begin = pos;
    }
    out.append(bytes.substr(run_begin, pos - run_begin));
    return pos;
}

std::string to_valid_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    append_lossy_utf8(bytes, /*final=*/true, out);
    return out;
}

bool is_valid_utf8(std::string_view bytes) {
    size_t pos = 0;
    while (pos < bytes.size()) {
        size_t len = 0;
        if (examine_sequence(bytes, pos, len) != SeqState::kValid) return false;
        pos += len;
    }
    return true;
}

char32_t next_code_point(std::string_view text, size_t& pos) {
    const uint8_t lead = static_cast<uint8_t>(text[pos]);
    const int len = utf8_sequence_length(lead);
    if (len == 1 || pos + len > text.size()) {
        ++pos;
        return lead;
    }
    char32_t cp = lead & (0x7F >> len);
    for (int i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<uint8_t>(text[pos + i]) & 0x3F);
    pos += len;
    return cp;
}

void append_utf8(char32_t cp, std::string& out) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

}  // namespace hichat::tokenizer
