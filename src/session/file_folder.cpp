#include "session/file_folder.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace hichat::session {
namespace {

std::string errno_text() { return std::strerror(errno); }

bool safe_id(std::string_view id) {
    if (id.empty() || id.size() > 200) return false;
    for (char c : id) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        if (!ok) return false;
    }
    return true;
}

// Writes all of `bytes` to `fd`; false with errno set on failure.
bool write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
}

}  // namespace

Result<FileFolder> FileFolder::open(const std::string& dir) {
    if (dir.empty()) return invalid_argument("files folder: the path is empty");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return invalid_argument("files folder " + dir + ": cannot create it (" + ec.message() + ")");
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
        return invalid_argument("files folder " + dir + ": cannot write to it (" + errno_text() + ")");
    }
    return FileFolder(dir);
}

Result<std::string> FileFolder::path_of(std::string_view id) const {
    if (!safe_id(id)) return invalid_argument("files folder: '" + std::string(id) + "' is not a file id");
    return dir_ + "/" + std::string(id);
}

Status FileFolder::write(std::string_view id, std::string_view bytes) const {
    auto path = path_of(id);
    HICHAT_RETURN_IF_ERROR(path.status());
    const std::string temp = *path + ".partial";
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return internal_error("files folder: cannot create " + temp + " (" + errno_text() + ")");
    const bool written = write_all(fd, bytes) && ::fsync(fd) == 0;
    const std::string why = written ? "" : errno_text();
    ::close(fd);
    if (!written || std::rename(temp.c_str(), path->c_str()) != 0) {
        const std::string reason = written ? errno_text() : why;
        std::remove(temp.c_str());
        return internal_error("files folder: cannot write " + *path + " (" + reason + ")");
    }
    // The rename is durable once the folder's entry is on disk.
    const int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
        ::fsync(dir_fd);
        ::close(dir_fd);
    }
    return ok_status();
}

Result<std::string> FileFolder::read(std::string_view id) const {
    auto path = path_of(id);
    HICHAT_RETURN_IF_ERROR(path.status());
    std::ifstream in(*path, std::ios::binary);
    if (!in) return not_found("files folder: no file " + *path);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) return internal_error("files folder: cannot read " + *path);
    return bytes;
}

Status FileFolder::remove(std::string_view id) const {
    auto path = path_of(id);
    HICHAT_RETURN_IF_ERROR(path.status());
    if (std::remove(path->c_str()) != 0 && errno != ENOENT) {
        return internal_error("files folder: cannot delete " + *path + " (" + errno_text() + ")");
    }
    return ok_status();
}

}  // namespace hichat::session
