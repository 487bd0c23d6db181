#include "api/webhooks/webhook_flags.h"

#include <algorithm>
#include <fstream>
#include <utility>
#include <sstream>

namespace hichat::api::webhooks {
namespace {

std::vector<std::string> split_commas(const std::string& text) {
    std::vector<std::string> parts;
    std::string part;
    std::istringstream in(text);
    while (std::getline(in, part, ',')) parts.push_back(part);
    if (!text.empty() && text.back() == ',') parts.emplace_back();
    return parts;
}

// The file's first line, without its line break: secrets are one line.
Result<std::string> read_secret_file(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) return not_found("--webhook-secret-file '" + path + "': cannot open file");
    std::string line;
    std::getline(file, line);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
}

}  // namespace

Result<WebhookConfig> parse_webhook_flags(const WebhookFlagValues& flags) {
    WebhookConfig config;
    if (flags.urls.empty()) {
        const std::pair<bool, const char*> others[] = {{!flags.allow.empty(), "--webhook-allow"},
                                                       {!flags.secret_file.empty(), "--webhook-secret-file"},
                                                       {!flags.state_db.empty(), "--webhook-state-db"},
                                                       {flags.max_attempts != 0, "--webhook-max-attempts"},
                                                       {flags.retry_base_ms != 0, "--webhook-retry-base-ms"}};
        for (const auto& [given, name] : others) {
            if (given) return invalid_argument(std::string(name) + " has no effect without --webhook-url");
        }
        return config;
    }
    config.target_urls = flags.urls;
    for (const std::string& list : flags.allow) {
        for (std::string& host : split_commas(list)) {
            if (host.empty()) return invalid_argument("--webhook-allow '" + list + "': empty host");
            config.allowed_hosts.push_back(std::move(host));
        }
    }
    if (!flags.secret_file.empty() && !flags.secret_env.empty()) {
        return invalid_argument("--webhook-secret-file and HICHAT_WEBHOOK_SECRET are both set; give one");
    }
    if (flags.secret_file.empty() && flags.secret_env.empty()) {
        return invalid_argument("--webhook-url needs a secret: --webhook-secret-file or HICHAT_WEBHOOK_SECRET");
    }
    if (!flags.secret_file.empty()) {
        auto secret = read_secret_file(flags.secret_file);
        if (!secret.ok()) return secret.status();
        config.secret = std::move(secret).value();
    } else {
        config.secret = flags.secret_env;
    }
    config.state_db_path = flags.state_db;
    if (flags.max_attempts != 0) config.retry.max_attempts = flags.max_attempts;
    if (flags.retry_base_ms != 0) {
        if (flags.retry_base_ms < 1) {
            return invalid_argument("--webhook-retry-base-ms must be at least 1, got " + std::to_string(flags.retry_base_ms));
        }
        config.retry.backoff_base_ms = flags.retry_base_ms;
        // A base above the default cap raises the cap with it: the first retry waits what was asked.
        config.retry.backoff_cap_ms = std::max(config.retry.backoff_cap_ms, flags.retry_base_ms);
    }
    HICHAT_RETURN_IF_ERROR(config.validate());
    return config;
}

}  // namespace hichat::api::webhooks
