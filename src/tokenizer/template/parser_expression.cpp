// Expression half of Parser (see parser.h for the precedence table).
#include <charconv>
#include <string_view>
#include <utility>

#include "tokenizer/template/parser.h"

namespace hichat::tokenizer::jinja {
namespace {

template <typename Node>
ExprPtr make(SourcePos pos, Node node) {
    auto e = std::make_unique<Expr>();
    e->pos = pos;
    e->node = std::move(node);
    return e;
}

ExprPtr binary(BinaryOp op, ExprPtr lhs, ExprPtr rhs) {
    const SourcePos pos = lhs->pos;
    return make(pos, BinaryExpr{op, std::move(lhs), std::move(rhs)});
}

constexpr std::string_view kFilters[] = {
    "abs", "bool", "capitalize", "default", "dictsort", "first", "float", "indent", "int", "items", "join",
    "keys", "last", "length", "list", "lower", "map", "rejectattr", "replace", "reverse", "safe",
    "selectattr", "sort", "string", "title", "tojson", "trim", "unique", "upper", "values",
};
constexpr std::string_view kTests[] = {
    "boolean", "callable", "defined", "eq", "equalto", "even", "false", "integer", "iterable", "lower",
    "mapping", "none", "number", "odd", "sequence", "string", "true", "undefined", "upper",
};

template <size_t N>
bool contains(const std::string_view (&names)[N], std::string_view name) {
    for (std::string_view n : names)
        if (n == name) return true;
    return false;
}

}  // namespace

ExprPtr Parser::parse_expression() {
    const Nesting nesting(*this);
    if (failed()) return make(here(), LiteralExpr{});
    ExprPtr value = parse_or();
    if (failed() || !is_identifier("if")) return value;
    ++pos_;
    ExprPtr condition = parse_or();
    if (!failed() && is_identifier("else")) {
        ++pos_;
        ExprPtr if_false = parse_expression();
        const SourcePos pos = value->pos;
        return make(pos, TernaryExpr{std::move(condition), std::move(value), std::move(if_false)});
    }
    const SourcePos pos = value->pos;
    return make(pos, SelectExpr{std::move(value), std::move(condition)});
}

ExprPtr Parser::parse_sequence(bool primary_only) {
    ExprPtr first = primary_only ? parse_primary() : parse_expression();
    if (failed() || !is(TokenKind::kComma)) return first;
    ListExpr tuple{{}, /*tuple=*/true};
    const SourcePos pos = first->pos;
    tuple.items.push_back(std::move(first));
    while (!failed() && is(TokenKind::kComma)) {
        ++pos_;
        tuple.items.push_back(primary_only ? parse_primary() : parse_expression());
    }
    return make(pos, std::move(tuple));
}

ExprPtr Parser::parse_or() {
    ExprPtr lhs = parse_and();
    while (!failed() && is_identifier("or")) {
        ++pos_;
        lhs = binary(BinaryOp::kOr, std::move(lhs), parse_and());
    }
    return lhs;
}

ExprPtr Parser::parse_and() {
    ExprPtr lhs = parse_not();
    while (!failed() && is_identifier("and")) {
        ++pos_;
        lhs = binary(BinaryOp::kAnd, std::move(lhs), parse_not());
    }
    return lhs;
}

ExprPtr Parser::parse_not() {
    if (!is_identifier("not")) return parse_comparison();
    const Nesting nesting(*this);
    if (failed()) return make(here(), LiteralExpr{});
    const SourcePos pos = here();
    ++pos_;
    return make(pos, UnaryExpr{UnaryOp::kNot, parse_not()});
}

ExprPtr Parser::parse_comparison() {
    ExprPtr lhs = parse_additive();
    while (!failed()) {
        BinaryOp op;
        if (is_identifier("not") && is_identifier("in", 1)) {
            op = BinaryOp::kNotIn;
            pos_ += 2;
        } else if (is_identifier("in")) {
            op = BinaryOp::kIn;
            ++pos_;
        } else if (is(TokenKind::kComparison)) {
            const std::string& v = peek().value;
            op = v == "==" ? BinaryOp::kEq : v == "!=" ? BinaryOp::kNe : v == "<" ? BinaryOp::kLt
               : v == ">" ? BinaryOp::kGt : v == "<=" ? BinaryOp::kLe : BinaryOp::kGe;
            ++pos_;
        } else {
            break;
        }
        lhs = binary(op, std::move(lhs), parse_additive());
    }
    return lhs;
}

ExprPtr Parser::parse_additive() {
    ExprPtr lhs = parse_multiplicative();
    while (!failed() && is(TokenKind::kAdditive)) {
        const std::string& v = peek().value;
        const BinaryOp op = v == "+" ? BinaryOp::kAdd : v == "-" ? BinaryOp::kSub : BinaryOp::kConcat;
        ++pos_;
        lhs = binary(op, std::move(lhs), parse_multiplicative());
    }
    return lhs;
}

ExprPtr Parser::parse_multiplicative() {
    ExprPtr lhs = parse_power();
    while (!failed() && is(TokenKind::kMultiplicative)) {
        const std::string& v = peek().value;
        const BinaryOp op = v == "*" ? BinaryOp::kMul : v == "/" ? BinaryOp::kDiv
                          : v == "//" ? BinaryOp::kFloorDiv : BinaryOp::kMod;
        ++pos_;
        lhs = binary(op, std::move(lhs), parse_power());
    }
    return lhs;
}

ExprPtr Parser::parse_power() {  // left-associative, as in Jinja
    ExprPtr lhs = parse_test();
    while (!failed() && is(TokenKind::kPower)) {
        ++pos_;
        lhs = binary(BinaryOp::kPow, std::move(lhs), parse_test());
    }
    return lhs;
}

ExprPtr Parser::parse_test() {
    ExprPtr operand = parse_filter();
    while (!failed() && is_identifier("is")) {
        ++pos_;
        const bool negated = is_identifier("not");
        if (negated) ++pos_;
        if (!is(TokenKind::kIdentifier)) return fail(here(), "expected a test name after 'is'"), std::move(operand);
        const Token& name = peek();
        if (!contains(kTests, name.value)) fail(name.pos, "unsupported test '" + name.value + "'");
        ++pos_;
        const SourcePos pos = operand->pos;
        operand = make(pos, TestExpr{std::move(operand), name.value, negated});
    }
    return operand;
}

ExprPtr Parser::parse_filter() {
    ExprPtr operand = parse_unary_sign();
    while (!failed() && is(TokenKind::kPipe)) {
        ++pos_;
        if (!is(TokenKind::kIdentifier)) return fail(here(), "expected a filter name after '|'"), std::move(operand);
        const Token& name = peek();
        if (!contains(kFilters, name.value)) fail(name.pos, "unsupported filter '" + name.value + "'");
        ++pos_;
        FilterExpr filter{std::move(operand), name.value, {}, false};
        if (is(TokenKind::kOpenParen)) {
            filter.called = true;
            filter.args = parse_args(/*parameters=*/false);
        }
        operand = make(name.pos, std::move(filter));
    }
    return operand;
}

ExprPtr Parser::parse_unary_sign() {
    if ((is(TokenKind::kUnary) || is(TokenKind::kAdditive)) && (peek().value == "-" || peek().value == "+")) {
        const Nesting nesting(*this);
        if (failed()) return make(here(), LiteralExpr{});
        const SourcePos pos = here();
        const UnaryOp op = peek().value == "-" ? UnaryOp::kMinus : UnaryOp::kPlus;
        ++pos_;
        return make(pos, UnaryExpr{op, parse_unary_sign()});
    }
    return parse_call_member();
}

ExprPtr Parser::parse_call_member() {
    ExprPtr member = parse_member(parse_primary());
    if (!failed() && is(TokenKind::kOpenParen)) return parse_call(std::move(member));
    return member;
}

ExprPtr Parser::parse_call(ExprPtr callee) {
    const SourcePos pos = callee->pos;
    std::vector<Arg> args = parse_args(/*parameters=*/false);
    ExprPtr call = parse_member(make(pos, CallExpr{std::move(callee), std::move(args)}));
    if (!failed() && is(TokenKind::kOpenParen)) return parse_call(std::move(call));
    return call;
}

ExprPtr Parser::parse_member(ExprPtr object) {
    while (!failed() && (is(TokenKind::kDot) || is(TokenKind::kOpenBracket))) {
        const SourcePos pos = object->pos;
        if (is(TokenKind::kOpenBracket)) {
            ++pos_;
            object = parse_subscript(std::move(object), pos);
            expect(TokenKind::kCloseBracket, "']'");
            continue;
        }
        ++pos_;
        const Token& key = peek();
        Value name;
        if (is(TokenKind::kIdentifier)) name = Value::string(key.value);
        else if (is(TokenKind::kNumber) && key.value.find('.') == std::string::npos && key.value[0] != '-' && key.value[0] != '+')
            name = Value::integer(std::stoll(key.value));
        else return fail(here(), "expected an attribute name after '.'"), std::move(object);
        ++pos_;
        object = make(pos, MemberExpr{std::move(object), make(key.pos, LiteralExpr{std::move(name)}), false});
    }
    return object;
}

// After `[`: an index expression or a slice with up to three parts.
ExprPtr Parser::parse_subscript(ExprPtr object, SourcePos pos) {
    std::vector<ExprPtr> parts;
    bool is_slice = false;
    while (!failed() && !at_end() && !is(TokenKind::kCloseBracket)) {
        if (is(TokenKind::kColon)) {
            parts.push_back(nullptr);
            ++pos_;
            is_slice = true;
            continue;
        }
        parts.push_back(parse_expression());
        if (is(TokenKind::kColon)) {
            ++pos_;
            is_slice = true;
        }
    }
    if (failed()) return object;
    if (parts.empty()) return fail(here(), "expected an index or slice inside '[]'"), std::move(object);
    if (!is_slice) return make(pos, MemberExpr{std::move(object), std::move(parts[0]), true});
    if (parts.size() > 3) return fail(here(), "a slice takes at most 3 parts"), std::move(object);
    parts.resize(3);
    return make(pos, SliceExpr{std::move(object), std::move(parts[0]), std::move(parts[1]), std::move(parts[2])});
}

ExprPtr Parser::parse_primary() {
    const SourcePos pos = here();
    if (at_end()) return fail(pos, "unexpected end of template in an expression"), make(pos, LiteralExpr{});
    const Token& token = tokens_[pos_++];
    switch (token.kind) {
        case TokenKind::kNumber: {
            const std::string& s = token.value;
            const size_t sign = (s[0] == '-' || s[0] == '+') ? 1 : 0;
            if (s.find('.') != std::string::npos) return make(pos, LiteralExpr{Value::floating(std::stod(s))});
            int64_t v = 0;
            const auto res = std::from_chars(s.data() + sign, s.data() + s.size(), v);
            if (res.ec != std::errc()) fail(pos, "integer literal out of range: " + s);
            return make(pos, LiteralExpr{Value::integer(s[0] == '-' ? -v : v)});
        }
        case TokenKind::kString: {
            std::string value = token.value;  // adjacent literals concatenate
            while (is(TokenKind::kString)) value += tokens_[pos_++].value;
            return make(pos, LiteralExpr{Value::string(std::move(value))});
        }
        case TokenKind::kIdentifier: return make(pos, NameExpr{token.value});
        case TokenKind::kOpenParen: {
            ExprPtr inner = parse_sequence(/*primary_only=*/false);
            expect(TokenKind::kCloseParen, "')'");
            return inner;
        }
        case TokenKind::kOpenBracket: {
            ListExpr list;
            while (!failed() && !at_end() && !is(TokenKind::kCloseBracket)) {
                list.items.push_back(parse_expression());
                if (is(TokenKind::kComma)) ++pos_;
            }
            expect(TokenKind::kCloseBracket, "']'");
            return make(pos, std::move(list));
        }
        case TokenKind::kOpenBrace: {
            DictExpr dict;
            while (!failed() && !at_end() && !is(TokenKind::kCloseBrace)) {
                ExprPtr key = parse_expression();
                expect(TokenKind::kColon, "':' in a dict literal");
                dict.entries.emplace_back(std::move(key), parse_expression());
                if (is(TokenKind::kComma)) ++pos_;
            }
            expect(TokenKind::kCloseBrace, "'}'");
            return make(pos, std::move(dict));
        }
        default:
            fail(pos, "unexpected '" + token.value + "' in an expression");
            return make(pos, LiteralExpr{});
    }
}

std::vector<Arg> Parser::parse_args(bool parameters) {
    std::vector<Arg> args;
    if (!expect(TokenKind::kOpenParen, "'('")) return args;
    bool saw_keyword = false;
    while (!failed() && !at_end() && !is(TokenKind::kCloseParen)) {
        if (is(TokenKind::kPower) || (is(TokenKind::kMultiplicative) && peek().value == "*")) {
            fail(here(), "argument unpacking with '*' or '**' is not supported");
            break;
        }
        ExprPtr value = parse_expression();
        Arg arg;
        if (!failed() && is(TokenKind::kEquals)) {
            ++pos_;
            const auto* name = std::get_if<NameExpr>(&value->node);
            if (!name) fail(value->pos, "expected a name before '='");
            else arg.keyword = name->name;
            arg.value = parse_expression();
            saw_keyword = true;
        } else if (parameters) {
            const auto* name = std::get_if<NameExpr>(&value->node);
            if (!name) fail(value->pos, "expected a parameter name");
            else arg.keyword = name->name;
            if (saw_keyword) fail(value->pos, "non-default parameter follows a default parameter");
        } else {
            if (saw_keyword) fail(value->pos, "positional argument follows keyword argument");
            arg.value = std::move(value);
        }
        args.push_back(std::move(arg));
        if (is(TokenKind::kComma)) ++pos_;
    }
    expect(TokenKind::kCloseParen, "')'");
    return args;
}

}  // namespace hichat::tokenizer::jinja
