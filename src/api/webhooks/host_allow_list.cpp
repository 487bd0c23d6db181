#include "api/webhooks/host_allow_list.h"

#include <algorithm>

#include "api/http/url.h"

namespace hichat::api::webhooks {
namespace {

Status bad_entry(const std::string& entry, const std::string& why) {
    return invalid_argument("--webhook-allow entry '" + entry + "': " + why);
}

// The host Url parsing would give for `name` (lower case, IPv6 canonical), or why it is refused.
Result<std::string> canonical_host(const std::string& entry, std::string_view name) {
    // A ':' outside brackets can only be IPv6 here (ports are not part of an entry).
    std::string bracketed(name);
    if (name.find(':') != std::string_view::npos && name.front() != '[') bracketed = "[" + bracketed + "]";
    auto url = parse_url("http://" + bracketed + "/");
    if (!url.ok() || url->target != "/" || bracketed.back() == ':' ||
        (bracketed.front() == '[' && bracketed.back() != ']')) {
        return bad_entry(entry, "not a host name or IP address (no port, path or userinfo)");
    }
    return url->host;
}

}  // namespace

Result<HostAllowList> HostAllowList::parse(const std::vector<std::string>& entries) {
    HostAllowList list;
    for (const std::string& entry : entries) {
        if (entry.empty()) return bad_entry(entry, "empty");
        if (entry.rfind("*.", 0) == 0) {
            auto host = canonical_host(entry, std::string_view(entry).substr(2));
            if (!host.ok()) return host.status();
            if (is_ip_literal(*host) || host->find('.') == std::string::npos) {
                return bad_entry(entry, "a wildcard needs a domain of at least two labels, e.g. '*.example.com'");
            }
            list.suffixes_.push_back("." + *host);
            continue;
        }
        if (entry.find('*') != std::string::npos) return bad_entry(entry, "'*' is allowed only as a leading '*.'");
        auto host = canonical_host(entry, entry);
        if (!host.ok()) return host.status();
        list.exact_.push_back(std::move(host).value());
    }
    return list;
}

bool HostAllowList::allows(std::string_view host) const {
    if (std::find(exact_.begin(), exact_.end(), host) != exact_.end()) return true;
    if (is_ip_literal(host)) return false;
    return std::any_of(suffixes_.begin(), suffixes_.end(), [&](const std::string& suffix) {
        return host.size() > suffix.size() && host.substr(host.size() - suffix.size()) == suffix;
    });
}

}  // namespace hichat::api::webhooks
