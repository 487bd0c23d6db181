// The bodies of the Responses and Conversations APIs -> validated requests. Pure: no store, no engine;
// every error is an ApiError naming the field.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/input_items.h"
#include "sampling/sampling_params.h"

namespace hichat::api {

struct ResponsesRequest {
    std::string model;                           // empty: not given
    std::vector<InputMessage> input;             // this turn's items
    std::optional<std::string> instructions;     // a system message for this turn only
    bool store = true;
    std::string previous_response_id;            // "" : none; well-formed ("resp_...")
    std::string conversation_id;                 // "" : none; well-formed ("conv_...")
    std::optional<int> max_output_tokens;        // unset: as many as the context allows
    sampling::SamplingParams sampling;           // temperature and top_p
    bool stream = false;
    bool background = false;                     // run detached: answer "queued" now, poll by id
    bool truncation_auto = false;                // "auto": drop the oldest turns to fit
    nlohmann::json metadata = nlohmann::json::object();
    std::string user;
    std::vector<std::string> ignored_fields;
};

// Every field of the schema is implemented, a no-op or refused by name (openai_fields.h).
std::optional<ApiError> parse_responses_request(std::string body, ResponsesRequest& out);

struct ConversationRequest {
    std::optional<nlohmann::json> metadata;      // unset: not given
    std::vector<InputMessage> items;             // at most 20
};
// POST /v1/conversations ({metadata, items}) and its update (`update`: metadata required, no items).
std::optional<ApiError> parse_conversation_request(std::string body, bool update, ConversationRequest& out);
// POST /v1/conversations/{id}/items: {"items": [...]}, 1 to 20 items.
std::optional<ApiError> parse_items_request(std::string body, std::vector<InputMessage>& out);

// GET list parameters (?after=&limit=&order=), errors naming the parameter.
struct ListQuery {
    std::string after;
    int limit = 20;                              // [1, 100]
    bool ascending = false;                      // order=asc; default desc
};
std::optional<ApiError> parse_list_query(const std::string& query, ListQuery& out);

}  // namespace hichat::api
