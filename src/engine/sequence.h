// Sequence: one request inside the engine: its tokens, scheduling state, sampler, detokenizer and
// output matchers. Created and destroyed by the engine thread; engine thread only.
#pragma once

#include <algorithm>
#include <vector>

#include "engine/request.h"
#include "grammar/grammar_matcher.h"
#include "engine/text_matcher.h"
#include "sampling/sampler.h"
#include "scheduler/seq_state.h"
#include "tokenizer/streaming_detokenizer.h"

namespace hichat::engine {

struct Sequence {
    Sequence(Request r, const tokenizer::Tokenizer& tok, const std::vector<std::string>& deny_list)
        : request(std::move(r)),
          tokens(request.prompt),
          sampler(request.sampling, request.id.value * 0x9e3779b97f4a7c15ull ^
                                        static_cast<uint64_t>(request.arrival.time_since_epoch().count())),
          detokenizer(tok, /*skip_special_tokens=*/true),
          stop_matcher(request.stop, /*case_insensitive=*/false),
          filter_matcher(deny_list, /*case_insensitive=*/true) {
        state.id = request.id.value;
        state.priority = request.priority;
        state.owner = scheduler::owner_id(request.owner);
        state.arrival = request.arrival;
        state.num_tokens = static_cast<int>(tokens.size());
        num_tokens_known = state.num_tokens;
        if (request.grammar && request.grammar_vocab) {
            matcher = std::make_unique<grammar::GrammarMatcher>(request.grammar, request.grammar_vocab);
        }
    }

    int num_prompt_tokens() const { return static_cast<int>(request.prompt.size()); }
    // Whether the next forward pass over this sequence needs the logits of every prompt token it
    // computes (prompt logprobs not yet sent), not just the last token's.
    bool needs_prompt_logits() const {
        return request.num_prompt_logprobs >= 0 && !prompt_logprobs_sent && state.num_tokens_cached < num_prompt_tokens();
    }
    // Whether the runner may pick this sequence's tokens: false while its prompt logits are wanted and
    // for a request of no tokens (max_tokens 0), whose steps run on host logits.
    bool runs_on_host_logits() const { return needs_prompt_logits() || request.max_tokens == 0; }
    // Whether its blocks take part in the prefix cache: not for prompt logprobs, which need every
    // prompt token computed.
    bool caches_prefix() const { return request.num_prompt_logprobs < 0; }
    // Appends the prefix-cache keys of blocks whose tokens are all known now (prefix cache on).
    void extend_block_keys(int block_size) {
        auto& keys = state.block_keys;
        while (static_cast<int>(keys.size() + 1) * block_size <= num_tokens_known) {
            const kv::BlockHash parent = keys.empty() ? kv::root_block_hash(request.cache_salt) : keys.back();
            const auto first = static_cast<size_t>(keys.size()) * static_cast<size_t>(block_size);
            keys.push_back(kv::chain_block_hash(
                parent, std::span<const int32_t>(tokens).subspan(first, static_cast<size_t>(block_size))));
        }
    }
    // Generated tokens whose ids are known (placeholders of steps in flight do not count).
    int num_generated_tokens() const { return num_tokens_known - num_prompt_tokens(); }
    std::span<const int32_t> generated() const {
        return std::span<const int32_t>(tokens).subspan(request.prompt.size(),
                                                        static_cast<size_t>(num_generated_tokens()));
    }
    // Tokens waiting for the ids of steps in flight (0 to 2; pipelined engine only).
    int num_placeholders() const { return static_cast<int>(tokens.size()) - num_tokens_known; }
    // Drops tokens [num_tokens, end): a finished sequence's stop id or placeholders.
    void truncate(int num_tokens) {
        tokens.resize(static_cast<size_t>(num_tokens));
        state.num_tokens = num_tokens;
        num_tokens_known = std::min(num_tokens_known, num_tokens);
    }

    Request request;
    scheduler::SeqState state;
    std::vector<int32_t> tokens;  // [num_tokens] prompt then generated; the last num_placeholders() are
                                  // -(row + 1): the id a step in flight picks for its logit row `row`
    int num_tokens_known = 0;     // leading tokens whose ids are known
    int64_t placeholder_step = -1;  // the step whose id the newest placeholder stands for
    sampling::Sampler sampler;
    tokenizer::StreamingDetokenizer detokenizer;
    TextMatcher stop_matcher;     // stop strings
    TextMatcher filter_matcher;   // output deny-list
    Clock::time_point first_token_time{};
    // Constrained decoding: the grammar's state after the generated tokens (null: unconstrained).
    // Such a sequence is sampled on the host from a masked logits row, in synchronous steps.
    std::unique_ptr<grammar::GrammarMatcher> matcher;
    std::vector<uint32_t> mask;   // scratch: the next token's bitmask
    // Prompt logprobs (request.num_prompt_logprobs >= 0): [num_prompt_tokens], entry p for prompt token
    // p (p >= 1), filled as the prefill computes them (again after a preemption); sent once, with the
    // first event.
    std::vector<sampling::TokenLogprobs> prompt_logprobs;
    bool prompt_logprobs_sent = false;
};

}  // namespace hichat::engine
