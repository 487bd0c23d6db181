// `hichat score` on a checkpoint whose head_dim the CUDA kernels lack (32), run as a user runs it:
// `--device auto` computes on the CPU (saying why when a GPU is present), `--device cuda` is one error
// line naming head_dim and its value, exit 2, in builds with and without CUDA.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "executor/runner_factory.h"
#include "model/test_checkpoint_writer.h"

namespace hichat {
namespace {

namespace fs = std::filesystem;

struct RunResult {
    int exit_code;
    std::string err;
};

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

int count_lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

constexpr int kVocab = 40;
constexpr char kIds[] = "3,5,7,11";
constexpr int kNumIds = 4;

class HeadDim32Cli : public ::testing::Test {
protected:
    void SetUp() override {
        model::testing::make_tiny_model({.hidden_size = 64, .num_heads = 2, .num_kv_heads = 1, .head_dim = 32,
                                         .intermediate_size = 96, .vocab_size = kVocab})
            .write(model_dir());
    }
    std::string model_dir() const { return dir_.path(); }

    RunResult score(const std::string& device, const fs::path& out) {
        const fs::path err = fs::path(dir_.path()) / "stderr";
        const std::string cmd = std::string(HICHAT_BIN) + " score --model " + model_dir() + " --ids " + kIds +
                                " --threads 1 --device " + device + " --out " + out.string() + " 2> " + err.string();
        const int status = std::system(cmd.c_str());
        return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(err)};
    }

    model::testing::TempDir dir_;
};

TEST_F(HeadDim32Cli, AutoComputesOnTheCpu) {
    const fs::path out = fs::path(dir_.path()) / "auto.bin", cpu_out = fs::path(dir_.path()) / "cpu.bin";
    const RunResult r = score("auto", out);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(fs::file_size(out), sizeof(float) * kNumIds * kVocab);
    if (executor::cuda_available()) {
        EXPECT_EQ(r.err,
                  "hichat score: device auto: using the CPU: the CUDA backend needs head_dim 64, 80, 96, 128 or 256, this model "
                  "has 32\n");
    } else {
        EXPECT_EQ(r.err, "");   // no GPU: auto is the CPU, nothing to explain
    }
    const RunResult cpu = score("cpu", cpu_out);
    ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
    EXPECT_EQ(slurp(out), slurp(cpu_out));   // the same runner computed both
}

TEST_F(HeadDim32Cli, CudaIsOneErrorNamingHeadDim) {
    const fs::path out = fs::path(dir_.path()) / "cuda.bin";
    const RunResult r = score("cuda", out);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "hichat score: --device cuda: the CUDA backend needs head_dim 64, 80, 96, 128 or 256, this model has 32\n");
    EXPECT_EQ(count_lines(r.err), 1);
    EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace hichat
