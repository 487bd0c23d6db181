#include "serve_command.h"

#include <algorithm>
#include <chrono>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>

#include "api/telemetry/access_log.h"
#include "api/telemetry/step_log.h"
#include "api/policy/api_key_store.h"
#include "api/policy/deny_list.h"
#include "api/telemetry/metrics.h"
#include "api/policy/quota_limiter.h"
#include "api/access_observer.h"
#include "api/http/http_server.h"
#include "api/openai_service.h"
#include "api/preprocess_pool.h"
#include "api/webhooks/webhook_outbox.h"
#include "api/webhooks/webhook_sender.h"
#include "executor/runner_factory.h"
#include "model/checkpoint.h"
#include "model_files.h"
#include "serve_options.h"
#include "signal_watcher.h"
#include "stop_tokens.h"
#include "tokenizer/tokenizer.h"

namespace hichat::tools {
namespace {

// A folder removed with its files when this goes (on every exit path of serve).
struct TempFolder {
    std::string path;  // "" : none
    TempFolder() = default;
    TempFolder(const TempFolder&) = delete;
    TempFolder& operator=(const TempFolder&) = delete;
    ~TempFolder() {
        std::error_code ec;
        if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
};

// What the service points to; built before the server takes traffic (front) or after loading (model).
struct Frontend {
    api::ApiKeyStore keys;
    std::unique_ptr<session::SessionStore> sessions;
    std::unique_ptr<api::SerialWorker> session_writer;  // writes finished turns to `sessions`
    std::unique_ptr<session::BatchStore> batches;       // files and batches, in the session database
    std::optional<session::FileFolder> files;           // the files' bytes
    TempFolder temp_files;                               // :memory: sessions without --files-dir
    std::unique_ptr<api::QuotaLimiter> quotas;
    api::Metrics metrics;
    std::unique_ptr<api::AccessLog> access_log;
    std::unique_ptr<api::StepLog> step_log;     // written by the engine thread only
    api::DenyList deny_list;
    std::unique_ptr<api::webhooks::WebhookSender> webhooks;  // null without --webhook-url
    std::unique_ptr<api::webhooks::WebhookOutbox> outbox;    // the stores' owed events to `webhooks`
};

struct LoadedModel {
    std::unique_ptr<model::Checkpoint> checkpoint;
    std::unique_ptr<tokenizer::Tokenizer> tokenizer;
    ChatTemplateFiles chat;
    std::unique_ptr<api::PromptBuilder> prompts;
    std::unique_ptr<engine::Engine> engine;
    std::unique_ptr<api::PreprocessPool> preprocess;  // its tasks submit to `engine`: stopped first
    std::vector<int32_t> eos_ids;
    std::string fingerprint;  // of the files that decide token ids: stored ids are reused only under it
};

// A hash of config.json, the tokenizer files and the chat template's file: stored token ids of a turn
// are valid only for the same model and tokenizer.
std::string model_fingerprint(const std::string& model_dir) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the files' bytes
    for (const char* name : {"config.json", "tokenizer.json", "tokenizer.model", "tokenizer_config.json",
                             "chat_template.jinja"}) {
        std::ifstream in(std::filesystem::path(model_dir) / name, std::ios::binary);
        std::string name_bytes = name;
        for (char c : name_bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
        for (std::istreambuf_iterator<char> it(in), end; it != end; ++it) {
            h = (h ^ static_cast<unsigned char>(*it)) * 1099511628211ull;
        }
    }
    char buf[24];
    std::snprintf(buf, sizeof(buf), "fnv1a-%016llx", static_cast<unsigned long long>(h));
    return buf;
}

// The Files and Batch APIs' tables beside the sessions' and their folder (--files-dir; with a :memory:
// session database and no --files-dir, a temporary folder as short-lived as the database).
Status open_batch_store(const ServeOptions& o, Frontend& f) {
    auto batches = session::BatchStore::open({.path = o.sessions.path});
    if (!batches.ok()) return invalid_argument("--session-db: " + batches.status().message());
    f.batches = std::move(batches).value();
    std::string dir = o.files_dir;
    if (dir.empty()) {
        std::string pattern = (std::filesystem::temp_directory_path() / "hichat-files-XXXXXX").string();
        if (mkdtemp(pattern.data()) == nullptr) return invalid_argument("cannot create a temporary files folder in " + pattern);
        dir = f.temp_files.path = pattern;
    }
    auto folder = session::FileFolder::open(dir);
    if (!folder.ok()) return invalid_argument("--files-dir: " + folder.status().message());
    f.files = std::move(folder).value();
    return ok_status();
}

// The webhook sender (--webhook-url), started before the server listens so that a state db it
// cannot open is one error line; its worker resumes the deliveries that db holds. Then the events
// the stores still owe (the last server stopped or was killed before handing them over) are enqueued,
// before any new one.
Status start_webhooks(const ServeOptions& o, Frontend& f) {
    if (o.webhooks.target_urls.empty()) return ok_status();
    auto sender = api::webhooks::WebhookSender::start(o.webhooks);
    HICHAT_RETURN_IF_ERROR(sender.status());
    f.webhooks = std::move(sender).value();
    std::fprintf(stderr, "hichat serve: webhooks: batch and background response events to %zu URL(s), pending deliveries %s%s\n",
                 o.webhooks.target_urls.size(), o.webhooks.state_db_path.empty() ? "in memory" : "in ",
                 o.webhooks.state_db_path.c_str());
    f.outbox = std::make_unique<api::webhooks::WebhookOutbox>(*f.webhooks, f.batches.get(), f.sessions.get());
    auto num_owed = f.outbox->send_all_owed();
    if (!num_owed.ok()) {
        std::fprintf(stderr, "hichat serve: warning: webhook events owed by the last run stay owed: %s\n",
                     num_owed.status().message().c_str());
    } else if (*num_owed > 0) {
        std::fprintf(stderr, "hichat serve: webhooks: %d event(s) owed by the last run enqueued\n", *num_owed);
    }
    return ok_status();
}

// A key file without keys or a deny list without phrases would leave the server open or unfiltered
// while the flag says otherwise: both are refused by name.
Status build_frontend(const ServeOptions& o, Frontend& f) {
    for (const auto& k : o.api_keys) HICHAT_RETURN_IF_ERROR(f.keys.add_key(k, "--api-key"));
    for (const auto& file : o.api_key_files) {
        const size_t before = f.keys.num_keys();
        HICHAT_RETURN_IF_ERROR(f.keys.add_key_file(file));
        if (f.keys.num_keys() == before)
            return invalid_argument("--api-key-file " + file + ": the file holds no keys");
    }
    for (const auto& [id, weight] : o.key_weights) {
        const auto& stored = f.keys.stored_keys();
        if (std::none_of(stored.begin(), stored.end(), [&](const auto& k) { return k.id.value == id; }))
            return invalid_argument("--key-weight: no configured API key has the id " + id);
    }
    if (!o.quota.unlimited()) f.quotas = std::make_unique<api::QuotaLimiter>(o.quota);
    if (!o.access_log.empty()) {
        auto log = api::AccessLog::open(o.access_log);
        if (!log.ok()) return invalid_argument("--access-log " + log.status().message());
        f.access_log = std::move(log).value();
    }
    if (!o.step_log.empty()) {
        auto log = api::StepLog::open(o.step_log);
        if (!log.ok()) return invalid_argument("--step-log " + log.status().message());
        f.step_log = std::move(log).value();
    }
    if (o.session_db_is_default && o.sessions.path != ":memory:") {
        std::error_code ec;  // a failure shows as the store's own "cannot open" below
        std::filesystem::create_directories(std::filesystem::path(o.sessions.path).parent_path(), ec);
    }
    auto sessions = session::SessionStore::open(o.sessions);
    if (!sessions.ok()) return invalid_argument("--session-db: " + sessions.status().message());
    f.sessions = std::move(sessions).value();
    f.session_writer = std::make_unique<api::SerialWorker>();
    HICHAT_RETURN_IF_ERROR(open_batch_store(o, f));
    HICHAT_RETURN_IF_ERROR(start_webhooks(o, f));
    if (!o.deny_list_file.empty()) {
        auto deny = api::DenyList::load(o.deny_list_file);
        HICHAT_RETURN_IF_ERROR(deny.status());
        if (deny->empty())
            return invalid_argument("--deny-list " + o.deny_list_file + ": the file holds no phrases");
        f.deny_list = std::move(deny).value();
    }
    return ok_status();
}

executor::RunnerOptions runner_options(const ServeOptions& o) {
    executor::RunnerOptions r{.device = o.device,
            .num_threads = o.num_threads,
            .cpu_kv_cache_bytes = o.kv_cache_bytes,
            .gpu_memory_fraction = o.gpu_memory_fraction,
            .max_num_seqs = o.engine.scheduler.max_num_seqs,
            .max_num_tokens_per_step = o.engine.scheduler.max_num_tokens_per_step,
            .max_context_tokens = o.max_model_len,
            .host_kv_cache_bytes = o.host_kv_cache_bytes,
            .kv_cache_dtype = o.kv_cache_dtype};
    o.placement.apply(r);
    return r;
}

// The model folder's files (mapped, not yet converted): read before the server listens, so that a bad
// folder is one error line and nothing else.
Status open_model_files(const ServeOptions& o, LoadedModel& m) {
    auto checkpoint = model::Checkpoint::open(o.model_dir, o.checkpoint);
    HICHAT_RETURN_IF_ERROR(checkpoint.status());
    m.checkpoint = std::move(checkpoint).value();
    const int model_len = m.checkpoint->config().max_position_embeddings;
    if (o.max_model_len > model_len) {
        return invalid_argument("--max-model-len " + std::to_string(o.max_model_len) +
                                " exceeds the model's context of " + std::to_string(model_len) +
                                " tokens (max_position_embeddings in config.json)");
    }
    auto tok = tokenizer::Tokenizer::load(o.model_dir);
    HICHAT_RETURN_IF_ERROR(tok.status());
    m.tokenizer = std::move(tok).value();
    auto chat = load_chat_template(o.model_dir);
    HICHAT_RETURN_IF_ERROR(chat.status());
    m.chat = std::move(chat).value();
    m.prompts = std::make_unique<api::PromptBuilder>(*m.tokenizer, m.chat.chat_template ? &*m.chat.chat_template : nullptr,
                                                     m.chat.bos_token, m.chat.eos_token,
                                                     api::detect_tool_format(m.chat.source));
    m.eos_ids = stop_token_ids(o.model_dir, m.checkpoint->config(), *m.tokenizer);
    m.fingerprint = model_fingerprint(o.model_dir);
    // The device is chosen from the shape before the server listens: `--device cuda` with a shape the
    // CUDA backend lacks is one error line; `auto` says here why it takes the CPU.
    auto choice = executor::choose_device(m.checkpoint->config(), runner_options(o), executor::cuda_presence());
    HICHAT_RETURN_IF_ERROR(choice.status());
    if (!choice->note.empty()) std::fprintf(stderr, "hichat serve: %s\n", choice->note.c_str());
    return ok_status();
}

// The runner (weights converted or uploaded, KV cache allocated) and the engine thread.
Status start_engine(const ServeOptions& o, Frontend& f, LoadedModel& m) {
    std::string placement;
    auto runner = executor::make_runner(*m.checkpoint, runner_options(o), &placement);
    HICHAT_RETURN_IF_ERROR(runner.status());
    if (!placement.empty()) std::fprintf(stderr, "hichat serve: layer placement:\n%s\n", placement.c_str());
    if ((*runner)->num_graphs_captured() > 0)
        std::fprintf(stderr, "hichat serve: %lld decode graphs captured\n", static_cast<long long>((*runner)->num_graphs_captured()));
    const int block_tokens = (*runner)->kv_block_size_tokens();
    engine::EngineConfig engine_config = o.engine;
    engine_config.max_model_len = o.max_model_len;
    engine_config.output_deny_list = f.deny_list.phrases();
    engine_config.on_step = [metrics = &f.metrics, log = f.step_log.get(),
                             t0 = std::chrono::steady_clock::now()](const engine::StepReport& r) {
        metrics->observe_step(r.ms / 1000.0, r.prefill_tokens);
        if (log == nullptr) return;
        log->write({.at_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                    .ms = r.ms,
                    .predicted_ms = r.predicted_ms,
                    .blocked_ms = r.blocked_ms,
                    .prefill_tokens = r.prefill_tokens,
                    .decode_rows = r.decode_rows,
                    .decode_keys = r.decode_keys,
                    .itl_target_ms = r.itl_target_ms,
                    .graphs_captured = r.graphs_captured});
    };
    m.engine = std::make_unique<engine::Engine>(std::move(runner).value(), *m.tokenizer, engine_config);
    const engine::EngineStats kv = m.engine->stats();
    std::fprintf(stderr, "hichat serve: KV cache: %d blocks of %d tokens, host tier: %d blocks%s\n",
                 kv.num_kv_blocks_total, block_tokens, kv.num_host_kv_blocks_total,
                 o.engine.prefix_cache ? "" : " (prefix cache off)");
    const int num_cores = static_cast<int>(std::thread::hardware_concurrency());
    m.preprocess = std::make_unique<api::PreprocessPool>(api::PreprocessPoolConfig{
        .num_workers = api::PreprocessPool::default_num_workers(num_cores, o.http.num_io_threads, o.num_threads),
        .max_queued = o.engine.max_waiting});
    return ok_status();
}

// "; webhook <type> <id>" per event the outbox enqueued for an object, or why none was.
std::string webhook_note(const Result<std::vector<api::webhooks::EnqueuedEvent>>& sent) {
    if (!sent.ok()) return "; webhook not sent yet (still owed, sent at the next start): " + sent.status().message();
    std::string note;
    for (const auto& e : *sent) note += "; webhook " + e.event_type + " " + e.message_id;
    return note;
}

// The batch runner's hook (its thread): one log line and, with webhooks on, the batch's owed event
// with data {"id": <batch id>} to every --webhook-url. Never waits on the network.
void on_batch_finished(api::webhooks::WebhookOutbox* outbox, const session::StoredBatch& b) {
    const std::string webhook = outbox != nullptr ? webhook_note(outbox->send_batch_event(b.id)) : "";
    std::fprintf(stderr, "hichat serve: batch %s %s: %lld of %lld lines answered, %lld failed%s\n", b.id.c_str(),
                 std::string(session::batch_status_name(b.status)).c_str(),
                 static_cast<long long>(b.num_requests_completed + b.num_requests_failed),
                 static_cast<long long>(b.num_requests_total), static_cast<long long>(b.num_requests_failed),
                 webhook.c_str());
}

// A background response ended (the session writer's thread, a preprocessing worker's, or at start for
// those the last run left unfinished): one log line and, with webhooks on, its owed event
// (response.completed, .incomplete, .failed or .cancelled) with data {"id": <response id>}.
void on_background_response_finished(api::webhooks::WebhookOutbox* outbox, const std::string& id,
                                     std::string_view status) {
    const std::string webhook = outbox != nullptr ? webhook_note(outbox->send_response_event(id)) : "";
    std::fprintf(stderr, "hichat serve: background response %s %s%s\n", id.c_str(), std::string(status).c_str(),
                 webhook.c_str());
}

api::ServiceDeps service_deps(const ServeOptions& o, Frontend& f, LoadedModel& m) {
    return {.engine = m.engine.get(),
            .preprocess = m.preprocess.get(),
            .tokenizer = m.tokenizer.get(),
            .prompts = m.prompts.get(),
            .keys = &f.keys,
            .quotas = f.quotas.get(),
            .metrics = &f.metrics,
            .input_filter = &f.deny_list,
            .eos_token_ids = m.eos_ids,
            .sessions = f.sessions.get(),
            .session_writer = f.session_writer.get(),
            .model_fingerprint = m.fingerprint,
            .batches = {.store = f.batches.get(),
                        .folder = f.files ? &*f.files : nullptr,
                        .max_file_bytes = o.max_file_bytes,
                        .runner = {.max_lines_in_flight = o.batch_lines_in_flight,
                                   .on_batch_finished = [outbox = f.outbox.get()](const session::StoredBatch& b) {
                                       on_batch_finished(outbox, b);
                                   },
                                   .owe_webhooks = f.webhooks != nullptr}},
            .on_background_response_finished = [outbox = f.outbox.get()](const std::string& id,
                                                                          std::string_view status) {
                on_background_response_finished(outbox, id, status);
            },
            .owe_webhooks = f.webhooks != nullptr};
}

void wire_engine_gauges(Frontend& f, engine::Engine& e, const api::PreprocessPool& pool) {
    f.metrics.set_engine_gauges_source([&e, &pool] {
        engine::EngineStats s = e.stats();
        api::PreprocessPoolStats p = pool.stats();
        return api::EngineGauges{.num_requests_waiting = s.num_waiting,
                                 .num_requests_running = s.num_running,
                                 .num_kv_blocks_used = s.num_kv_blocks_used,
                                 .num_kv_blocks_free = s.num_kv_blocks_free,
                                 .num_kv_blocks_cached = s.num_kv_blocks_cached,
                                 .prefix_cache_queried_tokens = s.prefix_cache.queried_tokens,
                                 .prefix_cache_hit_tokens = s.prefix_cache.hit_tokens,
                                 .prefix_cache_preempted_queried_tokens = s.prefix_cache.preempted_queried_tokens,
                                 .prefix_cache_preempted_hit_tokens = s.prefix_cache.preempted_hit_tokens,
                                 .prefix_cache_evictions = s.prefix_cache_evictions,
                                 .prefix_cache_host_hit_tokens = s.prefix_cache.host_hit_tokens,
                                 .num_host_kv_blocks_total = s.num_host_kv_blocks_total,
                                 .num_host_kv_blocks_used = s.num_host_kv_blocks_used,
                                 .host_kv_offloaded_blocks = s.host_kv_offloaded,
                                 .host_kv_restored_blocks = s.host_kv_restored,
                                 .host_kv_dropped_blocks = s.host_kv_dropped,
                                 .num_preprocess_workers = p.num_workers,
                                 .num_preprocess_tasks_running = p.num_tasks_running,
                                 .num_preprocess_tasks_queued = p.num_tasks_queued,
                                 .itl_target_misses = s.itl_target_misses,
                                 .ttft_target_misses = s.ttft_target_misses};
    });
}

// Attempts in flight are abandoned; what is not delivered stays in the state db for the next start
// (without one, the sender logs how many are dropped).
void stop_webhooks(const ServeOptions& o, Frontend& f) {
    if (!f.webhooks) return;
    const size_t num_pending = f.webhooks->num_pending();
    if (num_pending > 0 && !o.webhooks.state_db_path.empty()) {
        std::fprintf(stderr, "hichat serve: %zu webhook deliveries pending in %s, resumed at the next start\n",
                     num_pending, o.webhooks.state_db_path.c_str());
    }
    f.outbox.reset();
    f.webhooks.reset();
}

int fail(const Status& s) {
    std::fprintf(stderr, "hichat serve: %s\n", s.message().c_str());
    return 2;
}

int serve_main(const CliArgs& flags) {
    auto opts = parse_serve_options(flags);
    if (!opts.ok()) return fail(opts.status());
    SignalWatcher signals;  // before any thread starts
    std::signal(SIGPIPE, SIG_IGN);
    Frontend front;
    if (Status s = build_frontend(*opts, front); !s.ok()) return fail(s);
    LoadedModel model;
    if (Status s = open_model_files(*opts, model); !s.ok()) return fail(s);
    api::OpenAiService service({.served_model_name = opts->served_model_name,
                                .request_timeout_s = opts->request_timeout_s});
    api::Router router;
    service.add_routes(router);
    opts->http.on_exchange = api::make_access_observer(front.access_log.get(), &front.metrics);
    auto server = api::HttpServer::start(opts->http, std::move(router));
    if (!server.ok()) return fail(server.status());
    std::fprintf(stderr, "hichat serve: listening on %s://%s:%d (loading %s; %d I/O threads, %d CPU compute threads)\n",
                 opts->http.tls_enabled() ? "https" : "http", opts->http.host.c_str(), (*server)->port(),
                 opts->model_dir.c_str(), opts->http.num_io_threads, opts->num_threads);
    if (front.keys.empty()) {
        std::fprintf(stderr, "hichat serve: warning: no API key configured; the server is open to anyone who can reach it\n");
    }
    signals.start([&](int sig) {
        std::fprintf(stderr, "hichat serve: signal %d: draining and shutting down\n", sig);
        (*server)->begin_shutdown();
    });
    if (Status s = start_engine(*opts, front, model); !s.ok()) {
        signals.stop();
        (*server)->begin_shutdown();
        (*server)->wait();
        return fail(s);
    }
    wire_engine_gauges(front, *model.engine, *model.preprocess);
    service.attach(service_deps(*opts, front, model));
    std::fprintf(stderr, "hichat serve: ready: model '%s', context %d tokens\n", opts->served_model_name.c_str(),
                 model.engine->max_context_tokens());
    signals.wait();
    (*server)->wait();
    front.metrics.set_engine_gauges_source(nullptr);
    // Every connection is closed now: queued preprocessing tasks have no one to answer and are
    // dropped; running ones finish (and may still submit) before the engine goes.
    service.stop_batches();  // its lines in flight are cancelled and run again at the next start
    model.preprocess->stop();
    model.engine.reset();  // cancels what is left: background responses in progress end failed
    if (front.session_writer) front.session_writer->stop();  // stores the turns that finished, before the store closes
    // Last: the background responses' ends (stored by the session writer) send their events until here;
    // no event comes after it.
    stop_webhooks(*opts, front);
    if (front.access_log) front.access_log->flush();

    std::fprintf(stderr, "hichat serve: stopped\n");
    return 0;
}

}  // namespace

const Command& serve_command() {
    static const Command command{
        .name = "serve",
        .summary = "the OpenAI-compatible HTTP server (chat page at /, API at /v1)",
        .details =
            "Listens as soon as the model folder is read; /health answers 503 until the model is loaded.\n"
            "SIGTERM / SIGINT drain the requests in flight (--shutdown-drain-s), then exit 0.\n",
        .flags = serve_flags(),
        .run = serve_main};
    return command;
}

}  // namespace hichat::tools
