// Syntax tree of a parsed chat template. Built once by Parser, immutable afterwards, walked by
// Interpreter. Every node records where it starts in the source for error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tokenizer/template/lexer.h"
#include "tokenizer/template/value.h"

namespace hichat::tokenizer::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class BinaryOp { kAnd, kOr, kEq, kNe, kLt, kGt, kLe, kGe, kIn, kNotIn, kAdd, kSub, kConcat, kMul, kDiv, kFloorDiv, kMod, kPow };
enum class UnaryOp { kNot, kMinus, kPlus };

struct Arg {             // one argument of a call, filter or macro parameter list
    std::string keyword;  // empty for a positional argument
    ExprPtr value;        // for a macro parameter: its default, or null
};

struct LiteralExpr { Value value; };
struct NameExpr { std::string name; };
struct MemberExpr { ExprPtr object; ExprPtr key; bool computed = false; };  // a.b (key: literal), a[k] (computed)
struct SliceExpr { ExprPtr object; ExprPtr start, stop, step; };    // a[start:stop:step]; parts may be null
struct CallExpr { ExprPtr callee; std::vector<Arg> args; };
struct BinaryExpr { BinaryOp op; ExprPtr lhs, rhs; };
struct UnaryExpr { UnaryOp op; ExprPtr operand; };
struct FilterExpr { ExprPtr operand; std::string name; std::vector<Arg> args; bool called = false; };  // x | f(...)
struct TestExpr { ExprPtr operand; std::string name; bool negated = false; };                          // x is [not] t
struct TernaryExpr { ExprPtr condition, if_true, if_false; };
struct SelectExpr { ExprPtr value, condition; };                    // `value if condition` without else
struct ListExpr { std::vector<ExprPtr> items; bool tuple = false; };
struct DictExpr { std::vector<std::pair<ExprPtr, ExprPtr>> entries; };

struct Expr {
    SourcePos pos;
    std::variant<LiteralExpr, NameExpr, MemberExpr, SliceExpr, CallExpr, BinaryExpr, UnaryExpr, FilterExpr,
                 TestExpr, TernaryExpr, SelectExpr, ListExpr, DictExpr>
        node;
};

struct Stmt;
using Body = std::vector<Stmt>;

struct TextStmt { std::string text; };
struct OutputStmt { ExprPtr expr; };  // {{ expr }}
struct IfStmt { ExprPtr condition; Body then_body, else_body; };
struct ForStmt {
    std::vector<std::string> targets;  // one name, or several unpacked from each item
    bool unpack = false;
    ExprPtr iterable;
    ExprPtr filter;  // `for x in xs if cond`, or null
    Body body, else_body;
};
struct SetStmt {
    std::vector<std::string> targets;  // names (several: unpack); empty when assigning an attribute
    bool unpack = false;
    ExprPtr attribute_object;          // `set ns.attr = v`: the namespace expression
    std::string attribute;
    ExprPtr value;                     // null for a block set ({% set x %}...{% endset %})
    Body body;
};
struct MacroStmt { std::string name; std::vector<Arg> params; Body body; };
struct BreakStmt {};
struct ContinueStmt {};

struct Stmt {
    SourcePos pos;
    std::variant<TextStmt, OutputStmt, IfStmt, ForStmt, SetStmt, MacroStmt, BreakStmt, ContinueStmt> node;
};

}  // namespace hichat::tokenizer::jinja
