// `hichat serve` refusing to start, run as a user runs it: each refusal is exit code 2 and one error
// line naming the flag or file, printed before the server listens (so no "listening" and no phantom
// "signal ...: draining" line), and a flag that would do nothing is refused by name.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "cli_runner.h"

namespace hichat {
namespace {

namespace fs = std::filesystem;

class ServeStartupTest : public CliTest {
protected:
    // Runs `hichat serve --model <a loadable folder> --port 0 <flags>` and expects a one-line refusal
    // that contains each of `words`.
    void expect_refused(const std::string& flags, std::initializer_list<std::string> words) {
        expect_refused_with_model(make_model_dir(), flags, words);
    }

    void expect_refused_with_model(const std::string& model, const std::string& flags,
                                   std::initializer_list<std::string> words) {
        auto r = run("serve --model " + model + " --port 0 " + flags);
        EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.err;
        EXPECT_EQ(count_lines(r.err), 1) << flags << "\n" << r.err;
        EXPECT_EQ(r.err.rfind("hichat serve: ", 0), 0u) << r.err;
        for (const std::string& w : words)
            EXPECT_TRUE(contains(r.err, w)) << flags << ": no '" << w << "' in " << r.err;
        for (const char* w : {"listening", "signal", "draining"}) EXPECT_FALSE(contains(r.err, w)) << r.err;
    }
};

int cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

TEST_F(ServeStartupTest, ThreadCountsAboveFourPerCoreAreRefusedByName) {
    const std::string limit = "at most " + std::to_string(4 * cores());
    if (4 * cores() < 1000) expect_refused("--threads 1000", {"--threads 1000", limit});
    expect_refused("--threads " + std::to_string(4 * cores() + 1), {"--threads", "per online core"});
    expect_refused("--io-threads " + std::to_string(4 * cores() + 1), {"--io-threads", "per online core"});
    // The same table row caps the other commands' --threads.
    for (const std::string& cmd : {"generate --prompt hi", "score --ids 1 --out x", "bench engine"}) {
        auto r = run(cmd + " --model " + make_model_dir() + " --threads " + std::to_string(4 * cores() + 1));
        EXPECT_EQ(r.exit_code, 2) << cmd;
        EXPECT_TRUE(contains(r.err, "--threads")) << r.err;
    }
}

TEST_F(ServeStartupTest, FourThreadsPerCoreAreAccepted) {
    fs::copy(testing::fixture_dir("qwen3"), dir_ / "m");
    fs::copy(testing::fixture_dir("byte_tokenizer") + "/tokenizer.json", dir_ / "m" / "tokenizer.json");
    auto r = run("generate --model " + (dir_ / "m").string() +
                 " --prompt hi --max-tokens 2 --temperature 0 --threads " + std::to_string(4 * cores()));
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(ServeStartupTest, BadModelFolderIsOneErrorLineWithoutPhantomSignal) {
    expect_refused_with_model((dir_ / "nonexistent").string(), "", {"nonexistent"});
    const std::string model = make_model_dir();
    std::ofstream(fs::path(model) / "config.json") << "{ \"architectures\": [";
    expect_refused_with_model(model, "", {"config.json"});
    fs::remove_all(model);
    make_model_dir();
    fs::resize_file(fs::path(model) / "model.safetensors",
                    fs::file_size(fs::path(model) / "model.safetensors") / 2);
    expect_refused_with_model(model, "", {"model.safetensors"});
    fs::remove_all(model);
    make_model_dir();
    fs::remove(fs::path(model) / "tokenizer.json");
    expect_refused_with_model(model, "", {"tokenizer"});
}

TEST_F(ServeStartupTest, UnwritableAccessLogIsRefusedNamingThePath) {
    // Fails even for root: the parent is a regular file, or a folder /proc does not have.
    std::ofstream(dir_ / "plain_file") << "x";
    const std::string under_file = (dir_ / "plain_file" / "access.log").string();
    expect_refused("--access-log " + under_file, {"--access-log", under_file, "Not a directory"});
    expect_refused("--access-log /proc/hichat-no/x", {"--access-log", "/proc/hichat-no/x"});
}

TEST_F(ServeStartupTest, PerKeyLimitsWithoutKeysAreRefused) {
    for (const char* flag : {"--rate-limit-rpm", "--rate-limit-tpm", "--max-concurrent-per-key"}) {
        expect_refused(std::string(flag) + " 3", {flag, "--api-key", "per API key"});
        // With a key the flag passes its check: the start then fails on the model folder, not on the flag.
        expect_refused_with_model((dir_ / "missing").string(), "--api-key sk-1 " + std::string(flag) + " 3",
                                  {"missing"});
    }
}

TEST_F(ServeStartupTest, FlagsThatWouldDoNothingAreRefusedByName) {
    std::ofstream(dir_ / "empty.txt") << "# only a comment\n\n";
    expect_refused("--tls-cert cert.pem", {"--tls-cert", "--tls-key"});
    expect_refused("--tls-key key.pem", {"--tls-key", "--tls-cert"});
    expect_refused("--device cpu --gpu-memory-fraction 0.5", {"--gpu-memory-fraction", "--device cpu"});
    expect_refused("--device cuda --kv-cache-mb 64", {"--kv-cache-mb", "--device cuda"});
    expect_refused("--device cpu --host-kv-cache-gb 4", {"--host-kv-cache-gb", "--device cpu"});
    expect_refused("--device cpu --gpu-layers 4", {"--gpu-layers", "--device cpu"});
    expect_refused("--device cpu --offload stream", {"--offload", "--device cpu"});
    expect_refused("--device cpu --gpu-memory-gb 8", {"--gpu-memory-gb", "--device cpu"});
    expect_refused("--gpu-layers some", {"--gpu-layers", "some"});
    expect_refused("--offload disk", {"--offload", "disk"});
    expect_refused("--device cuda --no-prefix-cache --host-kv-cache-gb 4", {"--host-kv-cache-gb", "--no-prefix-cache"});
    expect_refused("--device cuda --threads 2", {"--threads", "--device cuda"});
    expect_refused("--api-key-file " + (dir_ / "empty.txt").string(), {"--api-key-file", "no keys"});
    expect_refused("--deny-list " + (dir_ / "empty.txt").string(), {"--deny-list", "no phrases"});
    expect_refused("--max-model-len 100000", {"--max-model-len 100000", "context of"});
    expect_refused("--max-num-seqs 64 --max-num-batched-tokens 32",
                   {"--max-num-batched-tokens", "--max-num-seqs"});
    expect_refused("--max-num-batched-tokens 512 --prefill-chunk 1024",
                   {"--prefill-chunk", "--max-num-batched-tokens"});
#if !HICHAT_EXPECTED_CUDA
    // Without the CUDA backend, --device auto certainly runs on the CPU.
    expect_refused("--gpu-memory-fraction 0.5", {"--gpu-memory-fraction", "CPU"});
    expect_refused("--device cuda", {"--device cuda", "no CUDA device"});
#endif
}

TEST_F(ServeStartupTest, BadWebhookFlagsAreRefusedByName) {
    unsetenv("HICHAT_WEBHOOK_SECRET");  // the other source of the secret; set below only
    const std::string secret = (dir_ / "secret").string();
    std::ofstream(secret) << "whsec_" << std::string(32, 'A') << "\n";  // 24 key bytes
    const std::string url = " --webhook-url http://127.0.0.1:9/hook ";
    const std::string good = url + "--webhook-allow 127.0.0.1 --webhook-secret-file " + secret;
    expect_refused("--webhook-allow 127.0.0.1", {"--webhook-allow", "no effect without --webhook-url"});
    expect_refused("--webhook-retry-base-ms 50", {"--webhook-retry-base-ms", "--webhook-url"});
    expect_refused("--webhook-secret-file " + secret, {"--webhook-secret-file", "--webhook-url"});
    expect_refused("--webhook-url http://localhost:9/hook --webhook-allow 127.0.0.1 --webhook-secret-file " + secret,
                   {"--webhook-url", "'localhost'", "is not in --webhook-allow"});
    expect_refused(url + "--webhook-secret-file " + secret, {"'127.0.0.1'", "--webhook-allow"});
    expect_refused(url + "--webhook-allow 127.0.0.1", {"--webhook-url", "--webhook-secret-file"});
    expect_refused(url + "--webhook-allow 127.0.0.1 --webhook-secret-file " + (dir_ / "no-secret").string(),
                   {"--webhook-secret-file", "no-secret"});
    std::ofstream(dir_ / "short") << "whsec_c2hvcnQ=\n";
    expect_refused(url + "--webhook-allow 127.0.0.1 --webhook-secret-file " + (dir_ / "short").string(),
                   {"--webhook-secret-file"});
    expect_refused(url + "--webhook-allow 127.0.0.1, --webhook-secret-file " + secret, {"--webhook-allow", "empty"});
    expect_refused(good + " --webhook-retry-base-ms 0", {"--webhook-retry-base-ms"});
    expect_refused(good + " --webhook-max-attempts 0", {"--webhook-max-attempts"});
    setenv("HICHAT_WEBHOOK_SECRET", ("whsec_" + std::string(32, 'B')).c_str(), 1);
    expect_refused(good, {"--webhook-secret-file", "HICHAT_WEBHOOK_SECRET", "both"});
    unsetenv("HICHAT_WEBHOOK_SECRET");
    // The state db is opened before the server listens: one line too.
    expect_refused(good + " --session-db :memory: --webhook-state-db /proc/hichat-no/w.db",
                   {"--webhook-state-db", "/proc/hichat-no/w.db"});
}

TEST_F(ServeStartupTest, BadKeyWeightsAreRefusedByName) {
    expect_refused("--key-weight key-db567a0d=2", {"--key-weight", "--api-key"});
    expect_refused("--api-key sk-test-1 --key-weight key-00000000=2", {"--key-weight", "key-00000000"});
    expect_refused("--api-key sk-test-1 --key-weight key-db567a0d=x", {"--key-weight", "'key-db567a0d=x'"});
    expect_refused("--api-key sk-test-1 --key-weight key-db567a0d=0", {"--key-weight", "> 0"});
    expect_refused("--api-key sk-test-1 --key-weight sk-test-1=2", {"--key-weight", "key- and 8 hex digits"});
}

TEST_F(ServeStartupTest, BadLatencyTargetsAreRefusedByName) {
    expect_refused("--target-itl-ms -5", {"--target-itl-ms"});
    expect_refused("--target-ttft-ms soon", {"--target-ttft-ms"});
    expect_refused("--priority-targets 0:25", {"--priority-targets", "'0:25'", "PRIORITY:ITL_MS:TTFT_MS"});
    expect_refused("--priority-targets 0:25:x", {"--priority-targets", "'0:25:x'", "TTFT"});
    expect_refused("--priority-targets 0:-1:100", {"--priority-targets", "negative"});
    expect_refused("--priority-targets 5:20:100,5:30:200", {"--priority-targets", "priority 5", "twice"});
}

}  // namespace
}  // namespace hichat
