// Writes a SentencePiece BPE tokenizer.model equivalent to a byte-fallback tokenizer.json (Mistral's):
// same pieces, scores ordered like the merges. Shared by sentencepiece_model_test.cpp and the
// tokenizer fuzz target (no reference package ships a tokenizer.model).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hichat::tokenizer::testing {

// Minimal protobuf writer for sentencepiece_model.proto.
inline void put_varint(uint64_t v, std::string& out) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7F) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}
inline void put_varint_field(int field, uint64_t v, std::string& out) {
    put_varint(static_cast<uint64_t>(field) << 3, out);
    put_varint(v, out);
}
inline void put_bytes_field(int field, const std::string& bytes, std::string& out) {
    put_varint((static_cast<uint64_t>(field) << 3) | 2, out);
    put_varint(bytes.size(), out);
    out += bytes;
}
inline void put_float_field(int field, float f, std::string& out) {
    put_varint((static_cast<uint64_t>(field) << 3) | 5, out);
    char bytes[4];
    std::memcpy(bytes, &f, 4);
    out.append(bytes, 4);
}

enum PieceType { kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6 };

// ModelProto{pieces=1, trainer_spec=2, normalizer_spec=3} from a tokenizer.json vocab.
inline std::string sentencepiece_model_from(const nlohmann::json& tokenizer_json) {
    const auto& vocab = tokenizer_json.at("model").at("vocab");
    std::vector<std::string> pieces(vocab.size());
    for (const auto& [piece, id] : vocab.items()) pieces.at(id.get<size_t>()) = piece;
    // SentencePiece BPE merges the adjacent pair whose union has the highest score; give each
    // piece minus the rank of the first merge that makes it, so the order is the merge list's.
    std::vector<float> scores(pieces.size(), -1e9f);
    const auto& merges = tokenizer_json.at("model").at("merges");
    for (size_t rank = merges.size(); rank-- > 0;) {
        const std::string merged = merges[rank].is_string()
                                       ? [](std::string m) { return m.erase(m.find(' '), 1); }(merges[rank].get<std::string>())
                                       : merges[rank][0].get<std::string>() + merges[rank][1].get<std::string>();
        scores.at(vocab.at(merged).get<size_t>()) = -static_cast<float>(rank);
    }
    std::string model;
    for (size_t id = 0; id < pieces.size(); ++id) {
        const std::string& p = pieces[id];
        const int type = p == "<unk>" ? kUnknown
                         : (p == "<s>" || p == "</s>") ? kControl
                         : (p.size() == 6 && p.rfind("<0x", 0) == 0) ? kByte
                                                                      : kNormal;
        std::string piece;
        put_bytes_field(1, p, piece);
        put_float_field(2, type == kNormal ? scores[id] : 0.0f, piece);
        put_varint_field(3, type, piece);
        put_bytes_field(1, piece, model);
    }
    std::string trainer;
    put_varint_field(3, 2, trainer);  // model_type = BPE
    put_varint_field(4, pieces.size(), trainer);
    put_varint_field(35, 1, trainer);  // byte_fallback
    put_varint_field(40, 0, trainer);  // unk_id
    put_varint_field(41, 1, trainer);  // bos_id
    put_varint_field(42, 2, trainer);  // eos_id
    put_varint_field(43, static_cast<uint64_t>(-1), trainer);  // pad_id = -1
    put_bytes_field(2, trainer, model);
    std::string normalizer;
    put_bytes_field(1, "identity", normalizer);
    put_varint_field(3, 1, normalizer);  // add_dummy_prefix
    put_varint_field(4, 0, normalizer);  // remove_extra_whitespaces
    put_varint_field(5, 1, normalizer);  // escape_whitespaces
    put_bytes_field(3, normalizer, model);
    return model;
}

}  // namespace hichat::tokenizer::testing
