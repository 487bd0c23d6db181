// HostAllowList, WebhookConfig::validate, RetryPolicy, the payload and parse_webhook_flags.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../common/temp_dir.h"
#include "api/http/url.h"
#include "api/webhooks/host_allow_list.h"
#include "api/webhooks/webhook_config.h"
#include "api/webhooks/webhook_flags.h"
#include "api/webhooks/webhook_payload.h"

namespace hichat::api::webhooks {
namespace {

const std::string kSecret = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

bool allows(const HostAllowList& list, const std::string& url) { return list.allows(parse_url(url)->host); }

TEST(HostAllowList, ExactNamesAreCaseInsensitive) {
    auto list = HostAllowList::parse({"Hooks.Example.com"});
    ASSERT_TRUE(list.ok()) << list.status().message();
    EXPECT_TRUE(allows(*list, "https://hooks.example.com/x"));
    EXPECT_TRUE(allows(*list, "https://HOOKS.EXAMPLE.COM:9/x"));
    EXPECT_FALSE(allows(*list, "https://example.com/"));
    EXPECT_FALSE(allows(*list, "https://a.hooks.example.com/"));
    EXPECT_FALSE(allows(*list, "https://hooks.example.com.evil.net/"));
    EXPECT_FALSE(allows(*list, "https://localhost/"));
}

TEST(HostAllowList, WildcardsMatchSubdomainsButNeverIpLiterals) {
    auto list = HostAllowList::parse({"*.example.com"});
    ASSERT_TRUE(list.ok());
    EXPECT_TRUE(allows(*list, "https://a.example.com/"));
    EXPECT_TRUE(allows(*list, "https://a.b.example.com/"));
    EXPECT_FALSE(allows(*list, "https://example.com/"));
    EXPECT_FALSE(allows(*list, "https://badexample.com/"));
    EXPECT_FALSE(allows(*list, "http://127.0.0.1/"));
}

TEST(HostAllowList, IpLiteralsOnlyWhenListed) {
    auto list = HostAllowList::parse({"127.0.0.1", "[0::1]", "fd00::7"});
    ASSERT_TRUE(list.ok()) << list.status().message();
    EXPECT_TRUE(allows(*list, "http://127.0.0.1:8080/"));
    EXPECT_TRUE(allows(*list, "http://[::1]/"));
    EXPECT_TRUE(allows(*list, "http://[fd00:0::7]/"));
    EXPECT_FALSE(allows(*list, "http://127.0.0.2/"));
    EXPECT_FALSE(allows(*list, "http://localhost/"));
    EXPECT_FALSE(allows(*list, "http://169.254.169.254/"));
    EXPECT_FALSE(HostAllowList::parse({}).value().allows("127.0.0.1"));
}

TEST(HostAllowList, BadEntriesNameTheFlag) {
    for (const char* bad : {"", "*", "*.com", "a.*.com", "*example.com", "example.com:443", "example.com/x",
                            "user@example.com", "2130706433", "[::1", "*.10.0.0.1", "exa mple.com"}) {
        auto list = HostAllowList::parse({bad});
        ASSERT_FALSE(list.ok()) << bad;
        EXPECT_NE(list.status().message().find("--webhook-allow"), std::string::npos) << list.status().message();
    }
}

WebhookConfig config_for(std::vector<std::string> urls, std::vector<std::string> allow) {
    WebhookConfig config;
    config.target_urls = std::move(urls);
    config.allowed_hosts = std::move(allow);
    config.secret = kSecret;
    return config;
}

TEST(WebhookConfig, TargetOutsideTheAllowListIsAStartupErrorNamingTheFlag) {
    EXPECT_TRUE(config_for({"https://hooks.example.com/x"}, {"hooks.example.com"}).validate().ok());
    Status s = config_for({"https://hooks.example.com/x", "http://10.0.0.1/"}, {"hooks.example.com"}).validate();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("'10.0.0.1'"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("--webhook-allow"), std::string::npos) << s.message();
    s = config_for({"https://hooks.example.com/x"}, {}).validate();
    EXPECT_NE(s.message().find("--webhook-allow"), std::string::npos) << s.message();
    s = config_for({"ftp://hooks.example.com/x"}, {"hooks.example.com"}).validate();
    EXPECT_NE(s.message().find("--webhook-url"), std::string::npos) << s.message();
}

TEST(WebhookConfig, ValidatesSecretRetryAndLimits) {
    WebhookConfig config = config_for({}, {});
    EXPECT_TRUE(config.validate().ok());
    config.secret = "whsec_short";
    EXPECT_NE(config.validate().message().find("--webhook-secret-file"), std::string::npos);
    config = config_for({}, {});
    config.retry.max_attempts = 0;
    EXPECT_NE(config.validate().message().find("--webhook-max-attempts"), std::string::npos);
    config = config_for({}, {});
    config.retry.backoff_cap_ms = config.retry.backoff_base_ms - 1;
    EXPECT_FALSE(config.validate().ok());
    config = config_for({}, {});
    config.retry.jitter = 1.0;
    EXPECT_FALSE(config.validate().ok());
}

TEST(RetryPolicy, DoublesFromTheBaseUpToTheCap) {
    RetryPolicy p;  // 5 s base, 1 h cap
    p.jitter = 0;
    EXPECT_EQ(p.delay_ms(1, 0.9), 5000);
    EXPECT_EQ(p.delay_ms(2, 0.9), 10000);
    EXPECT_EQ(p.delay_ms(3, 0.9), 20000);
    EXPECT_EQ(p.delay_ms(10, 0.9), 2'560'000);
    EXPECT_EQ(p.delay_ms(11, 0.9), 3'600'000);
    EXPECT_EQ(p.delay_ms(1000, 0.9), 3'600'000);
    p.jitter = 0.2;
    EXPECT_EQ(p.delay_ms(2, 0.0), 10000);
    EXPECT_EQ(p.delay_ms(2, 0.5), 9000);
    EXPECT_EQ(p.delay_ms(2, 0.75), 8500);
}

TEST(WebhookPayload, OpenAiEventObjectInThatOrder) {
    auto body = make_payload("batch.completed", R"({"id": "batch_1", "n": 2})", 1767323045678, "evt_1");
    ASSERT_TRUE(body.ok()) << body.status().message();
    EXPECT_EQ(*body,
              R"({"object":"event","id":"evt_1","type":"batch.completed","created_at":1767323045,"data":{"id":"batch_1","n":2}})");
    EXPECT_EQ(iso8601_utc(0), "1970-01-01T00:00:00.000Z");
    EXPECT_FALSE(make_payload("Batch Completed", "{}", 0, "evt_1").ok());
    EXPECT_FALSE(make_payload("", "{}", 0, "evt_1").ok());
    EXPECT_FALSE(make_payload("x", "[1]", 0, "evt_1").ok());
    EXPECT_FALSE(make_payload("x", "{", 0, "evt_1").ok());
    EXPECT_FALSE(make_payload("x", "{} {}", 0, "evt_1").ok());
    const std::string a = new_event_id(), b = new_event_id();
    EXPECT_EQ(a.size(), 4u + 32u);
    EXPECT_EQ(a.rfind("evt_", 0), 0u);
    EXPECT_NE(a, b);
}

TEST(WebhookPayload, MessageIdsAreFreshAndWellFormed) {
    const std::string a = new_message_id(), b = new_message_id();
    EXPECT_NE(a, b);
    ASSERT_EQ(a.size(), 4u + 32u);
    EXPECT_EQ(a.rfind("msg_", 0), 0u);
    EXPECT_EQ(a.find_first_not_of("0123456789abcdef", 4), std::string::npos);
}

TEST(WebhookFlags, BuildsAValidatedConfig) {
    test_support::TempDir dir;
    const std::string secret_file = dir.write("secret", kSecret + "\n");
    auto config = parse_webhook_flags({.urls = {"https://hooks.example.com/a"},
                                       .allow = {"hooks.example.com,*.internal.example", "10.0.0.1"},
                                       .secret_file = secret_file,
                                       .state_db = dir.path() + "/webhooks.db",
                                       .max_attempts = 3,
                                       .retry_base_ms = 50});
    ASSERT_TRUE(config.ok()) << config.status().message();
    EXPECT_EQ(config->secret, kSecret);
    EXPECT_EQ(config->allowed_hosts, (std::vector<std::string>{"hooks.example.com", "*.internal.example", "10.0.0.1"}));
    EXPECT_EQ(config->retry.max_attempts, 3);
    EXPECT_EQ(config->retry.backoff_base_ms, 50);
    EXPECT_EQ(config->retry.backoff_cap_ms, RetryPolicy{}.backoff_cap_ms);
    EXPECT_EQ(config->state_db_path, dir.path() + "/webhooks.db");
    EXPECT_TRUE(parse_webhook_flags({}).value().target_urls.empty());  // webhooks off
}

TEST(WebhookFlags, ErrorsNameTheFlag) {
    const std::pair<WebhookFlagValues, const char*> cases[] = {
        {{.urls = {"https://hooks.example.com/a"}, .allow = {"hooks.example.com"}}, "--webhook-secret-file"},
        {{.urls = {"https://hooks.example.com/a"}, .allow = {"hooks.example.com"}, .secret_file = "/nonexistent/x",
          .secret_env = kSecret},
         "both"},
        {{.urls = {"https://hooks.example.com/a"}, .allow = {"hooks.example.com"}, .secret_file = "/nonexistent/x"},
         "--webhook-secret-file '/nonexistent/x'"},
        {{.urls = {"https://hooks.example.com/a"}, .allow = {"hooks.example.com,"}, .secret_env = kSecret},
         "--webhook-allow"},
        {{.urls = {"https://hooks.example.com/a"}, .allow = {"other.example.com"}, .secret_env = kSecret},
         "is not in --webhook-allow"},
        {{.allow = {"hooks.example.com"}}, "--webhook-allow has no effect without --webhook-url"},
        {{.retry_base_ms = 50}, "--webhook-retry-base-ms has no effect without --webhook-url"},
        {{.urls = {"https://hooks.example.com/a"}, .allow = {"hooks.example.com"}, .secret_env = kSecret,
          .retry_base_ms = -1},
         "--webhook-retry-base-ms"},
    };
    for (const auto& [flags, needle] : cases) {
        auto config = parse_webhook_flags(flags);
        ASSERT_FALSE(config.ok()) << needle;
        EXPECT_NE(config.status().message().find(needle), std::string::npos) << config.status().message();
    }
}

}  // namespace
}  // namespace hichat::api::webhooks
