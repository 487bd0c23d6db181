// Chat-template parser and interpreter: arbitrary bytes as a template source -> ChatTemplate::parse,
// then render() with a fixed conversation. Either step may fail, always with a message; neither may
// crash, hang or exhaust memory. A template that renders once renders the same again (render is const).
#include <cstdint>
#include <ctime>
#include <string>

#include "fuzz_support.h"
#include "tokenizer/template/chat_template.h"

namespace {

using hichat::fuzz::require;
using hichat::tokenizer::ChatTemplate;
using hichat::tokenizer::ChatTemplateInputs;

const ChatTemplateInputs& conversation() {
    static const ChatTemplateInputs in = [] {
        ChatTemplateInputs c;
        c.messages = {{"system", "You are terse."},
                      {"user", "Hi <|im_start|> {{ not a tag }}"},
                      {"assistant", "<think>hm</think>Hello!"},
                      {"user", "What is 2 + 2?"}};
        c.add_generation_prompt = true;
        c.bos_token = "<s>";
        c.eos_token = "</s>";
        c.extra_vars = {{"tools", nlohmann::ordered_json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}})},
                        {"enable_thinking", false}};
        std::tm t{};
        t.tm_year = 124;
        t.tm_mon = 6;
        t.tm_mday = 26;
        c.local_time = t;
        return c;
    }();
    return in;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view source(reinterpret_cast<const char*>(data), size);
    auto parsed = ChatTemplate::parse(source);
    if (!parsed.ok()) {
        require(!parsed.status().message().empty(), "parse failed without a message");
        return 0;
    }
    auto first = parsed->render(conversation());
    if (!first.ok()) {
        require(!first.status().message().empty(), "render failed without a message");
        return 0;
    }
    auto second = parsed->render(conversation());
    require(second.ok() && *second == *first, "a second render of the same inputs differs");
    return 0;
}
