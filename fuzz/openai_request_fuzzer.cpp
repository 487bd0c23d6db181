// OpenAI request parser: arbitrary bytes as the JSON body of /v1/chat/completions or /v1/completions
// (byte 0 picks the endpoint) -> parse_generation_request -> the checks handle_generation makes
// before it builds an engine::Request: SamplingParams::validate and PromptBuilder::build with the
// default model's tokenizer and chat template.
// Invariants: a refusal is an ApiError whose to_json() is the OpenAI error object (valid JSON, a
// message, type, param, code); an accepted body has sampling parameters that validate; prompt ids
// are in the vocabulary, and a failed build is again an ApiError naming its field.
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "api/openai_request.h"
#include "api/prompt_builder.h"
#include "fuzz_support.h"
#include "tokenizer/template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace {

using hichat::api::ApiError;
using hichat::fuzz::require;

struct Model {
    std::unique_ptr<hichat::tokenizer::Tokenizer> tokenizer;
    std::optional<hichat::tokenizer::ChatTemplate> chat_template;
    std::unique_ptr<hichat::api::PromptBuilder> prompts;
};

const Model& default_model() {
    static const Model m = [] {
        Model model;
        auto tok = hichat::tokenizer::Tokenizer::load(HICHAT_DEFAULT_MODEL_DIR);
        if (!tok.ok()) hichat::fuzz::fail("cannot load the default model's tokenizer: " + tok.status().message());
        model.tokenizer = std::move(tok).value();
        const auto config = nlohmann::json::parse(
            hichat::fuzz::read_whole_file(std::string(HICHAT_DEFAULT_MODEL_DIR) + "/tokenizer_config.json"));
        auto t = hichat::tokenizer::ChatTemplate::parse(config.at("chat_template").get<std::string>());
        if (!t.ok()) hichat::fuzz::fail("cannot parse the default model's chat template: " + t.status().message());
        model.chat_template = *t;
        model.prompts = std::make_unique<hichat::api::PromptBuilder>(*model.tokenizer, &*model.chat_template,
                                                                     config.at("bos_token").get<std::string>(),
                                                                     config.at("eos_token").get<std::string>());
        return model;
    }();
    return m;
}

void check_error(const ApiError& e) {
    require(e.http_status >= 400 && e.http_status < 500, "a request error with status " + std::to_string(e.http_status));
    require(!e.message.empty(), "an ApiError without a message");
    const auto j = nlohmann::json::parse(e.to_json(), nullptr, /*allow_exceptions=*/false);
    require(j.is_object() && j.contains("error"), "ApiError::to_json is not an error object: " + e.to_json());
    const auto& err = j["error"];
    require(err["message"].is_string() && err["type"].is_string() && (err["param"].is_string() || err["param"].is_null()) &&
                (err["code"].is_string() || err["code"].is_null()),
            "ApiError::to_json lacks message/type/param/code: " + e.to_json());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const auto endpoint = data[0] & 1 ? hichat::api::Endpoint::kCompletions : hichat::api::Endpoint::kChatCompletions;
    const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
    hichat::api::GenerationRequest request;
    if (auto e = hichat::api::parse_generation_request(endpoint, body, request)) {
        check_error(*e);
        return 0;
    }
    require(request.endpoint == endpoint, "parsed request has another endpoint");
    const auto valid = request.sampling.validate();
    require(valid.ok(), "accepted sampling parameters fail SamplingParams::validate: " + valid.message());
    if (request.max_tokens) require(*request.max_tokens > 0, "accepted max_tokens <= 0");
    require(request.n >= 1 && request.n <= hichat::api::kMaxChoices, "accepted n " + std::to_string(request.n));
    const auto& bias = request.sampling.logit_bias;
    require(bias.size() <= static_cast<size_t>(hichat::api::kMaxLogitBiasEntries), "accepted a logit_bias too large");
    for (size_t i = 1; i < bias.size(); ++i) require(bias[i - 1].token < bias[i].token, "logit_bias not sorted or repeated");
    const Model& model = default_model();
    std::vector<int32_t> ids;
    if (auto e = model.prompts->build(request, ids)) {
        check_error(*e);
        return 0;
    }
    require(!ids.empty(), "an accepted prompt without tokens");
    for (int32_t id : ids) require(id >= 0 && id < model.tokenizer->vocab_size(), "prompt id " + std::to_string(id));
    return 0;
}
