#include "grammar/grammar_ir.h"

namespace hichat::grammar {

ExprId GrammarIr::lexeme(LexemeSpec spec) {
    // A lexeme never matches the empty string (the automaton excludes it); a nullable one becomes
    // (lexeme | empty) so that the language stays the same.
    bool nullable = !spec.all_of.empty();
    for (const Regex& r : spec.all_of) nullable = nullable && is_nullable(r);
    for (const Regex& r : spec.none_of) nullable = nullable && !is_nullable(r);
    std::string key;
    for (const Regex& r : spec.all_of) key += "+" + regex_key(r);
    for (const Regex& r : spec.none_of) key += "-" + regex_key(r);
    auto it = lexeme_ids_.find(key);
    int32_t id;
    if (it != lexeme_ids_.end()) {
        id = it->second;
    } else {
        id = static_cast<int32_t>(lexemes_.size());
        lexemes_.push_back(std::move(spec));
        lexeme_ids_.emplace(std::move(key), id);
    }
    const ExprId lex = add({ExprKind::kLexeme, id});
    return nullable ? alt({lex, empty()}) : lex;
}

ExprId GrammarIr::seq(std::vector<ExprId> items) {
    std::vector<ExprId> flat;
    for (ExprId e : items) {
        if (exprs_[e].kind == ExprKind::kNothing) return nothing();
        if (exprs_[e].kind == ExprKind::kEmpty) continue;
        flat.push_back(e);
    }
    if (flat.empty()) return empty();
    if (flat.size() == 1) return flat[0];
    return add({ExprKind::kSeq, 0, std::move(flat)});
}

ExprId GrammarIr::alt(std::vector<ExprId> items) {
    std::vector<ExprId> kept;
    for (ExprId e : items) {
        if (exprs_[e].kind != ExprKind::kNothing) kept.push_back(e);
    }
    if (kept.empty()) return nothing();
    if (kept.size() == 1) return kept[0];
    return add({ExprKind::kAlt, 0, std::move(kept)});
}

ExprId GrammarIr::repeat(ExprId item, int min, int max) {
    if (max == 0) return empty();
    if (min == 1 && max == 1) return item;
    if (exprs_[item].kind == ExprKind::kEmpty) return item;
    if (exprs_[item].kind == ExprKind::kNothing) return min == 0 ? empty() : item;
    Expr e{ExprKind::kRepeat, 0, {item}};
    e.min = min;
    e.max = max;
    return add(std::move(e));
}

int32_t GrammarIr::new_rule(std::string name) {
    rules_.push_back({std::move(name), -1});
    return static_cast<int32_t>(rules_.size() - 1);
}

}  // namespace hichat::grammar
