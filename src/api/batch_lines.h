// The lines of the Batch API's files: the input (JSONL, one request per line: custom_id, method, url,
// body) read and checked line by line, and the output and error files' lines. Pure; any thread.
//
// A line that cannot run (not a JSON object, no custom_id or a repeated one, a method other than POST,
// a url other than the batch's endpoint, a body that is not an object, stream: true) is refused on its
// own: it becomes a line of the error file and the other lines run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/openai_request.h"

namespace hichat::api {

// Batch lines run in the least urgent class a request may name (the scheduler admits lower values
// first and ages waiting requests by 1 per second), so interactive requests always go first.
inline constexpr int kBatchLinePriority = 1'000'000;
// OpenAI's limit of requests per batch.
inline constexpr int64_t kMaxBatchLines = 50'000;

// The endpoint a batch's `endpoint` (and each line's `url`) names; nullopt for any other.
std::optional<Endpoint> batch_endpoint(std::string_view url);
std::string_view endpoint_path(Endpoint endpoint);  // "/v1/chat/completions" | "/v1/completions"

struct BatchRequestLine {
    int64_t line = 0;                       // 0-based index among the input's non-blank lines
    std::string custom_id;
    std::string body;                       // the request body (keys in the client's order), priority set
                                            // to kBatchLinePriority
};

struct RefusedLine {
    int64_t line = 0;                       // as BatchRequestLine::line
    std::optional<std::string> custom_id;   // when the line had one
    std::string code;                       // e.g. "invalid_json", "duplicate_custom_id", "invalid_url"
    std::string message;                    // names the line (1-based line number of the file) and field
};

struct BatchInput {
    int64_t num_lines = 0;                  // non-blank lines: requests + refused
    std::vector<BatchRequestLine> requests;  // in line order
    std::vector<RefusedLine> refused;        // in line order
};

// Reads `jsonl` (lines end in \n or \r\n; blank lines are skipped) for a batch of `endpoint`.
BatchInput parse_batch_input(std::string_view jsonl, Endpoint endpoint);

// A line of the output file (2xx) or the error file (other statuses), OpenAI's form:
// {"id":"batch_req_...","custom_id":...,"response":{"status_code":...,"request_id":...,"body":{...}},"error":null}.
// request_id is the body's "id" (chatcmpl-..., cmpl-...) when it has one.
std::string answered_line(std::string_view custom_id, int status_code, std::string_view body);
// A line of the error file for a request that never ran:
// {"id":"batch_req_...","custom_id":... or null,"response":null,"error":{"code":...,"message":...}}.
std::string refused_line(const std::optional<std::string>& custom_id, std::string_view code, std::string_view message);

}  // namespace hichat::api
