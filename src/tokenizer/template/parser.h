// Builds the syntax tree from tokens with @huggingface/jinja's grammar and operator precedence
// (lowest first): `x if c else y`, or, and, not, comparison and `in`, + - ~, * / // %, **, `is` tests,
// `|` filters, unary signs, calls / attributes / subscripts / slices.
// Everything the interpreter cannot run is rejected here, at load time: unknown statements (include,
// extends, block, raw, call, filter, ...), unknown filters and tests, `*`/`**` argument unpacking, and
// break/continue outside a loop.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "tokenizer/template/ast.h"
#include "tokenizer/template/lexer.h"

namespace hichat::tokenizer::jinja {

// Fails with "chat template line L, column C: <problem>".
Result<std::shared_ptr<const Body>> parse_template(std::string_view source);

class Parser {
public:
    explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}
    Result<Body> parse_program();

private:
    // Statements (parser.cpp).
    void parse_node(Body& out);
    void parse_statement(Body& out);
    Body parse_body_until(std::initializer_list<std::string_view> end_names);
    void expect_end_tag(std::string_view name);
    Stmt parse_if(SourcePos pos);
    // A loop or set target that is a name or a tuple of names: appends the names (a tuple sets
    // `unpack`; a tuple item that is not a name fails with `not_a_name`). False for anything else.
    bool collect_names(const Expr& target, const char* not_a_name, std::vector<std::string>& names, bool& unpack);
    Stmt parse_for(SourcePos pos);
    Stmt parse_set(SourcePos pos);
    Stmt parse_macro(SourcePos pos);

    // Expressions (parser_expression.cpp), in precedence order.
    ExprPtr parse_expression();
    ExprPtr parse_sequence(bool primary_only);  // a, b, c -> tuple
    ExprPtr parse_or();
    ExprPtr parse_and();
    ExprPtr parse_not();
    ExprPtr parse_comparison();
    ExprPtr parse_additive();
    ExprPtr parse_multiplicative();
    ExprPtr parse_power();
    ExprPtr parse_test();
    ExprPtr parse_filter();
    ExprPtr parse_unary_sign();
    ExprPtr parse_call_member();
    ExprPtr parse_call(ExprPtr callee);
    ExprPtr parse_member(ExprPtr object);
    ExprPtr parse_subscript(ExprPtr object, SourcePos pos);
    ExprPtr parse_primary();
    std::vector<Arg> parse_args(bool parameters);

    // Token helpers.
    bool at_end() const { return pos_ >= tokens_.size(); }
    const Token& peek(size_t ahead = 0) const;
    bool is(TokenKind kind, size_t ahead = 0) const;
    bool is_identifier(std::string_view name, size_t ahead = 0) const;
    bool is_statement(std::initializer_list<std::string_view> names) const;
    bool expect(TokenKind kind, std::string_view what);
    SourcePos here() const;
    void fail(SourcePos pos, const std::string& problem);
    bool failed() const { return !error_.ok(); }

    // One level of statement or expression nesting, for its lifetime. Past kMaxNesting levels the
    // parse fails: deeper input would exhaust the stack of this recursive descent (and of the
    // interpreter's evaluation) instead of getting an error. Real templates nest a few levels.
    static constexpr int kMaxNesting = 100;
    class Nesting {
    public:
        explicit Nesting(Parser& parser);
        ~Nesting() { --parser_.depth_; }
        Nesting(const Nesting&) = delete;
        Nesting& operator=(const Nesting&) = delete;

    private:
        Parser& parser_;
    };

    std::vector<Token> tokens_;
    size_t pos_ = 0;
    int depth_ = 0;       // current Nesting levels
    int loop_depth_ = 0;  // for loops enclosing the current position within one macro body
    Status error_;
};

}  // namespace hichat::tokenizer::jinja
