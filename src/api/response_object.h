// The Responses API's response object and its SSE events (response.created ... response.completed, each
// with its sequence_number). Pure; any thread (ResponseEvents: its owner's thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/api_error.h"

namespace hichat::api {

struct ResponseState {
    std::string id;                              // "resp_..."
    int64_t created_at = 0;                      // unix seconds
    std::string model;
    std::string status = "in_progress";          // queued, in_progress, completed, incomplete, failed, cancelled
    std::string incomplete_reason;               // status incomplete: max_output_tokens or content_filter
    std::string error_code;                      // status failed: the error's code (e.g. request_timeout)
    std::string error_message;                   // status failed
    std::string output_item_id;                  // "msg_..." of the assistant message
    std::string text;                            // the output so far
    bool output_done = false;                    // the message item is complete
    int num_input_tokens = 0;
    int num_cached_tokens = 0;                   // input tokens whose KV came from the prefix cache
    int num_output_tokens = 0;
    std::string previous_response_id;
    std::optional<std::string> instructions;
    bool store = true;
    bool background = false;                     // created with background: true (polled, cancellable)
    nlohmann::json metadata = nlohmann::json::object();
    float temperature = 1.0f;
    float top_p = 1.0f;
    std::optional<int> max_output_tokens;
    bool truncation_auto = false;
    std::string user;
    std::string conversation_id;
};

// The whole response object: output and usage only once it completed or is incomplete (empty and null
// while queued or in progress, and for a failed or cancelled one); error set when it failed.
nlohmann::ordered_json response_json(const ResponseState& s);
// completed, incomplete, failed or cancelled: the status of a response that will not change again.
bool is_final_response_status(std::string_view status);
// The assistant message item as it stands (in_progress or completed).
nlohmann::ordered_json output_item_json(const ResponseState& s);

// Numbers and frames the events of one streamed response: "event: TYPE\ndata: {...}\n\n".
class ResponseEvents {
public:
    std::string event(const std::string& type, nlohmann::ordered_json payload);
    std::string created(const ResponseState& s);        // response.created + response.in_progress
    std::string item_started(const ResponseState& s);   // output_item.added + content_part.added
    std::string text_delta(const ResponseState& s, const std::string& delta);
    std::string finished(const ResponseState& s);       // text/part/item .done + completed (or incomplete)
    std::string error(const ApiError& e);

private:
    int next_sequence_number_ = 0;
};

}  // namespace hichat::api
