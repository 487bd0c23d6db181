// ServeOptions: everything `hichat serve` reads from its flags, validated once.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "api/policy/quota_config.h"
#include "api/http/http_server_config.h"
#include "api/webhooks/webhook_config.h"
#include "base/status.h"
#include "cli_args.h"
#include "engine/engine.h"
#include "executor/runner_factory.h"
#include "placement_flags.h"
#include "flag_spec.h"
#include "model/checkpoint.h"
#include "session/session_store.h"

namespace hichat::tools {

struct ServeOptions {
    std::string model_dir;
    std::string served_model_name;         // default: the model folder's name
    api::HttpServerConfig http;
    engine::EngineConfig engine;
    executor::DeviceKind device = executor::DeviceKind::kAuto;
    model::CheckpointOptions checkpoint;   // --quantization
    executor::KvCacheDtype kv_cache_dtype = executor::KvCacheDtype::kAuto;
    PlacementFlags placement;              // --gpu-layers, --offload, --gpu-memory-gb
    int num_threads = 0;                   // CPU compute threads; 0: all cores (default: see ThreadSplit)
    int64_t kv_cache_bytes = 0;            // CPU KV pool; 0: enough for max_num_seqs full contexts, <= 25% of RAM
    double gpu_memory_fraction = 0.9;      // CUDA KV pool: this share of the free memory after weights
    int64_t host_kv_cache_bytes = -1;      // CUDA host KV tier; -1: executor::host_kv_auto_bytes(), 0: off
    int max_model_len = 0;                 // 0: the model's max_position_embeddings (capped by the KV pool)
    std::vector<std::string> api_keys;
    std::vector<std::pair<std::string, double>> key_weights;   // --key-weight: key id, weight
    std::vector<std::string> api_key_files;
    api::QuotaConfig quota;
    std::string deny_list_file;
    std::string access_log;                // file path, "-" for stderr, empty: off
    std::string step_log;                  // file path, empty: off
    int request_timeout_s = 0;
    session::SessionStoreConfig sessions;  // --session-db, --session-ttl, --session-max-rows
    bool session_db_is_default = false;    // the data folder is created when missing
    // The Files and Batch APIs: metadata in the session database, the bytes in this folder. "" (only
    // with a :memory: session database): a temporary folder, removed at exit.
    std::string files_dir;                 // --files-dir
    int64_t max_file_bytes = int64_t{100} << 20;  // --max-file-mb
    int batch_lines_in_flight = 4;         // --batch-concurrency
    // Batch events as signed webhooks (--webhook-*); no target URL: webhooks off, no sender started.
    // state_db_path defaults to <session db>-webhooks.db beside the session database ("" with :memory:).
    api::webhooks::WebhookConfig webhooks;
};

// How `hichat serve` splits the cores when --threads / --io-threads are not given: the I/O threads
// (HTTP, JSON, SSE) get cores of their own and compute takes the rest, so that neither waits for the
// other. On a small machine one I/O thread is enough (a streamed token costs it a few microseconds).
struct ThreadSplit {
    int num_compute_threads = 1;
    int num_io_threads = 1;
};
ThreadSplit default_thread_split(int num_cores);

// The flags of `hichat serve`, one row each (the only source of the parser and of `--help`).
std::span<const FlagSpec> serve_flags();

// Errors name the flag. A flag that would have no effect with the others given (a per-key limit
// without keys, a CUDA-only flag on the CPU, ...) is refused by name, never silently ignored.
Result<ServeOptions> parse_serve_options(const CliArgs& flags);

}  // namespace hichat::tools
