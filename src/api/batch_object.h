// The Files and Batch APIs' objects as served: OpenAI's file object and batch object. Pure.
#pragma once

#include <nlohmann/json.hpp>

#include "session/batch_store.h"

namespace hichat::api {

// {"id":"file-...","object":"file","bytes","created_at","filename","purpose","status":"processed",...}
nlohmann::json file_object_json(const session::StoredFile& f);

// {"id":"batch_...","object":"batch","endpoint","errors","input_file_id","completion_window","status",
// "output_file_id","error_file_id","created_at","in_progress_at",...,"request_counts":{...},"metadata"};
// times not (yet) reached and files not (yet) made are null.
nlohmann::json batch_object_json(const session::StoredBatch& b);

}  // namespace hichat::api
