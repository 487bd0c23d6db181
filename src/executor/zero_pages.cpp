#include "executor/zero_pages.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/check.h"

namespace hichat::executor {

ZeroPages::ZeroPages(size_t num_bytes) : num_bytes_(num_bytes) {
    if (num_bytes == 0) return;
    void* p = ::mmap(nullptr, num_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED) << "mmap of " << num_bytes << " bytes failed: " << std::strerror(errno);
    data_ = p;
}

ZeroPages::~ZeroPages() {
    if (data_ != nullptr) ::munmap(data_, num_bytes_);
}

ZeroPages::ZeroPages(ZeroPages&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), num_bytes_(std::exchange(other.num_bytes_, 0)) {}

ZeroPages& ZeroPages::operator=(ZeroPages&& other) noexcept {
    if (this != &other) {
        if (data_ != nullptr) ::munmap(data_, num_bytes_);
        data_ = std::exchange(other.data_, nullptr);
        num_bytes_ = std::exchange(other.num_bytes_, 0);
    }
    return *this;
}

}  // namespace hichat::executor
