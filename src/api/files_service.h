// FilesService: the Files API as far as batches need it: upload (multipart/form-data, purpose "batch"),
// list, retrieve, content, delete. The bytes live in a FileFolder, the metadata in the BatchStore.
// Runs on a preprocessing worker (the store and the folder wait for the disk). Owned by OpenAiService;
// the store and the folder outlive it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/session_job.h"
#include "session/batch_store.h"
#include "session/file_folder.h"

namespace hichat::api {

class FilesService {
public:
    // `max_file_bytes`: larger uploads get 413.
    FilesService(session::BatchStore* store, const session::FileFolder* folder, int64_t max_file_bytes)
        : store_(store), folder_(folder), max_file_bytes_(max_file_bytes) {}

    // `parts`: the percent-decoded path segments ("v1", "files", ...).
    void route(SessionJob& job, const std::vector<std::string>& parts);

private:
    void create(SessionJob& job);
    void list(SessionJob& job);
    void retrieve(SessionJob& job, const std::string& id);
    void content(SessionJob& job, const std::string& id);
    void remove(SessionJob& job, const std::string& id);

    session::BatchStore* store_;
    const session::FileFolder* folder_;
    int64_t max_file_bytes_;
};

// A fresh file id: "file-" and 48 hex digits.
std::string new_file_id();

// 404 for a file id that names no file of the caller.
ApiError no_file_error(const std::string& param, const std::string& id);

}  // namespace hichat::api
