// Property tests on real vocabularies (Llama-3.2, Qwen2.5: byte-level BPE; Llama-2: SentencePiece
// with byte fallback, like Mistral): seeded random walks that only pick allowed tokens end, when
// they pick EOS in an accepting state, in text that parses as JSON and that a fresh matcher
// accepts; the trie mask equals the brute-force mask on sampled states. Each walk's text is
// written to HICHAT_GRAMMAR_WALKS_OUT_<vocab>.jsonl for tests/node_grammar/validate_walks.mjs (ajv).
#include <fstream>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "mask_support.h"
#include "test_vocab.h"

namespace hichat::grammar {
namespace {

const char* kSchemas[] = {
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer","minimum":0,"maximum":150},
        "tags":{"type":"array","items":{"enum":["a","b","c d"]},"maxItems":3}},"required":["name","age"],"additionalProperties":false})",
    R"({"type":"object","properties":{"id":{"type":"string","format":"uuid"},"when":{"type":"string","format":"date"},
        "score":{"type":"number","minimum":-1,"maximum":1},"ok":{"type":"boolean"}},"required":["id","when","score","ok"]})",
    R"({"$defs":{"item":{"type":"object","properties":{"sku":{"type":"string","pattern":"^[A-Z]{2}-[0-9]{3}$"},
        "qty":{"type":"integer","exclusiveMinimum":0}},"required":["sku","qty"],"additionalProperties":false}},
        "type":"object","properties":{"items":{"type":"array","items":{"$ref":"#/$defs/item"},"minItems":1,"maxItems":2},
        "note":{"anyOf":[{"type":"string","maxLength":8},{"type":"null"}]}},"required":["items","note"],"additionalProperties":false})",
    R"({"type":"object","properties":{"a":{"type":"string","minLength":1,"maxLength":5}},"additionalProperties":{"type":"integer"},"maxProperties_absent":true})",
    R"({"type":"array","prefixItems":[{"const":"call"},{"type":"object","properties":{"city":{"type":"string","maxLength":10}},"required":["city"]}],"items":false})",
};

std::string schema_text(int i) {
    std::string s = kSchemas[i];
    // Schema 3 carries a marker key for readability only; drop it (not a JSON Schema keyword).
    auto pos = s.find(",\"maxProperties_absent\":true");
    if (pos != std::string::npos) s.erase(pos, std::string(",\"maxProperties_absent\":true").size());
    return s;
}

bool has_structural_byte(std::string_view b) {
    for (char c : b) {
        if (c == '"' || c == '}' || c == ']' || c == ',') return true;
    }
    return false;
}

class MaskProperty : public ::testing::TestWithParam<const char*> {};

TEST_P(MaskProperty, RandomWalksEndInValidJsonAndMasksEqualBruteForce) {
    auto vocab = test::load_vocab(GetParam());
    ASSERT_NE(vocab, nullptr);
    // One file per vocabulary, written afresh: the instances run as separate, concurrent ctest tests.
    std::ofstream out(std::string(HICHAT_GRAMMAR_WALKS_OUT) + "_" + GetParam() + ".jsonl", std::ios::trunc);
    std::mt19937 rng(20261202);
    int walks_done = 0, brute_checks = 0;
    for (int si = 0; si < static_cast<int>(std::size(kSchemas)); ++si) {
        auto g = compile_json_schema(schema_text(si));
        ASSERT_TRUE(g.ok()) << si << ": " << g.status().message();
        for (int walk = 0; walk < 4; ++walk) {
            GrammarMatcher m(g.value(), vocab);
            std::vector<uint32_t> bits(vocab->mask_words());
            std::string text;
            bool ended = false;
            for (int step = 0; step < 300 && !ended; ++step) {
                m.fill_next_token_bitmask(bits);
                if (step % 9 == 4 && brute_checks < 12) {
                    ASSERT_EQ(bits, test::brute_force_mask(m)) << GetParam() << " schema " << si << " after " << text;
                    ++brute_checks;
                }
                const auto ids = test::allowed_ids(bits, vocab->num_tokens());
                ASSERT_FALSE(ids.empty()) << "dead end after " << text;
                int32_t pick = -1;
                const bool can_end = m.is_accepting();
                if (can_end && rng() % 2 == 0) {
                    pick = vocab->eos_ids()[0];
                } else {
                    // Later steps lean towards tokens that close strings and containers.
                    std::vector<int32_t> closing;
                    if (step > 20 && rng() % 3 != 0) {
                        for (int32_t id : ids) {
                            if (!vocab->is_eos(id) && has_structural_byte(vocab->token_bytes(id))) closing.push_back(id);
                        }
                    }
                    const auto& pool = closing.empty() ? ids : closing;
                    pick = pool[rng() % pool.size()];
                }
                ASSERT_TRUE(m.accept_token(pick)) << pick;
                if (vocab->is_eos(pick)) ended = true;
                else text += vocab->token_bytes(pick);
            }
            if (!ended) continue;  // a walk that did not finish in 300 tokens proves nothing either way
            ++walks_done;
            nlohmann::json parsed;
            ASSERT_NO_THROW(parsed = nlohmann::json::parse(text)) << text;
            GrammarMatcher again(g.value(), vocab);
            EXPECT_TRUE(again.accept_bytes(text) && again.is_accepting()) << text;
            out << nlohmann::json{{"vocab", GetParam()}, {"schema", nlohmann::json::parse(schema_text(si))}, {"text", text}}.dump()
                << "\n";
        }
    }
    std::printf("%s: %d walks ended with EOS, %d masks checked against brute force\n", GetParam(), walks_done, brute_checks);
    EXPECT_GE(walks_done, 10);
    EXPECT_GE(brute_checks, 12);
}

INSTANTIATE_TEST_SUITE_P(Real, MaskProperty, ::testing::Values("llama3_2", "qwen2_5", "llama2"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace hichat::grammar
