// Token-exact continuation on the default model's tokenizer and template: the next turn's prompt is the
// stored prompt + output ids + the tokens of the new suffix only; templates that rewrite history,
// changed instructions and another model fall back to the full render.
#include "api/turn_prompt.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace hichat::api {
namespace {

class TurnPromptTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto tok = tokenizer::Tokenizer::load(HICHAT_DEFAULT_MODEL_DIR);
        ASSERT_TRUE(tok.ok()) << tok.status().message();
        tokenizer_ = std::move(tok).value();
        std::ifstream in(std::string(HICHAT_DEFAULT_MODEL_DIR) + "/tokenizer_config.json");
        source_ = nlohmann::json::parse(in)["chat_template"].get<std::string>();
        builder_ = make_builder(source_);
    }

    std::unique_ptr<PromptBuilder> make_builder(const std::string& source) {
        auto parsed = tokenizer::ChatTemplate::parse(source);
        EXPECT_TRUE(parsed.ok()) << parsed.status().message();
        templates_.push_back(std::make_unique<tokenizer::ChatTemplate>(std::move(parsed).value()));
        return std::make_unique<PromptBuilder>(*tokenizer_, templates_.back().get(), "<|begin|>", "<|end|>");
    }

    // Turn 1 as the service runs it: its prompt, then the "generated" ids of `reply`.
    TurnHistory first_turn(const PromptBuilder& b, const std::string& question, const std::string& reply,
                           std::vector<int32_t>& prompt1) {
        TurnInput in{.messages = {{"user", question}}, .model_fingerprint = "fp", .max_context_tokens = 1024};
        TurnPrompt p;
        EXPECT_FALSE(build_turn_prompt(b, {}, in, p));
        prompt1 = p.ids;
        TurnHistory h{.messages = p.messages, .model_fingerprint = "fp"};
        h.messages.push_back({"assistant", reply});
        std::vector<int32_t> ids = p.ids;
        for (int32_t id : tokenizer_->encode(reply, false, false)) ids.push_back(id);
        h.token_ids = ids;
        return h;
    }

    std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
    std::string source_;
    std::vector<std::unique_ptr<tokenizer::ChatTemplate>> templates_;
    std::unique_ptr<PromptBuilder> builder_;
};

TEST_F(TurnPromptTest, NextTurnIsStoredIdsPlusTheSuffixOnly) {
    std::vector<int32_t> prompt1;
    TurnHistory h = first_turn(*builder_, "Hello there", "General Kenobi", prompt1);
    TurnInput in{.messages = {{"user", "How are you?"}}, .model_fingerprint = "fp", .max_context_tokens = 1024};
    TurnPrompt p;
    ASSERT_FALSE(build_turn_prompt(*builder_, h, in, p));
    ASSERT_EQ(p.num_tokens_reused, static_cast<int>(h.token_ids->size()));
    ASSERT_GT(p.ids.size(), h.token_ids->size());
    EXPECT_TRUE(std::equal(h.token_ids->begin(), h.token_ids->end(), p.ids.begin()));
    // The suffix is the end-of-turn marker, the new user message and the generation prompt.
    const std::vector<int32_t> suffix(p.ids.begin() + static_cast<std::ptrdiff_t>(h.token_ids->size()), p.ids.end());
    EXPECT_EQ(tokenizer_->decode(suffix, false), "<|end|>\n<|user|>\nHow are you?<|end|>\n<|assistant|>\n");
    // Here the ids equal a fresh tokenization of the whole conversation too.
    auto full = builder_->render_chat(p.messages, true);
    ASSERT_TRUE(full.ok());
    EXPECT_EQ(p.ids, builder_->encode_rendered(*full, p.messages));
    ASSERT_EQ(p.messages.size(), 3u);
    EXPECT_EQ(p.messages[1].content, "General Kenobi");
}

TEST_F(TurnPromptTest, StoredIdsWinOverARetokenization) {
    // Generated ids that a fresh tokenization would split differently stay exactly as generated.
    std::vector<int32_t> prompt1;
    TurnHistory h = first_turn(*builder_, "Hi", "ab", prompt1);
    std::vector<int32_t> odd = prompt1;
    for (char c : std::string("ab")) {
        auto one = tokenizer_->encode(std::string(1, c), false, false);
        odd.insert(odd.end(), one.begin(), one.end());
    }
    h.token_ids = odd;
    TurnInput in{.messages = {{"user", "next"}}, .model_fingerprint = "fp", .max_context_tokens = 1024};
    TurnPrompt p;
    ASSERT_FALSE(build_turn_prompt(*builder_, h, in, p));
    EXPECT_TRUE(std::equal(odd.begin(), odd.end(), p.ids.begin()));
}

TEST_F(TurnPromptTest, ChangedInstructionsOrModelForceTheFullRender) {
    std::vector<int32_t> prompt1;
    TurnHistory h = first_turn(*builder_, "Hello there", "General Kenobi", prompt1);
    TurnInput in{.instructions = "Be terse.", .messages = {{"user", "Again"}}, .model_fingerprint = "fp",
                 .max_context_tokens = 1024};
    TurnPrompt p;
    ASSERT_FALSE(build_turn_prompt(*builder_, h, in, p));
    EXPECT_EQ(p.num_tokens_reused, 0);
    auto full = builder_->render_chat({{"system", "Be terse."}, {"user", "Hello there"}, {"assistant", "General Kenobi"},
                                       {"user", "Again"}}, true);
    EXPECT_EQ(p.ids, builder_->encode_rendered(*full, {}));

    TurnInput other_model{.messages = {{"user", "Again"}}, .model_fingerprint = "other", .max_context_tokens = 1024};
    ASSERT_FALSE(build_turn_prompt(*builder_, h, other_model, p));
    EXPECT_EQ(p.num_tokens_reused, 0);
}

TEST_F(TurnPromptTest, TemplateThatRewritesHistoryFallsBackToTheFullRender) {
    // Renders the generation prompt differently depending on the last message: the history render is
    // not a prefix of the full one.
    auto rewriting = make_builder(
        "{% for m in messages %}{% if loop.last %}[LAST]{% endif %}<{{ m.role }}>{{ m.content }}</s>{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}");
    std::vector<int32_t> prompt1;
    TurnHistory h = first_turn(*rewriting, "Hello", "World", prompt1);
    TurnInput in{.messages = {{"user", "More"}}, .model_fingerprint = "fp", .max_context_tokens = 1024};
    EXPECT_FALSE(continue_token_ids(*rewriting, h, in).has_value());
    TurnPrompt p;
    ASSERT_FALSE(build_turn_prompt(*rewriting, h, in, p));
    EXPECT_EQ(p.num_tokens_reused, 0);
    auto full = rewriting->render_chat(p.messages, true);
    EXPECT_EQ(p.ids, rewriting->encode_rendered(*full, p.messages));
}

TEST_F(TurnPromptTest, TooLongIsA400OnInputUnlessTruncationDropsTheOldestTurns) {
    std::string filler;  // about 150 tokens a turn
    for (int i = 0; i < 20; ++i) filler += "the cat sat on the mat. ";
    std::vector<int32_t> prompt1;
    TurnHistory h = first_turn(*builder_, filler, "ok", prompt1);
    TurnInput in{.messages = {{"user", filler}}, .model_fingerprint = "fp",
                 .max_context_tokens = static_cast<int>(prompt1.size()) + 20, .max_output_tokens = 8};
    TurnPrompt p;
    auto e = build_turn_prompt(*builder_, h, in, p);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "input");
    EXPECT_EQ(e->http_status, 400);
    in.truncation_auto = true;
    ASSERT_FALSE(build_turn_prompt(*builder_, h, in, p));
    EXPECT_EQ(p.num_messages_dropped, 2);
    ASSERT_EQ(p.messages.size(), 1u);
    EXPECT_LE(p.ids.size() + 8, static_cast<size_t>(in.max_context_tokens));
}

// Without max_output_tokens, truncation "auto" leaves a quarter of the context for the reply (found
// by the chat page: it left one token).
TEST_F(TurnPromptTest, AutoTruncationWithoutAnOutputLimitLeavesAQuarterOfTheContext) {
    std::string filler;  // about 150 tokens a turn
    for (int i = 0; i < 20; ++i) filler += "the cat sat on the mat. ";
    std::vector<int32_t> prompt1;
    TurnHistory h = first_turn(*builder_, filler, "ok", prompt1);
    // Both turns fit with one token to spare, but not with a quarter of the context left.
    const int context = static_cast<int>(2 * prompt1.size()) + 8;
    TurnInput in{.messages = {{"user", filler}}, .model_fingerprint = "fp", .max_context_tokens = context};
    TurnPrompt p;
    ASSERT_FALSE(build_turn_prompt(*builder_, h, in, p)) << "disabled: it fits, with room for one token";
    EXPECT_EQ(p.num_messages_dropped, 0);
    in.truncation_auto = true;
    ASSERT_FALSE(build_turn_prompt(*builder_, h, in, p));
    EXPECT_EQ(p.num_messages_dropped, 2);
    EXPECT_LE(p.ids.size() + static_cast<size_t>(context / 4), static_cast<size_t>(context));
}

}  // namespace
}  // namespace hichat::api
