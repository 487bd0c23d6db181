#include "grammar/json_values.h"

#include <algorithm>
#include <map>
#include <vector>

#include "grammar/char_regex.h"

namespace hichat::grammar {
namespace {

std::string group(const std::string& x) { return "(?:" + x + ")"; }

std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : "|") + group(p);
    return out;
}

// Digit strings of one length between a and b (a <= b).
std::string range_same_length(const std::string& a, const std::string& b) {
    if (a == b) return a;
    const size_t n = a.size();
    if (n == 1) return std::string("[") + a[0] + "-" + b[0] + "]";
    if (a[0] == b[0]) return a.substr(0, 1) + group(range_same_length(a.substr(1), b.substr(1)));
    std::vector<std::string> parts;
    parts.push_back(a.substr(0, 1) + group(range_same_length(a.substr(1), std::string(n - 1, '9'))));
    if (a[0] + 1 <= b[0] - 1) {
        parts.push_back(std::string("[") + static_cast<char>(a[0] + 1) + "-" + static_cast<char>(b[0] - 1) + "][0-9]{" +
                        std::to_string(n - 1) + "}");
    }
    parts.push_back(b.substr(0, 1) + group(range_same_length(std::string(n - 1, '0'), b.substr(1))));
    return join(parts);
}

// Non-negative integers in [lo, hi] (hi absent: unbounded); "" if empty.
std::string nonneg_range(uint64_t lo, std::optional<uint64_t> hi) {
    if (hi && *hi < lo) return "";
    const std::string los = std::to_string(lo);
    const size_t len_lo = los.size();
    const size_t len_hi = hi ? std::to_string(*hi).size() : len_lo;
    std::vector<std::string> parts;
    for (size_t len = len_lo; len <= len_hi; ++len) {
        const std::string a = len == len_lo ? los : "1" + std::string(len - 1, '0');
        const std::string b = hi && len == len_hi ? std::to_string(*hi) : std::string(len, '9');
        parts.push_back(range_same_length(a, b));
    }
    if (!hi) parts.push_back("[1-9][0-9]{" + std::to_string(len_lo) + ",}");
    return join(parts);
}

const char* kFracAny = "(?:\\.[0-9]+)?";
const char* kFracZero = "(?:\\.0+)?";
const char* kFracNonzero = "\\.[0-9]*[1-9][0-9]*";

// Non-negative reals I.F with L <(=) x <(=) H, L >= 0.
std::string nonneg_real(uint64_t L, bool l_excl, std::optional<uint64_t> H, bool h_excl) {
    std::vector<std::string> parts;
    if (H && *H == L) {
        if (!l_excl && !h_excl) parts.push_back(std::to_string(L) + kFracZero);
        return join(parts);
    }
    if (H && *H < L) return "";
    parts.push_back(std::to_string(L) + (l_excl ? kFracNonzero : kFracAny));
    const std::optional<uint64_t> inner_hi = H ? std::optional<uint64_t>(*H - 1) : std::nullopt;
    const std::string inner = nonneg_range(L + 1, inner_hi);
    if (!inner.empty()) parts.push_back(group(inner) + kFracAny);
    if (H && !h_excl) parts.push_back(std::to_string(*H) + kFracZero);
    return join(parts);
}

}  // namespace

Regex json_string_char() {
    static const Regex kChar = [] {
        ByteSet hex;
        hex.add_range('0', '9');
        hex.add_range('a', 'f');
        hex.add_range('A', 'F');
        const Regex h = re_byte_set(hex);
        return re_alt({to_json_string_regex(cre_set({{0, 0x10FFFF}})), re_literal("\\/"),
                       re_concat({re_literal("\\u"), h, h, h, h})});
    }();
    return kChar;
}

std::optional<std::string> format_pattern(std::string_view format) {
    static const std::string date =
        "[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|"
        "02-(?:0[1-9]|1[0-9]|2[0-9]))";
    static const std::string time =
        "(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
    static const std::string label = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
    static const std::string hostname = label + "(?:\\." + label + ")*";
    static const std::string octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
    static const std::string ipv4 = "(?:" + octet + "\\.){3}" + octet;
    static const std::string h16 = "[0-9A-Fa-f]{1,4}";
    static const std::string ls32 = "(?:" + h16 + ":" + h16 + "|" + ipv4 + ")";
    static const std::string ipv6 = [] {
        std::vector<std::string> alts = {"(?:" + h16 + ":){6}" + ls32, "::(?:" + h16 + ":){5}" + ls32,
                                         "(?:" + h16 + ")?::(?:" + h16 + ":){4}" + ls32};
        const char* tails[] = {"(?:H:){3}L", "(?:H:){2}L", "H:L", "L", "H", ""};
        for (int k = 1; k <= 6; ++k) {
            std::string tail = tails[k - 1];
            std::string t;
            for (char c : tail) t += c == 'H' ? h16 : c == 'L' ? ls32 : std::string(1, c);
            alts.push_back("(?:(?:" + h16 + ":){0," + std::to_string(k) + "}" + h16 + ")?::" + t);
        }
        std::string out;
        for (const auto& a : alts) out += (out.empty() ? "" : "|") + ("(?:" + a + ")");
        return out;
    }();
    static const std::string atom = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
    static const std::map<std::string, std::string, std::less<>> kFormats = {
        {"date", date},
        {"time", time},
        {"date-time", date + "[Tt]" + time},
        {"uuid", "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"},
        {"email", atom + "(?:\\." + atom + ")*@" + hostname},
        {"hostname", hostname},
        {"ipv4", ipv4},
        {"ipv6", ipv6},
        {"uri", "[A-Za-z][A-Za-z0-9+.-]*:[^\\s<>\"{}|\\\\^`]*"},
    };
    auto it = kFormats.find(format);
    if (it == kFormats.end()) return std::nullopt;
    return it->second;
}

std::string integer_range_pattern(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    std::vector<std::string> parts;
    if (!lo || *lo < 0) {
        const uint64_t mag_lo = hi && *hi < 0 ? static_cast<uint64_t>(-*hi) : 1;
        const std::optional<uint64_t> mag_hi = lo ? std::optional<uint64_t>(static_cast<uint64_t>(-*lo)) : std::nullopt;
        const std::string neg = nonneg_range(mag_lo, mag_hi);
        if (!neg.empty()) parts.push_back("-" + group(neg));
    }
    if (!hi || *hi >= 0) {
        const uint64_t a = lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0;
        const std::string pos = nonneg_range(a, hi ? std::optional<uint64_t>(static_cast<uint64_t>(*hi)) : std::nullopt);
        if (!pos.empty()) parts.push_back(pos);
    }
    return join(parts);
}

std::string number_range_pattern(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
    std::vector<std::string> parts;
    // Negative numbers: magnitude m in (max(0, -hi), -lo].
    if (!lo || lo->value < 0) {
        const bool hi_neg = hi && hi->value < 0;
        const uint64_t L = hi_neg ? static_cast<uint64_t>(-hi->value) : 0;
        const bool l_excl = hi_neg ? hi->exclusive : true;
        const std::optional<uint64_t> H = lo ? std::optional<uint64_t>(static_cast<uint64_t>(-lo->value)) : std::nullopt;
        const std::string neg = nonneg_real(L, l_excl, H, lo ? lo->exclusive : false);
        if (!neg.empty()) parts.push_back("-" + group(neg));
    }
    if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive)) {
        const uint64_t L = lo && lo->value > 0 ? static_cast<uint64_t>(lo->value) : 0;
        const bool l_excl = lo && lo->value >= 0 ? lo->exclusive : false;
        const std::optional<uint64_t> H = hi ? std::optional<uint64_t>(static_cast<uint64_t>(hi->value)) : std::nullopt;
        const std::string pos = nonneg_real(L, l_excl, H, hi ? hi->exclusive : false);
        if (!pos.empty()) parts.push_back(pos);
    }
    return join(parts);
}

}  // namespace hichat::grammar
