#include "api/webhooks/webhook_flags.h"

#include <fstream>
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
    const bool other_flags = !flags.allow.empty() || !flags.secret_file.empty() || !flags.state_db.empty() ||
                             flags.max_attempts != 0;
    if (flags.urls.empty()) {
        if (other_flags) return invalid_argument("webhook flags without --webhook-url would have no effect");
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
    HICHAT_RETURN_IF_ERROR(config.validate());
    return config;
}

}  // namespace hichat::api::webhooks
