// Real chat templates (the .jinja seeds of chat_template_fuzzer: Llama-3.2, Qwen2.5, Qwen3,
// Mistral-7B, the default model's) rendered with fuzzed conversations: roles (the usual ones and
// arbitrary strings), contents (arbitrary bytes, also template syntax and special-token text), the
// generation prompt flag and the thinking switch. A render either succeeds or fails with a message
// (e.g. the template's own raise_exception); it never crashes, and the same inputs give the same text.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "tokenizer/template/chat_template.h"

namespace {

using hichat::fuzz::require;
using hichat::tokenizer::ChatTemplate;
using hichat::tokenizer::ChatTemplateInputs;

const std::vector<ChatTemplate>& templates() {
    static const std::vector<ChatTemplate> all = [] {
        std::vector<ChatTemplate> out;
        for (const std::string& file :
             hichat::fuzz::corpus_files(std::string(HICHAT_FUZZ_CORPUS_DIR) + "/chat_template_fuzzer", ".jinja")) {
            auto t = ChatTemplate::parse(hichat::fuzz::read_whole_file(file));
            if (!t.ok()) {
                std::fprintf(stderr, "seed template %s does not parse: %s\n", file.c_str(), t.status().message().c_str());
                std::exit(2);
            }
            out.push_back(*t);
        }
        return out;
    }();
    return all;
}

ChatTemplateInputs conversation_from(FuzzedDataProvider& in) {
    static const char* const kRoles[] = {"system", "user", "assistant", "tool", "developer"};
    ChatTemplateInputs c;
    c.add_generation_prompt = in.ConsumeBool();
    if (in.ConsumeBool()) c.bos_token = "<s>";
    if (in.ConsumeBool()) c.eos_token = "</s>";
    c.extra_vars = {{"enable_thinking", in.ConsumeBool()}};
    std::tm t{};
    t.tm_year = 124;
    t.tm_mday = 1;
    c.local_time = t;
    const int num_messages = in.ConsumeIntegralInRange(0, 8);
    for (int i = 0; i < num_messages; ++i) {
        const uint8_t r = in.ConsumeIntegral<uint8_t>();
        std::string role = r < 250 ? kRoles[r % 5] : in.ConsumeRandomLengthString(16);
        c.messages.push_back({std::move(role), in.ConsumeRandomLengthString(512)});
    }
    return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FuzzedDataProvider in(data, size);
    const ChatTemplate& t = templates()[in.ConsumeIntegralInRange<size_t>(0, templates().size() - 1)];
    const ChatTemplateInputs conversation = conversation_from(in);
    auto first = t.render(conversation);
    if (!first.ok()) {
        require(!first.status().message().empty(), "render failed without a message");
        return 0;
    }
    auto second = t.render(conversation);
    require(second.ok() && *second == *first, "a second render of the same inputs differs");
    return 0;
}
