#include "grammar/lexeme_dfa.h"

#include "grammar/dfa_minimizer.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace hichat::grammar {
namespace {

using Clock = std::chrono::steady_clock;

// Byte classes: bytes that every ByteSet of the regexes treats alike.
struct ByteClasses {
    std::array<uint8_t, 256> class_of{};
    int num_classes = 0;
};

void collect_sets(const Regex& r, std::vector<ByteSet>& sets) {
    if (r->kind == RegexKind::kByte) sets.push_back(r->bytes);
    for (const Regex& x : r->items) collect_sets(x, sets);
}

ByteClasses make_classes(const LexemeSpec& spec) {
    std::vector<ByteSet> sets;
    for (const Regex& r : spec.all_of) collect_sets(r, sets);
    for (const Regex& r : spec.none_of) collect_sets(r, sets);
    std::sort(sets.begin(), sets.end(), [](const ByteSet& a, const ByteSet& b) { return a.words < b.words; });
    sets.erase(std::unique(sets.begin(), sets.end()), sets.end());
    std::map<std::vector<bool>, uint8_t> ids;
    ByteClasses out;
    for (int b = 0; b < 256; ++b) {
        std::vector<bool> sig(sets.size());
        for (size_t k = 0; k < sets.size(); ++k) sig[k] = sets[k].has(static_cast<uint8_t>(b));
        auto [it, fresh] = ids.emplace(std::move(sig), static_cast<uint8_t>(ids.size()));
        out.class_of[b] = it->second;
    }
    out.num_classes = static_cast<int>(ids.size());
    return out;
}

// A DFA over byte classes: next[s * num_classes + c], -1 dead.
struct ClassDfa {
    std::vector<int32_t> next;
    std::vector<uint8_t> accepting;
    int num_states() const { return static_cast<int>(accepting.size()); }
};

class NfaBuilder {
public:
    // sub_dfa(item): the minimal automaton of a repeated item, or null to expand it as a tree.
    using SubDfa = std::function<const ClassDfa*(const Regex&)>;
    NfaBuilder(const ByteClasses& classes, int max_states, SubDfa sub_dfa)
        : classes_(classes), max_states_(max_states), sub_dfa_(std::move(sub_dfa)) {}

    struct Edge {
        ByteSet classes;  // over class ids
        int32_t to;
    };
    std::vector<std::vector<Edge>> edges;
    std::vector<std::vector<int32_t>> eps;
    bool overflow = false;

    int32_t new_state() {
        if (static_cast<int>(edges.size()) >= max_states_) overflow = true;
        edges.emplace_back();
        eps.emplace_back();
        return static_cast<int32_t>(edges.size() - 1);
    }

    int32_t build(const Regex& r, int32_t in) {
        if (overflow) return in;
        switch (r->kind) {
            case RegexKind::kEmpty: return in;
            case RegexKind::kNothing: return new_state();
            case RegexKind::kByte: {
                ByteSet cls;
                for (int b = 0; b < 256; ++b) {
                    if (r->bytes.has(static_cast<uint8_t>(b))) cls.add(classes_.class_of[b]);
                }
                const int32_t s = new_state();
                edges[in].push_back({cls, s});
                return s;
            }
            case RegexKind::kConcat: {
                int32_t cur = in;
                for (const Regex& x : r->items) cur = build(x, cur);
                return cur;
            }
            case RegexKind::kAlt: {
                const int32_t out = new_state();
                for (const Regex& x : r->items) {
                    const int32_t start = new_state();
                    eps[in].push_back(start);
                    eps[build(x, start)].push_back(out);
                }
                return out;
            }
            case RegexKind::kRepeat: return build_repeat(r, in);
        }
        return in;
    }

private:
    // Copies of the item: as its minimal automaton when it is more than a byte (a UTF-8 string
    // character has ~10 states there, against a tree of ~40 alternatives whose closures the subset
    // construction would otherwise carry into every copy).
    int32_t build_repeat(const Regex& r, int32_t in) {
        const Regex& item = r->items[0];
        const ClassDfa* d = item->kind == RegexKind::kByte || !sub_dfa_ ? nullptr : sub_dfa_(item);
        auto copy = [&](int32_t from) { return d != nullptr ? instantiate(*d, from) : build(item, from); };
        int32_t cur = in;
        for (int i = 0; i < r->min && !overflow; ++i) cur = copy(cur);
        if (r->max < 0) {
            const int32_t loop = new_state();
            eps[cur].push_back(loop);
            eps[copy(loop)].push_back(loop);
            return loop;
        }
        const int32_t out = new_state();
        eps[cur].push_back(out);
        for (int i = r->min; i < r->max && !overflow; ++i) {
            const int32_t start = new_state();
            eps[cur].push_back(start);
            cur = copy(start);
            eps[cur].push_back(out);
        }
        return out;
    }

    // A copy of d entered from `in`; returns the state its accepting states lead to by epsilon.
    int32_t instantiate(const ClassDfa& d, int32_t in) {
        const int nc = classes_.num_classes;
        const auto base = static_cast<int32_t>(edges.size());
        for (int s = 0; s < d.num_states(); ++s) new_state();
        const int32_t out = new_state();
        if (overflow) return out;
        eps[in].push_back(base);
        for (int s = 0; s < d.num_states(); ++s) {
            for (int c = 0; c < nc; ++c) {
                const int32_t t = d.next[static_cast<size_t>(s) * nc + c];
                if (t < 0) continue;
                auto& out_edges = edges[base + s];
                auto it = std::find_if(out_edges.begin(), out_edges.end(), [&](const Edge& e) { return e.to == base + t; });
                if (it == out_edges.end()) it = out_edges.insert(out_edges.end(), Edge{ByteSet{}, base + t});
                it->classes.add(static_cast<uint8_t>(c));
            }
            if (d.accepting[s]) eps[base + s].push_back(out);
        }
        return out;
    }

    const ByteClasses& classes_;
    int max_states_;
    SubDfa sub_dfa_;
};

struct VecHash {
    size_t operator()(const std::vector<int32_t>& v) const {
        size_t h = 1469598103934665603ULL;
        for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ULL;
        return h;
    }
};

Status budget_error(const char* what) {
    return invalid_argument(std::string("grammar too large: ") + what);
}

ClassDfa prune_dead(const ClassDfa& d, int nc);

// Minimal automata of repeated items, by node, for one lexeme (they are over its byte classes).
using SubDfaMemo = std::unordered_map<const RegexNode*, std::unique_ptr<ClassDfa>>;

Result<ClassDfa> determinize(const Regex& r, const ByteClasses& classes, int max_states, Clock::time_point deadline,
                             SubDfaMemo* memo) {
    auto sub_dfa = [&](const Regex& item) -> const ClassDfa* {
        auto it = memo->find(item.get());
        if (it != memo->end()) return it->second.get();
        std::unique_ptr<ClassDfa> min;
        auto d = determinize(item, classes, max_states, deadline, memo);
        if (d.ok()) {
            ClassDfa pruned = prune_dead(d.value(), classes.num_classes);
            // A start state with no way to accept: leave the item to the tree expansion.
            if (pruned.num_states() > 0) {
                TransitionTable t = minimize_dfa({std::move(pruned.next), std::move(pruned.accepting)}, classes.num_classes);
                min = std::make_unique<ClassDfa>(ClassDfa{std::move(t.next), std::move(t.accepting)});
            }
        }
        return memo->emplace(item.get(), std::move(min)).first->second.get();
    };
    NfaBuilder nfa(classes, max_states * 8, sub_dfa);
    const int32_t start = nfa.new_state();
    const int32_t final_state = nfa.build(r, start);
    if (nfa.overflow) return budget_error("a lexeme's automaton is over the state limit");
    std::vector<uint32_t> seen(nfa.edges.size(), 0);  // == stamp: in the current closure
    uint32_t stamp = 0;
    auto closure = [&](std::vector<int32_t> set) {
        ++stamp;
        std::vector<int32_t> stack;
        std::vector<int32_t> unique;
        for (int32_t s : set) {
            if (seen[s] != stamp) {
                seen[s] = stamp;
                unique.push_back(s);
            }
        }
        set = std::move(unique);
        stack = set;
        while (!stack.empty()) {
            const int32_t s = stack.back();
            stack.pop_back();
            for (int32_t t : nfa.eps[s]) {
                if (seen[t] != stamp) {
                    seen[t] = stamp;
                    set.push_back(t);
                    stack.push_back(t);
                }
            }
        }
        std::sort(set.begin(), set.end());
        return set;
    };
    ClassDfa dfa;
    std::unordered_map<std::vector<int32_t>, int32_t, VecHash> ids;
    std::vector<std::vector<int32_t>> sets;
    auto intern = [&](std::vector<int32_t> set) -> int32_t {
        auto it = ids.find(set);
        if (it != ids.end()) return it->second;
        const auto id = static_cast<int32_t>(sets.size());
        ids.emplace(set, id);
        dfa.accepting.push_back(std::binary_search(set.begin(), set.end(), final_state));
        sets.push_back(std::move(set));
        return id;
    };
    intern(closure({start}));
    const int nc = classes.num_classes;
    for (size_t i = 0; i < sets.size(); ++i) {
        if (static_cast<int>(sets.size()) > max_states) return budget_error("a lexeme's automaton is over the state limit");
        if ((i & 63) == 0 && Clock::now() > deadline) return invalid_argument("grammar compilation exceeded its time budget");
        dfa.next.resize((i + 1) * nc, -1);
        std::vector<std::vector<int32_t>> targets(nc);  // by class: the NFA states one byte away
        for (int32_t s : sets[i]) {
            for (const auto& e : nfa.edges[s]) {
                for (int w = 0; w < 4; ++w) {
                    for (uint64_t bits = e.classes.words[w]; bits != 0; bits &= bits - 1) {
                        targets[w * 64 + __builtin_ctzll(bits)].push_back(e.to);
                    }
                }
            }
        }
        for (int c = 0; c < nc; ++c) {
            if (targets[c].empty()) continue;
            const int32_t t = intern(closure(std::move(targets[c])));
            dfa.next[i * nc + c] = t;
        }
    }
    return dfa;
}


// Drops states that cannot reach an accepting state; state 0 stays first (or the DFA is empty).
ClassDfa prune_dead(const ClassDfa& d, int nc) {
    const int n = d.num_states();
    std::vector<std::vector<int32_t>> rev(n);
    for (int s = 0; s < n; ++s) {
        for (int c = 0; c < nc; ++c) {
            if (d.next[s * nc + c] >= 0) rev[d.next[s * nc + c]].push_back(s);
        }
    }
    std::vector<uint8_t> live(n);
    std::vector<int32_t> stack;
    for (int s = 0; s < n; ++s) {
        if (d.accepting[s]) {
            live[s] = 1;
            stack.push_back(s);
        }
    }
    while (!stack.empty()) {
        const int32_t s = stack.back();
        stack.pop_back();
        for (int32_t p : rev[s]) {
            if (!live[p]) {
                live[p] = 1;
                stack.push_back(p);
            }
        }
    }
    ClassDfa out;
    if (n == 0 || !live[0]) return out;
    std::vector<int32_t> id(n, -1);
    int k = 0;
    for (int s = 0; s < n; ++s) {
        if (live[s]) id[s] = k++;
    }
    out.next.assign(static_cast<size_t>(k) * nc, -1);
    out.accepting.resize(k);
    for (int s = 0; s < n; ++s) {
        if (!live[s]) continue;
        out.accepting[id[s]] = d.accepting[s];
        for (int c = 0; c < nc; ++c) {
            const int32_t t = d.next[s * nc + c];
            out.next[id[s] * nc + c] = t >= 0 ? id[t] : -1;
        }
    }
    return out;
}

}  // namespace

class DfaBuilder {
public:
    static Result<LexemeDfa> build(const LexemeSpec& spec, int max_states, Clock::time_point deadline) {
        const ByteClasses classes = make_classes(spec);
        const int nc = classes.num_classes;
        std::vector<ClassDfa> parts;
        for (const auto* list : {&spec.all_of, &spec.none_of}) {
            for (const Regex& r : *list) {
                SubDfaMemo memo;
                auto d = determinize(r, classes, max_states, deadline, &memo);
                if (!d.ok()) return d.status();
                parts.push_back(std::move(d).value());
            }
        }
        const size_t num_all = spec.all_of.size();
        // Product: one state per component (-1 dead) plus a "consumed a byte" flag.
        ClassDfa prod;
        std::unordered_map<std::vector<int32_t>, int32_t, VecHash> ids;
        std::vector<std::vector<int32_t>> tuples;
        auto intern = [&](std::vector<int32_t> t) -> int32_t {
            for (size_t k = 0; k < num_all; ++k) {
                if (t[k] < 0) return -1;
            }
            auto it = ids.find(t);
            if (it != ids.end()) return it->second;
            bool acc = t.back() == 1;
            for (size_t k = 0; k < parts.size() && acc; ++k) {
                const bool a = t[k] >= 0 && parts[k].accepting[t[k]];
                acc = k < num_all ? a : !a;
            }
            const auto id = static_cast<int32_t>(tuples.size());
            ids.emplace(t, id);
            prod.accepting.push_back(acc);
            tuples.push_back(std::move(t));
            return id;
        };
        std::vector<int32_t> first(parts.size() + 1, 0);
        first.back() = 0;
        intern(first);
        for (size_t i = 0; i < tuples.size(); ++i) {
            if (static_cast<int>(tuples.size()) > max_states) return budget_error("a lexeme's automaton is over the state limit");
            if ((i & 63) == 0 && Clock::now() > deadline) return invalid_argument("grammar compilation exceeded its time budget");
            prod.next.resize((i + 1) * nc, -1);
            for (int c = 0; c < nc; ++c) {
                std::vector<int32_t> t(parts.size() + 1, 1);
                for (size_t k = 0; k < parts.size(); ++k) {
                    const int32_t s = tuples[i][k];
                    t[k] = s < 0 ? -1 : parts[k].next[s * nc + c];
                }
                prod.next[i * nc + c] = intern(std::move(t));
            }
        }
        ClassDfa pruned = prune_dead(prod, nc);
        LexemeDfa out;
        out.class_of_ = classes.class_of;
        out.num_classes_ = nc;
        if (pruned.num_states() == 0) return out;
        TransitionTable min = minimize_dfa({std::move(pruned.next), std::move(pruned.accepting)}, nc);
        out.next_ = std::move(min.next);
        out.accepting_ = std::move(min.accepting);
        out.start_ = 0;
        out.has_next_.resize(out.accepting_.size());
        for (size_t s = 0; s < out.accepting_.size(); ++s) {
            for (int c = 0; c < nc; ++c) out.has_next_[s] |= out.next_[s * nc + c] >= 0;
        }
        return out;
    }
};

Result<LexemeDfa> LexemeDfa::build(const LexemeSpec& spec, int max_states, Clock::time_point deadline) {
    return DfaBuilder::build(spec, max_states, deadline);
}

// Breadth-first over the pairs of states that strings of each length lead to; a pair met at an
// earlier length shows any difference earlier, so each pair is expanded once.
int LexemeDfa::agreeing_depth(int32_t a, int32_t b, int max_depth) const {
    constexpr size_t kMaxPairs = 4096;  // a bound on the work; the depth checked so far still holds
    std::vector<std::pair<int32_t, int32_t>> layer{{a, b}}, next_layer;
    std::unordered_set<uint64_t> seen{(static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b)};
    for (int depth = 0; depth < max_depth; ++depth) {
        next_layer.clear();
        for (auto [x, y] : layer) {
            if (x == y) continue;  // the same from here on
            if (accepting_[x] != accepting_[y]) return depth;
            for (int c = 0; c < num_classes_; ++c) {
                const int32_t nx = next_[x * num_classes_ + c];
                const int32_t ny = next_[y * num_classes_ + c];
                if ((nx < 0) != (ny < 0)) return depth;
                if (nx >= 0 && seen.insert((static_cast<uint64_t>(nx) << 32) | static_cast<uint32_t>(ny)).second) {
                    next_layer.emplace_back(nx, ny);
                }
            }
        }
        if (next_layer.empty()) return max_depth;
        if (seen.size() > kMaxPairs) return depth + 1;
        layer.swap(next_layer);
    }
    return max_depth;
}

bool LexemeDfa::matches(std::string_view bytes) const {
    int32_t s = start_;
    for (char c : bytes) {
        if (s < 0) return false;
        s = next(s, static_cast<uint8_t>(c));
    }
    return s >= 0 && accepting_[s];
}

}  // namespace hichat::grammar
