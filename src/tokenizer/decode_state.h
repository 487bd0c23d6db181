// Per-stream state of TokenDecoder. Owned by one decode call or one StreamingDetokenizer.
#pragma once

#include <cstddef>
#include <string>

namespace hichat::tokenizer {

struct DecodeState {
    size_t num_tokens = 0;          // tokens appended so far
    size_t num_strip_left = 0;      // leading strip characters still to remove
    bool started = false;           // num_strip_left initialised
    std::string held_strip_right;   // trailing strip characters held back until more text comes
    std::string pending_utf8;       // bytes of an incomplete UTF-8 sequence at the end
};

}  // namespace hichat::tokenizer
