#include "session/token_blob.h"

#include <gtest/gtest.h>

namespace hichat::session {
namespace {

TEST(TokenBlob, RoundTripsIncludingNegativeAndLargeIds) {
    const std::vector<int32_t> ids = {0, 1, -1, 2147483647, -2147483647 - 1, 128000};
    const std::string blob = token_blob(ids);
    EXPECT_EQ(blob.size(), ids.size() * 4);
    EXPECT_EQ(static_cast<unsigned char>(blob[4]), 1u);  // little-endian: low byte first
    auto back = token_ids_from_blob(blob);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, ids);
}

TEST(TokenBlob, EmptyAndDamagedBlobs) {
    EXPECT_EQ(token_blob({}), "");
    ASSERT_TRUE(token_ids_from_blob("").has_value());
    EXPECT_TRUE(token_ids_from_blob("")->empty());
    EXPECT_FALSE(token_ids_from_blob("abcde").has_value());
}

}  // namespace
}  // namespace hichat::session
