// `hichat bench serve` against a real `hichat serve` on the tiny llama3 fixture, both run as a user
// runs them: the server on port 0 (the port is parsed from its stderr), the benchmark as a process.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

extern char** environ;

namespace hichat {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// A model folder as tests/node_api/server_harness.mjs builds it: llama3 weights, byte tokenizer,
// tiny chat template.
void make_model_dir(const fs::path& dir) {
    const fs::path fixtures = HICHAT_FIXTURES_DIR;
    fs::create_directories(dir);
    fs::copy_file(fixtures / "llama3/config.json", dir / "config.json");
    fs::copy_file(fixtures / "llama3/model.safetensors", dir / "model.safetensors");
    fs::copy_file(fixtures / "byte_tokenizer/tokenizer.json", dir / "tokenizer.json");
    fs::copy_file(fixtures / "tiny_chat/tokenizer_config.json", dir / "tokenizer_config.json");
}

// `hichat serve` as a child process; its stderr is read until "ready:", then drained by a thread.
class ServerProcess {
public:
    bool start(const fs::path& model_dir, const std::vector<std::string>& extra) {
        int fds[2];
        if (pipe(fds) != 0) return false;
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
        posix_spawn_file_actions_addclose(&actions, fds[0]);
        std::vector<std::string> args = {HICHAT_BIN, "serve", "--model",   model_dir.string(),
                                         "--port",   "0",     "--threads", "2"};
        args.insert(args.end(), extra.begin(), extra.end());
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        const int rc = posix_spawn(&pid_, HICHAT_BIN, &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        close(fds[1]);
        fd_ = fds[0];
        return rc == 0 && wait_ready();
    }

    ~ServerProcess() {
        if (pid_ > 0) {
            kill(pid_, SIGTERM);
            int status = 0;
            waitpid(pid_, &status, 0);
        }
        if (drain_.joinable()) drain_.join();
        if (fd_ >= 0) close(fd_);
    }

    int port() const { return port_; }
    const std::string& log() const { return log_; }

private:
    bool wait_ready() {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        const std::regex listening("listening on http://[^:]+:([0-9]+)");
        char buf[4096];
        while (std::chrono::steady_clock::now() < deadline) {
            pollfd p{fd_, POLLIN, 0};
            if (poll(&p, 1, 200) <= 0) continue;
            const ssize_t n = read(fd_, buf, sizeof(buf));
            if (n <= 0) return false;  // the server exited
            log_.append(buf, static_cast<size_t>(n));
            std::smatch m;
            if (port_ == 0 && std::regex_search(log_, m, listening)) port_ = std::stoi(m[1]);
            if (port_ != 0 && log_.find("ready:") != std::string::npos) {
                drain_ = std::thread([fd = fd_] {
                    char sink[4096];
                    while (read(fd, sink, sizeof(sink)) > 0) {
                    }
                });
                return true;
            }
        }
        return false;
    }

    pid_t pid_ = -1;
    int fd_ = -1;
    int port_ = 0;
    std::string log_;
    std::thread drain_;
};

struct RunResult {
    int exit_code = -1;
    std::string out, err;
};

class BenchServeEndToEnd : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new fs::path(fs::temp_directory_path() / ("hichat_bench_serve_" + std::to_string(getpid())));
        make_model_dir(*dir_ / "tiny");
        server_ = new ServerProcess();
        ASSERT_TRUE(server_->start(*dir_ / "tiny", {"--api-key", "sk-bench"})) << server_->log();
    }
    static void TearDownTestSuite() {
        delete server_;
        fs::remove_all(*dir_);
        delete dir_;
    }

    static RunResult bench(const std::string& flags) {
        const fs::path out = *dir_ / "stdout", err = *dir_ / "stderr";
        const std::string cmd = std::string(HICHAT_BIN) +
                                " bench serve --url http://127.0.0.1:" + std::to_string(server_->port()) +
                                " " + flags + " > " + out.string() + " 2> " + err.string();
        const int status = std::system(cmd.c_str());
        return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
    }

    // The JSON line: the last line of stdout.
    static nlohmann::json json_line(const std::string& out) {
        std::string s = out;
        while (!s.empty() && s.back() == '\n') s.pop_back();
        return nlohmann::json::parse(s.substr(s.rfind('\n') + 1));
    }

    static fs::path* dir_;
    static ServerProcess* server_;
};

fs::path* BenchServeEndToEnd::dir_ = nullptr;
ServerProcess* BenchServeEndToEnd::server_ = nullptr;

TEST_F(BenchServeEndToEnd, EightPromptsAtConcurrencyFour) {
    const fs::path result_file = *dir_ / "results.jsonl";
    const RunResult r = bench(
        "--model tiny --api-key sk-bench --input-len 16 --output-len 8 --num-prompts 8 "
        "--max-concurrency 4 --seed 1 --result-file " +
        result_file.string());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto j = json_line(r.out);
    EXPECT_EQ(j["completed"], 8);
    EXPECT_EQ(j["failed"], 0);
    EXPECT_EQ(j["total_output_tokens"], 64);
    EXPECT_EQ(j["total_input_tokens"], 128);
    EXPECT_EQ(j["max_concurrency"], 4);
    EXPECT_LE(j["max_concurrent_requests"].get<int>(), 4);
    EXPECT_GT(j["request_throughput"].get<double>(), 0);
    EXPECT_GT(j["mean_ttft_ms"].get<double>(), 0);
    // The tiny model's tokens may reach the client in one read (the server merges queued chunks into
    // one write), so inter-token latency can be 0 on a loaded machine; it is never negative.
    EXPECT_GE(j["mean_itl_ms"].get<double>(), 0);
    EXPECT_GE(j["p99_e2el_ms"].get<double>(), j["median_e2el_ms"].get<double>());
    // One chunk per token: the server's chunk count matches usage, and the prompt length is exact.
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("Serving Benchmark Result"), std::string::npos);
    EXPECT_EQ(nlohmann::json::parse(slurp(result_file)), j);
}

TEST_F(BenchServeEndToEnd, PoissonArrivals) {
    const RunResult r = bench(
        "--model tiny --api-key sk-bench --input-len 8 --output-len 4 --num-prompts 6 "
        "--max-concurrency 6 --request-rate 40 --seed 3");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto j = json_line(r.out);
    EXPECT_EQ(j["completed"], 6);
    EXPECT_EQ(j["total_output_tokens"], 24);
    EXPECT_EQ(j["request_rate"], 40.0);
    // The last request arrives at N / rate = 0.15 s, so the run cannot be shorter.
    EXPECT_GE(j["duration"].get<double>(), 0.15);
}

TEST_F(BenchServeEndToEnd, SharedPrefixSendsEveryGroupsPrompts) {
    const RunResult r = bench(
        "--model tiny --api-key sk-bench --dataset shared-prefix --gsp-num-groups 3 --gsp-prompts-per-group 4 "
        "--gsp-system-prompt-len 32 --gsp-question-len 8 --gsp-output-len 4 --max-concurrency 4 --seed 5");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto j = json_line(r.out);
    EXPECT_EQ(j["dataset"], "shared-prefix");
    EXPECT_EQ(j["gsp_num_groups"], 3);
    EXPECT_EQ(j["completed"], 12);
    EXPECT_EQ(j["total_input_tokens"], 12 * 40);
    EXPECT_EQ(j["total_output_tokens"], 12 * 4);
    // usage.prompt_tokens == 40 for every request: no warning.
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
    // Today's server may not report cached_tokens (null, "n/a"); once it does, a share in [0, 1].
    ASSERT_TRUE(j.contains("cached_prompt_share"));
    if (!j["cached_prompt_share"].is_null()) {
        EXPECT_GE(j["cached_prompt_share"].get<double>(), 0.0);
        EXPECT_LE(j["cached_prompt_share"].get<double>(), 1.0);
    } else {
        EXPECT_NE(r.out.find("Prompt tokens served from cache:         n/a"), std::string::npos) << r.out;
    }
}

TEST_F(BenchServeEndToEnd, MultiTurnPromptsCarryTheHistory) {
    const fs::path transcript = *dir_ / "transcript.jsonl";
    const RunResult r = bench(
        "--model tiny --api-key sk-bench --dataset multi-turn --mt-num-conversations 3 --mt-num-turns 3 "
        "--mt-input-len 8 --mt-output-len 6 --max-concurrency 2 --seed 2 --mt-transcript " +
        transcript.string());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto j = json_line(r.out);
    EXPECT_EQ(j["dataset"], "multi-turn");
    EXPECT_EQ(j["completed"], 9);
    EXPECT_EQ(j["total_output_tokens"], 9 * 6);
    EXPECT_LE(j["max_concurrent_requests"].get<int>(), 2);
    ASSERT_EQ(j["turns"].size(), 3u);
    for (int t = 0; t < 3; ++t) {
        EXPECT_EQ(j["turns"][t]["turn"], t);
        EXPECT_EQ(j["turns"][t]["completed"], 3);
        EXPECT_GT(j["turns"][t]["mean_ttft_ms"].get<double>(), 0);
    }
    EXPECT_NE(r.out.find("TTFT by Turn"), std::string::npos);

    std::vector<nlohmann::json> lines;
    std::istringstream in(slurp(transcript));
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    ASSERT_EQ(lines.size(), 9u);
    int64_t sum_prompt_tokens = 0;
    for (int c = 0; c < 3; ++c) {
        for (int t = 0; t < 3; ++t) {
            const auto& now = lines[static_cast<size_t>(c * 3 + t)];
            EXPECT_EQ(now["conversation"], c);
            EXPECT_EQ(now["turn"], t);
            EXPECT_TRUE(now["success"].get<bool>());
            EXPECT_FALSE(now["answer"].get<std::string>().empty());
            sum_prompt_tokens += now["prompt_tokens"].get<int64_t>();
            if (t == 0) continue;
            const auto& before = lines[static_cast<size_t>(c * 3 + t - 1)];
            // Turn t's prompt is turn t-1's prompt, then its answer as streamed, then a new message.
            const std::string history = before["prompt"].get<std::string>() + before["answer"].get<std::string>();
            const std::string prompt = now["prompt"].get<std::string>();
            EXPECT_EQ(prompt.rfind(history, 0), 0u) << "conversation " << c << " turn " << t;
            EXPECT_GT(prompt.size(), history.size());
            EXPECT_GT(now["prompt_tokens"].get<int>(), before["prompt_tokens"].get<int>());
            // Sent only after the previous answer had arrived.
            EXPECT_GE(now["start_ms"].get<double>(),
                      before["start_ms"].get<double>() + before["e2el_ms"].get<double>());
        }
    }
    // The prompt tokens counted are the server's.
    EXPECT_EQ(j["total_input_tokens"].get<int64_t>(), sum_prompt_tokens);
}

TEST_F(BenchServeEndToEnd, FlagsOfAnotherDatasetAreRefused) {
    const RunResult r = bench("--model tiny --api-key sk-bench --dataset multi-turn --input-len 4");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--input-len does not apply to --dataset multi-turn"), std::string::npos) << r.err;
    const RunResult mode = bench("--model tiny --api-key sk-bench --dataset multi-turn --mt-mode chat");
    EXPECT_EQ(mode.exit_code, 2);
    EXPECT_NE(mode.err.find("--mt-mode must be completions or responses"), std::string::npos) << mode.err;
}

// --mt-mode responses: each turn is POST /v1/responses with the new message and the previous turn's
// response id; the server keeps the history, so the prompt it counts grows by each turn and the
// earlier turns come from the prefix cache.
TEST_F(BenchServeEndToEnd, MultiTurnByPreviousResponseId) {
    const fs::path transcript = *dir_ / "transcript_responses.jsonl";
    const RunResult r = bench(
        "--model tiny --api-key sk-bench --dataset multi-turn --mt-mode responses --mt-num-conversations 2 "
        "--mt-num-turns 3 --mt-input-len 24 --mt-output-len 6 --max-concurrency 2 --seed 3 --mt-transcript " +
        transcript.string());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto j = json_line(r.out);
    EXPECT_EQ(j["completed"], 6) << r.err;
    EXPECT_EQ(j["mt_responses_mode"], 1);
    std::vector<nlohmann::json> lines;
    std::istringstream in(slurp(transcript));
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    ASSERT_EQ(lines.size(), 6u);
    for (int c = 0; c < 2; ++c) {
        for (int t = 1; t < 3; ++t) {
            const auto& now = lines[static_cast<size_t>(c * 3 + t)];
            const auto& before = lines[static_cast<size_t>(c * 3 + t - 1)];
            ASSERT_TRUE(now["success"].get<bool>());
            EXPECT_GT(now["prompt_tokens"].get<int>(), before["prompt_tokens"].get<int>() + 24)
                << "the server's prompt holds the previous turn, its answer and the new message";
            EXPECT_GT(now["cached_tokens"].get<int>(), 0) << "conversation " << c << " turn " << t;
        }
    }
}

TEST_F(BenchServeEndToEnd, WrongKeyStopsAtTheTestRequest) {
    const RunResult r = bench("--model tiny --api-key wrong --input-len 8 --output-len 4 --num-prompts 2");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("initial test request failed: HTTP 401"), std::string::npos) << r.err;
}

TEST_F(BenchServeEndToEnd, NothingListeningIsAClearError) {
    // Port 1 on loopback: nothing listens there.
    const std::string cmd =
        std::string(HICHAT_BIN) + " bench serve --url http://127.0.0.1:1 --model tiny 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[512];
    while (fgets(buf, sizeof(buf), p)) out += buf;
    const int status = pclose(p);
    EXPECT_EQ(WEXITSTATUS(status), 2);
    EXPECT_NE(out.find("connect:"), std::string::npos) << out;
}

}  // namespace
}  // namespace hichat
