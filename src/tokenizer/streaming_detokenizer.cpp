#include "tokenizer/streaming_detokenizer.h"

namespace hichat::tokenizer {

std::string StreamingDetokenizer::push(int32_t id) {
    std::string delta;
    if (skip_special_tokens_ && tokenizer_.is_special(id)) return delta;
    tokenizer_.decode_append(id, state_, delta);
    return delta;
}

std::string StreamingDetokenizer::flush() {
    std::string rest;
    tokenizer_.decode_finish(state_, rest);
    state_ = DecodeState{};
    return rest;
}

}  // namespace hichat::tokenizer
