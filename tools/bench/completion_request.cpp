#include "bench/completion_request.h"

#include <nlohmann/json.hpp>
#include <random>

namespace hichat::tools::bench {

namespace {

std::string body_with_prompt(const CompletionParams& params, nlohmann::json prompt) {
    nlohmann::json body = {
        {"model", params.model},
        {"prompt", std::move(prompt)},
        {"max_tokens", params.num_output_tokens},
        {"temperature", 0},
        {"ignore_eos", true},
        {"stream", true},
        {"stream_options", {{"include_usage", true}}},
    };
    if (params.extra_body.is_object()) {
        for (const auto& [key, value] : params.extra_body.items()) body[key] = value;
    }
    return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string completion_body(const CompletionParams& params, const std::vector<int32_t>& prompt_ids) {
    return body_with_prompt(params, prompt_ids);
}

std::string completion_text_body(const CompletionParams& params, const std::string& prompt_text) {
    return body_with_prompt(params, prompt_text);
}

std::string responses_body(const CompletionParams& params, const std::string& input,
                           const std::string& previous_response_id) {
    nlohmann::json body = {{"model", params.model},
                           {"input", input},
                           {"max_output_tokens", params.num_output_tokens},
                           {"temperature", 0},
                           {"stream", true}};
    if (!previous_response_id.empty()) body["previous_response_id"] = previous_response_id;
    return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string http_post(const HttpTarget& target, const std::string& api_key, const std::string& body) {
    std::string out = "POST " + target.path + " HTTP/1.1\r\nHost: " + target.host_header +
                      "\r\nUser-Agent: hichat-bench\r\nAccept: text/event-stream\r\n"
                      "Content-Type: application/json\r\nConnection: keep-alive\r\n";
    if (!api_key.empty()) out += "Authorization: Bearer " + api_key + "\r\n";
    out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    out += body;
    return out;
}

std::vector<std::vector<int32_t>> random_prompts(int num_prompts, int num_tokens, int vocab_size,
                                                 uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(num_prompts));
    for (auto& p : prompts) {
        p.resize(static_cast<size_t>(num_tokens));
        // Modulo bias is below 2^-40 for any vocabulary we serve; portable across standard libraries.
        for (int32_t& id : p) id = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab_size));
    }
    return prompts;
}

}  // namespace hichat::tools::bench
