#include "api/telemetry/access_log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "api/policy/api_key_store.h"
#include "common/temp_dir.h"

namespace hichat::api {
namespace {

using test_support::TempDir;
using Json = nlohmann::json;

// Reference for the timestamp: C++20 calendar types (a different algorithm from gmtime_r).
std::string reference_iso8601(std::chrono::system_clock::time_point t) {
    using namespace std::chrono;
    auto ms = floor<milliseconds>(t);
    auto day = floor<days>(ms);
    year_month_day ymd{day};
    hh_mm_ss<milliseconds> hms{ms - day};
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                  static_cast<int>(hms.seconds().count()), static_cast<int>(hms.subseconds().count()));
    return buf;
}

AccessRecord sample_record() {
    AccessRecord r;
    r.ts = std::chrono::system_clock::now();
    r.request_id = "req-42";
    r.key_id = KeyId{"key-0123abcd"};
    r.method = "POST";
    r.path = "/v1/chat/completions";
    r.status = 200;
    r.num_tokens_prompt = 123;
    r.num_tokens_completion = 45;
    r.ttft_ms = 87.25;
    r.duration_ms = 1534.5;
    r.finish_reason = "stop";
    r.remote = "10.0.0.7:51234";
    r.num_bytes_sent = 1024;
    return r;
}

TEST(AccessRecordTest, TimestampMatchesCalendarReference) {
    using namespace std::chrono;
    std::mt19937_64 rng(1);
    std::vector<system_clock::time_point> times = {system_clock::time_point{}, system_clock::now()};
    for (int i = 0; i < 500; ++i) {
        // 1970 .. ~2100, arbitrary milliseconds
        times.push_back(system_clock::time_point{} + milliseconds(static_cast<int64_t>(rng() % 4'100'000'000'000ULL)));
    }
    for (auto t : times) EXPECT_EQ(format_iso8601_utc(t), reference_iso8601(t));
    EXPECT_EQ(format_iso8601_utc(system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
}

TEST(AccessRecordTest, LineIsOneJsonObjectWithEveryField) {
    AccessRecord r = sample_record();
    std::string line = to_json_line(r);
    EXPECT_EQ(line.find('\n'), std::string::npos);
    Json j = Json::parse(line);
    ASSERT_TRUE(j.is_object());
    for (const char* field : {"ts", "request_id", "key_id", "method", "path", "status", "prompt_tokens",
                              "completion_tokens", "ttft_ms", "duration_ms", "finish_reason", "remote", "bytes_sent"}) {
        EXPECT_TRUE(j.contains(field)) << field;
    }
    EXPECT_EQ(j.size(), 13u);
    EXPECT_EQ(j["ts"], reference_iso8601(r.ts));
    EXPECT_EQ(j["request_id"], "req-42");
    EXPECT_EQ(j["key_id"], "key-0123abcd");
    EXPECT_EQ(j["method"], "POST");
    EXPECT_EQ(j["path"], "/v1/chat/completions");
    EXPECT_EQ(j["status"], 200);
    EXPECT_EQ(j["prompt_tokens"], 123);
    EXPECT_EQ(j["completion_tokens"], 45);
    EXPECT_DOUBLE_EQ(j["ttft_ms"].get<double>(), 87.25);
    EXPECT_DOUBLE_EQ(j["duration_ms"].get<double>(), 1534.5);
    EXPECT_EQ(j["finish_reason"], "stop");
    EXPECT_EQ(j["remote"], "10.0.0.7:51234");
    EXPECT_EQ(j["bytes_sent"], 1024);
}

TEST(AccessRecordTest, MissingValuesAreNull) {
    AccessRecord r = sample_record();
    r.key_id.reset();
    r.ttft_ms.reset();
    r.finish_reason.clear();
    Json j = Json::parse(to_json_line(r));
    EXPECT_TRUE(j["key_id"].is_null());
    EXPECT_TRUE(j["ttft_ms"].is_null());
    EXPECT_TRUE(j["finish_reason"].is_null());
}

TEST(AccessRecordTest, HostileStringsAreEscaped) {
    AccessRecord r = sample_record();
    r.path = "/v1/x?q=\"}{\\\n\r\t\x01{}";
    r.request_id = "{} {0} %s";
    std::string line = to_json_line(r);
    EXPECT_EQ(line.find('\n'), std::string::npos);
    Json j = Json::parse(line);
    EXPECT_EQ(j["path"], r.path);
    EXPECT_EQ(j["request_id"], r.request_id);

    r.path = "/bad\xff\xfe utf8";
    Json j2 = Json::parse(to_json_line(r));  // replaced, not thrown
    EXPECT_TRUE(j2["path"].is_string());
}

TEST(AccessLogTest, WritesJsonLinesToAFileWithKeyIdNeverTheKey) {
    const std::string key = "sk-access-log-secret-777";
    auto store = ApiKeyStore::create({key}, {});
    ASSERT_TRUE(store.ok());
    std::optional<KeyId> id = store->authenticate("Bearer " + key);
    ASSERT_TRUE(id.has_value());

    TempDir dir;
    std::string path = dir.path() + "/access.log";
    {
        auto log = AccessLog::open(path);
        ASSERT_TRUE(log.ok()) << log.status().message();
        for (int i = 0; i < 3; ++i) {
            AccessRecord r = sample_record();
            r.request_id = "req-" + std::to_string(i);
            r.key_id = id;
            r.path = "/v1/chat/completions?{braces}";
            (*log)->write(r);
        }
    }
    {  // reopening appends
        auto log = AccessLog::open(path);
        ASSERT_TRUE(log.ok());
        AccessRecord r = sample_record();
        r.request_id = "req-3";
        (*log)->write(r);
        (*log)->flush();
    }
    std::string contents = TempDir::read(path);
    EXPECT_EQ(contents.find(key), std::string::npos);
    std::istringstream in(contents);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        Json j = Json::parse(line);  // the pattern is "%v": nothing but JSON on the line
        EXPECT_EQ(j["request_id"], "req-" + std::to_string(n));
        if (n < 3) {
            EXPECT_EQ(j["key_id"], id->value);
            EXPECT_EQ(j["path"], "/v1/chat/completions?{braces}");
        }
        ++n;
    }
    EXPECT_EQ(n, 4);
}

TEST(AccessLogTest, UnopenablePathIsAnErrorNamingIt) {
    TempDir dir;
    std::string path = dir.write("plain_file", "x") + "/sub/access.log";  // parent is a file
    auto log = AccessLog::open(path);
    ASSERT_FALSE(log.ok());
    EXPECT_NE(log.status().message().find(path), std::string::npos) << log.status().message();
}

TEST(AccessLogTest, StderrLoggerOpens) {
    auto log = AccessLog::open("-");
    ASSERT_TRUE(log.ok());
    testing::internal::CaptureStderr();
    AccessRecord r = sample_record();
    (*log)->write(r);
    (*log)->flush();
    std::string err = testing::internal::GetCapturedStderr();
    ASSERT_FALSE(err.empty());
    EXPECT_EQ(err.back(), '\n');
    Json j = Json::parse(err);
    EXPECT_EQ(j["request_id"], "req-42");
}

}  // namespace
}  // namespace hichat::api
