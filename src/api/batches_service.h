// BatchesService: the Batch API: create (checked here: the input file, the endpoint, the completion
// window; the lines are validated by the BatchRunner), retrieve, list, cancel. Runs on a preprocessing
// worker (the store waits for the disk). Owned by OpenAiService; the store and the runner outlive it.
#pragma once

#include <string>
#include <vector>

#include "api/batch_runner.h"
#include "api/session_job.h"
#include "session/batch_store.h"

namespace hichat::api {

class BatchesService {
public:
    BatchesService(session::BatchStore* store, BatchRunner* runner) : store_(store), runner_(runner) {}

    // `parts`: the percent-decoded path segments ("v1", "batches", ...).
    void route(SessionJob& job, const std::vector<std::string>& parts);

private:
    void create(SessionJob& job);
    void list(SessionJob& job);
    void retrieve(SessionJob& job, const std::string& id);
    void cancel(SessionJob& job, const std::string& id);

    session::BatchStore* store_;
    BatchRunner* runner_;
};

// The completion window every batch has: OpenAI's only one.
inline constexpr const char* kCompletionWindow = "24h";
inline constexpr int64_t kCompletionWindowS = 24 * 3600;

}  // namespace hichat::api
