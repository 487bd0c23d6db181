#include "engine/text_matcher.h"

#include <algorithm>
#include <utility>

namespace hichat::engine {
namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowered(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = lower(c);
    return out;
}

}  // namespace

TextMatcher::TextMatcher(std::vector<std::string> patterns, bool case_insensitive)
    : case_insensitive_(case_insensitive) {
    for (auto& p : patterns) {
        if (!p.empty()) patterns_.push_back(case_insensitive ? lowered(p) : std::move(p));
    }
}

std::string TextMatcher::push(std::string_view text, bool& matched) {
    matched = false;
    if (done_) return {};
    held_.append(text);
    if (patterns_.empty()) return std::exchange(held_, {});
    size_t pos = 0;
    if (find_earliest(pos) > 0) {
        matched = true;
        done_ = true;
        std::string out = held_.substr(0, pos);
        held_.clear();
        return out;
    }
    const size_t keep = longest_partial_suffix();
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
}

std::string TextMatcher::flush() {
    if (done_) return {};
    return std::exchange(held_, {});
}

size_t TextMatcher::find_earliest(size_t& match_pos) const {
    const std::string hay = case_insensitive_ ? lowered(held_) : held_;
    size_t best_len = 0;
    match_pos = std::string::npos;
    for (const auto& p : patterns_) {
        size_t at = hay.find(p);
        if (at != std::string::npos && at < match_pos) {
            match_pos = at;
            best_len = p.size();
        }
    }
    return best_len;
}

size_t TextMatcher::longest_partial_suffix() const {
    size_t best = 0;
    for (const auto& p : patterns_) {
        const size_t max_len = std::min(p.size() - 1, held_.size());
        for (size_t len = max_len; len > best; --len) {
            bool same = true;
            for (size_t i = 0; i < len && same; ++i) {
                char a = held_[held_.size() - len + i];
                same = (case_insensitive_ ? lower(a) : a) == p[i];
            }
            if (same) {
                best = len;
                break;
            }
        }
    }
    return best;
}

}  // namespace hichat::engine
