// Shared by the engine tests: a sink that collects one request's events, and the tiny fixture model
// (llama3 checkpoint, byte tokenizer, transformers golden) they run on.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "common/fixtures.h"
#include "engine/engine.h"
#include "model/checkpoint.h"
#include "tokenizer/tokenizer.h"

namespace hichat::engine::testing_util {

// Collects one request's events; wait() blocks until the final one.
class CollectingSink : public TokenSink {
public:
    void on_event(TokenEvent ev) override {
        std::lock_guard<std::mutex> lock(mu_);
        tokens.insert(tokens.end(), ev.token_ids.begin(), ev.token_ids.end());
        logprobs.insert(logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
        if (!ev.prompt_logprobs.empty()) {
            prompt_logprobs = std::move(ev.prompt_logprobs);
            prompt_logprobs_event = num_events;
        }
        text += ev.text;
        ++num_events;
        if (ev.finish != FinishReason::kNone) {
            finish = ev.finish;
            num_generated = ev.num_generated_tokens;
            num_cached = ev.num_cached_tokens;
            done_ = true;
            cv_.notify_all();
        }
    }
    bool wait(std::chrono::seconds timeout = std::chrono::seconds(60)) {
        std::unique_lock<std::mutex> lock(mu_);
        return cv_.wait_for(lock, timeout, [&] { return done_; });
    }
    std::vector<int32_t> tokens;
    std::vector<sampling::TokenLogprobs> logprobs;
    std::vector<sampling::TokenLogprobs> prompt_logprobs;
    int prompt_logprobs_event = -1;  // the event that carried them
    std::string text;
    FinishReason finish = FinishReason::kNone;
    int num_generated = 0, num_events = 0, num_cached = 0;

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;
};

// The fixture model the engine tests share.
class TinyModelTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto ckpt = model::Checkpoint::open(testing::fixture_dir("llama3"));
        ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
        checkpoint_ = std::move(ckpt).value();
        auto tok = tokenizer::Tokenizer::load(testing::fixture_dir("byte_tokenizer"));
        ASSERT_TRUE(tok.ok()) << tok.status().message();
        tokenizer_ = std::move(tok).value();
        golden_ = testing::read_golden("llama3");
    }

    std::unique_ptr<model::Checkpoint> checkpoint_;
    std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
    nlohmann::json golden_;
};

// Stats are published after each step, so they may trail the final event by one step.
inline int kv_blocks_used_when_settled(const Engine& engine) {
    for (int i = 0; i < 200 && engine.stats().num_kv_blocks_used != 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return engine.stats().num_kv_blocks_used;
}

}  // namespace hichat::engine::testing_util
