// The chunked-transfer decoder against bodies framed by hand, fed whole, split at every byte
// boundary and byte by byte.
#include "bench/chunked_decoder.h"

#include <gtest/gtest.h>

namespace hichat::tools::bench {
namespace {

// "Wikipedia\r\n in \r\nchunks." framed as chunks of 4, 6 (with an extension) and 10 bytes, then a
// trailer.
const std::string kWire =
    "4\r\nWiki\r\n"
    "6;name=value\r\npedia \r\n"
    "A \r\nin chunks.\r\n"
    "0\r\nX-Trailer: 1\r\n\r\n";
const std::string kBody = "Wikipedia in chunks.";

TEST(ChunkedDecoder, DecodesWholeBody) {
    ChunkedDecoder d;
    std::string body;
    auto used = d.feed(kWire, body);
    ASSERT_TRUE(used.ok()) << used.status().message();
    EXPECT_EQ(*used, kWire.size());
    EXPECT_TRUE(d.done());
    EXPECT_EQ(body, kBody);
}

TEST(ChunkedDecoder, SplitAtEveryByteBoundary) {
    for (size_t cut = 0; cut <= kWire.size(); ++cut) {
        ChunkedDecoder d;
        std::string body;
        auto a = d.feed(std::string_view(kWire).substr(0, cut), body);
        ASSERT_TRUE(a.ok()) << cut;
        EXPECT_EQ(*a, cut);
        EXPECT_EQ(d.done(), cut == kWire.size()) << cut;
        auto b = d.feed(std::string_view(kWire).substr(cut), body);
        ASSERT_TRUE(b.ok()) << cut;
        EXPECT_TRUE(d.done()) << cut;
        EXPECT_EQ(body, kBody) << cut;
    }
}

TEST(ChunkedDecoder, ByteByByte) {
    ChunkedDecoder d;
    std::string body;
    for (char c : kWire) ASSERT_TRUE(d.feed(std::string_view(&c, 1), body).ok());
    EXPECT_TRUE(d.done());
    EXPECT_EQ(body, kBody);
}

TEST(ChunkedDecoder, StopsAtTheEndOfTheBody) {
    ChunkedDecoder d;
    std::string body;
    const std::string wire = "3\r\nabc\r\n0\r\n\r\nHTTP/1.1 200 OK";
    auto used = d.feed(wire, body);
    ASSERT_TRUE(used.ok());
    EXPECT_EQ(wire.substr(*used), "HTTP/1.1 200 OK");
    EXPECT_EQ(body, "abc");
}

TEST(ChunkedDecoder, RejectsBadFraming) {
    for (const std::string wire : {"zz\r\nab\r\n", "3\r\nabcXY", "\r\n", "FFFFFFFFFF\r\n"}) {
        ChunkedDecoder d;
        std::string body;
        auto used = d.feed(wire, body);
        ASSERT_FALSE(used.ok()) << wire;
        EXPECT_NE(used.status().message().find("chunked body"), std::string::npos);
    }
    ChunkedDecoder d;
    std::string body;
    EXPECT_FALSE(d.feed(std::string(5000, '1'), body).ok());  // size line over 4 KiB
}

}  // namespace
}  // namespace hichat::tools::bench
