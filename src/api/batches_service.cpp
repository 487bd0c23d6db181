#include "api/batches_service.h"

#include <chrono>

#include "api/batch_object.h"
#include "api/files_service.h"
#include "api/input_items.h"
#include "api/openai_request.h"
#include "api/responses_request.h"

namespace hichat::api {
namespace {

using Json = nlohmann::json;

int64_t unix_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ApiError no_batch_error(const std::string& id) { return not_found_error("batch_id", "no batch " + id + " exists"); }

const Json* string_field(const Json& body, const char* name, std::optional<ApiError>& error) {
    const auto it = body.find(name);
    if (it == body.end() || !it->is_string()) {
        error = bad_field(name, std::string(name) + " is required and must be a string");
        return nullptr;
    }
    return &*it;
}

// OpenAI's metadata: at most 16 string values, keys of at most 64 characters, values of at most 512.
std::optional<ApiError> check_metadata(const Json& metadata) {
    if (metadata.is_null()) return std::nullopt;
    if (!metadata.is_object() || metadata.size() > 16) return bad_field("metadata", "metadata must be an object of at most 16 strings");
    for (auto it = metadata.begin(); it != metadata.end(); ++it) {
        if (it.key().size() > 64 || !it->is_string() || it->get_ref<const std::string&>().size() > 512) {
            return bad_field("metadata." + it.key(), "metadata keys have at most 64 characters and values are strings of at most 512");
        }
    }
    return std::nullopt;
}

// The create body: input_file_id, endpoint, completion_window, metadata. output_expires_after is
// refused by name: output files are kept until deleted, and HiChat does not expire them.
std::optional<ApiError> parse_create(std::string body, session::StoredBatch& out) {
    Json json;
    if (auto e = parse_json_object(std::move(body), json)) return e;
    for (auto it = json.begin(); it != json.end(); ++it) {
        const std::string& k = it.key();
        if (k == "output_expires_after") {
            ApiError e = bad_field(k, "output_expires_after is not supported: output files are kept until deleted");
            e.code = "unsupported_field";
            return e;
        }
        if (k != "input_file_id" && k != "endpoint" && k != "completion_window" && k != "metadata") {
            ApiError e = bad_field(k, "unknown field " + k + " in a batch");
            e.code = "unsupported_field";
            return e;
        }
    }
    std::optional<ApiError> error;
    const Json* input = string_field(json, "input_file_id", error);
    const Json* endpoint = input ? string_field(json, "endpoint", error) : nullptr;
    const Json* window = endpoint ? string_field(json, "completion_window", error) : nullptr;
    if (error) return error;
    if (!batch_endpoint(endpoint->get_ref<const std::string&>())) {
        ApiError e = bad_field("endpoint", "unknown endpoint \"" + endpoint->get<std::string>() +
                                               "\" for a batch: this server runs /v1/chat/completions and /v1/completions");
        e.code = "unknown_endpoint";
        return e;
    }
    if (*window != kCompletionWindow) {
        return bad_field("completion_window", "completion_window must be \"24h\", got \"" + window->get<std::string>() + "\"");
    }
    const auto metadata = json.find("metadata");
    if (metadata != json.end()) {
        if (auto e = check_metadata(*metadata)) return e;
        out.metadata_json = metadata->dump();
    }
    out.input_file_id = input->get<std::string>();
    out.endpoint = endpoint->get<std::string>();
    out.completion_window = kCompletionWindow;
    return std::nullopt;
}

}  // namespace

void BatchesService::route(SessionJob& job, const std::vector<std::string>& parts) {
    const std::string& m = job.request.method;
    const size_t n = parts.size();
    if (n == 2 && m == "POST") return create(job);
    if (n == 2 && m == "GET") return list(job);
    if (n == 3 && m == "GET") return retrieve(job, parts[2]);
    if (n == 4 && m == "POST" && parts[3] == "cancel") return cancel(job, parts[2]);
    job.reply_error({.http_status = 404, .message = "no route " + m + " " + job.request.path, .code = "not_found"});
}

void BatchesService::create(SessionJob& job) {
    session::StoredBatch b{.id = new_object_id("batch"), .owner = job.owner()};
    if (auto e = parse_create(std::move(job.request.body), b)) return job.reply_error(*e);
    auto input = store_->get_file(b.owner, b.input_file_id);
    if (!input.ok()) return job.reply_error(store_error(input.status().message()));
    if (!input->has_value()) return job.reply_error(no_file_error("input_file_id", b.input_file_id));
    if ((*input)->purpose != "batch") {
        return job.reply_error(bad_field("input_file_id", "file " + b.input_file_id + " has purpose \"" + (*input)->purpose +
                                                              "\"; a batch reads a file of purpose \"batch\""));
    }
    b.created_at = unix_seconds();
    b.expires_at = b.created_at + kCompletionWindowS;
    if (Status s = store_->create_batch(b); !s.ok()) return job.reply_error(store_error(s.message()));
    runner_->notify();
    retrieve(job, b.id);
}

void BatchesService::list(SessionJob& job) {
    ListQuery q;
    if (auto e = parse_list_query(job.request.query, q)) return job.reply_error(*e);
    auto page = store_->list_batches(job.owner(), {.after = q.after, .limit = q.limit});
    if (!page.ok() && page.status().code() == StatusCode::kNotFound) return job.reply_error(no_batch_error(q.after));
    if (!page.ok()) return job.reply_error(store_error(page.status().message()));
    Json data = Json::array();
    for (const session::StoredBatch& b : page->items) data.push_back(batch_object_json(b));
    Json list = {{"object", "list"}, {"data", data}, {"has_more", page->has_more}};
    list["first_id"] = page->items.empty() ? Json(nullptr) : Json(page->items.front().id);
    list["last_id"] = page->items.empty() ? Json(nullptr) : Json(page->items.back().id);
    job.reply(200, list);
}

void BatchesService::retrieve(SessionJob& job, const std::string& id) {
    auto b = store_->get_batch(job.owner(), id);
    if (!b.ok()) return job.reply_error(store_error(b.status().message()));
    if (!b->has_value()) return job.reply_error(no_batch_error(id));
    job.reply(200, batch_object_json(**b));
}

// A validating or in-progress batch becomes cancelling (the runner then cancels its lines and finishes
// it as cancelled); a cancelling or cancelled one is answered as it is; one that finished otherwise: 409.
void BatchesService::cancel(SessionJob& job, const std::string& id) {
    auto b = store_->cancel_batch(job.owner(), id);
    if (!b.ok()) return job.reply_error(store_error(b.status().message()));
    if (!b->has_value()) return job.reply_error(no_batch_error(id));
    const session::BatchStatus status = (*b)->status;
    if (status != session::BatchStatus::kCancelling && status != session::BatchStatus::kCancelled) {
        return job.reply_error({.http_status = 409,
                                .message = "batch " + id + " is " + std::string(session::batch_status_name(status)) +
                                           "; only a validating or in_progress batch can be cancelled",
                                .param = "batch_id",
                                .code = "batch_not_cancellable"});
    }
    runner_->notify();
    job.reply(200, batch_object_json(**b));
}

}  // namespace hichat::api
