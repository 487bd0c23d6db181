// StepLog: one JSON line per engine step (`hichat serve --step-log FILE`), for tuning the latency
// targets against what the steps really cost: when the step ended, how long it took, what the cost
// model predicted for it, how long the engine waited for its results, and what it held.
// Engine thread only (the one that calls write()); lines are flushed as written.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "base/status.h"

namespace hichat::api {

struct StepLogRecord {
    double at_s = 0;           // when the step's results arrived, seconds since the log was opened
    double ms = 0;             // the step's measured time (as the cost model observes it)
    double predicted_ms = 0;   // the cost model's prediction for it; 0 before the model is ready
    double blocked_ms = 0;     // how long the engine waited for its results (near 0: the host set the pace)
    int prefill_tokens = 0;
    int decode_rows = 0;
    double decode_keys = 0;    // keys the decode rows attended over
    double itl_target_ms = 0;  // the step's ITL target; 0: none
    int graphs_captured = 0;   // step graphs the runner captured while it ran (each holds up the host)
};

class StepLog {
public:
    // Creates or appends to `path`. Errors: kNotFound naming the path.
    static Result<std::unique_ptr<StepLog>> open(const std::string& path);
    ~StepLog();
    StepLog(const StepLog&) = delete;
    StepLog& operator=(const StepLog&) = delete;

    void write(const StepLogRecord& record);
    // The JSON line of a record, without its newline.
    static std::string to_json_line(const StepLogRecord& record);

private:
    explicit StepLog(std::FILE* file) : file_(file) {}
    std::FILE* file_;
};

}  // namespace hichat::api
