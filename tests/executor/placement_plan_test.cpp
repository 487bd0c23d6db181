// The placement planner's decisions from budgets and sizes, with no GPU: Llama-3-8B's real shapes on an
// H200-like host (HBM 4.3 TB/s, PCIe 50 GB/s, CPU memory 100 GB/s, CPU 1.5 TFLOP/s, GPU 700 TFLOP/s)
// with a GPU budget that holds about half the layers, and a small model of round GiB sizes for the
// error messages.
#include "executor/placement_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace hichat::executor {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

model::ModelConfig llama3_8b() {
    model::ModelConfig c;
    c.hidden_size = 4096;
    c.intermediate_size = 14336;
    c.num_layers = 32;
    c.num_heads = 32;
    c.num_kv_heads = 8;
    c.head_dim = 128;
    c.vocab_size = 128256;
    return c;
}

MachineCapacity h200_host(int64_t gpu_budget_bytes) {
    return {.gpu_budget_bytes = gpu_budget_bytes,
            .host_budget_bytes = 256 * kGiB,
            .gpu_memory_bytes_per_s = 4.3e12,
            .gpu_flops_per_s = 7e14,
            .pcie_bytes_per_s = 5.0e10,
            .cpu_memory_bytes_per_s = 1.0e11,
            .cpu_flops_per_s = 1.5e12};
}

// 8B bf16, 64 sequences x 512 tokens of KV (0.125 GiB a layer, 4 GiB in all), 10.5 GiB of GPU.
// With the CPU: (10.5 GiB - 2.10e9 resident) / (436.2e6 layer + 134.2e6 KV) = 16.08 -> 16 GPU layers.
// Streamed: (10.5 GiB - 2.10e9 - 4 GiB of KV - 2 x 436.2e6 buffers) / 436.2e6 = 9.18 -> 9 GPU layers.
PlacementInputs half_of_8b(int num_tokens_step, OffloadMode offload = OffloadMode::kAuto,
                           int gpu_layers = -1) {
    return {.model = model_footprint(llama3_8b(), DType::kBF16, DType::kBF16),
            .machine = h200_host(10 * kGiB + kGiB / 2),
            .num_tokens_kv = 64 * 512,
            .num_tokens_step = num_tokens_step,
            .gpu_layers = gpu_layers,
            .offload = offload};
}

// 8 layers of 1 GiB, 1.5 GiB resident, 0.25 GiB of KV a layer: every number prints exactly.
PlacementInputs round_model(int64_t gpu_budget_bytes, OffloadMode offload) {
    return {.model = {.num_layers = 8,
                      .layer_weight_bytes = kGiB,
                      .layer_flops_per_token = kGiB,
                      .resident_weight_bytes = kGiB + kGiB / 2,
                      .resident_flops_per_token = kGiB,
                      .kv_bytes_per_token_layer = 1024,
                      .activation_bytes_per_token = 4096},
            .machine = h200_host(gpu_budget_bytes),
            .num_tokens_kv = 256 * 1024,
            .num_tokens_step = 1,
            .offload = offload};
}

PlacementPlan plan_or_die(const PlacementInputs& in) {
    auto plan = plan_placement(in);
    EXPECT_TRUE(plan.ok()) << plan.status().message();
    return plan.ok() ? *plan : PlacementPlan{};
}

TEST(PlacementFootprint, Llama3_8BAsTheCudaRunnerHoldsIt) {
    const ModelFootprint f = model_footprint(llama3_8b(), DType::kBF16, DType::kBF16);
    // q 4096x4096, k and v 1024x4096, o 4096x4096, gate/up/down 3 x 14336x4096: 218,103,808 parameters,
    // plus two 4096-element norms.
    EXPECT_EQ(f.num_layers, 32);
    EXPECT_EQ(f.layer_weight_bytes, 218103808 * 2 + 2 * 4096 * 2);
    EXPECT_EQ(f.layer_flops_per_token, 2 * 218103808);
    EXPECT_EQ(f.resident_weight_bytes, (2 * int64_t{128256} * 4096 + 4096) * 2);  // embedding, lm_head, norm
    EXPECT_EQ(f.resident_flops_per_token, 2 * int64_t{128256} * 4096);
    EXPECT_EQ(f.kv_bytes_per_token_layer, 2 * 8 * 128 * 2);
    EXPECT_EQ(f.activation_bytes_per_token, 4096 * 4);  // an fp32 residual row

    model::ModelConfig tied = llama3_8b();
    tied.tie_word_embeddings = true;
    EXPECT_EQ(model_footprint(tied, DType::kBF16, DType::kBF16).resident_weight_bytes,
              (int64_t{128256} * 4096 + 4096) * 2);
    const ModelFootprint fp8 = model_footprint(llama3_8b(), DType::kF8E4M3, DType::kF8E4M3);
    EXPECT_EQ(fp8.layer_weight_bytes, 218103808 + 2 * 4096 * 2);
    EXPECT_EQ(fp8.kv_bytes_per_token_layer, 2 * 8 * 128);
}

TEST(PlacementPlan, EverythingOnTheGpuWhenItFitsWhateverOffloadSays) {
    for (OffloadMode offload : {OffloadMode::kAuto, OffloadMode::kCpu, OffloadMode::kStream}) {
        PlacementInputs in = half_of_8b(1, offload);
        in.machine.gpu_budget_bytes = 80 * kGiB;
        const PlacementPlan p = plan_or_die(in);
        EXPECT_EQ(p.num_layers_gpu, 32);
        EXPECT_EQ(p.num_layers_cpu + p.num_layers_stream, 0);
        EXPECT_EQ(p.layers, std::vector<LayerPlace>(32, LayerPlace::kGpu));
        EXPECT_EQ(p.stream_buffer_bytes, 0);
        EXPECT_EQ(p.pcie_bytes_per_step, 0);
        EXPECT_EQ(p.gpu_bytes(),
                  in.model.resident_weight_bytes + 32 * in.model.layer_weight_bytes + 4 * kGiB);
        EXPECT_EQ(p.bound.limit, "GPU memory bandwidth");
        EXPECT_NE(describe(p).find("PCIe    nothing per step"), std::string::npos) << describe(p);
    }
}

TEST(PlacementPlan, AutoRunsTheRestOnTheCpuAtBatch1) {
    const PlacementPlan p = plan_or_die(half_of_8b(1));
    EXPECT_EQ(p.num_layers_gpu, 16);
    EXPECT_EQ(p.num_layers_cpu, 16);
    EXPECT_EQ(p.num_layers_stream, 0);
    EXPECT_EQ(p.layers[15], LayerPlace::kGpu);
    EXPECT_EQ(p.layers[16], LayerPlace::kCpu);
    EXPECT_EQ(p.layers[31], LayerPlace::kCpu);
    // 16 x 436.2 MB at 100 GB/s; streaming 23 layers at 50 GB/s would take 200.7 ms.
    EXPECT_NEAR(p.bound.cpu_ms, 16 * 4.36224, 1e-6);
    EXPECT_EQ(p.bound.limit, "CPU memory bandwidth");
    const PlacementPlan streamed = plan_or_die(half_of_8b(1, OffloadMode::kStream));
    EXPECT_GT(streamed.bound.total_ms(), p.bound.total_ms());
}

TEST(PlacementPlan, AutoStreamsTheRestAtBatch64) {
    const PlacementPlan p = plan_or_die(half_of_8b(64));
    EXPECT_EQ(p.num_layers_gpu, 9);
    EXPECT_EQ(p.num_layers_stream, 23);
    EXPECT_EQ(p.num_layers_cpu, 0);
    EXPECT_EQ(p.layers[8], LayerPlace::kGpu);
    EXPECT_EQ(p.layers[9], LayerPlace::kStream);
    EXPECT_NEAR(p.bound.stream_ms, 23 * 8.72448, 1e-6);  // each layer's copy outlasts its compute
    EXPECT_EQ(p.bound.limit, "PCIe");
    // On the CPU each of 16 layers is compute-bound: 64 x 436.2 MFLOP at 1.5 TFLOP/s = 18.6 ms.
    const PlacementPlan on_cpu = plan_or_die(half_of_8b(64, OffloadMode::kCpu));
    EXPECT_NEAR(on_cpu.bound.cpu_ms, 16.0 * 64 * 436207616 / 1.5e9, 1e-6);
    EXPECT_EQ(on_cpu.bound.limit, "CPU compute");
    EXPECT_GT(on_cpu.bound.total_ms(), p.bound.total_ms());
}

TEST(PlacementPlan, ForcedOffloadIsHonouredWhereAutoWouldChooseTheOther) {
    const PlacementPlan cpu = plan_or_die(half_of_8b(64, OffloadMode::kCpu));
    EXPECT_EQ(cpu.num_layers_gpu, 16);
    EXPECT_EQ(cpu.num_layers_cpu, 16);
    const PlacementPlan stream = plan_or_die(half_of_8b(1, OffloadMode::kStream));
    EXPECT_EQ(stream.num_layers_gpu, 9);
    EXPECT_EQ(stream.num_layers_stream, 23);
}

TEST(PlacementPlan, GpuLayersIsHonouredWhenItFits) {
    const PlacementPlan four = plan_or_die(half_of_8b(1, OffloadMode::kAuto, 4));
    EXPECT_EQ(four.num_layers_gpu, 4);
    EXPECT_EQ(four.num_layers_cpu, 28);
    EXPECT_EQ(four.layers[3], LayerPlace::kGpu);
    EXPECT_EQ(four.layers[4], LayerPlace::kCpu);

    // None on the GPU: only the resident weights there, every layer's KV in host RAM.
    const PlacementPlan none = plan_or_die(half_of_8b(1, OffloadMode::kCpu, 0));
    EXPECT_EQ(none.num_layers_cpu, 32);
    EXPECT_EQ(none.gpu_bytes(), none.weight_bytes_gpu);
    EXPECT_EQ(none.kv_bytes_host, 4 * kGiB);

    // More than the model has means all of them.
    PlacementInputs all = half_of_8b(1, OffloadMode::kAuto, 999);
    all.machine.gpu_budget_bytes = 80 * kGiB;
    EXPECT_EQ(plan_or_die(all).num_layers_gpu, 32);
}

TEST(PlacementPlan, GpuLayersIsRefusedWithTheNumbersWhenItDoesNotFit) {
    // 20 layers on the GPU: 1.96 GiB resident + 20 x 0.41 GiB + 20 x 0.125 GiB of KV = 12.58 GiB.
    auto plan = plan_placement(half_of_8b(1, OffloadMode::kCpu, 20));
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(
        plan.status().message(),
        "--gpu-layers 20 needs 12.58 GiB of GPU memory (resident weights 1.96 GiB + 20 layers 8.13 GiB + "
        "KV 2.50 GiB), the GPU budget is 10.50 GiB");
    PlacementInputs all = half_of_8b(1, OffloadMode::kAuto, 32);
    EXPECT_FALSE(plan_placement(all).ok());
}

TEST(PlacementPlan, ABudgetBelowTheStreamingBuffersIsOneLineNamingTheNumbers) {
    auto plan = plan_placement(round_model(3 * kGiB, OffloadMode::kStream));
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().message(),
              "GPU budget 3.00 GiB is too small: resident weights 1.50 GiB + KV 2.00 GiB + streaming buffers "
              "2.00 GiB need 5.50 GiB");
    EXPECT_EQ(plan.status().message().find('\n'), std::string::npos);

    // auto falls back on the CPU, which needs no buffers and keeps its layers' KV in host RAM:
    // 1.5 GiB + 1 x (1 GiB + 0.25 GiB) fits 3 GiB.
    const PlacementPlan cpu = plan_or_die(round_model(3 * kGiB, OffloadMode::kAuto));
    EXPECT_EQ(cpu.num_layers_gpu, 1);
    EXPECT_EQ(cpu.num_layers_cpu, 7);
}

TEST(PlacementPlan, ABudgetBelowTheResidentWeightsNamesBothWaysUnderAuto) {
    auto plan = plan_placement(round_model(kGiB, OffloadMode::kAuto));
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(
        plan.status().message(),
        "no placement fits: with the other layers on the CPU, GPU budget 1.00 GiB is too small: resident "
        "weights 1.50 GiB need 1.50 GiB; with them streamed, GPU budget 1.00 GiB is too small: resident "
        "weights 1.50 GiB + KV 2.00 GiB + streaming buffers 2.00 GiB need 5.50 GiB");
}

TEST(PlacementPlan, HostRamShortIsAnErrorNamingTheNumbers) {
    PlacementInputs in = round_model(3 * kGiB, OffloadMode::kCpu);
    in.machine.host_budget_bytes = 8 * kGiB;
    auto plan = plan_placement(in);
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(
        plan.status().message(),
        "host RAM 8.00 GiB is too small: 7 layers on the CPU need weights 7.00 GiB + KV 1.75 GiB = 8.75 GiB");

    // Streamed weights need host RAM too: 8 GiB - 1.5 resident - 2 KV - 2 buffers leaves 2 GPU layers,
    // so 6 layers stream, 6 GiB.
    in = round_model(8 * kGiB, OffloadMode::kStream);
    in.machine.host_budget_bytes = 5 * kGiB;
    plan = plan_placement(in);
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().message(),
              "host RAM 5.00 GiB is too small: 6 streamed layers need 6.00 GiB of pinned weights");

    // Under auto, a CPU short of RAM and a GPU short of streaming buffers: both reasons, one line.
    in = round_model(3 * kGiB, OffloadMode::kAuto);
    in.machine.host_budget_bytes = 4 * kGiB;
    plan = plan_placement(in);
    ASSERT_FALSE(plan.ok());
    const std::string& message = plan.status().message();
    EXPECT_NE(message.find("with the other layers on the CPU, host RAM 4.00 GiB is too small"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("with them streamed, GPU budget 3.00 GiB is too small"), std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST(PlacementPlan, PerPlaceBytesAddUpToTheModel) {
    int num_plans = 0;
    for (int tokens : {1, 8, 64}) {
        for (OffloadMode offload : {OffloadMode::kAuto, OffloadMode::kCpu, OffloadMode::kStream}) {
            for (int64_t budget : {8 * kGiB, 10 * kGiB, 14 * kGiB, 80 * kGiB}) {
                PlacementInputs in = half_of_8b(tokens, offload);
                in.machine.gpu_budget_bytes = budget;
                const PlacementPlan p = plan_or_die(in);
                const ModelFootprint& m = in.model;
                EXPECT_EQ(p.weight_bytes_gpu + p.weight_bytes_cpu + p.weight_bytes_stream,
                          m.resident_weight_bytes + 32 * m.layer_weight_bytes);
                EXPECT_EQ(p.kv_bytes_gpu + p.kv_bytes_host, 4 * kGiB);
                EXPECT_EQ(p.num_layers_gpu + p.num_layers_cpu + p.num_layers_stream, 32);
                EXPECT_EQ(std::count(p.layers.begin(), p.layers.end(), LayerPlace::kGpu), p.num_layers_gpu);
                EXPECT_LE(p.gpu_bytes(), budget);
                EXPECT_EQ(p.stream_buffer_bytes, p.num_layers_stream > 0 ? 2 * m.layer_weight_bytes : 0);
                ++num_plans;
            }
        }
    }
    EXPECT_EQ(num_plans, 36);
}

TEST(PlacementPlan, PcieBytesPerStepAreStreamedWeightsAndResidualRowsAtEachCrossing) {
    const int64_t layer = model_footprint(llama3_8b(), DType::kBF16, DType::kBF16).layer_weight_bytes;
    EXPECT_EQ(plan_or_die(half_of_8b(64)).pcie_bytes_per_step, 23 * layer);
    // To the host after the last GPU layer and back before the final norm: 2 x tokens x 4096 x fp32.
    EXPECT_EQ(plan_or_die(half_of_8b(1)).pcie_bytes_per_step, 2 * 1 * 4096 * 4);
    const PlacementPlan cpu64 = plan_or_die(half_of_8b(64, OffloadMode::kCpu));
    EXPECT_EQ(cpu64.pcie_bytes_per_step, 2 * 64 * 4096 * 4);
    EXPECT_NEAR(cpu64.bound.crossing_ms, 1e3 * 2 * 64 * 4096 * 4 / 5.0e10, 1e-9);
}

TEST(PlacementPlan, DescribeStatesEachPlaceAndTheBound) {
    const std::string cpu = describe(plan_or_die(half_of_8b(1)));
    EXPECT_NE(cpu.find("placement for 1 token per step: 16 of 32 layers on the GPU, 16 on the CPU"),
              std::string::npos)
        << cpu;
    EXPECT_NE(cpu.find("GPU     layers 0-15 + resident weights"), std::string::npos) << cpu;
    EXPECT_NE(cpu.find("CPU     layers 16-31: weights 6.50 GiB, KV 2.00 GiB in host RAM"), std::string::npos)
        << cpu;
    EXPECT_NE(cpu.find("PCIe    32.0 KiB per step"), std::string::npos) << cpu;
    EXPECT_NE(cpu.find("tokens/s"), std::string::npos) << cpu;
    EXPECT_NE(cpu.find("limited by CPU memory bandwidth"), std::string::npos) << cpu;
    EXPECT_EQ(cpu.find("stream "), std::string::npos) << cpu;

    const std::string stream = describe(plan_or_die(half_of_8b(64)));
    EXPECT_NE(stream.find("stream  layers 9-31: weights 9.34 GiB in pinned host memory"), std::string::npos)
        << stream;
    EXPECT_NE(stream.find("streaming buffers 0.81 GiB"), std::string::npos) << stream;
    EXPECT_NE(stream.find("PCIe    9.34 GiB per step (streamed weights)"), std::string::npos) << stream;
    EXPECT_NE(stream.find("limited by PCIe"), std::string::npos) << stream;
    EXPECT_EQ(stream.find("CPU     "), std::string::npos) << stream;
}

TEST(PlacementInputs, ValidateNamesTheBadField) {
    PlacementInputs in = half_of_8b(1, OffloadMode::kAuto, -2);
    EXPECT_EQ(plan_placement(in).status().message(), "--gpu-layers must be auto or >= 0, got -2");
    in = half_of_8b(0);
    EXPECT_EQ(in.validate().message(), "num_tokens_step must be positive, got 0");
    in = half_of_8b(1);
    in.machine.pcie_bytes_per_s = 0;
    EXPECT_EQ(in.validate().message(), "pcie_bytes_per_s must be positive, got 0");
    in = half_of_8b(1);
    in.num_tokens_kv = -1;
    EXPECT_EQ(in.validate().message(), "num_tokens_kv must not be negative, got -1");
    EXPECT_TRUE(half_of_8b(1).validate().ok());
}

}  // namespace
}  // namespace hichat::executor
