// step_timeline: the kernels of the graphed decode steps as the GPU ran them, from CUPTI's activity
// records, to see where a step's time goes between kernels: ncu times one kernel at a time, without
// the graph, the programmatic dependent launches and their overlap. Not run by ctest.
//
//   step_timeline ARGS...   runs `hichat bench engine ARGS...` (e.g. --model /tmp/b8 --device cuda
//                           --batch 1 --input-len 128 --output-len 256 --repeat 1) with kernel
//                           activity recording on, then prints, for each decode graph replayed at
//                           least 8 times: the step's span (first kernel start to last kernel end),
//                           and per kernel (name, grid width and the kernel before it) its launches
//                           per step, mean duration and the mean gap from the end of the kernel before
//                           it to its start (negative: it started before the one before it ended);
//                           and the kernels launched outside graphs (prefill), totalled per kernel.
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_engine_command.h"

namespace {

struct KernelRecord {
    uint64_t start, end;
    uint32_t graph_id;
    std::string name;
};

std::vector<KernelRecord>& records() {
    static std::vector<KernelRecord> r;
    return r;
}

// "void hichat::cuda::(anonymous namespace)::gemv_kernel<1>(...)" -> "gemv_kernel<1>".
std::string short_name(const char* mangled) {
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> demangled(
        abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
    std::string name = status == 0 ? demangled.get() : mangled;
    if (name.rfind("void ", 0) == 0) name.erase(0, 5);  // a template's return type
    int depth = 0;  // cut the parameter list: the first '(' outside template brackets
    for (size_t i = 0; i < name.size(); ++i) {
        if (name[i] == '<') ++depth;
        if (name[i] == '>') --depth;
        if (name[i] == '(' && depth == 0 && i > 0 && name.compare(i, 11, "(anonymous ") != 0) {
            name.resize(i);
            break;
        }
    }
    for (const std::string prefix : {"hichat::cuda::(anonymous namespace)::",
                                     "hichat::cuda::attn::(anonymous namespace)::", "hichat::cuda::"}) {
        if (name.rfind(prefix, 0) == 0) name.erase(0, prefix.size());
    }
    return name;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *size = size_t{16} << 20;
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
    *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        // The grid tells apart launches of one kernel for different matrices (q|k|v, o, down).
        records().push_back({k->start, k->end, k->graphId, short_name(k->name) + " [" + std::to_string(k->gridX) + "]"});
    }
    std::free(buffer);
}

bool check(CUptiResult r, const char* what) {
    if (r == CUPTI_SUCCESS) return true;
    const char* text = nullptr;
    cuptiGetResultString(r, &text);
    std::fprintf(stderr, "step_timeline: %s: %s\n", what, text != nullptr ? text : "unknown CUPTI error");
    return false;
}

struct NameStats {
    int first_position = 0;
    double launches = 0, duration_ns = 0, gap_ns = 0;
};

// One graph's replays: steps are its kernels in start order, cut every `per_step` kernels.
void report_graph(uint32_t graph_id, std::vector<const KernelRecord*> kernels, size_t per_step) {
    const size_t steps = kernels.size() / per_step;
    std::map<std::string, NameStats> by_name;
    double span_ns = 0, busy_ns = 0;
    for (size_t s = 0; s < steps; ++s) {
        const KernelRecord* const* step = &kernels[s * per_step];
        span_ns += static_cast<double>(step[per_step - 1]->end - step[0]->start);
        for (size_t i = 0; i < per_step; ++i) {
            // The kernel before tells apart products of one grid (o after attention, down after gate/up).
            const std::string key = i == 0 ? step[i]->name : step[i]->name + " after " + step[i - 1]->name;
            NameStats& st = by_name[key];
            if (st.launches == 0) st.first_position = static_cast<int>(i);
            st.launches += 1;
            st.duration_ns += static_cast<double>(step[i]->end - step[i]->start);
            busy_ns += static_cast<double>(step[i]->end - step[i]->start);
            if (i > 0)
                st.gap_ns += static_cast<double>(static_cast<int64_t>(step[i]->start - step[i - 1]->end));
        }
    }
    std::printf("graph %u: %zu steps of %zu kernels, span %.1f us per step, kernel time %.1f us per step\n",
                graph_id, steps, per_step, span_ns / steps / 1e3, busy_ns / steps / 1e3);
    std::vector<std::pair<std::string, NameStats>> rows(by_name.begin(), by_name.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.first_position < b.second.first_position; });
    std::printf("  %-80s %9s %10s %12s %12s %12s\n", "kernel", "per step", "us each", "us per step",
                "gap before", "gap / step");
    for (const auto& [name, st] : rows) {
        const double per_step_launches = st.launches / steps;
        std::printf("  %-80.80s %9.1f %10.2f %12.1f %12.2f %12.1f\n", name.c_str(), per_step_launches,
                    st.duration_ns / st.launches / 1e3, st.duration_ns / steps / 1e3,
                    st.gap_ns / st.launches / 1e3, st.gap_ns / steps / 1e3);
    }
}

// The kernels launched outside graphs (prefill, and steps that have no graph), totalled per kernel
// over the whole run, the most time first.
void report_eager(const std::vector<const KernelRecord*>& kernels) {
    if (kernels.empty()) return;
    std::map<std::string, NameStats> by_name;
    double busy_ns = 0;
    for (const KernelRecord* k : kernels) {
        NameStats& st = by_name[k->name];
        st.launches += 1;
        st.duration_ns += static_cast<double>(k->end - k->start);
        busy_ns += static_cast<double>(k->end - k->start);
    }
    std::vector<std::pair<std::string, NameStats>> rows(by_name.begin(), by_name.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.duration_ns > b.second.duration_ns; });
    std::printf("outside graphs: %zu kernels, kernel time %.1f us in all\n", kernels.size(), busy_ns / 1e3);
    std::printf("  %-80s %9s %10s %12s %7s\n", "kernel", "launches", "us each", "us in all", "share");
    for (const auto& [name, st] : rows) {
        std::printf("  %-80.80s %9.0f %10.2f %12.1f %6.1f%%\n", name.c_str(), st.launches,
                    st.duration_ns / st.launches / 1e3, st.duration_ns / 1e3, 100.0 * st.duration_ns / busy_ns);
    }
}

// Per graph: the step length is the distance between consecutive launches of its first kernel.
void report() {
    std::map<uint32_t, std::vector<const KernelRecord*>> by_graph;
    for (const KernelRecord& r : records()) by_graph[r.graph_id].push_back(&r);
    report_eager(by_graph[0]);
    by_graph.erase(0);
    for (auto& [graph_id, kernels] : by_graph) {
        std::sort(kernels.begin(), kernels.end(),
                  [](const auto* a, const auto* b) { return a->start < b->start; });
        size_t per_step = 1;
        while (per_step < kernels.size() && kernels[per_step]->name != kernels[0]->name) ++per_step;
        if (kernels.size() / per_step < 8) continue;
        report_graph(graph_id, kernels, per_step);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (!check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "register callbacks") ||
        !check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable kernel records")) {
        return 1;
    }
    const int rc = hichat::tools::bench_engine_main(std::vector<std::string>(argv + 1, argv + argc));
    check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flush");
    report();
    return rc;
}
