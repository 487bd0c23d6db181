// The grammar IR that every front end (JSON Schema, regex, GBNF) builds: rules over expressions
// (sequences, alternations, bounded or unbounded repeats) whose leaves are lexemes (byte-level
// regular languages, see lexeme_dfa.h) or references to rules. Lexemes are deduplicated by their
// regexes. compile_ir() (compiled_grammar.h) lowers it to the parser's productions.
// One front end owns one GrammarIr on its thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "grammar/lexeme_dfa.h"

namespace hichat::grammar {

enum class ExprKind { kEmpty, kNothing, kLexeme, kRule, kSeq, kAlt, kRepeat };

using ExprId = int32_t;

struct Expr {
    ExprKind kind = ExprKind::kEmpty;
    int32_t id = 0;              // kLexeme: lexeme id; kRule: rule id
    std::vector<ExprId> items;   // kSeq, kAlt, kRepeat (one item)
    int min = 0, max = 0;        // kRepeat; max -1 unbounded
};

struct Rule {
    std::string name;
    ExprId body = -1;  // -1 until defined
};

class GrammarIr {
public:
    ExprId empty() { return add({ExprKind::kEmpty}); }
    ExprId nothing() { return add({ExprKind::kNothing}); }
    ExprId lexeme(LexemeSpec spec);            // deduplicated; a nullable spec still matches only non-empty text
    ExprId lexeme(const Regex& r) { return lexeme(LexemeSpec{{r}, {}}); }
    ExprId literal(std::string_view bytes) { return lexeme(re_literal(bytes)); }
    ExprId seq(std::vector<ExprId> items);
    ExprId alt(std::vector<ExprId> items);
    ExprId repeat(ExprId item, int min, int max);
    ExprId optional(ExprId item) { return repeat(item, 0, 1); }

    int32_t new_rule(std::string name);
    void define(int32_t rule, ExprId body) { rules_[rule].body = body; }
    ExprId ref(int32_t rule) { return add({ExprKind::kRule, rule}); }
    void set_root(int32_t rule) { root_ = rule; }

    const std::vector<Expr>& exprs() const { return exprs_; }
    const std::vector<Rule>& rules() const { return rules_; }
    const std::vector<LexemeSpec>& lexemes() const { return lexemes_; }
    int32_t root() const { return root_; }

private:
    ExprId add(Expr e) {
        exprs_.push_back(std::move(e));
        return static_cast<ExprId>(exprs_.size() - 1);
    }

    std::vector<Expr> exprs_;
    std::vector<Rule> rules_;
    std::vector<LexemeSpec> lexemes_;
    std::map<std::string, int32_t> lexeme_ids_;  // regex keys -> lexeme id
    int32_t root_ = -1;
};

}  // namespace hichat::grammar
