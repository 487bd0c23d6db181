#include "tokenizer/template/parser.h"

#include <string>
#include <utility>

namespace hichat::tokenizer::jinja {

Result<std::shared_ptr<const Body>> parse_template(std::string_view source) {
    Result<std::vector<Token>> tokens = tokenize(source);
    if (!tokens.ok()) return tokens.status();
    Parser parser(std::move(*tokens));
    Result<Body> body = parser.parse_program();
    if (!body.ok()) return body.status();
    return std::make_shared<const Body>(std::move(*body));
}

const Token& Parser::peek(size_t ahead) const {
    static const Token kEnd{TokenKind::kComment, "", {}};
    return pos_ + ahead < tokens_.size() ? tokens_[pos_ + ahead] : kEnd;
}

bool Parser::is(TokenKind kind, size_t ahead) const {
    return pos_ + ahead < tokens_.size() && tokens_[pos_ + ahead].kind == kind;
}

bool Parser::is_identifier(std::string_view name, size_t ahead) const {
    return is(TokenKind::kIdentifier, ahead) && tokens_[pos_ + ahead].value == name;
}

bool Parser::is_statement(std::initializer_list<std::string_view> names) const {
    if (!is(TokenKind::kOpenStatement) || !is(TokenKind::kIdentifier, 1)) return false;
    for (std::string_view name : names)
        if (tokens_[pos_ + 1].value == name) return true;
    return false;
}

SourcePos Parser::here() const {
    if (!at_end()) return tokens_[pos_].pos;
    return tokens_.empty() ? SourcePos{1, 1} : tokens_.back().pos;
}

Parser::Nesting::Nesting(Parser& parser) : parser_(parser) {
    if (++parser_.depth_ == kMaxNesting + 1) {
        parser_.fail(parser_.here(), "nested too deeply (more than " + std::to_string(kMaxNesting) + " levels)");
    }
}

void Parser::fail(SourcePos pos, const std::string& problem) {
    if (error_.ok()) error_ = invalid_argument("chat template " + describe(pos) + ": " + problem);
}

bool Parser::expect(TokenKind kind, std::string_view what) {
    if (failed()) return false;
    if (!is(kind)) {
        fail(here(), "expected " + std::string(what) +
                         (at_end() ? " before the end of the template" : ", got '" + peek().value + "'"));
        return false;
    }
    ++pos_;
    return true;
}

Result<Body> Parser::parse_program() {
    Body program;
    while (!at_end() && !failed()) parse_node(program);
    if (failed()) return error_;
    return program;
}

void Parser::parse_node(Body& out) {
    const Token& token = peek();
    switch (token.kind) {
        case TokenKind::kComment: ++pos_; return;  // renders nothing
        case TokenKind::kText:
            out.push_back({token.pos, TextStmt{token.value}});
            ++pos_;
            return;
        case TokenKind::kOpenStatement: return parse_statement(out);
        case TokenKind::kOpenExpression: {
            ++pos_;
            ExprPtr expr = parse_expression();
            if (expect(TokenKind::kCloseExpression, "'}}'")) out.push_back({token.pos, OutputStmt{std::move(expr)}});
            return;
        }
        default: return fail(token.pos, "unexpected '" + token.value + "'");
    }
}

Body Parser::parse_body_until(std::initializer_list<std::string_view> end_names) {
    Body body;
    while (!failed() && !is_statement(end_names)) {
        if (at_end()) {
            std::string names;
            for (std::string_view n : end_names) names += (names.empty() ? "" : " or ") + std::string(n);
            fail(here(), "missing {% " + names + " %}");
            break;
        }
        parse_node(body);
    }
    return body;
}

void Parser::expect_end_tag(std::string_view name) {
    if (failed()) return;
    pos_ += 2;  // `{%` and the name, already checked by parse_body_until()
    expect(TokenKind::kCloseStatement, "'%}' after " + std::string(name));
}

void Parser::parse_statement(Body& out) {
    const Nesting nesting(*this);
    if (failed()) return;
    const SourcePos pos = peek().pos;
    ++pos_;  // {%
    if (!is(TokenKind::kIdentifier)) return fail(here(), "expected a statement name after '{%'");
    const std::string name = peek().value;
    ++pos_;
    if (name == "if") {
        out.push_back(parse_if(pos));
        expect_end_tag("endif");
    } else if (name == "for") {
        out.push_back(parse_for(pos));
        expect_end_tag("endfor");
    } else if (name == "set") {
        out.push_back(parse_set(pos));
    } else if (name == "macro") {
        out.push_back(parse_macro(pos));
        expect_end_tag("endmacro");
    } else if (name == "break" || name == "continue") {
        if (loop_depth_ == 0) return fail(pos, "'" + name + "' outside of a for loop");
        if (name == "break") out.push_back({pos, BreakStmt{}});
        else out.push_back({pos, ContinueStmt{}});
        expect(TokenKind::kCloseStatement, "'%}'");
    } else {
        fail(pos, "unsupported statement '{% " + name + " %}'");
    }
}

// After `{% if` / `{% elif`; leaves the parser at `{% endif`.
Stmt Parser::parse_if(SourcePos pos) {
    IfStmt stmt;
    stmt.condition = parse_expression();
    expect(TokenKind::kCloseStatement, "'%}' after the if condition");
    stmt.then_body = parse_body_until({"elif", "else", "endif"});
    if (!failed() && is_statement({"elif"})) {
        const SourcePos elif_pos = peek().pos;
        pos_ += 2;
        stmt.else_body.push_back(parse_if(elif_pos));
    } else if (!failed() && is_statement({"else"})) {
        pos_ += 2;
        expect(TokenKind::kCloseStatement, "'%}' after else");
        stmt.else_body = parse_body_until({"endif"});
    }
    return {pos, std::move(stmt)};
}

bool Parser::collect_names(const Expr& target, const char* not_a_name, std::vector<std::string>& names,
                           bool& unpack) {
    if (auto* name = std::get_if<NameExpr>(&target.node)) {
        names.push_back(name->name);
        return true;
    }
    auto* tuple = std::get_if<ListExpr>(&target.node);
    if (tuple == nullptr || !tuple->tuple) return false;
    unpack = true;
    for (const ExprPtr& item : tuple->items) {
        if (auto* item_name = std::get_if<NameExpr>(&item->node)) names.push_back(item_name->name);
        else fail(item->pos, not_a_name);
    }
    return true;
}

Stmt Parser::parse_for(SourcePos pos) {
    ForStmt stmt;
    ExprPtr target = parse_sequence(/*primary_only=*/true);
    if (!collect_names(*target, "loop variables must be names", stmt.targets, stmt.unpack)) {
        fail(target->pos, "expected a name or a tuple of names as the loop variable");
    }
    if (!failed() && !is_identifier("in")) fail(here(), "expected 'in' after the loop variable");
    ++pos_;
    stmt.iterable = parse_expression();
    if (auto* select = std::get_if<SelectExpr>(&stmt.iterable->node)) {  // for x in xs if cond
        stmt.filter = std::move(select->condition);
        ExprPtr iterable = std::move(select->value);
        stmt.iterable = std::move(iterable);
    }
    expect(TokenKind::kCloseStatement, "'%}' after the for header");
    ++loop_depth_;
    stmt.body = parse_body_until({"endfor", "else"});
    --loop_depth_;
    if (!failed() && is_statement({"else"})) {
        pos_ += 2;
        expect(TokenKind::kCloseStatement, "'%}' after else");
        stmt.else_body = parse_body_until({"endfor"});
    }
    return {pos, std::move(stmt)};
}

Stmt Parser::parse_set(SourcePos pos) {
    SetStmt stmt;
    ExprPtr target = parse_sequence(/*primary_only=*/false);
    const bool assigns_names = collect_names(*target, "can only unpack into names in set", stmt.targets, stmt.unpack);
    if (assigns_names) {
        // name or tuple of names: done
    } else if (auto* member = std::get_if<MemberExpr>(&target->node); member && !member->computed) {
        const auto* key = std::get_if<LiteralExpr>(&member->key->node);
        if (!key || !key->value.is_string()) return fail(member->key->pos, "expected an attribute name"), Stmt{pos, {}};
        stmt.attribute = key->value.as_string();
        stmt.attribute_object = std::move(member->object);
    } else {
        fail(target->pos, "cannot assign to this expression");
    }
    if (!failed() && is(TokenKind::kEquals)) {
        ++pos_;
        stmt.value = parse_sequence(/*primary_only=*/false);
        expect(TokenKind::kCloseStatement, "'%}' after set");
    } else {
        expect(TokenKind::kCloseStatement, "'=' or '%}' in set");
        stmt.body = parse_body_until({"endset"});
        expect_end_tag("endset");
    }
    return {pos, std::move(stmt)};
}

Stmt Parser::parse_macro(SourcePos pos) {
    MacroStmt stmt;
    if (!is(TokenKind::kIdentifier)) fail(here(), "expected a macro name");
    stmt.name = peek().value;
    ++pos_;
    if (!failed()) stmt.params = parse_args(/*parameters=*/true);
    expect(TokenKind::kCloseStatement, "'%}' after the macro signature");
    const int outer_loop_depth = loop_depth_;
    loop_depth_ = 0;  // break/continue cannot leave a macro
    stmt.body = parse_body_until({"endmacro"});
    loop_depth_ = outer_loop_depth;
    return {pos, std::move(stmt)};
}

}  // namespace hichat::tokenizer::jinja
