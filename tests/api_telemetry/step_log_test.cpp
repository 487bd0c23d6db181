#include "api/telemetry/step_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/temp_dir.h"

namespace hichat::api {
namespace {

using test_support::TempDir;
using Json = nlohmann::json;

std::vector<std::string> lines_of(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

TEST(StepLog, OneJsonLinePerStepWithEveryField) {
    TempDir dir;
    const std::string path = dir.path() + "/steps.jsonl";
    {
        auto log = StepLog::open(path);
        ASSERT_TRUE(log.ok()) << log.status().message();
        (*log)->write({.at_s = 1.5, .ms = 12.25, .predicted_ms = 11.5, .blocked_ms = 0.125, .prefill_tokens = 640,
                       .decode_rows = 250, .decode_keys = 48000, .itl_target_ms = 25, .graphs_captured = 1});
        (*log)->write({.at_s = 1.6, .ms = 9.0, .decode_rows = 256});
        // Flushed as written: readable before the log is closed.
        EXPECT_EQ(lines_of(path).size(), 2u);
    }
    const std::vector<std::string> lines = lines_of(path);
    ASSERT_EQ(lines.size(), 2u);
    const Json first = Json::parse(lines[0]);
    EXPECT_DOUBLE_EQ(first["at_s"].get<double>(), 1.5);
    EXPECT_DOUBLE_EQ(first["ms"].get<double>(), 12.25);
    EXPECT_DOUBLE_EQ(first["predicted_ms"].get<double>(), 11.5);
    EXPECT_DOUBLE_EQ(first["blocked_ms"].get<double>(), 0.125);
    EXPECT_EQ(first["prefill_tokens"].get<int>(), 640);
    EXPECT_EQ(first["decode_rows"].get<int>(), 250);
    EXPECT_DOUBLE_EQ(first["decode_keys"].get<double>(), 48000);
    EXPECT_DOUBLE_EQ(first["itl_target_ms"].get<double>(), 25);
    EXPECT_EQ(first["graphs_captured"].get<int>(), 1);
    const Json second = Json::parse(lines[1]);
    EXPECT_EQ(second["prefill_tokens"].get<int>(), 0);
    EXPECT_EQ(second["decode_rows"].get<int>(), 256);
}

TEST(StepLog, AppendsToAnExistingFile) {
    TempDir dir;
    const std::string path = dir.path() + "/steps.jsonl";
    for (int run = 0; run < 2; ++run) {
        auto log = StepLog::open(path);
        ASSERT_TRUE(log.ok());
        (*log)->write({.ms = 1.0 + run});
    }
    const std::vector<std::string> lines = lines_of(path);
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_DOUBLE_EQ(Json::parse(lines[1])["ms"].get<double>(), 2.0);
}

TEST(StepLog, AnUnwritablePathIsAnErrorNamingIt) {
    auto log = StepLog::open("/nonexistent-dir/steps.jsonl");
    ASSERT_FALSE(log.ok());
    EXPECT_NE(log.status().message().find("/nonexistent-dir/steps.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace hichat::api
