// The chat page served at GET /: one self-contained HTML file (no external assets) that keeps its
// conversations on the server (/v1/conversations) and streams each turn from /v1/responses.
#pragma once

#include <string_view>

namespace hichat::api {
std::string_view chat_page_html();
}  // namespace hichat::api
