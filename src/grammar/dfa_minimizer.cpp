#include "grammar/dfa_minimizer.h"

#include <algorithm>

namespace hichat::grammar {
namespace {

// The blocks of a partition of states 0..n-1, refinable by marking states: block b holds
// elems[first[b], end[b]), its marked states at the front, up to mid[b].
class Partition {
public:
    explicit Partition(int n) : elems_(n), loc_(n), block_(n, 0), first_{0}, end_{n}, mid_{0} {
        for (int s = 0; s < n; ++s) elems_[s] = loc_[s] = s;
    }
    int num_blocks() const { return static_cast<int>(first_.size()); }
    int block_of(int32_t s) const { return block_[s]; }
    int size(int b) const { return end_[b] - first_[b]; }
    const int32_t* begin(int b) const { return elems_.data() + first_[b]; }
    const int32_t* end(int b) const { return elems_.data() + end_[b]; }

    void mark(int32_t s) {
        const int b = block_[s];
        const int i = loc_[s], j = mid_[b];
        if (i < j) return;
        if (j == first_[b]) touched_.push_back(b);
        std::swap(elems_[i], elems_[j]);
        loc_[elems_[i]] = i;
        loc_[elems_[j]] = j;
        ++mid_[b];
    }
    // Splits every touched block into its marked and unmarked parts; calls on_split(old, new).
    template <typename F>
    void split_marked(F on_split) {
        for (int b : touched_) {
            if (mid_[b] == end_[b]) {
                mid_[b] = first_[b];
                continue;
            }
            const int nb = num_blocks();
            first_.push_back(first_[b]);
            end_.push_back(mid_[b]);
            mid_.push_back(first_[b]);
            first_[b] = mid_[b];
            for (int i = first_[nb]; i < end_[nb]; ++i) block_[elems_[i]] = nb;
            on_split(b, nb);
        }
        touched_.clear();
    }

private:
    std::vector<int32_t> elems_, loc_, block_;
    std::vector<int> first_, end_, mid_;
    std::vector<int> touched_;
};

}  // namespace

TransitionTable minimize_dfa(const TransitionTable& dfa, int nc) {
    const int n = dfa.num_states() + 1;  // plus a dead sink, so that every state has every transition
    const int32_t sink = n - 1;
    auto target = [&](int32_t s, int c) -> int32_t {
        if (s == sink) return sink;
        const int32_t t = dfa.next[static_cast<size_t>(s) * nc + c];
        return t >= 0 ? t : sink;
    };
    // Inverse transitions per class, as CSR: sources of (c, t) at inv[begin[c * n + t], begin[c * n + t + 1]).
    std::vector<int32_t> begin(static_cast<size_t>(nc) * n + 1, 0), inv(static_cast<size_t>(nc) * n);
    for (int32_t s = 0; s < n; ++s) {
        for (int c = 0; c < nc; ++c) ++begin[static_cast<size_t>(c) * n + target(s, c) + 1];
    }
    for (size_t i = 1; i < begin.size(); ++i) begin[i] += begin[i - 1];
    std::vector<int32_t> fill(begin.begin(), begin.end() - 1);
    for (int32_t s = 0; s < n; ++s) {
        for (int c = 0; c < nc; ++c) inv[fill[static_cast<size_t>(c) * n + target(s, c)]++] = s;
    }

    Partition p(n);
    for (int32_t s = 0; s < n - 1; ++s) {
        if (dfa.accepting[s]) p.mark(s);
    }
    std::vector<uint8_t> in_work;
    std::vector<int> work;
    auto on_split = [&](int b, int nb) {
        in_work.resize(p.num_blocks(), 0);
        const int add = in_work[b] || p.size(nb) <= p.size(b) ? nb : b;
        if (!in_work[add]) {
            in_work[add] = 1;
            work.push_back(add);
        }
        if (in_work[b] && !in_work[nb]) {
            in_work[nb] = 1;
            work.push_back(nb);
        }
    };
    p.split_marked(on_split);
    in_work.resize(p.num_blocks(), 0);
    for (int b = 0; b < p.num_blocks(); ++b) {
        if (!in_work[b]) {
            in_work[b] = 1;
            work.push_back(b);
        }
    }
    std::vector<int32_t> splitter;
    while (!work.empty()) {
        const int b = work.back();
        work.pop_back();
        in_work[b] = 0;
        splitter.assign(p.begin(b), p.end(b));  // copied: splitting may reorder the block
        for (int c = 0; c < nc; ++c) {
            for (int32_t t : splitter) {
                const size_t k = static_cast<size_t>(c) * n + t;
                for (int32_t i = begin[k]; i < begin[k + 1]; ++i) p.mark(inv[i]);
            }
            p.split_marked(on_split);
        }
    }

    // Renumber: the start's block first, the sink's block dropped (pruned states never join it).
    const int dead_block = p.block_of(sink);
    std::vector<int32_t> id(p.num_blocks(), -1);
    int k = 0;
    id[p.block_of(0)] = k++;
    for (int32_t s = 0; s < n - 1; ++s) {
        if (id[p.block_of(s)] < 0 && p.block_of(s) != dead_block) id[p.block_of(s)] = k++;
    }
    TransitionTable out;
    out.next.assign(static_cast<size_t>(k) * nc, -1);
    out.accepting.assign(k, 0);
    for (int32_t s = 0; s < n - 1; ++s) {
        const int32_t b = id[p.block_of(s)];
        if (b < 0) continue;
        out.accepting[b] = dfa.accepting[s];
        for (int c = 0; c < nc; ++c) {
            const int32_t t = target(s, c);
            out.next[static_cast<size_t>(b) * nc + c] = t == sink ? -1 : id[p.block_of(t)];
        }
    }
    return out;
}

}  // namespace hichat::grammar
