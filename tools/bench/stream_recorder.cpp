#include "bench/stream_recorder.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace hichat::tools::bench {
namespace {

using Json = nlohmann::json;

// What on_event() needs from one event, read by nlohmann's SAX parser in one pass without building
// a document (this runs once per streamed token, on the cores the server under test also uses).
// Same answers as looking the fields up in the parsed document: malformed JSON is rejected, and of
// duplicate keys the last one counts.
struct EventFields {
    bool is_object = false;      // the root is a JSON object
    bool has_error = false;      // root "error" is present and not null
    bool choices_is_array = false;
    size_t num_choices = 0;
    // choices[0], when it is an object:
    bool text_is_string = false, text_nonempty = false;        // "text"
    std::string text, content;                                 // their values, when strings
    bool delta_is_object = false;                              // "delta"
    bool content_is_string = false, content_nonempty = false;  // "delta"."content"
    bool finish_reason_set = false;                            // "finish_reason" present, not null
    // root "usage", when it is an object: its integer fields
    bool usage_is_object = false;
    std::optional<int> completion_tokens, prompt_tokens;
    std::optional<int> cached_tokens;  // "prompt_tokens_details"."cached_tokens"

    bool has_text() const {
        if (text_is_string) return text_nonempty;
        return delta_is_object && content_is_string && content_nonempty;
    }
    bool is_end_marker() const { return finish_reason_set && !has_text(); }
    // The token text has_text() looks at.
    const std::string& token_text() const { return text_is_string ? text : content; }
};

// nlohmann::json_sax for EventFields. Each value is classified by where it sits (its Slot) when it
// starts; containers keep their slot on a stack so that their members can be classified in turn.
class EventFieldsReader {
public:
    using number_integer_t = Json::number_integer_t;
    using number_unsigned_t = Json::number_unsigned_t;
    using number_float_t = Json::number_float_t;
    using string_t = Json::string_t;
    using binary_t = Json::binary_t;

    explicit EventFieldsReader(EventFields& out) : out_(out) {}

    bool null() { return scalar(Kind::kNull); }
    bool boolean(bool) { return scalar(Kind::kOther); }
    bool number_integer(number_integer_t v) { return scalar(Kind::kInteger, static_cast<int>(v)); }
    bool number_unsigned(number_unsigned_t v) { return scalar(Kind::kInteger, static_cast<int>(v)); }
    bool number_float(number_float_t, const string_t&) { return scalar(Kind::kOther); }
    bool string(string_t& v) {
        const Slot slot = on_value(v.empty() ? Kind::kEmptyString : Kind::kString);
        if (slot == Slot::kText) out_.text = v;
        if (slot == Slot::kContent) out_.content = v;
        return true;
    }
    bool binary(binary_t&) { return scalar(Kind::kOther); }
    bool start_object(size_t) { return open(Kind::kObject); }
    bool start_array(size_t) { return open(Kind::kArray); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool key(string_t& k) {
        key_ = slot_of_member(stack_.back().slot, k);
        return true;
    }
    bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

private:
    enum class Slot { kRoot, kOther, kError, kChoices, kChoice0, kText, kDelta, kContent, kFinishReason, kUsage,
                      kCompletionTokens, kPromptTokens, kPromptTokensDetails, kCachedTokens };
    enum class Kind { kNull, kInteger, kString, kEmptyString, kObject, kArray, kOther };
    struct Container {
        Slot slot;
        size_t num_elements;  // arrays: values seen so far; SIZE_MAX for objects
    };

    static Slot slot_of_member(Slot parent, std::string_view k) {
        switch (parent) {
            case Slot::kRoot:
                if (k == "error") return Slot::kError;
                if (k == "choices") return Slot::kChoices;
                if (k == "usage") return Slot::kUsage;
                break;
            case Slot::kChoice0:
                if (k == "text") return Slot::kText;
                if (k == "delta") return Slot::kDelta;
                if (k == "finish_reason") return Slot::kFinishReason;
                break;
            case Slot::kDelta:
                if (k == "content") return Slot::kContent;
                break;
            case Slot::kUsage:
                if (k == "completion_tokens") return Slot::kCompletionTokens;
                if (k == "prompt_tokens") return Slot::kPromptTokens;
                if (k == "prompt_tokens_details") return Slot::kPromptTokensDetails;
                break;
            case Slot::kPromptTokensDetails:
                if (k == "cached_tokens") return Slot::kCachedTokens;
                break;
            default:
                break;
        }
        return Slot::kOther;
    }

    // The slot of the value now starting.
    Slot slot_of_value() {
        if (stack_.empty()) return Slot::kRoot;
        Container& parent = stack_.back();
        if (parent.num_elements == SIZE_MAX) return key_;  // an object member
        const bool first = parent.num_elements++ == 0;
        return parent.slot == Slot::kChoices && first ? Slot::kChoice0 : Slot::kOther;
    }

    bool scalar(Kind kind, int number = 0) {
        on_value(kind, number);
        return true;
    }

    bool open(Kind kind) {
        stack_.push_back({on_value(kind), kind == Kind::kObject ? SIZE_MAX : 0});
        return true;
    }

    // Records what the value now starting (a scalar, or a container's start) tells; returns its slot.
    Slot on_value(Kind kind, int number = 0) {
        const Slot slot = slot_of_value();
        const bool is_string = kind == Kind::kString || kind == Kind::kEmptyString;
        switch (slot) {
            case Slot::kRoot: out_.is_object = kind == Kind::kObject; break;
            case Slot::kError: out_.has_error = kind != Kind::kNull; break;
            case Slot::kChoices:
                out_.choices_is_array = kind == Kind::kArray;
                out_.num_choices = 0;
                reset_choice0();
                break;
            case Slot::kChoice0: reset_choice0(); break;
            case Slot::kText:
                out_.text.clear();
                out_.text_is_string = is_string;
                out_.text_nonempty = kind == Kind::kString;
                break;
            case Slot::kDelta:
                out_.delta_is_object = kind == Kind::kObject;
                out_.content_is_string = out_.content_nonempty = false;
                out_.content.clear();
                break;
            case Slot::kContent:
                out_.content.clear();
                out_.content_is_string = is_string;
                out_.content_nonempty = kind == Kind::kString;
                break;
            case Slot::kFinishReason: out_.finish_reason_set = kind != Kind::kNull; break;
            case Slot::kUsage:
                out_.usage_is_object = kind == Kind::kObject;
                out_.completion_tokens.reset();
                out_.prompt_tokens.reset();
                out_.cached_tokens.reset();
                break;
            case Slot::kPromptTokensDetails: out_.cached_tokens.reset(); break;
            case Slot::kCachedTokens:
                out_.cached_tokens = kind == Kind::kInteger ? std::optional<int>(number) : std::nullopt;
                break;
            case Slot::kCompletionTokens:
                out_.completion_tokens = kind == Kind::kInteger ? std::optional<int>(number) : std::nullopt;
                break;
            case Slot::kPromptTokens:
                out_.prompt_tokens = kind == Kind::kInteger ? std::optional<int>(number) : std::nullopt;
                break;
            case Slot::kOther: break;
        }
        return slot;
    }

    bool close() {
        const Container done = stack_.back();
        stack_.pop_back();
        if (done.slot == Slot::kChoices) out_.num_choices = done.num_elements;
        return true;
    }

    void reset_choice0() {
        out_.text_is_string = out_.text_nonempty = false;
        out_.text.clear();
        out_.content.clear();
        out_.delta_is_object = out_.content_is_string = out_.content_nonempty = false;
        out_.finish_reason_set = false;
    }

    EventFields& out_;
    std::vector<Container> stack_;
    Slot key_ = Slot::kOther;  // slot of the member whose key came last
};

}  // namespace

StreamRecorder::StreamRecorder(double start_s, int num_prompt_tokens, bool keep_text, bool responses_events)
    : keep_text_(keep_text), responses_events_(responses_events) {
    out_.start_s = start_s;
    out_.num_prompt_tokens = num_prompt_tokens;
}

void StreamRecorder::on_token_chunk(double now_s) {
    if (out_.num_token_chunks > 0) out_.itl_s.push_back(now_s - last_token_s_);
    last_token_s_ = now_s;
    ++out_.num_token_chunks;
}

void StreamRecorder::on_event(std::string_view data, double now_s) {
    if (!out_.error.empty()) return;
    if (data == "[DONE]") {
        saw_done_ = true;
        return;
    }
    if (responses_events_) return on_responses_event(data, now_s);
    EventFields f;
    EventFieldsReader reader(f);
    if (!Json::sax_parse(data.begin(), data.end(), &reader) || !f.is_object) {
        out_.error = "SSE event is not a JSON object: " + std::string(data.substr(0, 120));
        return;
    }
    if (f.has_error) {  // rare: parse again, for the error object's text
        const Json j = Json::parse(data.begin(), data.end(), nullptr, /*allow_exceptions=*/false);
        out_.error = "error event: " + j["error"].dump().substr(0, 200);
        return;
    }
    if (f.choices_is_array && f.num_choices > 0) {
        if (!saw_choices_) out_.ttft_s = now_s - out_.start_s;
        saw_choices_ = true;
        out_.latency_s = now_s - out_.start_s;
        if (!f.is_end_marker()) on_token_chunk(now_s);
        if (keep_text_ && f.has_text()) out_.output_text += f.token_text();
    }
    if (f.usage_is_object) {
        if (f.completion_tokens) num_usage_tokens_ = *f.completion_tokens;
        if (f.prompt_tokens) out_.num_usage_prompt_tokens = *f.prompt_tokens;
        if (f.cached_tokens) out_.num_cached_prompt_tokens = *f.cached_tokens;
    }
}

// A few hundred events per turn: parsed whole (the choices path above is the one that must be cheap).
void StreamRecorder::on_responses_event(std::string_view data, double now_s) {
    const Json j = Json::parse(data.begin(), data.end(), nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
        out_.error = "SSE event is not a Responses API event: " + std::string(data.substr(0, 120));
        return;
    }
    const std::string type = j["type"].get<std::string>();
    auto id_of = [&] {
        const Json& r = j.value("response", Json::object());
        if (r.is_object() && r.contains("id") && r["id"].is_string()) out_.response_id = r["id"].get<std::string>();
    };
    if (type == "response.output_text.delta") {
        if (!saw_choices_) out_.ttft_s = now_s - out_.start_s;
        saw_choices_ = true;
        out_.latency_s = now_s - out_.start_s;
        on_token_chunk(now_s);
        if (keep_text_ && j.contains("delta") && j["delta"].is_string()) out_.output_text += j["delta"].get<std::string>();
    } else if (type == "response.created") {
        id_of();
    } else if (type == "response.completed" || type == "response.incomplete") {  // incomplete: max_output_tokens
        id_of();
        saw_completed_ = true;
        const Json usage = j["response"].value("usage", Json::object());
        if (usage.contains("input_tokens") && usage["input_tokens"].is_number_integer())
            out_.num_usage_prompt_tokens = usage["input_tokens"].get<int>();
        if (usage.contains("output_tokens") && usage["output_tokens"].is_number_integer())
            num_usage_tokens_ = usage["output_tokens"].get<int>();
        const Json details = usage.value("input_tokens_details", Json::object());
        if (details.is_object() && details.contains("cached_tokens") && details["cached_tokens"].is_number_integer())
            out_.num_cached_prompt_tokens = details["cached_tokens"].get<int>();
    } else if (type == "response.failed" || type == "error") {
        out_.error = type + " event: " + std::string(data.substr(0, 200));
    }
}

RequestOutcome StreamRecorder::finish(const std::string& transport_error) {
    if (out_.error.empty() && !transport_error.empty()) out_.error = transport_error;
    if (out_.error.empty() && responses_events_ && !saw_completed_) out_.error = "the stream ended without response.completed or response.incomplete";
    if (out_.error.empty() && !saw_choices_) out_.error = "the stream carried no choices chunk";
    out_.success = out_.error.empty();
    out_.num_output_tokens = num_usage_tokens_ >= 0 ? num_usage_tokens_ : out_.num_token_chunks;
    return std::move(out_);
}

}  // namespace hichat::tools::bench
