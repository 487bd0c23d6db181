#include "base/huge_page_buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <utility>

#include "base/check.h"

namespace hichat {

HugePageBuffer::HugePageBuffer(size_t bytes) {
    if (bytes == 0) return;
    size_bytes_ = (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
    // Over-map by one page, then trim the unaligned head and the tail.
    const size_t mapped = size_bytes_ + kPageBytes;
    void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED) << "mmap of " << mapped << " bytes failed";
    const auto base = reinterpret_cast<uintptr_t>(p);
    const uintptr_t aligned = (base + kPageBytes - 1) / kPageBytes * kPageBytes;
    if (aligned > base) ::munmap(p, aligned - base);
    const uintptr_t end = aligned + size_bytes_;
    if (base + mapped > end) ::munmap(reinterpret_cast<void*>(end), base + mapped - end);
    data_ = reinterpret_cast<void*>(aligned);
    // Advice only: without transparent huge pages this is still plain anonymous memory.
    ::madvise(data_, size_bytes_, MADV_HUGEPAGE);
}

HugePageBuffer::~HugePageBuffer() {
    if (data_ != nullptr) ::munmap(data_, size_bytes_);
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_bytes_(std::exchange(other.size_bytes_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
    if (this != &other) {
        if (data_ != nullptr) ::munmap(data_, size_bytes_);
        data_ = std::exchange(other.data_, nullptr);
        size_bytes_ = std::exchange(other.size_bytes_, 0);
    }
    return *this;
}

}  // namespace hichat
