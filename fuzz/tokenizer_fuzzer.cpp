// Tokenizers: arbitrary bytes through each tokenizer kind HiChat loads, in both directions.
//   kinds: byte-level BPE (Llama-3.2, Qwen2.5, GPT-2, the default model), byte-fallback BPE (Llama-2 /
//   Mistral tokenizer.json) and SentencePiece (a tokenizer.model written from the Llama-2 one).
// Input: byte 0 picks the kind, byte 1 the mode and flags, the rest is text (or ids, 3 bytes each).
// Invariants: encode never fails and gives ids in [0, vocab_size); decode always returns valid UTF-8;
// valid UTF-8 text round-trips through encode+decode where the tokenizer is lossless for it (not
// through Qwen's NFC normalizer, nor text holding U+2581 through the Llama-2 kinds);
// StreamingDetokenizer pieces are valid UTF-8 and join to decode() of the same ids.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "sentencepiece_model_writer.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

using hichat::fuzz::require;
using hichat::tokenizer::Tokenizer;

struct Kind {
    const char* name;
    std::string dir;
    bool round_trips;  // decode(encode(valid UTF-8)) == text (no normalizer that changes text)
    bool metaspace;    // spaces are encoded as U+2581, so a U+2581 in the text decodes as a space
};

std::string lenml(const char* package) { return std::string(HICHAT_LENML_DIR) + "/" + package + "/models"; }

// The tokenizer.model twin of the Llama-2 tokenizer.json, written once per process.
std::string sentencepiece_dir() {
    const std::string dir = hichat::fuzz::scratch_dir("tokenizer");
    const std::string json_text = hichat::fuzz::read_whole_file(lenml("tokenizer-llama2") + "/tokenizer.json");
    const std::string model = hichat::tokenizer::testing::sentencepiece_model_from(nlohmann::json::parse(json_text));
    hichat::fuzz::write_whole_file(dir + "/tokenizer.model", model.data(), model.size());
    const std::string config = hichat::fuzz::read_whole_file(lenml("tokenizer-llama2") + "/tokenizer_config.json");
    hichat::fuzz::write_whole_file(dir + "/tokenizer_config.json", config.data(), config.size());
    return dir;
}

const std::vector<Kind>& kinds() {
    static const std::vector<Kind> k = {
        {"llama3_2 (byte-level BPE)", lenml("tokenizer-llama3_2"), true, false},
        {"qwen2_5 (byte-level BPE, NFC)", lenml("tokenizer-qwen2_5"), false, false},
        {"gpt2 (byte-level BPE)", lenml("tokenizer-gpt2"), true, false},
        {"default model (byte-level BPE)", HICHAT_DEFAULT_MODEL_DIR, true, false},
        {"llama2 (byte-fallback BPE)", lenml("tokenizer-llama2"), true, true},
        {"llama2 tokenizer.model (SentencePiece)", "", true, true},
    };
    return k;
}

// Loaded once, by LLVMFuzzerInitialize (loading Llama-3.2's 17 MB tokenizer.json under ASan takes
// seconds, which must not count against the first input's -timeout).
const Tokenizer& tokenizer_of(size_t index) {
    static std::vector<std::unique_ptr<Tokenizer>> loaded(kinds().size());
    if (!loaded[index]) {
        const Kind& kind = kinds()[index];
        auto tok = Tokenizer::load(kind.dir.empty() ? sentencepiece_dir() : kind.dir);
        if (!tok.ok()) {
            std::fprintf(stderr, "cannot load tokenizer %s: %s (npm ci --prefix tests/node?)\n", kind.name,
                         tok.status().message().c_str());
            std::exit(2);
        }
        loaded[index] = std::move(tok).value();
    }
    return *loaded[index];
}

void check_decoded(const Tokenizer& tok, std::span<const int32_t> ids, bool skip_special) {
    const std::string text = tok.decode(ids, skip_special);
    require(hichat::tokenizer::is_valid_utf8(text), "decode returned invalid UTF-8");
    hichat::tokenizer::StreamingDetokenizer stream(tok, skip_special);
    std::string joined;
    for (int32_t id : ids) {
        const std::string piece = stream.push(id);
        require(hichat::tokenizer::is_valid_utf8(piece), "StreamingDetokenizer::push returned invalid UTF-8");
        joined += piece;
    }
    const std::string rest = stream.flush();
    require(hichat::tokenizer::is_valid_utf8(rest), "StreamingDetokenizer::flush returned invalid UTF-8");
    joined += rest;
    require(joined == text, "streamed text differs from decode(): '" + joined + "' vs '" + text + "'");
}

void fuzz_encode(const Kind& kind, const Tokenizer& tok, std::string_view text, uint8_t mode) {
    const bool add_special = mode & 2, parse_special = mode & 4;
    const std::vector<int32_t> ids = tok.encode(text, add_special, parse_special);
    for (int32_t id : ids) require(id >= 0 && id < tok.vocab_size(), "encode gave id " + std::to_string(id));
    check_decoded(tok, ids, /*skip_special=*/mode & 8);
    if (!kind.round_trips || add_special || parse_special || !hichat::tokenizer::is_valid_utf8(text)) return;
    if (kind.metaspace && text.find("\xE2\x96\x81") != std::string_view::npos) return;
    const std::string back = tok.decode(ids);
    require(back == text, std::string(kind.name) + ": decode(encode(text)) != text: '" + back + "'");
}

void fuzz_decode(const Tokenizer& tok, std::string_view bytes, uint8_t mode) {
    std::vector<int32_t> ids;
    for (size_t i = 0; i + 2 < bytes.size(); i += 3) {
        const int32_t v = static_cast<uint8_t>(bytes[i]) | static_cast<uint8_t>(bytes[i + 1]) << 8 |
                          static_cast<uint8_t>(bytes[i + 2]) << 16;
        // Mostly ids of the vocabulary; now and then one outside it (negative or too large).
        int32_t id = v % (tok.vocab_size() + 2) - 1;
        if (id == tok.vocab_size()) id += v;
        ids.push_back(id);
    }
    check_decoded(tok, ids, /*skip_special=*/mode & 8);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    for (size_t i = 0; i < kinds().size(); ++i) tokenizer_of(i);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const size_t index = data[0] % kinds().size();
    const uint8_t mode = data[1];
    const std::string_view rest(reinterpret_cast<const char*>(data + 2), size - 2);
    const Tokenizer& tok = tokenizer_of(index);
    if (mode & 1) {
        fuzz_decode(tok, rest, mode);
    } else {
        fuzz_encode(kinds()[index], tok, rest, mode);
    }
    return 0;
}
