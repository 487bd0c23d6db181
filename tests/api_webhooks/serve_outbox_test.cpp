// `hichat serve` on a session database that a killed server left with webhook events owed (final
// states committed, events never handed to the sender): the next server enqueues each once at start,
// before the model is loaded, with the ids derived from (object id, event type); the one after it
// sends nothing. Runs the real binary against an in-process receiver on 127.0.0.1.
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "../common/temp_dir.h"
#include "api/webhooks/webhook_payload.h"
#include "session/batch_store.h"
#include "session/session_store.h"
#include "test_receiver.h"

namespace hichat::api::webhooks::test {
namespace {

namespace fs = std::filesystem;
using api::test_support::TempDir;
using Json = nlohmann::json;

int accept_all(const ReceivedRequest&) { return 200; }

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// A folder `hichat serve` loads: the llama3 fixture's weights, the byte tokenizer, a tiny template.
std::string make_model_dir(const std::string& root) {
    const fs::path fixtures = HICHAT_FIXTURES_DIR, dir = fs::path(root) / "model";
    fs::create_directories(dir);
    fs::copy_file(fixtures / "llama3/config.json", dir / "config.json");
    fs::copy_file(fixtures / "llama3/model.safetensors", dir / "model.safetensors");
    fs::copy_file(fixtures / "byte_tokenizer/tokenizer.json", dir / "tokenizer.json");
    fs::copy_file(fixtures / "tiny_chat/tokenizer_config.json", dir / "tokenizer_config.json");
    return dir.string();
}

// One `hichat serve` child, its stderr in a file; stop() sends SIGTERM and returns the exit code.
class Server {
public:
    Server(const std::vector<std::string>& args, const std::string& stderr_path) : stderr_path_(stderr_path) {
        pid_ = fork();
        if (pid_ != 0) return;
        const int fd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        const int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        std::vector<char*> argv{const_cast<char*>(HICHAT_BIN), const_cast<char*>("serve")};
        for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(HICHAT_BIN, argv.data());
        _exit(127);
    }
    ~Server() {
        if (pid_ > 0) stop();
    }
    std::string err() const { return slurp(stderr_path_); }
    bool wait_for_line(const std::string& text) const {
        const auto deadline = std::chrono::steady_clock::now() + kDeadline;
        while (err().find(text) == std::string::npos) {
            if (std::chrono::steady_clock::now() > deadline) return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return true;
    }
    int stop() {
        kill(pid_, SIGTERM);
        int status = 0;
        waitpid(pid_, &status, 0);
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

private:
    std::string stderr_path_;
    pid_t pid_ = -1;
};

TEST(ServeWebhookOutbox, EventsAKilledServerOwedAreSentOnceByTheNextServer) {
    TempDir dir;
    const std::string db = dir.path() + "/sessions.db";
    // What a server killed right after the final states were committed (webhooks on) leaves behind.
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        auto sessions = session::SessionStore::open({.path = db});
        auto batches = session::BatchStore::open({.path = db});
        if (!sessions.ok() || !batches.ok()) _exit(3);
        if (!(*batches)->create_batch({.id = "batch_owed", .endpoint = "/v1/chat/completions"}).ok()) _exit(4);
        const session::OwedWebhook batch_event{.object_id = "batch_owed", .event_type = "batch.cancelled",
                                               .created_at_ms = 1'700'000'000'000};
        if (!(*batches)->finish_batch("batch_owed", {.status = session::BatchStatus::kCancelled, .webhook = batch_event})
                 .ok()) {
            _exit(5);
        }
        const session::OwedWebhook response_event{.object_id = "resp_owed", .event_type = "response.completed",
                                                  .created_at_ms = 1'700'000'001'000};
        if (!(*sessions)->put_response({.id = "resp_owed", .model = "tiny",
                                        .response_json = R"({"status":"completed","background":true})",
                                        .input_items_json = "[]", .context_json = "{}"},
                                       response_event).ok()) {
            _exit(6);
        }
        _exit(0);  // no destructor, no sqlite3_close: as after SIGKILL
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

    auto receiver = TestReceiver::start(accept_all, test_signer());
    ASSERT_NE(receiver, nullptr);
    const std::string secret = dir.write("secret", kSecret + "\n");
    const std::vector<std::string> args = {"--model", make_model_dir(dir.path()), "--port", "0", "--session-db", db,
                                           "--webhook-url", receiver->url(), "--webhook-allow", "127.0.0.1",
                                           "--webhook-secret-file", secret};
    const std::string batch_msg = message_id_for("batch_owed", "batch.cancelled");
    const std::string response_msg = message_id_for("resp_owed", "response.completed");
    {
        Server server(args, dir.path() + "/first.err");
        ASSERT_TRUE(server.wait_for_line("hichat serve: ready")) << server.err();
        ASSERT_TRUE(receiver->wait_for([&](const std::vector<ReceivedRequest>& all) { return all.size() >= 2; }));
        EXPECT_NE(server.err().find("webhooks: 2 event(s) owed by the last run enqueued"), std::string::npos)
            << server.err();
        EXPECT_EQ(server.stop(), 0) << server.err();
    }
    const auto requests = receiver->requests();
    ASSERT_EQ(requests.size(), 2u);
    ASSERT_EQ(receiver->requests_with_id(batch_msg).size(), 1u);
    ASSERT_EQ(receiver->requests_with_id(response_msg).size(), 1u);
    const ReceivedRequest batch = receiver->requests_with_id(batch_msg)[0];
    EXPECT_TRUE(batch.signature_ok);
    const Json body = Json::parse(batch.body);
    EXPECT_EQ(body["type"], "batch.cancelled");
    EXPECT_EQ(body["data"], Json({{"id", "batch_owed"}}));
    EXPECT_EQ(body["created_at"], 1'700'000'000);
    EXPECT_EQ(Json::parse(receiver->requests_with_id(response_msg)[0].body)["type"], "response.completed");
    {
        auto sessions = session::SessionStore::open({.path = db});
        auto batches = session::BatchStore::open({.path = db});
        ASSERT_TRUE(sessions.ok() && batches.ok());
        EXPECT_TRUE((*sessions)->owed_webhooks()->empty());
        EXPECT_TRUE((*batches)->owed_webhooks()->empty());
    }

    Server again(args, dir.path() + "/second.err");
    ASSERT_TRUE(again.wait_for_line("hichat serve: ready")) << again.err();
    EXPECT_EQ(again.stop(), 0) << again.err();
    EXPECT_EQ(again.err().find("owed by the last run"), std::string::npos) << again.err();
    EXPECT_EQ(receiver->requests().size(), 2u);
}

}  // namespace
}  // namespace hichat::api::webhooks::test
