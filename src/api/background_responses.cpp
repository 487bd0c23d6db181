#include "api/background_responses.h"

#include <chrono>

#include <nlohmann/json.hpp>

namespace hichat::api {
namespace {

std::string dump(const nlohmann::ordered_json& j) {
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

std::string_view background_event_type(std::string_view status) {
    if (status == "completed") return "response.completed";
    if (status == "incomplete") return "response.incomplete";
    if (status == "failed") return "response.failed";
    if (status == "cancelled") return "response.cancelled";
    return "";
}

BackgroundResponses::BackgroundResponses(session::SessionStore& store,
                                         std::function<void(engine::RequestId)> cancel_request,
                                         BackgroundHook on_finished, bool owe_webhooks)
    : store_(store), cancel_request_(std::move(cancel_request)), on_finished_(std::move(on_finished)),
      owe_webhooks_(owe_webhooks) {}

Status BackgroundResponses::write_locked(Run& run, const std::optional<session::OwedWebhook>& owed) {
    run.row.response_json = dump(response_json(run.state));
    return store_.put_response(run.row, owed);
}

std::optional<session::OwedWebhook> BackgroundResponses::owed_event(const std::string& id,
                                                                     std::string_view status) const {
    if (!owe_webhooks_ || background_event_type(status).empty()) return std::nullopt;
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    return session::OwedWebhook{.object_id = id, .event_type = std::string(background_event_type(status)),
                                .created_at_ms = now_ms};
}

void BackgroundResponses::end_locked(Runs::iterator it, std::string_view status) {
    const std::string id = it->first;
    runs_.erase(it);
    if (on_finished_) on_finished_(id, status);
}

Status BackgroundResponses::add(session::StoredResponse row, ResponseState state, engine::RequestId request_id) {
    std::lock_guard lock(mu_);
    Run run{.row = std::move(row), .state = std::move(state), .request_id = request_id};
    HICHAT_RETURN_IF_ERROR(write_locked(run));
    const std::string id = run.state.id;
    runs_.insert_or_assign(id, std::move(run));
    return ok_status();
}

void BackgroundResponses::drop(const std::string& id) {
    std::lock_guard lock(mu_);
    auto it = runs_.find(id);
    if (it == runs_.end()) return;
    (void)store_.delete_response(it->second.row.owner, id);
    runs_.erase(it);
}

void BackgroundResponses::mark_started(const std::string& id) {
    std::lock_guard lock(mu_);
    auto it = runs_.find(id);
    if (it == runs_.end() || it->second.state.status != "queued") return;
    it->second.state.status = "in_progress";
    (void)write_locked(it->second);  // a failed write leaves it "queued"; its end is written later
}

std::optional<ApiError> BackgroundResponses::finish(const std::string& id, std::string_view status,
                                                    const PersistFinal& persist) {
    std::lock_guard lock(mu_);
    auto it = runs_.find(id);
    if (it == runs_.end()) return std::nullopt;
    if (auto e = persist(owed_event(id, status))) return e;
    end_locked(it, status);
    return std::nullopt;
}

void BackgroundResponses::fail(const std::string& id, const ApiError& e) {
    std::lock_guard lock(mu_);
    auto it = runs_.find(id);
    if (it == runs_.end()) return;
    ResponseState& s = it->second.state;
    s.status = "failed";
    s.error_code = e.code.empty() ? "server_error" : e.code;
    s.error_message = e.message;
    // On failure it stays in progress in the store: failed (and its event owed) at the next start.
    (void)write_locked(it->second, owed_event(id, "failed"));
    end_locked(it, "failed");
}

std::optional<std::string> BackgroundResponses::cancel(const std::string& id) {
    std::lock_guard lock(mu_);
    auto it = runs_.find(id);
    if (it == runs_.end()) return std::nullopt;
    it->second.state.status = "cancelled";
    (void)write_locked(it->second, owed_event(id, "cancelled"));
    std::string object = it->second.row.response_json;
    // An id the engine does not know yet (cancelled before its submit) is ignored there; the run is
    // ended here all the same, so whatever it still produces is never stored.
    cancel_request_(it->second.request_id);
    end_locked(it, "cancelled");
    return object;
}

Result<int> BackgroundResponses::fail_unfinished() {
    std::lock_guard lock(mu_);
    auto rows = store_.unfinished_background_responses();
    HICHAT_RETURN_IF_ERROR(rows.status());
    int num_failed = 0;
    for (session::StoredResponse& row : *rows) {
        if (runs_.count(row.id) > 0) continue;  // running here: not left over by a stopped server
        auto j = nlohmann::ordered_json::parse(row.response_json, nullptr, false);
        if (!j.is_object()) continue;
        j["status"] = "failed";
        j["error"] = {{"code", "server_error"},
                      {"message", "the server stopped before this background response finished"}};
        const std::string id = row.id;
        row.response_json = dump(j);
        HICHAT_RETURN_IF_ERROR(store_.put_response(std::move(row), owed_event(id, "failed")));
        ++num_failed;
        if (on_finished_) on_finished_(id, "failed");
    }
    return num_failed;
}

size_t BackgroundResponses::num_running() const {
    std::lock_guard lock(mu_);
    return runs_.size();
}

}  // namespace hichat::api
