#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace hichat {

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return not_found(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return not_found(path + ": not a regular file");
    }
    size_t size = static_cast<size_t>(st.st_size);
    const unsigned char* data = nullptr;
    if (size > 0) {
        void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            ::close(fd);
            return data_loss(path + ": cannot map: " + std::strerror(errno));
        }
        data = static_cast<const unsigned char*>(p);
    }
    ::close(fd);
    return std::unique_ptr<MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
    if (data_ != nullptr) munmap(const_cast<unsigned char*>(data_), size_bytes_);
}

Result<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return not_found(path + ": cannot open");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace hichat
