// The decoder step of tokenizer.json, compiled into a table: the bytes each id contributes
// (ByteLevel, Replace, ByteFallback, Metaspace and per-token Strip applied in advance) plus the
// few rules that look across tokens (strip at the start/end of the whole text, Metaspace's first
// token). Decoding is then a stream: append() each id, finish() at the end; the same code serves
// Tokenizer::decode and StreamingDetokenizer, so their outputs agree by construction.
// Immutable after construction; any thread may use it with its own DecodeState.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "tokenizer/decode_state.h"

namespace hichat::tokenizer {

class TokenDecoder {
public:
    // id_to_token: token text of every id as written in tokenizer.json ("" for unused ids);
    // is_added: added tokens, which ByteLevel leaves as they are.
    // Supported: ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence, null.
    // Errors: kUnimplemented for other types, kInvalidArgument for malformed steps.
    static Result<TokenDecoder> from_json(const nlohmann::json& config, const std::vector<std::string>& id_to_token,
                                          const std::vector<bool>& is_added);

    // Appends the text that id adds to out: always valid UTF-8; bytes that may still become part
    // of a character, or trailing characters a final Strip may remove, stay in state.
    // Ids outside [0, num_ids) add nothing.
    void append(int32_t id, DecodeState& state, std::string& out) const;
    // Appends what state still holds (an incomplete sequence becomes U+FFFD).
    void finish(DecodeState& state, std::string& out) const;

    // Raw bytes of one id before cross-token rules (may be partial UTF-8).
    std::string_view piece(int32_t id) const;
    size_t num_ids() const { return piece_offsets_.empty() ? 0 : piece_offsets_.size() - 1; }

private:
    struct Config;
    void emit_bytes(std::string_view bytes, DecodeState& state, std::string& out) const;

    std::string piece_data_;              // all pieces, concatenated
    std::vector<uint32_t> piece_offsets_;  // [num_ids + 1] offsets into piece_data_
    bool strip_first_space_ = false;       // Metaspace: the first token loses a leading space
    std::string strip_content_;            // Strip after Fuse: the character removed
    size_t strip_left_ = 0;                // how many times at the start of the text
    size_t strip_right_ = 0;               // how many times at the end of the text
};

}  // namespace hichat::tokenizer
