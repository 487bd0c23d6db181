#include "api/tool_calls.h"

#include <algorithm>

namespace hichat::api {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

// The length of the longest suffix of `text` that is a proper prefix of `marker`.
size_t partial_marker(std::string_view text, std::string_view marker) {
    for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
        if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
    }
    return 0;
}

const char* arguments_key(ToolFormat format) { return format == ToolFormat::kLlama3 ? "parameters" : "arguments"; }

}  // namespace

ToolFormat detect_tool_format(std::string_view source) {
    if (contains(source, kHermesOpen)) return ToolFormat::kHermes;
    if (contains(source, "[TOOL_CALLS]")) return ToolFormat::kMistral;
    if (contains(source, "tools") && contains(source, "\"parameters\"")) return ToolFormat::kLlama3;
    return ToolFormat::kNone;
}

const char* tool_format_name(ToolFormat format) {
    switch (format) {
        case ToolFormat::kHermes: return "hermes";
        case ToolFormat::kLlama3: return "llama3_json";
        case ToolFormat::kMistral: return "mistral";
        case ToolFormat::kNone: break;
    }
    return "none";
}

ToolCallGrammar tool_call_grammar(ToolFormat format, const ToolRequest& request) {
    const char* args = arguments_key(format);
    Json alternatives = Json::array();
    ToolCallGrammar g;
    for (size_t i = 0; i < request.names.size(); ++i) {
        if (request.choice.mode == ToolChoiceMode::kNamed && request.names[i] != request.choice.name) continue;
        g.strict = g.strict || (i < request.strict.size() && request.strict[i]);
        Json call = {{"type", "object"},
                     {"properties", {{"name", {{"const", request.names[i]}}}, {args, request.parameters[i]}}},
                     {"required", {"name", args}},
                     {"additionalProperties", false}};
        alternatives.push_back(std::move(call));
    }
    g.schema = alternatives.size() == 1 ? alternatives[0] : Json{{"anyOf", alternatives}};
    const bool many = request.choice.mode == ToolChoiceMode::kRequired && request.parallel;
    switch (format) {
        case ToolFormat::kHermes:
            g.frame = {.begin = "<tool_call>\n", .separator = "\n</tool_call>\n<tool_call>\n", .end = "\n</tool_call>"};
            break;
        case ToolFormat::kMistral: g.frame = {.begin = "[", .separator = ",", .end = "]"}; break;
        case ToolFormat::kLlama3:  // one call per reply (the Llama-3 templates refuse several)
        case ToolFormat::kNone: break;
    }
    g.frame.max_values = many && format != ToolFormat::kLlama3 ? -1 : 1;
    return g;
}

ToolCallStream::ToolCallStream(ToolFormat format, std::vector<std::string> names, bool parallel, uint64_t seed)
    : format_(format), names_(std::move(names)), parallel_(parallel), rng_(seed) {}

std::string ToolCallStream::new_id() {
    static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const bool mistral = format_ == ToolFormat::kMistral;
    std::string id = mistral ? "" : "call_";
    for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kAlnum[rng_() % (sizeof(kAlnum) - 1)];
    return id;
}

bool ToolCallStream::offers(const std::string& name) const {
    return std::find(names_.begin(), names_.end(), name) != names_.end();
}

void ToolCallStream::emit_content(std::string text, std::vector<ReplyPart>& out) {
    if (text.empty()) return;
    // The line breaks between and after calls are the format's, not content: after a call, space is
    // held until content follows it (in whatever pieces the text came). Space after that content is
    // content, whether it came in the same piece or a later one.
    if (num_calls_ > 0 && !content_since_call_ && trim(text).empty()) {
        space_after_call_ += text;
        return;
    }
    text = std::exchange(space_after_call_, {}) + text;
    content_since_call_ = true;
    if (!out.empty() && out.back().kind == ReplyPart::Kind::kContent) {
        out.back().text += text;
    } else {
        out.push_back({.kind = ReplyPart::Kind::kContent, .text = std::move(text)});
    }
}

void ToolCallStream::start_call(std::string name, std::vector<ReplyPart>& out) {
    out.push_back({.kind = ReplyPart::Kind::kCallStart, .call_index = num_calls_, .id = new_id(), .name = std::move(name)});
    ++num_calls_;
    compactor_ = {};
    space_after_call_.clear();
    content_since_call_ = false;
}

void ToolCallStream::emit_arguments(std::string_view raw, std::vector<ReplyPart>& out) {
    std::string piece;
    compactor_.append(raw, piece);
    if (piece.empty()) return;
    const int index = num_calls_ - 1;
    if (!out.empty() && out.back().kind == ReplyPart::Kind::kArguments && out.back().call_index == index) {
        out.back().text += piece;
    } else {
        out.push_back({.kind = ReplyPart::Kind::kArguments, .text = std::move(piece), .call_index = index});
    }
}

void ToolCallStream::open_region(std::string text) {
    in_region_ = true;
    region_ = std::move(text);
    scan_ = Scan::kSeek;
    // Mistral's region is an array of call objects: the scan starts inside it.
    at_ = format_ == ToolFormat::kMistral ? skip_json_space(region_, 0) + 1 : 0;
    region_calls_ = 0;
}

void ToolCallStream::advance(bool closed, std::vector<ReplyPart>& out) {
    for (;;) {
        switch (scan_) {
            case Scan::kSeek: {
                const size_t i = skip_json_space(region_, at_);
                if (i >= region_.size()) return;
                const char c = region_[i];
                if (format_ == ToolFormat::kMistral && c == ',') {
                    at_ = i + 1;
                    continue;
                }
                if (c != '{') {  // Mistral's ']' or anything else: no further call in the region
                    scan_ = Scan::kDone;
                    return;
                }
                at_ = i;
                scan_ = Scan::kHead;
                continue;
            }
            case Scan::kHead:
                scan_head(closed, out);
                if (scan_ == Scan::kHead) return;
                continue;
            case Scan::kArguments: {
                size_t end = 0;
                const JsonScan r = scan_json_value(region_, args_at_, end);
                if (r == JsonScan::kComplete) {
                    emit_arguments(std::string_view(region_).substr(args_sent_, end - args_sent_), out);
                    args_sent_ = after_at_ = end;
                    scan_ = Scan::kAfterArguments;
                    continue;
                }
                if (r == JsonScan::kInvalid) {  // the arguments end before the first byte that cannot be JSON
                    emit_arguments(std::string_view(region_).substr(args_sent_, std::max(end, args_sent_) - args_sent_), out);
                    scan_ = Scan::kDone;
                    return;
                }
                // All of it belongs to the open value, except what may begin the Hermes closing tag.
                size_t limit = region_.size();
                if (format_ == ToolFormat::kHermes && !closed) limit -= partial_marker(region_, kHermesClose);
                limit = std::max(limit, args_sent_);
                emit_arguments(std::string_view(region_).substr(args_sent_, limit - args_sent_), out);
                args_sent_ = limit;
                return;
            }
            case Scan::kAfterArguments: {  // further members, skipped, up to the call object's end
                const size_t i = skip_json_space(region_, after_at_);
                if (i >= region_.size()) return;
                if (region_[i] == '}') {
                    at_ = i + 1;
                    scan_ = format_ == ToolFormat::kMistral ? Scan::kSeek : Scan::kDone;
                    continue;
                }
                size_t key_end = 0, value_end = 0;
                const size_t key = skip_json_space(region_, i + 1);
                JsonScan r = region_[i] == ',' ? scan_json_string(region_, key, key_end) : JsonScan::kInvalid;
                const size_t colon = r == JsonScan::kComplete ? skip_json_space(region_, key_end) : 0;
                if (r == JsonScan::kComplete) {
                    if (colon >= region_.size()) return;
                    r = region_[colon] == ':' ? JsonScan::kComplete : JsonScan::kInvalid;
                }
                const size_t value = r == JsonScan::kComplete ? skip_json_space(region_, colon + 1) : 0;
                if (r == JsonScan::kComplete) {
                    if (value >= region_.size()) return;
                    r = scan_json_value(region_, value, value_end);
                }
                if (r == JsonScan::kIncomplete) return;
                if (r == JsonScan::kInvalid) {
                    scan_ = Scan::kDone;
                    return;
                }
                after_at_ = value_end;
                continue;
            }
            case Scan::kWhole:
                scan_whole(closed, out);
                if (scan_ == Scan::kWhole) return;
                continue;
            case Scan::kDone:
                return;
        }
    }
}

// {"name": "<tool>", "arguments" (or "parameters"): then '{' or '[': the call starts. Any other shape,
// a tool not offered, or a second call where parallel calls are off: the object is judged whole.
void ToolCallStream::scan_head(bool closed, std::vector<ReplyPart>& out) {
    const std::string_view text = region_;
    size_t i = skip_json_space(text, at_ + 1);
    bool more = false;  // the text ends inside the head
    bool shape = true;
    auto string_at = [&](std::string* decoded) {
        size_t end = 0;
        const JsonScan r = i >= text.size() ? JsonScan::kIncomplete : scan_json_string(text, i, end, decoded);
        more = r == JsonScan::kIncomplete;
        shape = r == JsonScan::kComplete;
        if (shape) i = skip_json_space(text, end);
        return shape;
    };
    auto punct = [&](char c) {
        more = i >= text.size();
        shape = !more && text[i] == c;
        if (shape) i = skip_json_space(text, i + 1);
        return shape;
    };
    std::string key, name, args_key;
    if (string_at(&key) && (shape = key == "name") && punct(':') && string_at(&name) && punct(',') &&
        string_at(&args_key) && (shape = args_key == "arguments" || args_key == "parameters") && punct(':')) {
        more = i >= text.size();
        shape = !more && (text[i] == '{' || text[i] == '[');
    }
    if (more && !closed) return;
    if (!shape || more || !offers(name) || (!parallel_ && num_calls_ > 0)) {
        scan_ = Scan::kWhole;
        return;
    }
    ++region_calls_;
    start_call(std::move(name), out);
    args_at_ = args_sent_ = i;
    scan_ = Scan::kArguments;
}

// An object of another shape is a call once it is whole, valid JSON naming an offered tool with
// arguments; a second call with parallel calls off is dropped.
void ToolCallStream::scan_whole(bool closed, std::vector<ReplyPart>& out) {
    size_t end = 0;
    const JsonScan r = scan_json_value(region_, at_, end);
    if (r == JsonScan::kIncomplete && !closed) return;
    scan_ = Scan::kDone;
    if (r != JsonScan::kComplete) return;
    const Json o = Json::parse(std::string_view(region_).substr(at_, end - at_), nullptr, /*allow_exceptions=*/false);
    if (!o.is_object()) return;
    const auto name = o.find("name");
    if (name == o.end() || !name->is_string() || !offers(name->get<std::string>())) return;
    auto args = o.find("arguments");
    if (args == o.end()) args = o.find("parameters");
    if (args == o.end()) return;
    ++region_calls_;
    if (parallel_ || num_calls_ == 0) {
        start_call(name->get<std::string>(), out);
        const std::string text = args->is_string() ? args->get<std::string>() : args->dump();
        if (!text.empty()) out.push_back({.kind = ReplyPart::Kind::kArguments, .text = text, .call_index = num_calls_ - 1});
    }
    at_ = end;
    scan_ = format_ == ToolFormat::kMistral ? Scan::kSeek : Scan::kDone;
}

void ToolCallStream::close_region(bool tagged, std::vector<ReplyPart>& out) {
    std::string text = std::exchange(region_, {});
    in_region_ = false;
    if (region_calls_ > 0) return;
    if (format_ == ToolFormat::kHermes) text = std::string(kHermesOpen) + text + (tagged ? std::string(kHermesClose) : "");
    emit_content(std::move(text), out);
}

std::vector<ReplyPart> ToolCallStream::push(std::string_view text) {
    std::vector<ReplyPart> out;
    if (format_ == ToolFormat::kNone) {
        emit_content(std::string(text), out);
        return out;
    }
    if (format_ != ToolFormat::kHermes) {
        // The whole reply is a call region or it is content, as its first character shows.
        if (in_region_) {
            region_ += text;
            advance(false, out);
            return out;
        }
        held_ += text;
        if (!decided_) {
            const std::string_view t = trim(held_);
            if (t.empty()) return out;
            decided_ = true;
            if (t.front() == (format_ == ToolFormat::kLlama3 ? '{' : '[')) {
                open_region(std::exchange(held_, {}));
                advance(false, out);
                return out;
            }
        }
        emit_content(std::exchange(held_, {}), out);
        return out;
    }
    (in_region_ ? region_ : held_) += text;
    for (;;) {
        if (!in_region_) {
            const size_t at = held_.find(kHermesOpen);
            if (at == std::string::npos) {
                const size_t keep = partial_marker(held_, kHermesOpen);
                emit_content(held_.substr(0, held_.size() - keep), out);
                held_.erase(0, held_.size() - keep);
                return out;
            }
            emit_content(held_.substr(0, at), out);
            std::string rest = held_.substr(at + kHermesOpen.size());
            held_.clear();
            open_region(std::move(rest));
        } else {
            const size_t at = region_.find(kHermesClose);
            if (at == std::string::npos) {
                advance(false, out);
                return out;
            }
            held_ = region_.substr(at + kHermesClose.size());
            region_.resize(at);
            advance(true, out);
            close_region(/*tagged=*/true, out);
        }
    }
}

std::vector<ReplyPart> ToolCallStream::finish() {
    std::vector<ReplyPart> out;
    if (in_region_) {
        advance(true, out);
        close_region(/*tagged=*/false, out);
    }
    emit_content(std::exchange(held_, {}), out);
    space_after_call_.clear();
    return out;
}

}  // namespace hichat::api
