#include "api/policy/config_lines.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hichat::api {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

// POSIX rather than iostreams: an ifstream "opens" a directory and then reads nothing, which would turn a
// wrong path into an empty key list. Reserves the file size up front so that no reallocation leaves an
// unwiped copy of a secret behind.
Result<std::string> read_regular_file(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return not_found(path + ": cannot open file: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return invalid_argument(path + ": not a regular file");
    }
    std::string text;
    text.reserve(static_cast<size_t>(st.st_size) + 1);
    char chunk[4096];
    Status status;
    for (;;) {
        ssize_t n = ::read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            status = data_loss(path + ": cannot read file: " + std::strerror(errno));
            break;
        }
        if (n == 0) break;
        text.append(chunk, static_cast<size_t>(n));
    }
    OPENSSL_cleanse(chunk, sizeof(chunk));
    ::close(fd);
    if (!status.ok()) {
        wipe(text);
        return status;
    }
    return text;
}

}  // namespace

void wipe(std::string& s) {
    if (!s.empty()) OPENSSL_cleanse(s.data(), s.size());
    s.clear();
}

Result<std::vector<ConfigLine>> split_config_lines(std::string_view text, const std::string& source) {
    std::vector<ConfigLine> lines;
    int line_number = 0;
    while (!text.empty()) {
        ++line_number;
        size_t end = text.find('\n');
        std::string_view raw = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
        if (raw.find('\0') != std::string_view::npos) {
            return invalid_argument(source + ":" + std::to_string(line_number) + ": line contains a NUL byte");
        }
        std::string_view line = trim(raw);
        if (line.empty() || line.front() == '#') continue;
        lines.push_back({line_number, std::string(line)});
    }
    return lines;
}

Result<std::vector<ConfigLine>> read_config_lines(const std::string& path) {
    Result<std::string> read = read_regular_file(path);
    if (!read.ok()) return read.status();
    std::string text = std::move(read).value();
    Result<std::vector<ConfigLine>> lines = split_config_lines(text, path);
    wipe(text);  // key files hold secrets; the hashed copies are all the caller keeps
    return lines;
}

}  // namespace hichat::api
