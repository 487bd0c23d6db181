#include "api/batch_object.h"

namespace hichat::api {
namespace {

using Json = nlohmann::json;

Json time_or_null(int64_t unix_s) { return unix_s > 0 ? Json(unix_s) : Json(nullptr); }
Json id_or_null(const std::string& id) { return id.empty() ? Json(nullptr) : Json(id); }

Json parsed_or_null(const std::string& text) {
    if (text.empty()) return nullptr;
    Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    return j.is_discarded() ? Json(nullptr) : j;
}

}  // namespace

Json file_object_json(const session::StoredFile& f) {
    return {{"id", f.id},           {"object", "file"},        {"bytes", f.num_bytes},
            {"created_at", f.created_at}, {"filename", f.filename}, {"purpose", f.purpose},
            {"status", "processed"}, {"status_details", nullptr}, {"expires_at", nullptr}};
}

Json batch_object_json(const session::StoredBatch& b) {
    return {{"id", b.id},
            {"object", "batch"},
            {"endpoint", b.endpoint},
            {"errors", parsed_or_null(b.errors_json)},
            {"input_file_id", b.input_file_id},
            {"completion_window", b.completion_window},
            {"status", std::string(session::batch_status_name(b.status))},
            {"output_file_id", id_or_null(b.output_file_id)},
            {"error_file_id", id_or_null(b.error_file_id)},
            {"created_at", b.created_at},
            {"in_progress_at", time_or_null(b.in_progress_at)},
            {"expires_at", time_or_null(b.expires_at)},
            {"finalizing_at", time_or_null(b.finalizing_at)},
            {"completed_at", time_or_null(b.completed_at)},
            {"failed_at", time_or_null(b.failed_at)},
            {"expired_at", time_or_null(b.expired_at)},
            {"cancelling_at", time_or_null(b.cancelling_at)},
            {"cancelled_at", time_or_null(b.cancelled_at)},
            {"request_counts", {{"total", b.num_requests_total},
                                {"completed", b.num_requests_completed},
                                {"failed", b.num_requests_failed}}},
            {"metadata", parsed_or_null(b.metadata_json)}};
}

}  // namespace hichat::api
