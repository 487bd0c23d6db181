#include "bench/stream_recorder.h"

#include <nlohmann/json.hpp>

namespace hichat::tools::bench {
namespace {

using Json = nlohmann::json;

// The generated text of the first choice: `text` (completions) or `delta.content` (chat).
bool has_text(const Json& choice) {
    if (const auto t = choice.find("text"); t != choice.end() && t->is_string())
        return !t->get_ref<const std::string&>().empty();
    if (const auto d = choice.find("delta"); d != choice.end() && d->is_object()) {
        if (const auto c = d->find("content"); c != d->end() && c->is_string())
            return !c->get_ref<const std::string&>().empty();
    }
    return false;
}

bool is_end_marker(const Json& choice) {
    const auto f = choice.find("finish_reason");
    return f != choice.end() && !f->is_null() && !has_text(choice);
}

}  // namespace

StreamRecorder::StreamRecorder(double start_s, int num_prompt_tokens) {
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
    Json j = Json::parse(data.begin(), data.end(), nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
        out_.error = "SSE event is not a JSON object: " + std::string(data.substr(0, 120));
        return;
    }
    if (const auto e = j.find("error"); e != j.end() && !e->is_null()) {
        out_.error = "error event: " + e->dump().substr(0, 200);
        return;
    }
    if (const auto c = j.find("choices"); c != j.end() && c->is_array() && !c->empty()) {
        if (!saw_choices_) out_.ttft_s = now_s - out_.start_s;
        saw_choices_ = true;
        out_.latency_s = now_s - out_.start_s;
        if (!is_end_marker((*c)[0])) on_token_chunk(now_s);
    }
    if (const auto u = j.find("usage"); u != j.end() && u->is_object()) {
        if (const auto n = u->find("completion_tokens"); n != u->end() && n->is_number_integer()) {
            num_usage_tokens_ = n->get<int>();
        }
        if (const auto n = u->find("prompt_tokens"); n != u->end() && n->is_number_integer()) {
            out_.num_usage_prompt_tokens = n->get<int>();
        }
    }
}

RequestOutcome StreamRecorder::finish(const std::string& transport_error) {
    if (out_.error.empty() && !transport_error.empty()) out_.error = transport_error;
    if (out_.error.empty() && !saw_choices_) out_.error = "the stream carried no choices chunk";
    out_.success = out_.error.empty();
    out_.num_output_tokens = num_usage_tokens_ >= 0 ? num_usage_tokens_ : out_.num_token_chunks;
    return std::move(out_);
}

}  // namespace hichat::tools::bench
