// ZeroPages: an anonymous private memory mapping that reads as zeros and takes memory page by page,
// only where it is written. A KV pool sized for max_num_seqs full contexts so costs the blocks in use,
// not its size. The one owner of the mapping; move-only.
#pragma once

#include <cstddef>

namespace hichat::executor {

class ZeroPages {
public:
    ZeroPages() = default;
    // Maps `num_bytes` (0: no mapping). CHECK-fails when the kernel refuses the mapping (address space
    // or commit limit): a start-up resource failure, like std::bad_alloc for a vector.
    explicit ZeroPages(size_t num_bytes);
    ~ZeroPages();
    ZeroPages(ZeroPages&& other) noexcept;
    ZeroPages& operator=(ZeroPages&& other) noexcept;
    ZeroPages(const ZeroPages&) = delete;
    ZeroPages& operator=(const ZeroPages&) = delete;

    void* data() const { return data_; }
    size_t num_bytes() const { return num_bytes_; }

private:
    void* data_ = nullptr;
    size_t num_bytes_ = 0;
};

}  // namespace hichat::executor
