#include "api/telemetry/step_log.h"

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

namespace hichat::api {

Result<std::unique_ptr<StepLog>> StepLog::open(const std::string& path) {
    std::FILE* file = std::fopen(path.c_str(), "a");
    if (file == nullptr) return not_found(path + ": cannot open step log: " + std::strerror(errno));
    return std::unique_ptr<StepLog>(new StepLog(file));
}

StepLog::~StepLog() { std::fclose(file_); }

std::string StepLog::to_json_line(const StepLogRecord& r) {
    nlohmann::ordered_json j;
    j["at_s"] = r.at_s;
    j["ms"] = r.ms;
    j["predicted_ms"] = r.predicted_ms;
    j["blocked_ms"] = r.blocked_ms;
    j["prefill_tokens"] = r.prefill_tokens;
    j["decode_rows"] = r.decode_rows;
    j["decode_keys"] = r.decode_keys;
    j["itl_target_ms"] = r.itl_target_ms;
    j["graphs_captured"] = r.graphs_captured;
    return j.dump();
}

void StepLog::write(const StepLogRecord& record) {
    const std::string line = to_json_line(record) + "\n";
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
}

}  // namespace hichat::api
