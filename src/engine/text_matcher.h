// TextMatcher: finds any of a set of strings in streamed text and holds back the tail that could be
// the start of one, so that a match never leaks into the output. Used for stop strings (exact) and
// for the output deny-list (ASCII case-insensitive). One sequence's; engine thread only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hichat::engine {

class TextMatcher {
public:
    TextMatcher() = default;
    TextMatcher(std::vector<std::string> patterns, bool case_insensitive);

    // Appends `text`; returns what is now safe to emit. On a match returns the text before it, sets
    // `matched`, and drops the rest (then push/flush return nothing).
    std::string push(std::string_view text, bool& matched);
    // The held-back tail, at the end of the stream.
    std::string flush();

private:
    size_t find_earliest(size_t& match_pos) const;  // returns pattern length, 0 if none
    size_t longest_partial_suffix() const;          // bytes at the end that start some pattern

    std::vector<std::string> patterns_;  // lowered when case_insensitive
    bool case_insensitive_ = false;
    bool done_ = false;
    std::string held_;
};

}  // namespace hichat::engine
