#include "api/telemetry/access_log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace hichat::api {

// The logger is built directly rather than through spdlog's registry, so several AccessLogs (tests,
// reopen after rotation) never clash on a global logger name.
Result<std::unique_ptr<AccessLog>> AccessLog::open(const std::string& path) {
    spdlog::sink_ptr sink;
    try {
        if (path.empty() || path == "-") {
            sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
        } else {
            sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
        }
    } catch (const spdlog::spdlog_ex& e) {
        return not_found(path + ": cannot open access log: " + e.what());
    }
    auto logger = std::make_shared<spdlog::logger>("access", std::move(sink));
    logger->set_pattern("%v");
    logger->set_level(spdlog::level::info);
    logger->flush_on(spdlog::level::info);  // one line per request: visible to tail -f at once
    return std::unique_ptr<AccessLog>(new AccessLog(std::move(logger)));
}

AccessLog::AccessLog(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}

AccessLog::~AccessLog() { logger_->flush(); }

void AccessLog::write(const AccessRecord& record) { logger_->info(to_json_line(record)); }

void AccessLog::flush() { logger_->flush(); }

}  // namespace hichat::api
