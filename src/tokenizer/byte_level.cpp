#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace hichat::tokenizer {
namespace {

bool maps_to_itself(int byte) {
    return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
}

struct Tables {
    std::array<std::string, 256> byte_to_text;  // [256]
    std::array<int, 512> code_point_to_byte;    // [512] -1 outside the alphabet
};

const Tables& tables() {
    static const Tables kTables = [] {
        Tables t;
        t.code_point_to_byte.fill(-1);
        int num_shifted = 0;
        for (int byte = 0; byte < 256; ++byte) {
            const char32_t cp = maps_to_itself(byte) ? byte : 256 + num_shifted++;
            append_utf8(cp, t.byte_to_text[byte]);
            t.code_point_to_byte[cp] = byte;
        }
        return t;
    }();
    return kTables;
}

}  // namespace

const std::array<std::string, 256>& byte_level_alphabet() { return tables().byte_to_text; }

bool byte_level_to_bytes(std::string_view text, std::string& bytes) {
    const Tables& t = tables();
    size_t pos = 0;
    while (pos < text.size()) {
        const char32_t cp = next_code_point(text, pos);
        if (cp >= t.code_point_to_byte.size() || t.code_point_to_byte[cp] < 0) return false;
        bytes.push_back(static_cast<char>(t.code_point_to_byte[cp]));
    }
    return true;
}

std::string bytes_to_byte_level(std::string_view bytes) {
    const Tables& t = tables();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) out += t.byte_to_text[static_cast<uint8_t>(c)];
    return out;
}

}  // namespace hichat::tokenizer
