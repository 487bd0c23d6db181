// HostAllowList: the hosts webhooks may be sent to (--webhook-allow), so that no URL, configured
// or given with an event, makes the server call an address the operator did not list (server-side
// request forgery). Checked against Url::host before any DNS lookup or connection.
//
// Entries (case-insensitive):
//   "hooks.example.com"   exactly this name
//   "*.example.com"       any name ending in ".example.com" (not "example.com" itself)
//   "10.0.0.7", "::1"     an IP literal (IPv6 with or without brackets); a target that is an IP
//                         literal is allowed only when that address is listed, never by a wildcard
// Ports and paths are not part of an entry. A listed name is trusted with whatever it resolves to.
//
// Immutable after parse(): any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hichat::api::webhooks {

class HostAllowList {
public:
    // Errors name the flag and the entry: empty, a character other than letters, digits, '-', '.',
    // a '*' anywhere but a leading "*." before at least two labels, a malformed IP literal.
    static Result<HostAllowList> parse(const std::vector<std::string>& entries);

    // `host` as Url::host gives it (lower case, IPv6 without brackets, canonical).
    bool allows(std::string_view host) const;
    bool empty() const { return exact_.empty() && suffixes_.empty(); }

private:
    std::vector<std::string> exact_;     // names and canonical IP literals, lower case
    std::vector<std::string> suffixes_;  // ".example.com" for "*.example.com"
};

}  // namespace hichat::api::webhooks
