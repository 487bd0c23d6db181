// probe_device(): what the placement planner (executor/placement_plan.h) needs to know of the current
// CUDA device, measured at start-up: free memory, the pinned host -> device copy rate (PCIe), the
// device-to-device copy rate (HBM), and the bf16 tensor-core peak from the SM count and clock.
#pragma once

#include <cstdint>

#include "base/status.h"

namespace hichat::cuda {

struct DeviceProbe {
    int64_t free_bytes = 0;
    int64_t total_bytes = 0;
    double h2d_bytes_per_s = 0;      // pinned host -> device, one copy of copy_bytes
    double memory_bytes_per_s = 0;   // device -> device copy: bytes read + written per second
    double bf16_flops_per_s = 0;     // SMs x clock x 4096 (Hopper's dense bf16 FLOPs per SM per clock)
};

// Allocates copy_bytes of pinned host and 2 x copy_bytes of device memory for the duration of the call;
// each rate is the best of three timed copies. Errors: no device, allocation failures.
Result<DeviceProbe> probe_device(size_t copy_bytes = size_t{256} << 20);

}  // namespace hichat::cuda
