// HugePageBuffer: 2 MiB-aligned, whole pages, zero-filled, writable end to end, moved not copied.
#include "base/huge_page_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>

namespace hichat {
namespace {

TEST(HugePageBuffer, AlignedWholePagesZeroFilled) {
    for (size_t bytes : {size_t{1}, size_t{4096}, HugePageBuffer::kPageBytes, HugePageBuffer::kPageBytes + 1,
                         size_t{5} * HugePageBuffer::kPageBytes - 3}) {
        HugePageBuffer b(bytes);
        ASSERT_NE(b.data(), nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % HugePageBuffer::kPageBytes, 0u) << bytes;
        EXPECT_GE(b.size_bytes(), bytes);
        EXPECT_LT(b.size_bytes() - bytes, HugePageBuffer::kPageBytes);
        EXPECT_EQ(b.size_bytes() % HugePageBuffer::kPageBytes, 0u);
        auto* p = static_cast<unsigned char*>(b.data());
        EXPECT_EQ(p[0], 0);
        EXPECT_EQ(p[b.size_bytes() - 1], 0);
        std::memset(p, 0xab, b.size_bytes());   // the whole mapping is ours (ASan / a fault would say otherwise)
        EXPECT_EQ(p[b.size_bytes() / 2], 0xab);
    }
}

TEST(HugePageBuffer, EmptyAndMoved) {
    HugePageBuffer empty(0);
    EXPECT_EQ(empty.data(), nullptr);
    EXPECT_EQ(empty.size_bytes(), 0u);
    HugePageBuffer a(100);
    void* const p = a.data();
    static_cast<char*>(p)[7] = 42;
    HugePageBuffer b(std::move(a));
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(static_cast<char*>(b.data())[7], 42);
    HugePageBuffer c(10);
    c = std::move(b);
    EXPECT_EQ(c.data(), p);
    EXPECT_EQ(b.data(), nullptr);
}

}  // namespace
}  // namespace hichat
