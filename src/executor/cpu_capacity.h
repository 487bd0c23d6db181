// measure_cpu_capacity(): the CPU side of the placement planner's MachineCapacity, measured with the
// CPU backend's own linear kernel on `threads` threads (what CPU layers would run): the bytes per
// second of a bf16 GEMV over a matrix larger than the caches (one token: memory-bound), and the
// FLOP/s of a 64-token GEMM on a matrix of a layer's width (compute-bound). Takes tens of
// milliseconds and 160 MiB for the call.
#pragma once

namespace hichat::executor {

struct CpuCapacity {
    double memory_bytes_per_s = 0;
    double flops_per_s = 0;
};

// threads: 0 all hardware threads. Each figure is the best of three runs after one warm-up.
CpuCapacity measure_cpu_capacity(int threads);

}  // namespace hichat::executor
