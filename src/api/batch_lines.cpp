#include "api/batch_lines.h"

#include <unordered_set>

#include <nlohmann/json.hpp>

#include "api/input_items.h"

namespace hichat::api {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

std::string dump(const OrderedJson& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string batch_request_id() { return new_object_id("batch_req"); }

// One non-blank line: a request, or why it is refused (`line_number` is the file's, 1-based).
std::optional<RefusedLine> read_line(std::string_view text, int64_t index, int64_t line_number, Endpoint endpoint,
                                     std::unordered_set<std::string>& custom_ids, BatchRequestLine& out) {
    const std::string where = "line " + std::to_string(line_number);
    auto refuse = [&](std::optional<std::string> custom_id, std::string code, std::string message) {
        return RefusedLine{.line = index, .custom_id = std::move(custom_id), .code = std::move(code),
                           .message = where + ": " + message};
    };
    Json j;
    if (auto e = parse_json_object(std::string(text), j)) {
        std::string message = e->message;  // the parser speaks of a request body; here it is the line
        if (message.starts_with("request body")) message.replace(0, 12, "the line");
        return refuse(std::nullopt, "invalid_json", message);
    }
    const auto id = j.find("custom_id");
    if (id == j.end() || !id->is_string() || id->get_ref<const std::string&>().empty()) {
        return refuse(std::nullopt, "invalid_custom_id", "custom_id must be a non-empty string");
    }
    const std::string custom_id = id->get<std::string>();
    if (!custom_ids.insert(custom_id).second) {
        return refuse(custom_id, "duplicate_custom_id", "custom_id \"" + custom_id + "\" is used by an earlier line");
    }
    const auto method = j.find("method");
    if (method == j.end() || !method->is_string() || method->get<std::string>() != "POST") {
        return refuse(custom_id, "invalid_method", "method must be \"POST\"");
    }
    const std::string_view path = endpoint_path(endpoint);
    const auto url = j.find("url");
    if (url == j.end() || !url->is_string() || url->get<std::string>() != path) {
        return refuse(custom_id, "invalid_url", "url must be the batch's endpoint \"" + std::string(path) + "\"");
    }
    const auto body = j.find("body");
    if (body == j.end() || !body->is_object()) return refuse(custom_id, "invalid_body", "body must be a JSON object");
    if (const auto stream = body->find("stream"); stream != body->end() && stream->is_boolean() && stream->get<bool>()) {
        return refuse(custom_id, "unsupported_stream", "stream is not supported in a batch (each answer is one JSON body)");
    }
    // Read again keeping the key order: a schema's properties are generated in the order written.
    OrderedJson ordered = OrderedJson::parse(text, nullptr, /*allow_exceptions=*/false);
    OrderedJson request = ordered["body"];
    request["priority"] = kBatchLinePriority;
    out = {.line = index, .custom_id = custom_id, .body = dump(request)};
    return std::nullopt;
}

}  // namespace

std::optional<Endpoint> batch_endpoint(std::string_view url) {
    if (url == "/v1/chat/completions") return Endpoint::kChatCompletions;
    if (url == "/v1/completions") return Endpoint::kCompletions;
    return std::nullopt;
}

std::string_view endpoint_path(Endpoint endpoint) {
    return endpoint == Endpoint::kChatCompletions ? "/v1/chat/completions" : "/v1/completions";
}

BatchInput parse_batch_input(std::string_view jsonl, Endpoint endpoint) {
    BatchInput input;
    std::unordered_set<std::string> custom_ids;
    int64_t line_number = 0;
    for (size_t at = 0; at < jsonl.size();) {
        size_t end = jsonl.find('\n', at);
        if (end == std::string_view::npos) end = jsonl.size();
        std::string_view text = jsonl.substr(at, end - at);
        at = end + 1;
        ++line_number;
        if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
        if (text.find_first_not_of(" \t") == std::string_view::npos) continue;
        BatchRequestLine request;
        if (auto refused = read_line(text, input.num_lines, line_number, endpoint, custom_ids, request)) {
            input.refused.push_back(std::move(*refused));
        } else {
            input.requests.push_back(std::move(request));
        }
        ++input.num_lines;
    }
    return input;
}

std::string answered_line(std::string_view custom_id, int status_code, std::string_view body) {
    const std::string id = batch_request_id();
    OrderedJson parsed = OrderedJson::parse(body, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) parsed = std::string(body);
    const auto body_id = parsed.is_object() ? parsed.find("id") : parsed.end();
    const bool has_id = parsed.is_object() && body_id != parsed.end() && body_id->is_string();
    OrderedJson line = {{"id", id},
                        {"custom_id", custom_id},
                        {"response", {{"status_code", status_code},
                                      {"request_id", has_id ? body_id->get<std::string>() : id},
                                      {"body", std::move(parsed)}}},
                        {"error", nullptr}};
    return dump(line);
}

std::string refused_line(const std::optional<std::string>& custom_id, std::string_view code, std::string_view message) {
    OrderedJson line = {{"id", batch_request_id()},
                        {"custom_id", custom_id ? OrderedJson(*custom_id) : OrderedJson(nullptr)},
                        {"response", nullptr},
                        {"error", {{"code", code}, {"message", message}}}};
    return dump(line);
}

}  // namespace hichat::api
