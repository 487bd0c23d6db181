// The parser half of the matcher: an Earley recogniser over lexemes. A row is the Earley set after
// some number of lexemes; rows live in a RowStore (the matcher's committed rows, then temporary
// rows that the token-mask walk explores and drops). Nullable symbols use the Aycock-Horspool
// prediction rule, so no completion ever looks at the row being built.
// Owned by one matcher; one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_set>
#include <utility>
#include <vector>

#include "grammar/compiled_grammar.h"

namespace hichat::grammar {

struct EarleyItem {
    uint32_t prod = 0;
    uint32_t dot = 0;
    uint32_t origin = 0;  // position of the row where the production was predicted
};

struct EarleyRow {
    std::vector<EarleyItem> items;
    std::vector<std::pair<int32_t, uint32_t>> by_next;  // (symbol after the dot, item index), sorted
    std::vector<int32_t> allowed_lexemes;                // sorted, unique
    bool accepting = false;   // the start production is complete from position 0
    uint32_t position = 0;    // lexemes before this row
    int32_t parent = -1;      // store index of the row before
    int32_t lexer_start = -2;  // the matcher's interned lexer start state for allowed_lexemes (-2: not yet)
};

// Rows [0, num_committed) sit at index == position; later ones are temporary and found via parent.
struct RowStore {
    std::vector<EarleyRow> rows;
    size_t num_committed = 0;

    const EarleyRow& at_position(int32_t from, uint32_t position) const {
        if (position < num_committed) return rows[position];
        int32_t i = from;
        while (rows[i].position > position) i = rows[i].parent;
        return rows[i];
    }
};

class EarleyParser {
public:
    explicit EarleyParser(const CompiledGrammar& grammar) : g_(grammar) {}

    EarleyRow initial_row();
    // The row after one of `lexemes` (sorted) at the end of the path ending at store.rows[top].
    // False (out unspecified) when the row expects none of them.
    bool scan(const RowStore& store, int32_t top, std::span<const int32_t> lexemes, EarleyRow& out);

private:
    void add(EarleyRow& row, EarleyItem item);
    void close(const RowStore& store, int32_t parent, EarleyRow& row);

    const CompiledGrammar& g_;
    std::unordered_set<uint64_t> seen_;  // scratch for close()
};

}  // namespace hichat::grammar
