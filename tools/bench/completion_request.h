// The request the load generator sends: a streamed /v1/completions body whose prompt is an array of
// token ids (so the prompt length is exact, with no tokenizer on the client), and its HTTP/1.1 bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/http_target.h"

namespace hichat::tools::bench {

struct CompletionParams {
    std::string model;          // the served model name
    int num_output_tokens = 0;  // max_tokens; with ignore_eos the server generates exactly this many
    // Keys added to every completions body (e.g. {"grammar": ...} or {"response_format": ...}); they
    // replace the fields above of the same name. Null: none.
    nlohmann::json extra_body = nullptr;
};

// {"model", "prompt": [ids], "max_tokens", "temperature": 0, "ignore_eos": true, "stream": true,
//  "stream_options": {"include_usage": true}}
std::string completion_body(const CompletionParams& params, const std::vector<int32_t>& prompt_ids);
// The same body with a text prompt (the multi-turn dataset's history); the server tokenizes it.
std::string completion_text_body(const CompletionParams& params, const std::string& prompt_text);

// A streamed POST /v1/responses body: {"model", "input": text, "max_output_tokens", "temperature": 0,
// "stream": true, "previous_response_id" (when not empty)}.
std::string responses_body(const CompletionParams& params, const std::string& input,
                           const std::string& previous_response_id);

// The full HTTP/1.1 POST (keep-alive, JSON body, bearer token when `api_key` is not empty).
std::string http_post(const HttpTarget& target, const std::string& api_key, const std::string& body);

// [num_prompts][num_tokens] ids drawn uniformly from [0, vocab_size) with a seeded generator.
std::vector<std::vector<int32_t>> random_prompts(int num_prompts, int num_tokens, int vocab_size,
                                                 uint64_t seed);

}  // namespace hichat::tools::bench
