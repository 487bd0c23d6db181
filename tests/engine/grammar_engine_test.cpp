// Constrained decoding through the engine (CPU; the CUDA runner takes the same host-logits path): every
// sampled reply of a random-weight model follows the schema and ends at a complete match, next to an
// unconstrained request in the same batch (sync and pipelined engines: grammar sequences force
// synchronous steps while they run), and logprobs are those of the masked distribution.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "executor/runner_factory.h"
#include "grammar/grammar.h"
#include "grammar/tokenizer_info.h"

namespace hichat::engine {
namespace {

using testing_util::CollectingSink;

class GrammarEngineTest : public testing_util::TinyModelTest, public ::testing::WithParamInterface<StepOverlap> {
protected:
    std::shared_ptr<const grammar::TokenizerInfo> vocab() const {
        std::vector<std::string> bytes;
        std::vector<int32_t> special;
        for (int32_t id = 0; id < tokenizer_->vocab_size(); ++id) {
            bytes.push_back(tokenizer_->is_special(id) ? std::string() : tokenizer_->token_bytes(id));
            if (tokenizer_->is_special(id)) special.push_back(id);
        }
        const std::vector<int32_t> eos = tokenizer_->eos_ids();
        std::erase_if(special, [&](int32_t id) { return std::find(eos.begin(), eos.end(), id) != eos.end(); });
        auto info = grammar::TokenizerInfo::create(std::move(bytes), eos, special, checkpoint_->config().vocab_size);
        EXPECT_TRUE(info.ok()) << info.status().message();
        return std::move(info).value();
    }
};

TEST_P(GrammarEngineTest, SampledRepliesFollowTheSchema) {
    auto runner = executor::make_runner(*checkpoint_, {.device = executor::DeviceKind::kCpu, .num_threads = 2,
                                                       .max_num_seqs = 8, .max_num_tokens_per_step = 256,
                                                       .max_context_tokens = 512, .num_kv_blocks = 128});
    ASSERT_TRUE(runner.ok());
    Engine engine(std::move(runner).value(), *tokenizer_, {.overlap = GetParam()});
    auto schema = grammar::compile_json_schema(
        R"({"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":99},)"
        R"("ok":{"type":"boolean"},"s":{"enum":["a","bc"]}},"required":["n","ok","s"],"additionalProperties":false})");
    ASSERT_TRUE(schema.ok()) << schema.status().message();
    const auto info = vocab();
    std::vector<std::shared_ptr<CollectingSink>> constrained, free;
    for (int i = 0; i < 8; ++i) {
        for (bool with_grammar : {true, false}) {
            Request r;
            r.id = {static_cast<uint64_t>(2 * i + with_grammar + 1)};
            r.prompt = {1, 2, 3, 4, 5, 6, 7, 8};
            r.sampling.temperature = 1.0f;
            r.sampling.seed = static_cast<uint64_t>(i);
            r.max_tokens = 40;
            r.stop_token_ids = tokenizer_->eos_ids();
            if (with_grammar) {
                r.grammar = *schema;
                r.grammar_vocab = info;
                r.num_logprobs = 2;
            }
            auto sink = std::make_shared<CollectingSink>();
            r.sink = sink;
            (with_grammar ? constrained : free).push_back(sink);
            ASSERT_EQ(engine.submit(std::move(r)), Engine::Admission::kAccepted);
        }
    }
    for (auto& s : free) ASSERT_TRUE(s->wait());
    for (auto& s : constrained) {
        ASSERT_TRUE(s->wait());
        EXPECT_EQ(s->finish, FinishReason::kStop) << s->text;
        const auto j = nlohmann::json::parse(s->text, nullptr, /*allow_exceptions=*/false);
        ASSERT_TRUE(j.is_object()) << s->text;
        // An integer in JSON Schema's sense: a number with no fraction (the grammar may write 20.0).
        EXPECT_TRUE(j["n"].is_number() && j["n"].get<double>() == std::floor(j["n"].get<double>()) &&
                    j["n"].get<double>() >= 0 && j["n"].get<double>() <= 99)
            << s->text;
        EXPECT_TRUE(j["ok"].is_boolean()) << s->text;
        EXPECT_TRUE(j["s"] == "a" || j["s"] == "bc") << s->text;
        EXPECT_EQ(j.size(), 3u) << s->text;
        // Masked: the chosen token and the listed ones carry all the probability there is.
        for (const auto& lp : s->logprobs) EXPECT_GT(lp.chosen, -1e9f);
    }
}

INSTANTIATE_TEST_SUITE_P(Overlap, GrammarEngineTest, ::testing::Values(StepOverlap::kOff, StepOverlap::kOn),
                         [](const auto& info) { return info.param == StepOverlap::kOn ? "pipelined" : "sync"; });

}  // namespace
}  // namespace hichat::engine
