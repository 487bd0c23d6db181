#include "grammar/compiled_grammar.h"

#include <string>
#include <unordered_map>

namespace hichat::grammar {

class IrLowering {
public:
    IrLowering(const GrammarIr& ir, const CompileLimits& limits) : ir_(ir), limits_(limits) {}

    Result<std::shared_ptr<const CompiledGrammar>> run(std::chrono::steady_clock::time_point deadline) {
        auto g = std::make_shared<CompiledGrammar>();
        const auto& rules = ir_.rules();
        if (ir_.root() < 0) return invalid_argument("grammar has no root rule");
        num_nonterminals_ = static_cast<int32_t>(rules.size());
        const int32_t start = fresh();
        prods_.push_back({start, {ir_.root()}});
        for (size_t r = 0; r < rules.size(); ++r) {
            if (rules[r].body < 0) return invalid_argument("grammar rule '" + rules[r].name + "' is not defined");
            add_alternatives(static_cast<int32_t>(r), rules[r].body);
            if (static_cast<int>(prods_.size()) > limits_.max_productions) {
                return invalid_argument("grammar too large: over " + std::to_string(limits_.max_productions) +
                                        " productions");
            }
            if (std::chrono::steady_clock::now() > deadline) {
                return invalid_argument("grammar compilation exceeded its time budget");
            }
        }
        int total_states = 0;
        for (const LexemeSpec& spec : ir_.lexemes()) {
            auto dfa = LexemeDfa::build(spec, limits_.max_lexeme_states, deadline);
            if (!dfa.ok()) return dfa.status();
            total_states += dfa->num_states();
            if (total_states > limits_.max_total_lexeme_states) {
                return invalid_argument("grammar too large: lexeme automata over " +
                                        std::to_string(limits_.max_total_lexeme_states) + " states");
            }
            g->lexemes_.push_back(std::move(dfa).value());
        }
        finish(*g, start);
        g->lexer_states_ = std::make_unique<LexerStates>(*g);
        return std::shared_ptr<const CompiledGrammar>(std::move(g));
    }

private:
    int32_t fresh() { return num_nonterminals_++; }

    // The symbols of one alternative of e (a sequence), creating nonterminals for nested choices.
    void lower_seq(ExprId id, std::vector<int32_t>& out) {
        const Expr& e = ir_.exprs()[id];
        switch (e.kind) {
            case ExprKind::kEmpty: return;
            case ExprKind::kLexeme: out.push_back(lexeme_symbol(e.id)); return;
            case ExprKind::kRule: out.push_back(e.id); return;
            case ExprKind::kSeq:
                for (ExprId x : e.items) lower_seq(x, out);
                return;
            case ExprKind::kNothing:
            case ExprKind::kAlt:
            case ExprKind::kRepeat: {
                // Shared subexpressions get one nonterminal (no exponential copies).
                auto it = memo_.find(id);
                if (it != memo_.end()) {
                    out.push_back(it->second);
                    return;
                }
                const int32_t nt = fresh();
                memo_.emplace(id, nt);
                if (e.kind == ExprKind::kRepeat) {
                    std::vector<int32_t> seq;
                    lower_repeat(e, seq);
                    prods_.push_back({nt, std::move(seq)});
                } else {
                    add_alternatives(nt, id);
                }
                out.push_back(nt);
                return;
            }
        }
    }

    int32_t as_symbol(ExprId id) {
        std::vector<int32_t> seq;
        lower_seq(id, seq);
        if (seq.size() == 1) return seq[0];
        const int32_t nt = fresh();
        prods_.push_back({nt, std::move(seq)});
        return nt;
    }

    void lower_repeat(const Expr& e, std::vector<int32_t>& out) {
        const int32_t x = as_symbol(e.items[0]);
        for (int i = 0; i < e.min; ++i) out.push_back(x);
        if (e.max < 0) {
            // star -> empty | star x (left recursion keeps Earley rows small)
            const int32_t star = fresh();
            prods_.push_back({star, {}});
            prods_.push_back({star, {star, x}});
            out.push_back(star);
            return;
        }
        // opt_k -> empty | x opt_{k-1}
        int32_t prev = -1;
        for (int k = 1; k <= e.max - e.min; ++k) {
            const int32_t opt = fresh();
            prods_.push_back({opt, {}});
            if (prev < 0) prods_.push_back({opt, {x}});
            else prods_.push_back({opt, {x, prev}});
            prev = opt;
        }
        if (prev >= 0) out.push_back(prev);
    }

    void add_alternatives(int32_t lhs, ExprId id) {
        const Expr& e = ir_.exprs()[id];
        if (e.kind == ExprKind::kNothing) return;
        if (e.kind == ExprKind::kAlt) {
            for (ExprId x : e.items) add_alternatives(lhs, x);
            return;
        }
        std::vector<int32_t> seq;
        lower_seq(id, seq);
        prods_.push_back({lhs, std::move(seq)});
    }

    // Keeps productive productions (all symbols derive some text), computes nullable, indexes by lhs.
    void finish(CompiledGrammar& g, int32_t start) {
        const int32_t n = num_nonterminals_;
        std::vector<uint8_t> productive(n, 0);
        auto symbol_ok = [&](int32_t s) {
            return s >= 0 ? productive[s] != 0 : g.lexemes_[symbol_lexeme(s)].start() >= 0;
        };
        for (bool changed = true; changed;) {
            changed = false;
            for (const Production& p : prods_) {
                if (productive[p.lhs]) continue;
                bool ok = true;
                for (int32_t s : p.rhs) ok = ok && symbol_ok(s);
                if (ok) {
                    productive[p.lhs] = 1;
                    changed = true;
                }
            }
        }
        for (Production& p : prods_) {
            bool ok = true;
            for (int32_t s : p.rhs) ok = ok && symbol_ok(s);
            if (ok) g.productions_.push_back(std::move(p));
        }
        g.start_symbol_ = start;
        g.start_production_ = productive[start] ? 0 : -1;
        if (!productive[start]) g.productions_.clear();
        g.nullable_.assign(n, 0);
        for (bool changed = true; changed;) {
            changed = false;
            for (const Production& p : g.productions_) {
                if (g.nullable_[p.lhs]) continue;
                bool all = true;
                for (int32_t s : p.rhs) all = all && s >= 0 && g.nullable_[s];
                if (all) {
                    g.nullable_[p.lhs] = 1;
                    changed = true;
                }
            }
        }
        g.by_lhs_begin_.assign(n + 1, 0);
        for (const Production& p : g.productions_) ++g.by_lhs_begin_[p.lhs + 1];
        for (int32_t i = 0; i < n; ++i) g.by_lhs_begin_[i + 1] += g.by_lhs_begin_[i];
        g.by_lhs_.resize(g.productions_.size());
        std::vector<int32_t> fill(g.by_lhs_begin_.begin(), g.by_lhs_begin_.end() - 1);
        size_t bytes = 0;
        for (size_t i = 0; i < g.productions_.size(); ++i) {
            g.by_lhs_[fill[g.productions_[i].lhs]++] = static_cast<int32_t>(i);
            bytes += sizeof(Production) + g.productions_[i].rhs.size() * 4;
        }
        for (const LexemeDfa& d : g.lexemes_) bytes += static_cast<size_t>(d.num_states()) * 64;
        g.memory_bytes_ = bytes;
    }

    const GrammarIr& ir_;
    const CompileLimits& limits_;
    std::vector<Production> prods_;
    std::unordered_map<ExprId, int32_t> memo_;
    int32_t num_nonterminals_ = 0;
};

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::from_ir(
    const GrammarIr& ir, const CompileLimits& limits, std::chrono::steady_clock::time_point deadline) {
    return IrLowering(ir, limits).run(deadline);
}

}  // namespace hichat::grammar
