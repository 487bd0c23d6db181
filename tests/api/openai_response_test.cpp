// Streamed delta chunks are built by string concatenation from a per-request format (the per-token
// hot path); the reference builds the same object with nlohmann::json, as the other chunks are.
#include "api/openai_response.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace hichat::api {
namespace {

using Json = nlohmann::ordered_json;

Json reference_delta(const ResponseIds& ids, const std::string& text, bool first) {
    const bool chat = ids.endpoint == Endpoint::kChatCompletions;
    Json j = {{"id", ids.id},
              {"object", chat ? "chat.completion.chunk" : "text_completion"},
              {"created", ids.created},
              {"model", ids.model}};
    Json choice = {{"index", 0}};
    if (chat) {
        choice["delta"] = first ? Json{{"role", "assistant"}, {"content", text}} : Json{{"content", text}};
    } else {
        choice["text"] = text;
    }
    choice["logprobs"] = nullptr;
    choice["finish_reason"] = nullptr;
    j["choices"] = Json::array({choice});
    return j;
}

TEST(OpenAiResponse, DeltaChunkMatchesTheReferenceObject) {
    const std::string texts[] = {"", "a", "héllo \"quoted\" \\ back\nslash\t", std::string("\x01\x1f", 2), "日本"};
    for (Endpoint endpoint : {Endpoint::kChatCompletions, Endpoint::kCompletions}) {
        const ResponseIds ids{.id = "cmpl-\"x\"", .created = 1767225600, .model = "tiny/mödel", .endpoint = endpoint};
        const DeltaChunkFormat format = delta_chunk_format(ids);
        for (const std::string& text : texts) {
            for (bool first : {true, false}) {
                SCOPED_TRACE(text + (first ? " first" : " later"));
                const std::string chunk = delta_chunk(format, text, first);
                EXPECT_EQ(chunk, delta_chunk(ids, text, first));
                ASSERT_EQ(chunk.rfind("data: ", 0), 0u);
                ASSERT_GE(chunk.size(), 8u);
                EXPECT_EQ(chunk.substr(chunk.size() - 2), "\n\n");
                const std::string json = chunk.substr(6, chunk.size() - 8);
                EXPECT_EQ(json, reference_delta(ids, text, first).dump());
            }
        }
    }
}

TEST(OpenAiResponse, DeltaChunkReplacesInvalidUtf8) {
    const ResponseIds ids{.id = "cmpl-1", .created = 1, .model = "m", .endpoint = Endpoint::kCompletions};
    const std::string chunk = delta_chunk(delta_chunk_format(ids), std::string("a\xff" "b"), false);
    const Json j = Json::parse(chunk.substr(6));
    EXPECT_EQ(j["choices"][0]["text"], "a\xef\xbf\xbd" "b");
}

}  // namespace
}  // namespace hichat::api
