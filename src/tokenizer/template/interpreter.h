// Walks a parsed template and renders it, with @huggingface/jinja's runtime semantics (scoping,
// truthiness, operators, output formatting). One Interpreter renders once; it is cheap to build.
// Errors are sticky: the first failure is recorded with its source position, evaluation unwinds to the
// nearest statement boundary and stops, and render() returns that Status. Nothing is thrown.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "tokenizer/template/ast.h"
#include "tokenizer/template/value.h"

namespace hichat::tokenizer::jinja {

class Interpreter {
public:
    // `globals`: the outermost scope (built-ins plus the render's variables).
    explicit Interpreter(Dict globals) { frames_.push_back(std::move(globals)); }

    Result<std::string> render(const Body& program);

private:
    enum class Flow { kNormal, kBreak, kContinue };

    // Statements (interpreter.cpp).
    Flow exec_body(const Body& body, std::string& out);
    Flow exec(const Stmt& stmt, std::string& out);
    void exec_output(const OutputStmt& s, SourcePos pos, std::string& out);
    void exec_for(const ForStmt& s, SourcePos pos, std::string& out);
    void exec_set(const SetStmt& s, SourcePos pos);
    bool bind_targets(const std::vector<std::string>& targets, bool unpack, const Value& item, SourcePos pos);
    Value call(const Value& callee, const CallArgs& args, SourcePos pos);
    Value call_macro(const MacroStmt& macro, const CallArgs& args, SourcePos pos);

    // Expressions (interpreter_expression.cpp).
    Value eval(const Expr& e);
    Value eval_node(const LiteralExpr& e, SourcePos pos);
    Value eval_node(const NameExpr& e, SourcePos pos);
    Value eval_node(const MemberExpr& e, SourcePos pos);
    Value eval_node(const SliceExpr& e, SourcePos pos);
    Value eval_node(const CallExpr& e, SourcePos pos);
    Value eval_node(const BinaryExpr& e, SourcePos pos);
    Value eval_node(const UnaryExpr& e, SourcePos pos);
    Value eval_node(const FilterExpr& e, SourcePos pos);
    Value eval_node(const TestExpr& e, SourcePos pos);
    Value eval_node(const TernaryExpr& e, SourcePos pos);
    Value eval_node(const SelectExpr& e, SourcePos pos);
    Value eval_node(const ListExpr& e, SourcePos pos);
    Value eval_node(const DictExpr& e, SourcePos pos);
    CallArgs eval_args(const std::vector<Arg>& args);
    Value eval_arithmetic(BinaryOp op, const Value& a, const Value& b, SourcePos pos);

    // Scopes: frames_[0] is global; for loops and macro calls push a frame. Lookup walks outwards
    // (macros see their caller's scope, as in the reference); assignment writes the innermost frame.
    Value lookup(const std::string& name) const;
    void assign(const std::string& name, Value v) { frames_.back().set(name, std::move(v)); }

    Value fail(SourcePos pos, const std::string& problem);  // records the first error; returns undefined
    Value check(Result<Value> r, SourcePos pos) { return r.ok() ? std::move(*r) : fail(pos, r.status().message()); }
    bool failed() const { return !error_.ok(); }

    std::vector<Dict> frames_;
    int call_depth_ = 0;
    Status error_;
};

}  // namespace hichat::tokenizer::jinja
