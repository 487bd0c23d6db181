// AccessLog: one JSON line per finished request (to_json_line) through an spdlog logger whose pattern
// is "%v", so each line is pure JSON. Writes to stderr or appends to a file. Thread-safe (spdlog _mt
// sinks); any HTTP thread may call write().
#pragma once

#include <memory>
#include <string>

#include "api/telemetry/access_record.h"
#include "base/status.h"

namespace spdlog {
class logger;
}

namespace hichat::api {

class AccessLog {
public:
    // path "" or "-": stderr. Otherwise the file is created or appended to.
    // Errors: kNotFound naming the path when it cannot be opened.
    static Result<std::unique_ptr<AccessLog>> open(const std::string& path);
    ~AccessLog();
    AccessLog(const AccessLog&) = delete;
    AccessLog& operator=(const AccessLog&) = delete;

    void write(const AccessRecord& record);
    void flush();

private:
    explicit AccessLog(std::shared_ptr<spdlog::logger> logger);
    std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace hichat::api
