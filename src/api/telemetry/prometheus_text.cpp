#include "api/telemetry/prometheus_text.h"

#include <charconv>
#include <cmath>

#include "base/check.h"

namespace hichat::api {

std::string format_number(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
    CHECK(ec == std::errc()) << "to_chars failed";
    return std::string(buf, end);
}

std::string escape_label_value(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '"': out += "\\\""; break;
            case '\n': out += "\\n"; break;
            default: out += c;
        }
    }
    return out;
}

std::string escape_help(std::string_view help) {
    std::string out;
    out.reserve(help.size());
    for (char c : help) {
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            default: out += c;
        }
    }
    return out;
}

void append_header(std::string& out, std::string_view name, std::string_view help, std::string_view type) {
    out.append("# HELP ").append(name).append(" ").append(escape_help(help)).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void append_sample(std::string& out, std::string_view name, const LabelSet& labels, std::string_view value) {
    out.append(name);
    if (!labels.empty()) {
        out += '{';
        for (size_t i = 0; i < labels.size(); ++i) {
            if (i > 0) out += ',';
            out.append(labels[i].first).append("=\"").append(escape_label_value(labels[i].second)).append("\"");
        }
        out += '}';
    }
    out.append(" ").append(value).append("\n");
}

}  // namespace hichat::api
