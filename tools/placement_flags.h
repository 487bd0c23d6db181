// The layer-placement flags (issue 21) shared by serve, generate and bench engine: one FlagSpec row
// each, for the commands' tables, and their parse into RunnerOptions. What they mean is
// executor::RunnerOptions's and plan_placement()'s.
#pragma once

#include "base/status.h"
#include "executor/runner_factory.h"
#include "cli_args.h"
#include "flag_spec.h"

namespace hichat::tools {

inline constexpr FlagSpec kGpuLayersFlag{
    .name = "gpu-layers", .value_name = "N|auto", .default_value = "auto",
    .help = "CUDA: the first N decoder layers on the GPU, the rest offloaded (--offload); auto: every layer that "
            "fits the GPU budget"};
inline constexpr FlagSpec kOffloadFlag{
    .name = "offload", .value_name = "auto|stream|cpu", .default_value = "auto",
    .help = "CUDA: how layers beyond the GPU's run: stream (weights in pinned RAM, copied to the GPU layer by "
            "layer, double-buffered); cpu is not built yet"};
inline constexpr FlagSpec kGpuMemoryGbFlag{
    .name = "gpu-memory-gb", .kind = FlagKind::kNumber, .value_name = "GB",
    .help = "CUDA: the GPU memory HiChat may use for weights, buffers and KV (GiB); default: what is free",
    .min = 0, .max = 1 << 20, .min_excluded = true};

struct PlacementFlags {
    int gpu_layers = -1;
    executor::OffloadMode offload = executor::OffloadMode::kAuto;
    int64_t gpu_memory_bytes = 0;

    // Sets the runner options' three placement fields.
    void apply(executor::RunnerOptions& o) const {
        o.gpu_layers = gpu_layers;
        o.offload = offload;
        o.gpu_memory_bytes = gpu_memory_bytes;
    }
};

// The three flags; errors name the flag.
Result<PlacementFlags> parse_placement_flags(const CliArgs& flags);

}  // namespace hichat::tools
