// Text <-> token ids for one model, following its tokenizer.json (Hugging Face format) or
// tokenizer.model (SentencePiece). Immutable after load(); all methods are const and may be called
// from any thread at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/decode_state.h"

namespace hichat::tokenizer {

struct TokenizerParts;

class Tokenizer {
public:
    // dir holds tokenizer.json (preferred) or tokenizer.model, plus optionally
    // tokenizer_config.json (BOS/EOS strings, add_bos_token where tokenizer.json has no template)
    // and generation_config.json (extra EOS ids). Errors name the file and the problem:
    // kNotFound if neither tokenizer file exists, kInvalidArgument for malformed files,
    // kUnimplemented for components this loader does not support.
    static Result<std::unique_ptr<Tokenizer>> load(const std::string& dir);

    // Normalizer, pre-tokenizer, BPE, then the post-processor's tokens (e.g. BOS) when
    // add_special_tokens. Added-token strings inside text become their ids; special ones only
    // when parse_special. Invalid UTF-8 in text is first replaced by U+FFFD.
    std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true, bool parse_special = true) const;
    // Always valid UTF-8. Ids outside [0, vocab_size()) are ignored. Does not apply
    // clean_up_tokenization_spaces (streaming could not reproduce it).
    std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

    ~Tokenizer();
    int32_t vocab_size() const;
    std::optional<int32_t> token_to_id(std::string_view token) const;
    std::string id_to_token(int32_t id) const;  // "" if out of range
    bool is_special(int32_t id) const;
    // The raw bytes id stands for, before any rule that looks across tokens: byte-level BPE bytes
    // un-mapped, SentencePiece's U+2581 as a space, a byte-fallback <0xAB> token as that one byte
    // (so possibly a partial UTF-8 character). Special tokens give their text (check is_special).
    // "" if out of range. For grammar masks (grammar::TokenizerInfo).
    std::string token_bytes(int32_t id) const;
    int32_t bos_id() const;               // -1 if none
    std::vector<int32_t> eos_ids() const;  // empty if none

    // The steps of decode(), for StreamingDetokenizer: append one id's text to out (complete
    // characters only; the rest stays in state), then finish at the end of the stream.
    void decode_append(int32_t id, DecodeState& state, std::string& out) const;
    void decode_finish(DecodeState& state, std::string& out) const;

private:
    explicit Tokenizer(std::unique_ptr<const TokenizerParts> parts);
    void encode_section(std::string_view text, size_t section_index, std::vector<int32_t>& ids) const;

    std::unique_ptr<const TokenizerParts> parts_;
};

}  // namespace hichat::tokenizer
