#include "api/files_service.h"

#include "api/batch_object.h"
#include "api/http/multipart_form.h"
#include "api/input_items.h"
#include "api/responses_request.h"

namespace hichat::api {
namespace {

using Json = nlohmann::json;

const char* const kUploadHelp = "files.create takes multipart/form-data with the fields purpose and file";

}  // namespace

std::string new_file_id() { return "file-" + new_object_id("x").substr(2); }

ApiError no_file_error(const std::string& param, const std::string& id) {
    return not_found_error(param, "no file " + id + " exists");
}

void FilesService::route(SessionJob& job, const std::vector<std::string>& parts) {
    const std::string& m = job.request.method;
    const size_t n = parts.size();
    if (n == 2 && m == "POST") return create(job);
    if (n == 2 && m == "GET") return list(job);
    if (n == 3 && m == "GET") return retrieve(job, parts[2]);
    if (n == 3 && m == "DELETE") return remove(job, parts[2]);
    if (n == 4 && m == "GET" && parts[3] == "content") return content(job, parts[2]);
    job.reply_error({.http_status = 404, .message = "no route " + m + " " + job.request.path, .code = "not_found"});
}

void FilesService::create(SessionJob& job) {
    const auto boundary = multipart_boundary(job.request.header("Content-Type").value_or(""));
    if (!boundary) return job.reply_error(bad_field("", std::string(kUploadHelp) + " (Content-Type is not multipart/form-data with a boundary)"));
    auto parts = parse_multipart_form(job.request.body, *boundary);
    if (!parts.ok()) return job.reply_error(bad_field("", std::string(kUploadHelp) + ": " + parts.status().message()));
    const MultipartPart* purpose = find_part(*parts, "purpose");
    if (purpose == nullptr) return job.reply_error(bad_field("purpose", "purpose is required: " + std::string(kUploadHelp)));
    if (purpose->data != "batch") {
        return job.reply_error(bad_field("purpose", "purpose must be \"batch\" (this server keeps files for batches only), got \"" +
                                                        std::string(purpose->data) + "\""));
    }
    const MultipartPart* file = find_part(*parts, "file");
    if (file == nullptr || !file->filename) {
        return job.reply_error(bad_field("file", "file is required, as a part with a filename: " + std::string(kUploadHelp)));
    }
    const auto num_bytes = static_cast<int64_t>(file->data.size());
    if (num_bytes > max_file_bytes_) {
        return job.reply_error({.http_status = 413,
                                .message = "file is " + std::to_string(num_bytes) + " bytes, over this server's limit of " +
                                           std::to_string(max_file_bytes_) + " bytes (--max-file-mb)",
                                .param = "file",
                                .code = "file_too_large"});
    }
    session::StoredFile f{.id = new_file_id(), .owner = job.owner(), .num_bytes = num_bytes,
                          .filename = *file->filename, .purpose = "batch"};
    if (Status s = folder_->write(f.id, file->data); !s.ok()) return job.reply_error(store_error(s.message()));
    if (Status s = store_->put_file(f); !s.ok()) {
        (void)folder_->remove(f.id);
        return job.reply_error(store_error(s.message()));
    }
    auto stored = store_->get_file(f.owner, f.id);
    if (!stored.ok() || !stored->has_value()) return job.reply_error(store_error("the file vanished after it was written"));
    job.reply(200, file_object_json(**stored));
}

void FilesService::list(SessionJob& job) {
    ListQuery q;
    if (auto e = parse_list_query(job.request.query, q)) return job.reply_error(*e);
    auto page = store_->list_files(job.owner(), {.after = q.after, .limit = q.limit});
    if (!page.ok() && page.status().code() == StatusCode::kNotFound) return job.reply_error(no_file_error("after", q.after));
    if (!page.ok()) return job.reply_error(store_error(page.status().message()));
    Json data = Json::array();
    for (const session::StoredFile& f : page->items) data.push_back(file_object_json(f));
    Json list = {{"object", "list"}, {"data", data}, {"has_more", page->has_more}};
    list["first_id"] = page->items.empty() ? Json(nullptr) : Json(page->items.front().id);
    list["last_id"] = page->items.empty() ? Json(nullptr) : Json(page->items.back().id);
    job.reply(200, list);
}

void FilesService::retrieve(SessionJob& job, const std::string& id) {
    auto f = store_->get_file(job.owner(), id);
    if (!f.ok()) return job.reply_error(store_error(f.status().message()));
    if (!f->has_value()) return job.reply_error(no_file_error("file_id", id));
    job.reply(200, file_object_json(**f));
}

void FilesService::content(SessionJob& job, const std::string& id) {
    auto f = store_->get_file(job.owner(), id);
    if (!f.ok()) return job.reply_error(store_error(f.status().message()));
    if (!f->has_value()) return job.reply_error(no_file_error("file_id", id));
    auto bytes = folder_->read(id);
    if (!bytes.ok()) return job.reply_error(store_error(bytes.status().message()));
    if (job.key) job.writer->annotate(AccessRecord{.key_id = job.key});
    job.writer->send(200, "application/octet-stream", std::move(bytes).value());
}

void FilesService::remove(SessionJob& job, const std::string& id) {
    auto deleted = store_->delete_file(job.owner(), id);
    if (!deleted.ok()) return job.reply_error(store_error(deleted.status().message()));
    if (!*deleted) return job.reply_error(no_file_error("file_id", id));
    if (Status s = folder_->remove(id); !s.ok()) return job.reply_error(store_error(s.message()));
    job.reply(200, {{"id", id}, {"object", "file"}, {"deleted", true}});
}

}  // namespace hichat::api
