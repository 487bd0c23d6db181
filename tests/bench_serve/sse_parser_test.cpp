// The SSE parser alone and behind the chunked decoder, on streams split at every byte boundary.
#include "bench/sse_parser.h"

#include <gtest/gtest.h>

#include "bench/chunked_decoder.h"

namespace hichat::tools::bench {
namespace {

// Two OpenAI-style events, a comment (ping), CRLF line ends, an `event:` field, a two-line event,
// an event with no data (dropped), and [DONE].
const std::string kStream =
    "data: {\"a\":1}\n\n"
    ": ping\n\n"
    "data: {\"b\":2}\r\n\r\n"
    "event: message\nid: 7\ndata:first\ndata: second\n\n"
    "retry: 10\n\n"
    "data: [DONE]\n\n";
const std::vector<std::string> kEvents = {"{\"a\":1}", "{\"b\":2}", "first\nsecond", "[DONE]"};

TEST(SseParser, ParsesEventsWhole) {
    SseParser p;
    std::vector<std::string> events;
    p.feed(kStream, events);
    EXPECT_EQ(events, kEvents);
    EXPECT_EQ(p.num_bytes_pending(), 0u);
}

TEST(SseParser, SplitAtEveryByteBoundary) {
    for (size_t cut = 0; cut <= kStream.size(); ++cut) {
        SseParser p;
        std::vector<std::string> events;
        p.feed(std::string_view(kStream).substr(0, cut), events);
        p.feed(std::string_view(kStream).substr(cut), events);
        EXPECT_EQ(events, kEvents) << "cut at " << cut;
    }
}

TEST(SseParser, HoldsBackAnUnfinishedEvent) {
    SseParser p;
    std::vector<std::string> events;
    p.feed("data: x\n", events);
    EXPECT_TRUE(events.empty());
    EXPECT_GT(p.num_bytes_pending(), 0u);
    p.feed("\n", events);
    EXPECT_EQ(events, std::vector<std::string>{"x"});
}

// Frames kStream as chunks of `size` bytes.
std::string chunked(const std::string& body, size_t size) {
    std::string out;
    char hex[32];
    for (size_t i = 0; i < body.size(); i += size) {
        const std::string part = body.substr(i, size);
        std::snprintf(hex, sizeof(hex), "%zx", part.size());
        out += std::string(hex) + "\r\n" + part + "\r\n";
    }
    return out + "0\r\n\r\n";
}

TEST(SseParser, BehindChunkedDecoderSplitAtEveryByteBoundary) {
    for (size_t chunk_size : {1u, 7u, 64u}) {
        const std::string wire = chunked(kStream, chunk_size);
        for (size_t cut = 0; cut <= wire.size(); ++cut) {
            ChunkedDecoder d;
            SseParser p;
            std::string body;
            std::vector<std::string> events;
            for (std::string_view part :
                 {std::string_view(wire).substr(0, cut), std::string_view(wire).substr(cut)}) {
                ASSERT_TRUE(d.feed(part, body).ok());
                p.feed(body, events);
                body.clear();
            }
            EXPECT_TRUE(d.done());
            EXPECT_EQ(events, kEvents) << "chunk " << chunk_size << " cut at " << cut;
        }
    }
}

}  // namespace
}  // namespace hichat::tools::bench
