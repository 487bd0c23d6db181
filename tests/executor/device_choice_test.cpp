// The runner choice (`--device auto|cpu|cuda`) for shapes the CUDA backend does and does not run,
// decided without a GPU: choose_device() takes the GPU's presence as an input.
#include <gtest/gtest.h>

#include <string>

#include "executor/cuda_support.h"
#include "executor/runner_factory.h"
#include "model/checkpoint.h"
#include "model/test_checkpoint_writer.h"

namespace hichat::executor {
namespace {

// A Llama-shaped config as the loader would make it; every field the CUDA checks read is set.
model::ModelConfig config_with_head_dim(int head_dim) {
    model::ModelConfig c;
    c.architecture_name = "LlamaForCausalLM";
    c.hidden_size = 256;
    c.intermediate_size = 512;
    c.num_layers = 2;
    c.num_heads = 8;
    c.num_kv_heads = 2;
    c.head_dim = head_dim;
    c.vocab_size = 1000;
    c.max_position_embeddings = 2048;
    return c;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const CudaStepShape kServeStep{.max_num_seqs = 256, .max_num_tokens_per_step = 8192};

class UnsupportedHeadDim : public ::testing::TestWithParam<int> {};

TEST_P(UnsupportedHeadDim, ReasonNamesHeadDimItsValueAndWhatIsSupported) {
    const int head_dim = GetParam();
    const auto reason = cuda_unsupported_reason(config_with_head_dim(head_dim), kServeStep);
    ASSERT_TRUE(reason.has_value()) << head_dim;
    EXPECT_EQ(*reason, "the CUDA backend needs head_dim 64, 80, 96, 128 or 256, this model has " + std::to_string(head_dim));
}

// Named by value: ctest and --gtest_list_tests then agree on the names (tests/suite/lists_all_tests.sh).
INSTANTIATE_TEST_SUITE_P(HeadDims, UnsupportedHeadDim, ::testing::Values(16, 24, 32, 48, 112, 160, 192, 512),
                         [](const ::testing::TestParamInfo<int>& info) { return "head_dim_" + std::to_string(info.param); });

TEST(CudaSupport, HeadDims64To256AreSupported) {
    for (int head_dim : {64, 80, 96, 128, 256})
        EXPECT_EQ(cuda_unsupported_reason(config_with_head_dim(head_dim), kServeStep), std::nullopt) << head_dim;
}

TEST(CudaSupport, OutputAndMlpBiasesAreRefusedByName) {
    model::ModelConfig c = config_with_head_dim(64);
    c.qkv_bias = true;   // Qwen2's q/k/v biases run on CUDA
    EXPECT_EQ(cuda_unsupported_reason(c, kServeStep), std::nullopt);
    c.o_bias = true;
    auto reason = cuda_unsupported_reason(c, kServeStep);
    ASSERT_TRUE(reason.has_value());
    EXPECT_TRUE(contains(*reason, "o_proj bias")) << *reason;
    c.o_bias = false;
    c.mlp_bias = true;
    reason = cuda_unsupported_reason(c, kServeStep);
    ASSERT_TRUE(reason.has_value());
    EXPECT_TRUE(contains(*reason, "mlp_bias")) << *reason;
}

TEST(CudaSupport, HeadsNotAMultipleOfKvHeadsAreRefused) {
    model::ModelConfig c = config_with_head_dim(64);
    c.num_heads = 6;
    c.num_kv_heads = 4;
    const auto reason = cuda_unsupported_reason(c, kServeStep);
    ASSERT_TRUE(reason.has_value());
    EXPECT_TRUE(contains(*reason, "num_attention_heads (6)") && contains(*reason, "num_key_value_heads (4)"))
        << *reason;
}

TEST(CudaSupport, VocabAboveTheSamplerLimitIsRefused) {
    model::ModelConfig c = config_with_head_dim(128);
    c.vocab_size = 1 << 23;
    EXPECT_EQ(cuda_unsupported_reason(c, kServeStep), std::nullopt);
    c.vocab_size = (1 << 23) + 1;
    const auto reason = cuda_unsupported_reason(c, kServeStep);
    ASSERT_TRUE(reason.has_value());
    EXPECT_TRUE(contains(*reason, "vocab_size <= 8388608") && contains(*reason, "8388609")) << *reason;
}

TEST(CudaSupport, StepsLargerThanThePrefillGridAreRefused) {
    const model::ModelConfig c = config_with_head_dim(128);   // 4 query heads per KV head
    const int max_tokens = 65535 * 64 / 4;
    EXPECT_EQ(cuda_unsupported_reason(c, {.max_num_seqs = 256, .max_num_tokens_per_step = max_tokens}), std::nullopt);
    auto reason = cuda_unsupported_reason(c, {.max_num_seqs = 256, .max_num_tokens_per_step = max_tokens + 1});
    ASSERT_TRUE(reason.has_value());
    EXPECT_TRUE(contains(*reason, std::to_string(max_tokens) + " tokens per step")) << *reason;
    reason = cuda_unsupported_reason(c, {.max_num_seqs = 65536, .max_num_tokens_per_step = 8192});
    ASSERT_TRUE(reason.has_value());
    EXPECT_TRUE(contains(*reason, "65535 sequences")) << *reason;
}

RunnerOptions options_for(DeviceKind device) { return {.device = device, .max_num_seqs = 256, .max_num_tokens_per_step = 8192}; }

TEST(ChooseDevice, AutoWithAGpuAndAnUnsupportedShapeTakesTheCpuAndSaysWhy) {
    for (int head_dim : {16, 24, 32}) {
        auto choice = choose_device(config_with_head_dim(head_dim), options_for(DeviceKind::kAuto), CudaPresence::kPresent);
        ASSERT_TRUE(choice.ok()) << choice.status().message();
        EXPECT_EQ(choice->device, DeviceKind::kCpu);
        EXPECT_EQ(choice->note, "device auto: using the CPU: the CUDA backend needs head_dim 64, 80, 96, 128 or 256, this model has " +
                                    std::to_string(head_dim));
    }
}

TEST(ChooseDevice, AutoWithAGpuAndASupportedShapeTakesCuda) {
    for (int head_dim : {64, 128}) {
        auto choice = choose_device(config_with_head_dim(head_dim), options_for(DeviceKind::kAuto), CudaPresence::kPresent);
        ASSERT_TRUE(choice.ok()) << choice.status().message();
        EXPECT_EQ(choice->device, DeviceKind::kCuda);
        EXPECT_EQ(choice->note, "");
    }
}

TEST(ChooseDevice, AutoWithoutAGpuTakesTheCpuSilently) {
    for (CudaPresence presence : {CudaPresence::kNotBuilt, CudaPresence::kNoDevice}) {
        for (int head_dim : {32, 64}) {
            auto choice = choose_device(config_with_head_dim(head_dim), options_for(DeviceKind::kAuto), presence);
            ASSERT_TRUE(choice.ok()) << choice.status().message();
            EXPECT_EQ(choice->device, DeviceKind::kCpu);
            EXPECT_EQ(choice->note, "");
        }
    }
}

TEST(ChooseDevice, CudaWithAnUnsupportedShapeIsOneErrorNamingTheValueInEveryBuild) {
    for (CudaPresence presence : {CudaPresence::kNotBuilt, CudaPresence::kNoDevice, CudaPresence::kPresent}) {
        auto choice = choose_device(config_with_head_dim(32), options_for(DeviceKind::kCuda), presence);
        ASSERT_FALSE(choice.ok());
        EXPECT_EQ(choice.status().code(), StatusCode::kUnimplemented);
        EXPECT_EQ(choice.status().message(),
                  "--device cuda: the CUDA backend needs head_dim 64, 80, 96, 128 or 256, this model has 32");
    }
}

TEST(ChooseDevice, CudaWithASupportedShapeNeedsTheBackendAndADevice) {
    const model::ModelConfig c = config_with_head_dim(64);
    auto built_without = choose_device(c, options_for(DeviceKind::kCuda), CudaPresence::kNotBuilt);
    ASSERT_FALSE(built_without.ok());
    EXPECT_EQ(built_without.status().message(), "--device cuda: this build has no CUDA backend");
    auto no_device = choose_device(c, options_for(DeviceKind::kCuda), CudaPresence::kNoDevice);
    ASSERT_FALSE(no_device.ok());
    EXPECT_EQ(no_device.status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(contains(no_device.status().message(), "no CUDA device")) << no_device.status().message();
    auto present = choose_device(c, options_for(DeviceKind::kCuda), CudaPresence::kPresent);
    ASSERT_TRUE(present.ok()) << present.status().message();
    EXPECT_EQ(present->device, DeviceKind::kCuda);
}

// --kv-cache-dtype: fp8 is the CUDA runner's and f16 / fp32 the CPU runner's; each is refused by name
// where the other runs, and on CUDA the log line says which type the cache has when it is FP8 or could be.
TEST(KvCacheDtype, ParsesTheFiveValuesAndNamesTheFlagOtherwise) {
    EXPECT_EQ(*parse_kv_cache_dtype("auto"), KvCacheDtype::kAuto);
    EXPECT_EQ(*parse_kv_cache_dtype("bf16"), KvCacheDtype::kBf16);
    EXPECT_EQ(*parse_kv_cache_dtype("f16"), KvCacheDtype::kF16);
    EXPECT_EQ(*parse_kv_cache_dtype("fp32"), KvCacheDtype::kF32);
    EXPECT_EQ(*parse_kv_cache_dtype("f32"), KvCacheDtype::kF32);
    EXPECT_EQ(*parse_kv_cache_dtype("fp8"), KvCacheDtype::kFp8);
    for (const char* bad : {"", "fp16", "FP8", "e4m3", "float32"}) {
        auto r = parse_kv_cache_dtype(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_TRUE(contains(r.status().message(), "--kv-cache-dtype must be auto, bf16, f16, fp32 or fp8"))
            << r.status().message();
    }
}

TEST(KvCacheDtype, TheCpuPoolTypeOfEachValue) {
    EXPECT_EQ(*cpu_kv_dtype(KvCacheDtype::kAuto), DType::kF32);   // bf16 KV is over the goldens' bound
    EXPECT_EQ(*cpu_kv_dtype(KvCacheDtype::kBf16), DType::kBF16);
    EXPECT_EQ(*cpu_kv_dtype(KvCacheDtype::kF16), DType::kF16);
    EXPECT_EQ(*cpu_kv_dtype(KvCacheDtype::kF32), DType::kF32);
    auto fp8 = cpu_kv_dtype(KvCacheDtype::kFp8);
    ASSERT_FALSE(fp8.ok());
    EXPECT_TRUE(contains(fp8.status().message(), "--kv-cache-dtype fp8")) << fp8.status().message();
}

// The three ways the CPU runs: asked for, auto without a device, auto for a shape CUDA lacks.
struct CpuCase {
    DeviceKind device;
    CudaPresence presence;
    int head_dim;
};
constexpr CpuCase kCpuCases[] = {{DeviceKind::kCpu, CudaPresence::kPresent, 64},
                                 {DeviceKind::kAuto, CudaPresence::kNoDevice, 64},
                                 {DeviceKind::kAuto, CudaPresence::kPresent, 32}};

TEST(KvCacheDtype, Fp8IsRefusedByNameWhereTheCpuRuns) {
    for (const CpuCase& c : kCpuCases) {
        RunnerOptions o = options_for(c.device);
        o.kv_cache_dtype = KvCacheDtype::kFp8;
        auto choice = choose_device(config_with_head_dim(c.head_dim), o, c.presence);
        ASSERT_FALSE(choice.ok());
        EXPECT_EQ(choice.status().code(), StatusCode::kUnimplemented);
        EXPECT_TRUE(contains(choice.status().message(), "--kv-cache-dtype fp8: the CPU runner"))
            << choice.status().message();
        EXPECT_TRUE(contains(choice.status().message(), "bf16, f16 or fp32")) << choice.status().message();
    }
}

TEST(KvCacheDtype, AutoBf16F16AndFp32RunOnTheCpu) {
    for (const CpuCase& c : kCpuCases) {
        for (KvCacheDtype dtype : {KvCacheDtype::kAuto, KvCacheDtype::kBf16, KvCacheDtype::kF16, KvCacheDtype::kF32}) {
            RunnerOptions o = options_for(c.device);
            o.kv_cache_dtype = dtype;
            auto choice = choose_device(config_with_head_dim(c.head_dim), o, c.presence);
            ASSERT_TRUE(choice.ok()) << kv_cache_dtype_name(dtype) << ": " << choice.status().message();
            EXPECT_EQ(choice->device, DeviceKind::kCpu);
        }
    }
}

TEST(KvCacheDtype, F16AndFp32AreRefusedByNameWhereCudaRuns) {
    for (DeviceKind device : {DeviceKind::kCuda, DeviceKind::kAuto}) {
        for (KvCacheDtype dtype : {KvCacheDtype::kF16, KvCacheDtype::kF32}) {
            RunnerOptions o = options_for(device);
            o.kv_cache_dtype = dtype;
            auto choice = choose_device(config_with_head_dim(128), o, CudaPresence::kPresent);
            ASSERT_FALSE(choice.ok());
            EXPECT_EQ(choice.status().code(), StatusCode::kUnimplemented);
            const std::string flag = std::string("--kv-cache-dtype ") + (dtype == KvCacheDtype::kF16 ? "f16" : "fp32");
            EXPECT_TRUE(contains(choice.status().message(), flag + ": the CUDA backend")) << choice.status().message();
            EXPECT_TRUE(contains(choice.status().message(), "bf16 or fp8")) << choice.status().message();
        }
        for (KvCacheDtype dtype : {KvCacheDtype::kAuto, KvCacheDtype::kBf16, KvCacheDtype::kFp8}) {
            RunnerOptions o = options_for(device);
            o.kv_cache_dtype = dtype;
            auto choice = choose_device(config_with_head_dim(128), o, CudaPresence::kPresent);
            ASSERT_TRUE(choice.ok()) << choice.status().message();
            EXPECT_EQ(choice->device, DeviceKind::kCuda);
        }
    }
}

TEST(KvCacheDtype, OnCudaTheNoteSaysFp8AndWhetherTheScalesAreCalibrated) {
    model::ModelConfig cfg = config_with_head_dim(128);
    RunnerOptions o = options_for(DeviceKind::kCuda);
    o.kv_cache_dtype = KvCacheDtype::kFp8;
    auto uncalibrated = choose_device(cfg, o, CudaPresence::kPresent);
    ASSERT_TRUE(uncalibrated.ok()) << uncalibrated.status().message();
    EXPECT_EQ(uncalibrated->device, DeviceKind::kCuda);
    EXPECT_TRUE(contains(uncalibrated->note, "KV cache: FP8 (E4M3); warning: the checkpoint has no calibrated KV scales"))
        << uncalibrated->note;
    cfg.quant.kv_cache_fp8 = true;
    auto calibrated = choose_device(cfg, o, CudaPresence::kPresent);
    ASSERT_TRUE(calibrated.ok());
    EXPECT_TRUE(contains(calibrated->note, "with the checkpoint's per-layer k_scale / v_scale")) << calibrated->note;
    o.kv_cache_dtype = KvCacheDtype::kAuto;   // never promoted to FP8 by the checkpoint; said in the log
    auto automatic = choose_device(cfg, o, CudaPresence::kPresent);
    ASSERT_TRUE(automatic.ok());
    EXPECT_TRUE(contains(automatic->note, "KV cache: bf16 (--kv-cache-dtype auto)")) << automatic->note;
    o.kv_cache_dtype = KvCacheDtype::kBf16;
    auto bf16 = choose_device(cfg, o, CudaPresence::kPresent);
    ASSERT_TRUE(bf16.ok());
    EXPECT_FALSE(contains(bf16->note, "KV cache")) << bf16->note;
}

TEST(ChooseDevice, CpuIsTakenForAnyShape) {
    auto choice = choose_device(config_with_head_dim(24), options_for(DeviceKind::kCpu), CudaPresence::kPresent);
    ASSERT_TRUE(choice.ok());
    EXPECT_EQ(choice->device, DeviceKind::kCpu);
    EXPECT_EQ(choice->note, "");
}

TEST(ChooseDevice, TheStepSizesOfTheOptionsAreChecked) {
    RunnerOptions o = options_for(DeviceKind::kAuto);
    o.max_num_tokens_per_step = 1 << 20;   // 4 query heads per KV head: over the prefill grid
    auto choice = choose_device(config_with_head_dim(128), o, CudaPresence::kPresent);
    ASSERT_TRUE(choice.ok());
    EXPECT_EQ(choice->device, DeviceKind::kCpu);
    EXPECT_TRUE(contains(choice->note, "tokens per step")) << choice->note;
}

// A real checkpoint whose head_dim the CUDA kernels lack: make_runner never aborts on it.
class HeadDim32Checkpoint : public ::testing::Test {
protected:
    void SetUp() override {
        model::testing::make_tiny_model({.hidden_size = 64, .num_heads = 2, .num_kv_heads = 1, .head_dim = 32,
                                         .intermediate_size = 96, .vocab_size = 40})
            .write(dir_.path());
        auto opened = model::Checkpoint::open(dir_.path());
        ASSERT_TRUE(opened.ok()) << opened.status().message();
        checkpoint_ = std::move(opened).value();
    }
    model::testing::TempDir dir_;
    std::unique_ptr<model::Checkpoint> checkpoint_;
};

TEST_F(HeadDim32Checkpoint, AutoBuildsARunnerThatComputesLogits) {
    auto runner = make_runner(*checkpoint_, {.device = DeviceKind::kAuto, .num_threads = 1, .max_num_seqs = 1,
                                             .max_context_tokens = 16});
    ASSERT_TRUE(runner.ok()) << runner.status().message();
    ForwardBatch batch;
    const std::vector<int32_t> table = {0};
    const std::vector<int32_t> ids = {3, 5, 7};
    batch.seqs.push_back({.block_table = table, .pos0 = 0, .tokens = ids, .all_logits = true});
    std::vector<float> logits;
    (*runner)->forward(batch, logits);
    EXPECT_EQ(logits.size(), size_t{3 * 40});
}

TEST_F(HeadDim32Checkpoint, CudaIsAnErrorNotAnAbort) {
    auto runner = make_runner(*checkpoint_, {.device = DeviceKind::kCuda, .max_num_seqs = 1, .max_context_tokens = 16});
    ASSERT_FALSE(runner.ok());
    EXPECT_EQ(runner.status().message(), "--device cuda: the CUDA backend needs head_dim 64, 80, 96, 128 or 256, this model has 32");
}

}  // namespace
}  // namespace hichat::executor

namespace hichat::executor {
namespace {

TEST(Placement, ParsesGpuLayersAndOffloadAndNamesTheFlagOtherwise) {
    EXPECT_EQ(*parse_gpu_layers("auto"), -1);
    EXPECT_EQ(*parse_gpu_layers("0"), 0);
    EXPECT_EQ(*parse_gpu_layers("17"), 17);
    for (const char* bad : {"", "-1", "x", "3.5", "12a"}) {
        auto r = parse_gpu_layers(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_TRUE(contains(r.status().message(), "--gpu-layers")) << r.status().message();
    }
    EXPECT_EQ(*parse_offload_mode("auto"), OffloadMode::kAuto);
    EXPECT_EQ(*parse_offload_mode("cpu"), OffloadMode::kCpu);
    EXPECT_EQ(*parse_offload_mode("stream"), OffloadMode::kStream);
    auto bad = parse_offload_mode("disk");
    ASSERT_FALSE(bad.ok());
    EXPECT_TRUE(contains(bad.status().message(), "--offload")) << bad.status().message();
}

// Where the CPU runner holds every layer, a placement flag is refused by name, never ignored.
TEST(Placement, FlagsAreRefusedByNameWhereTheCpuRuns) {
    struct Case {
        void (*set)(RunnerOptions&);
        const char* flag;
    };
    const Case cases[] = {{[](RunnerOptions& o) { o.gpu_layers = 4; }, "--gpu-layers"},
                          {[](RunnerOptions& o) { o.gpu_memory_bytes = int64_t{8} << 30; }, "--gpu-memory-gb"},
                          {[](RunnerOptions& o) { o.offload = OffloadMode::kStream; }, "--offload"}};
    for (const Case& c : cases) {
        RunnerOptions o{.device = DeviceKind::kCpu};
        c.set(o);
        auto choice = choose_device(config_with_head_dim(64), o, CudaPresence::kPresent);
        ASSERT_FALSE(choice.ok()) << c.flag;
        EXPECT_EQ(choice.status().code(), StatusCode::kUnimplemented);
        EXPECT_TRUE(contains(choice.status().message(), c.flag)) << choice.status().message();
        o.device = DeviceKind::kAuto;   // auto without a device: the CPU runs
        choice = choose_device(config_with_head_dim(64), o, CudaPresence::kNoDevice);
        ASSERT_FALSE(choice.ok()) << c.flag;
        EXPECT_TRUE(contains(choice.status().message(), "which runs here")) << choice.status().message();
    }
}

// --offload cpu and stream are taken where CUDA runs, refused by name where the CPU runner holds every layer.
TEST(Placement, OffloadModesRunOnCudaOnly) {
    for (OffloadMode mode : {OffloadMode::kCpu, OffloadMode::kStream}) {
        RunnerOptions o{.device = DeviceKind::kAuto, .gpu_layers = 1, .offload = mode};
        auto on_gpu = choose_device(config_with_head_dim(64), o, CudaPresence::kPresent);
        ASSERT_TRUE(on_gpu.ok()) << on_gpu.status().message();
        EXPECT_EQ(on_gpu->device, DeviceKind::kCuda);
        o.gpu_layers = -1;
        auto on_cpu = choose_device(config_with_head_dim(64), o, CudaPresence::kNoDevice);
        ASSERT_FALSE(on_cpu.ok());
        EXPECT_TRUE(contains(on_cpu.status().message(), "--offload")) << on_cpu.status().message();
    }
}

}  // namespace
}  // namespace hichat::executor
