// The chat page served at GET /: one self-contained HTML file (no external assets) that streams
// replies from /v1/chat/completions.
#pragma once

#include <string_view>

namespace hichat::api {
std::string_view chat_page_html();
}  // namespace hichat::api
