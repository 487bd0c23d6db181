// FileFolder: the bytes of the Files API, one file per id in one folder (the metadata is in the
// BatchStore). A write is atomic: a temporary name, fsync, rename, fsync of the folder, so after a
// crash a file is whole or absent.
//
// Threads: any; calls on different ids do not interfere (the caller never writes one id twice).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace hichat::session {

class FileFolder {
public:
    // Creates `dir` (and its parents) when missing; fails naming it when it cannot be created or written.
    static Result<FileFolder> open(const std::string& dir);

    // The id must be a file name of letters, digits, '-' and '_' (ids never name a path).
    Status write(std::string_view id, std::string_view bytes) const;
    Result<std::string> read(std::string_view id) const;  // not_found when absent
    Status remove(std::string_view id) const;             // absent: ok
    const std::string& dir() const { return dir_; }

private:
    explicit FileFolder(std::string dir) : dir_(std::move(dir)) {}
    Result<std::string> path_of(std::string_view id) const;

    std::string dir_;
};

}  // namespace hichat::session
