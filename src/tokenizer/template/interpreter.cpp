#include "tokenizer/template/interpreter.h"

#include <utility>

#include "tokenizer/template/value_format.h"

namespace hichat::tokenizer::jinja {
namespace {

constexpr int kMaxCallDepth = 200;  // macro recursion

}  // namespace

Result<std::string> Interpreter::render(const Body& program) {
    std::string out;
    exec_body(program, out);
    if (failed()) return error_;
    return out;
}

Value Interpreter::fail(SourcePos pos, const std::string& problem) {
    if (error_.ok()) error_ = invalid_argument("chat template " + describe(pos) + ": " + problem);
    return Value();
}

Value Interpreter::lookup(const std::string& name) const {
    for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame)
        if (const Value* v = frame->find(name)) return *v;
    return Value();
}

Interpreter::Flow Interpreter::exec_body(const Body& body, std::string& out) {
    for (const Stmt& stmt : body) {
        const Flow flow = exec(stmt, out);
        if (failed()) return Flow::kNormal;
        if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Stmt& stmt, std::string& out) {
    const SourcePos pos = stmt.pos;
    if (const auto* s = std::get_if<TextStmt>(&stmt.node)) {
        out += s->text;
    } else if (const auto* s = std::get_if<OutputStmt>(&stmt.node)) {
        exec_output(*s, pos, out);
    } else if (const auto* s = std::get_if<IfStmt>(&stmt.node)) {
        const bool condition = eval(*s->condition).truthy();
        if (failed()) return Flow::kNormal;
        return exec_body(condition ? s->then_body : s->else_body, out);
    } else if (const auto* s = std::get_if<ForStmt>(&stmt.node)) {
        exec_for(*s, pos, out);
    } else if (const auto* s = std::get_if<SetStmt>(&stmt.node)) {
        exec_set(*s, pos);
    } else if (const auto* s = std::get_if<MacroStmt>(&stmt.node)) {
        assign(s->name, Value::function(Function{s->name, nullptr, s}));
    } else if (std::holds_alternative<BreakStmt>(stmt.node)) {
        return Flow::kBreak;
    } else if (std::holds_alternative<ContinueStmt>(stmt.node)) {
        return Flow::kContinue;
    }
    return Flow::kNormal;
}

void Interpreter::exec_output(const OutputStmt& s, SourcePos pos, std::string& out) {
    const Value v = eval(*s.expr);
    if (failed() || v.is_none() || v.is_undefined()) return;  // the reference prints nothing for these
    Result<std::string> text = to_display_string(v);
    if (!text.ok()) {
        fail(pos, text.status().message());
        return;
    }
    out += *text;
}

bool Interpreter::bind_targets(const std::vector<std::string>& targets, bool unpack, const Value& item, SourcePos pos) {
    if (!unpack) {
        assign(targets[0], item);
        return true;
    }
    if (!item.is_list()) return fail(pos, std::string("cannot unpack a ") + item.type_name()), false;
    const auto& values = item.as_list().items;
    if (values.size() != targets.size()) {
        fail(pos, std::string("too ") + (values.size() < targets.size() ? "few" : "many") + " values to unpack");
        return false;
    }
    for (size_t i = 0; i < targets.size(); ++i) assign(targets[i], values[i]);
    return true;
}

// Mirrors the reference: one scope for the whole loop; a `continue` or `break` drops the output of its
// own iteration; the else block runs when no iteration completed.
void Interpreter::exec_for(const ForStmt& s, SourcePos pos, std::string& out) {
    frames_.emplace_back();
    const Value iterable = eval(*s.iterable);
    std::vector<Value> items;
    if (iterable.is_list()) {
        items = iterable.as_list().items;
    } else if (iterable.is_dict()) {
        for (const auto& [k, _] : iterable.as_dict().entries) items.push_back(Value::string(k));
    } else if (!failed()) {
        fail(s.iterable->pos, std::string("cannot loop over a ") + iterable.type_name());
    }
    if (s.filter) {
        std::vector<Value> kept;
        for (const Value& item : items) {
            if (failed()) break;
            frames_.emplace_back();
            bind_targets(s.targets, s.unpack, item, pos);
            if (eval(*s.filter).truthy()) kept.push_back(item);
            frames_.pop_back();
        }
        items = std::move(kept);
    }
    bool no_iteration = true;
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n && !failed(); ++i) {
        Dict loop;
        loop.set("index", Value::integer(i + 1));
        loop.set("index0", Value::integer(i));
        loop.set("revindex", Value::integer(n - i));
        loop.set("revindex0", Value::integer(n - i - 1));
        loop.set("first", Value::boolean(i == 0));
        loop.set("last", Value::boolean(i == n - 1));
        loop.set("length", Value::integer(n));
        loop.set("previtem", i > 0 ? items[i - 1] : Value());
        loop.set("nextitem", i < n - 1 ? items[i + 1] : Value());
        assign("loop", Value::dict(std::move(loop)));
        if (!bind_targets(s.targets, s.unpack, items[i], pos)) break;
        const size_t mark = out.size();
        const Flow flow = exec_body(s.body, out);
        if (flow != Flow::kNormal) out.resize(mark);
        if (flow == Flow::kBreak) break;
        if (flow == Flow::kNormal) no_iteration = false;
    }
    if (no_iteration && !failed()) exec_body(s.else_body, out);
    frames_.pop_back();
}

void Interpreter::exec_set(const SetStmt& s, SourcePos pos) {
    Value value;
    if (s.value) {
        value = eval(*s.value);
    } else {
        std::string captured;
        exec_body(s.body, captured);
        value = Value::string(std::move(captured));
    }
    if (failed()) return;
    if (s.attribute_object) {
        const Value object = eval(*s.attribute_object);
        if (failed()) return;
        if (object.kind() != ValueKind::kNamespace) {
            fail(pos, std::string("cannot set attribute '") + s.attribute + "' on a " + object.type_name() + " (only on namespace())");
            return;
        }
        object.mutable_dict().set(s.attribute, std::move(value));
        return;
    }
    bind_targets(s.targets, s.unpack, value, pos);
}

Value Interpreter::call(const Value& callee, const CallArgs& args, SourcePos pos) {
    if (failed()) return Value();
    if (callee.kind() != ValueKind::kFunction) return fail(pos, std::string("cannot call a ") + callee.type_name());
    const Function& fn = callee.as_function();
    if (fn.macro) return call_macro(*fn.macro, args, pos);
    return check(fn.native(args), pos);
}

Value Interpreter::call_macro(const MacroStmt& macro, const CallArgs& args, SourcePos pos) {
    if (call_depth_ >= kMaxCallDepth) return fail(pos, "macro calls nested too deeply");
    if (args.positional.size() > macro.params.size())
        return fail(pos, "macro '" + macro.name + "' takes at most " + std::to_string(macro.params.size()) + " arguments");
    Dict scope;
    std::vector<const Arg*> pending_defaults;
    for (size_t i = 0; i < macro.params.size(); ++i) {
        const Arg& param = macro.params[i];
        const Value* v = i < args.positional.size() ? &args.positional[i] : args.keyword_arg(param.keyword);
        if (!v && param.value) pending_defaults.push_back(&param);
        scope.set(param.keyword, v ? *v : Value());
    }
    for (const auto& [name, _] : args.keyword) {
        bool known = false;
        for (const Arg& param : macro.params) known = known || param.keyword == name;
        if (!known) return fail(pos, "macro '" + macro.name + "' has no parameter '" + name + "'");
    }
    frames_.push_back(std::move(scope));
    ++call_depth_;
    for (const Arg* param : pending_defaults) assign(param->keyword, eval(*param->value));
    std::string out;
    exec_body(macro.body, out);
    --call_depth_;
    frames_.pop_back();
    return failed() ? Value() : Value::string(std::move(out));
}

}  // namespace hichat::tokenizer::jinja
