// SessionJob: one request of the Responses or Conversations API between its admission (I/O thread:
// API key, quota) and its answer, which a preprocessing worker (store reads and writes, tokenizing) or
// the engine thread (a generated response) sends. Plain data, moved to the worker.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/http/http_request.h"
#include "api/http/response_writer.h"
#include "api/policy/key_id.h"
#include "api/policy/quota_lease.h"
#include "api/telemetry/access_record.h"
#include "engine/request.h"

namespace hichat::api {

struct SessionJob {
    HttpRequest request;
    std::shared_ptr<ResponseWriter> writer;
    std::optional<KeyId> key;
    QuotaLease lease;
    engine::Clock::time_point arrival;

    // The rows this request may see: its API key's id; "" when no keys are configured.
    std::string owner() const { return key ? key->value : std::string(); }

    void reply(int status, const nlohmann::json& body) const {
        if (key) writer->annotate(AccessRecord{.key_id = key});
        writer->send(status, "application/json", body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    void reply_error(const ApiError& e, HeaderList extra = {}) const {
        if (writer->response_started()) return;
        if (key) writer->annotate(AccessRecord{.key_id = key});
        writer->send(e.http_status, "application/json", e.to_json(), std::move(extra));
    }
};

inline ApiError not_found_error(const std::string& param, const std::string& what) {
    return {.http_status = 404, .message = what, .param = param, .code = "not_found"};
}

inline ApiError store_error(const std::string& message) {
    return {.http_status = 500, .message = "session store: " + message, .type = "server_error"};
}

}  // namespace hichat::api
