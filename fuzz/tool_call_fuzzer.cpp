// Tool-call replies: arbitrary bytes as a model's reply -> ToolCallStream, and JSON text -> JsonScan.
// Invariants: the reply split in pieces (sizes drawn from the input) gives the same content and calls
// as the reply whole (arguments only ever after their call's start); a value JsonScan calls complete is
// one nlohmann parses, a text nlohmann parses as one value JsonScan calls complete at the same end, and
// a complete value's proper prefixes are never complete at the same end, and the text before the byte
// an invalid value fails at is an open (incomplete) value.
// Input: byte 0 picks the format and parallel_tool_calls, byte 1 seeds the piece sizes, the rest is the reply.
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/json_scan.h"
#include "api/tool_calls.h"
#include "fuzz_support.h"

using hichat::fuzz::require;
using namespace hichat::api;

namespace {

struct Joined {
    std::string content;
    std::vector<ToolCall> calls;
    bool operator==(const Joined& o) const {
        if (content != o.content || calls.size() != o.calls.size()) return false;
        for (size_t i = 0; i < calls.size(); ++i) {
            if (calls[i].id != o.calls[i].id || calls[i].name != o.calls[i].name ||
                calls[i].arguments != o.calls[i].arguments) {
                return false;
            }
        }
        return true;
    }
};

void take(std::vector<ReplyPart> parts, Joined& out) {
    for (ReplyPart& p : parts) {
        switch (p.kind) {
            case ReplyPart::Kind::kContent: out.content += p.text; break;
            case ReplyPart::Kind::kCallStart:
                require(p.call_index == static_cast<int>(out.calls.size()), "call starts out of order");
                out.calls.push_back({p.id, p.name, ""});
                break;
            case ReplyPart::Kind::kArguments:
                require(p.call_index + 1 == static_cast<int>(out.calls.size()), "arguments of a call not the last started");
                out.calls.back().arguments += p.text;
                break;
        }
    }
}

Joined split(ToolFormat format, bool parallel, const std::string& reply, uint32_t seed) {
    ToolCallStream s(format, {"get_weather", "f"}, parallel, 7);
    Joined out;
    size_t at = 0;
    while (at < reply.size()) {
        const size_t n = seed == 0 ? reply.size() : 1 + (seed >> 3) % 7;
        seed = seed * 1103515245u + 12345u;
        take(s.push(std::string_view(reply).substr(at, n)), out);
        at += n;
    }
    take(s.finish(), out);
    return out;
}

// nlohmann refuses invalid UTF-8, which JsonScan passes through (replies are valid UTF-8).
bool valid_utf8(const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k) {
            if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
        }
        uint32_t cp = n == 1 ? c : c & (0x7f >> n);
        for (size_t k = 1; k < n; ++k) cp = cp << 6 | (static_cast<unsigned char>(s[i + k]) & 0x3f);
        static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) return false;
        i += n;
    }
    return true;
}

// Whether `text` is JSON as nlohmann's acceptor sees it.
bool json_syntax(const std::string& text) { return nlohmann::json::accept(text); }

// nlohmann also refuses numbers beyond a double's range, which are valid JSON syntax (JsonScan takes
// them): texts with an exponent of 3 digits or more, or 300 digits in a row, are not compared.
bool may_overflow_a_double(const std::string& text) {
    size_t run = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        run = std::isdigit(static_cast<unsigned char>(text[i])) ? run + 1 : 0;
        if (run >= 300) return true;
        if (text[i] != 'e' && text[i] != 'E') continue;
        size_t j = i + 1;
        if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
        size_t digits = 0;
        while (j + digits < text.size() && std::isdigit(static_cast<unsigned char>(text[j + digits]))) ++digits;
        if (digits >= 3) return true;
    }
    return false;
}

void check_scan(const std::string& text) {
    // nlohmann also ends its input at a NUL byte, which JSON text never holds.
    if (!valid_utf8(text) || text.find('\0') != std::string::npos || may_overflow_a_double(text)) return;
    const size_t start = skip_json_space(text, 0);
    if (start >= text.size()) return;
    size_t end = 0;
    const JsonScan r = scan_json_value(text, start, end);
    if (r == JsonScan::kComplete) {
        require(json_syntax(text.substr(start, end - start)),
                "JsonScan: a complete value that nlohmann does not parse");
        if (end - start < 256) {
            for (size_t n = start + 1; n < end; ++n) {
                size_t e = 0;
                require(scan_json_value(std::string_view(text).substr(0, n), start, e) != JsonScan::kComplete || e < n,
                        "JsonScan: a proper prefix complete at its end");
            }
        }
    }
    if (r == JsonScan::kInvalid && end > start) {
        size_t e = 0;
        require(scan_json_value(std::string_view(text).substr(0, end), start, e) == JsonScan::kIncomplete,
                "JsonScan: the text before the first invalid byte is not an open value");
    }
    // nlohmann takes a lone value with whitespace around it; JsonScan must end the value where it ends.
    if (json_syntax(text)) {
        const std::string padded = text + " ";  // a number at the very end is open for JsonScan
        require(scan_json_value(padded, start, end) == JsonScan::kComplete, "JsonScan: a valid value not complete");
        require(skip_json_space(padded, end) == padded.size(), "JsonScan: a valid value ends early");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2 || size > 4096) return 0;
    static constexpr ToolFormat kFormats[] = {ToolFormat::kHermes, ToolFormat::kLlama3, ToolFormat::kMistral,
                                              ToolFormat::kNone};
    const ToolFormat format = kFormats[data[0] % 4];
    const std::string reply(reinterpret_cast<const char*>(data) + 2, size - 2);
    const bool parallel = (data[0] & 4) == 0;
    const Joined whole = split(format, parallel, reply, 0);
    const Joined pieces = split(format, parallel, reply, data[1] + 1u);
    require(whole == pieces, "ToolCallStream: the reply in pieces differs from the reply whole");
    check_scan(reply);
    return 0;
}
