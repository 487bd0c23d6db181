// Turns ids into text one id at a time, for streaming responses. Each push() returns the new text
// (possibly empty): never a broken UTF-8 sequence, since bytes of an unfinished character are held
// back until the next id; flush() returns what is left (an unfinished character as U+FFFD). The
// concatenation of all returns equals Tokenizer::decode of all ids with the same skip flag.
// Owned by one request; one thread at a time. The Tokenizer must outlive it.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/decode_state.h"
#include "tokenizer/tokenizer.h"

namespace hichat::tokenizer {

class StreamingDetokenizer {
public:
    explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens = false)
        : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

    std::string push(int32_t id);
    std::string flush();
    // Bytes held back (an unfinished character or trailing characters a Strip may remove).
    size_t num_bytes_pending() const { return state_.pending_utf8.size() + state_.held_strip_right.size(); }

private:
    const Tokenizer& tokenizer_;
    bool skip_special_tokens_;
    DecodeState state_;
};

}  // namespace hichat::tokenizer
