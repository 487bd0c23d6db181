// parse_multipart_form: a multipart/form-data body (RFC 7578), as the OpenAI SDK's files.create sends
// it (fields `purpose` and `file`). Pure functions; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hichat::api {

struct MultipartPart {
    std::string name;                       // Content-Disposition's name
    std::optional<std::string> filename;    // Content-Disposition's filename, when the part is a file
    std::string content_type;               // the part's Content-Type; "" when absent
    std::string_view data;                  // the part's bytes: a view into the parsed body
};

// The boundary parameter of a Content-Type header value "multipart/form-data; boundary=...";
// nullopt when the type is another one or the parameter is missing, empty or longer than 70 bytes.
std::optional<std::string> multipart_boundary(std::string_view content_type);

// The parts of `body` in order. The views in the result point into `body`. Fails (naming what is
// wrong) on a missing first boundary, a part without a blank line after its headers or without
// `Content-Disposition: form-data; name=...`, or a body that ends before the closing boundary.
Result<std::vector<MultipartPart>> parse_multipart_form(std::string_view body, std::string_view boundary);

// The first part named `name`, or null.
const MultipartPart* find_part(const std::vector<MultipartPart>& parts, std::string_view name);

}  // namespace hichat::api
