#include "api/telemetry/access_record.h"

#include <time.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace hichat::api {
namespace {

using Json = nlohmann::ordered_json;  // keeps the documented field order in the line

Json string_or_null(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

// Durations rounded to microseconds: enough for latency work, and the line stays short.
double round_ms(double ms) { return std::round(ms * 1000.0) / 1000.0; }

}  // namespace

std::string format_iso8601_utc(std::chrono::system_clock::time_point t) {
    using namespace std::chrono;
    auto ms_since_epoch = floor<milliseconds>(t).time_since_epoch().count();
    time_t seconds = static_cast<time_t>(ms_since_epoch >= 0 ? ms_since_epoch / 1000 : (ms_since_epoch - 999) / 1000);
    int millis = static_cast<int>(ms_since_epoch - static_cast<int64_t>(seconds) * 1000);
    struct tm tm {};
    gmtime_r(&seconds, &tm);
    char buf[48];
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
    return buf;
}

std::string to_json_line(const AccessRecord& r) {
    Json j;
    j["ts"] = format_iso8601_utc(r.ts);
    j["request_id"] = r.request_id;
    j["key_id"] = r.key_id ? Json(r.key_id->value) : Json(nullptr);
    j["method"] = r.method;
    j["path"] = r.path;
    j["status"] = r.status;
    j["prompt_tokens"] = r.num_tokens_prompt;
    j["completion_tokens"] = r.num_tokens_completion;
    j["ttft_ms"] = r.ttft_ms ? Json(round_ms(*r.ttft_ms)) : Json(nullptr);
    j["duration_ms"] = round_ms(r.duration_ms);
    j["finish_reason"] = string_or_null(r.finish_reason);
    j["remote"] = r.remote;
    j["bytes_sent"] = r.num_bytes_sent;
    // replace: a client-chosen path with invalid UTF-8 must not make dump() throw.
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace hichat::api
