// Anonymous memory in whole 2 MiB pages, advised as transparent huge pages: the home of weights that
// the CPU streams every step. Read at the memory's rate, a 4 KiB-page mapping (a file map) loses a
// large part of it to page walks and to the hardware prefetchers stopping at every page boundary
// (1B decode, 2 threads: 74-109 ms/step from the safetensors map, 49-55 ms from this memory).
// The one owner of the mapping; move-only.
#pragma once

#include <cstddef>

namespace hichat {

class HugePageBuffer {
public:
    HugePageBuffer() = default;
    // Maps at least `bytes` bytes (zero-filled by the kernel on first touch), 2 MiB-aligned.
    // Aborts only when the address space itself is exhausted.
    explicit HugePageBuffer(size_t bytes);
    ~HugePageBuffer();
    HugePageBuffer(HugePageBuffer&& other) noexcept;
    HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
    HugePageBuffer(const HugePageBuffer&) = delete;
    HugePageBuffer& operator=(const HugePageBuffer&) = delete;

    void* data() const { return data_; }
    size_t size_bytes() const { return size_bytes_; }

    static constexpr size_t kPageBytes = size_t{2} << 20;

private:
    void* data_ = nullptr;
    size_t size_bytes_ = 0;   // the mapped length, a multiple of kPageBytes
};

}  // namespace hichat
