#include "grammar/earley_parser.h"

#include <algorithm>

namespace hichat::grammar {
namespace {

uint64_t item_key(const EarleyItem& it) {
    return (static_cast<uint64_t>(it.prod) << 40) ^ (static_cast<uint64_t>(it.dot) << 32) ^ it.origin;
}

}  // namespace

void EarleyParser::add(EarleyRow& row, EarleyItem item) {
    if (seen_.insert(item_key(item)).second) row.items.push_back(item);
}

EarleyRow EarleyParser::initial_row() {
    EarleyRow row;
    seen_.clear();
    if (g_.start_production() >= 0) add(row, {static_cast<uint32_t>(g_.start_production()), 0, 0});
    RowStore empty;
    close(empty, -1, row);
    return row;
}

bool EarleyParser::scan(const RowStore& store, int32_t top, std::span<const int32_t> lexemes, EarleyRow& out) {
    const EarleyRow& prev = store.rows[top];
    out = EarleyRow{};
    out.position = prev.position + 1;
    out.parent = top;
    seen_.clear();
    for (int32_t lex : lexemes) {
        const int32_t sym = lexeme_symbol(lex);
        auto lo = std::lower_bound(prev.by_next.begin(), prev.by_next.end(), std::make_pair(sym, uint32_t{0}));
        for (auto it = lo; it != prev.by_next.end() && it->first == sym; ++it) {
            EarleyItem item = prev.items[it->second];
            ++item.dot;
            add(out, item);
        }
    }
    if (out.items.empty()) return false;
    close(store, top, out);
    return true;
}

void EarleyParser::close(const RowStore& store, int32_t parent, EarleyRow& row) {
    const auto& prods = g_.productions();
    for (size_t i = 0; i < row.items.size(); ++i) {
        const EarleyItem it = row.items[i];
        const Production& p = prods[it.prod];
        if (it.dot == p.rhs.size()) {
            if (it.origin == row.position) continue;  // an empty derivation: handled at prediction
            const EarleyRow& o = store.at_position(parent, it.origin);
            auto lo = std::lower_bound(o.by_next.begin(), o.by_next.end(), std::make_pair(p.lhs, uint32_t{0}));
            for (auto k = lo; k != o.by_next.end() && k->first == p.lhs; ++k) {
                EarleyItem adv = o.items[k->second];
                ++adv.dot;
                add(row, adv);
            }
            continue;
        }
        const int32_t sym = p.rhs[it.dot];
        if (sym < 0) continue;
        for (int32_t q : g_.productions_of(sym)) add(row, {static_cast<uint32_t>(q), 0, row.position});
        if (g_.nullable(sym)) add(row, {it.prod, it.dot + 1, it.origin});
    }
    for (uint32_t i = 0; i < row.items.size(); ++i) {
        const EarleyItem& it = row.items[i];
        const Production& p = prods[it.prod];
        if (it.dot < p.rhs.size()) {
            row.by_next.emplace_back(p.rhs[it.dot], i);
            if (p.rhs[it.dot] < 0) row.allowed_lexemes.push_back(symbol_lexeme(p.rhs[it.dot]));
        } else if (static_cast<int32_t>(it.prod) == g_.start_production() && it.origin == 0) {
            row.accepting = true;
        }
    }
    std::sort(row.by_next.begin(), row.by_next.end());
    std::sort(row.allowed_lexemes.begin(), row.allowed_lexemes.end());
    row.allowed_lexemes.erase(std::unique(row.allowed_lexemes.begin(), row.allowed_lexemes.end()),
                              row.allowed_lexemes.end());
}

}  // namespace hichat::grammar
