// DeviceBuffer ownership (move, release, failed allocation as a Status) and device discovery.
#include <utility>

#include "cuda_test_util.h"

namespace hichat::cuda {
namespace {

using testing::CudaTest;

TEST(DeviceInfoTest, AvailabilityQueryNeverAborts) {
    const bool available = cuda_device_available();
    EXPECT_EQ(available, cuda_num_sms() > 0);
    // With a device the probe leaves no error behind; without a driver the runtime's init error stays.
    if (available) {
        EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    }
}

class DeviceBufferTest : public CudaTest {};

TEST_F(DeviceBufferTest, RoundTripsAndMoves) {
    std::vector<int32_t> host(1000);
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<int32_t>(i * 7919 % 1009);
    DeviceBuffer a = testing::upload(host);
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(a.num_bytes(), host.size() * sizeof(int32_t));
    void* const raw = a.data();
    DeviceBuffer b(std::move(a));
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.num_bytes(), 0u);
    EXPECT_EQ(b.data(), raw);
    DeviceBuffer c;
    c = std::move(b);
    EXPECT_EQ(c.data(), raw);
    EXPECT_EQ(testing::download<int32_t>(c, host.size()), host);
    c = DeviceBuffer(16);   // frees the old allocation
    EXPECT_NE(c.data(), nullptr);
    EXPECT_EQ(c.num_bytes(), 16u);
}

TEST_F(DeviceBufferTest, ImpossibleAllocationIsAStatus) {
    Result<DeviceBuffer> huge = DeviceBuffer::allocate(size_t{1} << 52);   // 4 PiB
    ASSERT_FALSE(huge.ok());
    EXPECT_NE(huge.status().message().find("4503599627370496"), std::string::npos) << huge.status().message();
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    Result<DeviceBuffer> small = DeviceBuffer::allocate(256);
    ASSERT_TRUE(small.ok());
    EXPECT_EQ(small->num_bytes(), 256u);
    Result<DeviceBuffer> none = DeviceBuffer::allocate(0);
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace hichat::cuda
