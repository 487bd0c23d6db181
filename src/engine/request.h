// What the API layer hands the engine (Request) and what flows back (TokenEvent through a TokenSink).
// Nothing here knows about HTTP or JSON.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/tokenizer_info.h"
#include "sampling/logprobs.h"
#include "sampling/sampling_params.h"

namespace hichat::engine {

using Clock = std::chrono::steady_clock;

struct RequestId {
    uint64_t value = 0;
    friend bool operator==(RequestId a, RequestId b) { return a.value == b.value; }
};

enum class FinishReason {
    kNone,           // still running
    kStop,           // EOS token or a stop string
    kLength,         // max_tokens or the context is full
    kContentFilter,  // the output filter matched
    kCancelled,      // the client went away or cancelled (or the engine stopped)
    kDeadline,       // the request's deadline passed
    // kCancelled and kDeadline are not OpenAI finish reasons: the API answers them with an error.
};
const char* finish_reason_name(FinishReason r);  // "stop", "length", "content_filter", ...

// One step's news for one request. Emitted on the engine thread, in order; the last has finish set.
struct TokenEvent {
    std::vector<int32_t> token_ids;  // tokens generated this step (usually one)
    std::string text;                // text now safe to show (complete UTF-8, no pending stop-string prefix)
    FinishReason finish = FinishReason::kNone;
    int num_prompt_tokens = 0;
    int num_generated_tokens = 0;    // so far, including token_ids
    int num_cached_tokens = 0;       // prompt tokens whose KV came from the prefix cache (first admission)
    double ttft_ms = 0;              // arrival to first token; set once a token exists
    // [token_ids.size()] when the request asked for logprobs (Request::num_logprobs >= 0), else empty.
    std::vector<sampling::TokenLogprobs> logprobs;
    // On the request's first event when it asked for prompt logprobs (Request::num_prompt_logprobs >= 0):
    // [num_prompt_tokens - 1], entry i for prompt token i + 1 (the first token has none); else empty.
    std::vector<sampling::TokenLogprobs> prompt_logprobs;
};

// Receives one request's events. Called on the engine thread only: implementations must not block
// (hand the event to an I/O thread). Owned jointly by the API handler and the engine (shared_ptr).
class TokenSink {
public:
    virtual ~TokenSink() = default;
    virtual void on_event(TokenEvent event) = 0;
};

struct Request {
    RequestId id;
    std::vector<int32_t> prompt;             // [num_prompt_tokens], already templated and tokenized
    sampling::SamplingParams sampling;
    int max_tokens = 16;                     // generated tokens at most; 0: the prompt only (its logprobs)
    std::vector<std::string> stop;           // stop strings; never part of the output
    std::vector<int32_t> stop_token_ids;     // EOS and friends; not part of the output
    int priority = 0;                        // lower runs first (vLLM convention); ages with waiting time
    Clock::time_point arrival = Clock::now();
    Clock::time_point deadline = Clock::time_point::max();
    // Prefix-cache scope: requests share cached KV blocks only when their salts are equal. Set by the
    // server from the API key's id, never from a client field; empty when no keys are configured.
    std::string cache_salt;
    // The fair-share account (SchedulerConfig::owner_weights): the API key's id; empty when no keys
    // are configured (one account for all).
    std::string owner;
    // >= 0: each generated token's logprobs (sampling/logprobs.h: the raw distribution) with this many
    // of the most likely tokens (at most sampling::kMaxTopLogprobs); -1: none.
    int num_logprobs = -1;
    // >= 0: the logprobs of the prompt's tokens (each under the model's distribution after the tokens
    // before it) with this many top entries, on the first event. Such a request computes its whole
    // prompt (no prefix-cache hit) in synchronous host-logits steps; -1: none.
    int num_prompt_logprobs = -1;
    // Constrained decoding (response_format, grammar): every generated token is one the grammar allows
    // after the ones before; an EOS id only where the text so far is a complete match. Both set or
    // neither; grammar_vocab is the model's vocabulary (one per server).
    std::shared_ptr<const grammar::CompiledGrammar> grammar;
    std::shared_ptr<const grammar::TokenizerInfo> grammar_vocab;
    std::shared_ptr<TokenSink> sink;
};

}  // namespace hichat::engine
