// Expression half of Interpreter: operators with the reference's type rules.
#include <cmath>
#include <string>

#include "tokenizer/template/builtins.h"
#include "tokenizer/template/filters.h"
#include "tokenizer/template/interpreter.h"
#include "tokenizer/template/unicode_text.h"
#include "tokenizer/template/value_format.h"

namespace hichat::tokenizer::jinja {
namespace {

const char* op_name(BinaryOp op) {
    static const char* kNames[] = {"and", "or", "==", "!=", "<", ">", "<=", ">=", "in", "not in",
                                   "+", "-", "~", "*", "/", "//", "%", "**"};
    return kNames[static_cast<int>(op)];
}

// utils.slice of the reference (Python slicing, except that an explicit stop of -1 with a negative step
// means "before index 0").
template <typename T>
std::vector<T> slice(const std::vector<T>& a, const Value& start_v, const Value& stop_v, const Value& step_v) {
    const int64_t n = static_cast<int64_t>(a.size());
    const int64_t step = step_v.is_undefined() ? 1 : step_v.as_int();
    const int64_t direction = step > 0 ? 1 : step < 0 ? -1 : 0;
    int64_t start, stop;
    if (direction >= 0) {
        start = start_v.is_undefined() ? 0 : start_v.as_int();
        start = start < 0 ? std::max<int64_t>(n + start, 0) : std::min(start, n);
        stop = stop_v.is_undefined() ? n : stop_v.as_int();
        stop = stop < 0 ? std::max<int64_t>(n + stop, 0) : std::min(stop, n);
    } else {
        start = start_v.is_undefined() ? n - 1 : start_v.as_int();
        start = start < 0 ? std::max<int64_t>(n + start, -1) : std::min(start, n - 1);
        stop = stop_v.is_undefined() ? -1 : stop_v.as_int();
        stop = stop < -1 ? std::max<int64_t>(n + stop, -1) : std::min(stop, n - 1);
    }
    std::vector<T> out;
    for (int64_t i = start; direction * i < direction * stop; i += step) out.push_back(a[i]);
    return out;
}

}  // namespace

Value Interpreter::eval(const Expr& e) {
    if (failed()) return Value();
    return std::visit([&](const auto& node) { return eval_node(node, e.pos); }, e.node);
}

Value Interpreter::eval_node(const LiteralExpr& e, SourcePos) { return e.value; }
Value Interpreter::eval_node(const NameExpr& e, SourcePos) { return lookup(e.name); }

Value Interpreter::eval_node(const MemberExpr& e, SourcePos pos) {
    const Value object = eval(*e.object);
    const Value key = eval(*e.key);
    if (failed()) return Value();
    return check(get_member(object, key), pos);
}

Value Interpreter::eval_node(const SliceExpr& e, SourcePos pos) {
    const Value object = eval(*e.object);
    const Value start = e.start ? eval(*e.start) : Value();
    const Value stop = e.stop ? eval(*e.stop) : Value();
    const Value step = e.step ? eval(*e.step) : Value();
    if (failed()) return Value();
    for (const Value* part : {&start, &stop, &step})
        if (!part->is_undefined() && !part->is_int()) return fail(pos, std::string("slice indices must be ints, got ") + part->type_name());
    if (object.is_list()) return Value::list(slice(object.as_list().items, start, stop, step));
    if (!object.is_string()) return fail(pos, std::string("cannot slice a ") + object.type_name());
    std::string out;
    for (std::string_view cp : slice(split_code_points(object.as_string()), start, stop, step)) out += cp;
    return Value::string(std::move(out));
}

CallArgs Interpreter::eval_args(const std::vector<Arg>& args) {
    CallArgs out;
    for (const Arg& a : args)
        if (a.keyword.empty()) out.positional.push_back(eval(*a.value));
    for (const Arg& a : args)
        if (!a.keyword.empty()) out.keyword.emplace_back(a.keyword, eval(*a.value));
    return out;
}

Value Interpreter::eval_node(const CallExpr& e, SourcePos pos) {
    const CallArgs args = eval_args(e.args);  // the reference evaluates arguments before the callee
    const Value callee = eval(*e.callee);
    return call(callee, args, pos);
}

Value Interpreter::eval_node(const UnaryExpr& e, SourcePos pos) {
    const Value v = eval(*e.operand);
    if (failed()) return Value();
    if (e.op == UnaryOp::kNot) return Value::boolean(!v.truthy());
    const int64_t sign = e.op == UnaryOp::kMinus ? -1 : 1;
    if (v.kind() == ValueKind::kFloat) return Value::floating(sign * v.as_double());
    if (v.is_int()) return Value::integer(sign * v.as_int());
    if (v.kind() == ValueKind::kBool) return Value::integer(sign * (v.as_bool() ? 1 : 0));
    return fail(pos, std::string("unary ") + (sign < 0 ? "-" : "+") + " cannot be applied to a " + v.type_name());
}

Value Interpreter::eval_node(const FilterExpr& e, SourcePos pos) {
    const Value operand = eval(*e.operand);
    const CallArgs args = e.called ? eval_args(e.args) : CallArgs{};
    if (failed()) return Value();
    return check(apply_filter(e.name, operand, e.called ? &args : nullptr), pos);
}

Value Interpreter::eval_node(const TestExpr& e, SourcePos pos) {
    const Value operand = eval(*e.operand);
    if (failed()) return Value();
    Result<bool> r = apply_test(e.name, operand, nullptr);
    if (!r.ok()) return fail(pos, r.status().message());
    return Value::boolean(*r != e.negated);
}

Value Interpreter::eval_node(const TernaryExpr& e, SourcePos) {
    return eval(*e.condition).truthy() ? eval(*e.if_true) : eval(*e.if_false);
}

Value Interpreter::eval_node(const SelectExpr& e, SourcePos) {
    return eval(*e.condition).truthy() ? eval(*e.value) : Value();
}

Value Interpreter::eval_node(const ListExpr& e, SourcePos) {
    std::vector<Value> items;
    for (const ExprPtr& item : e.items) items.push_back(eval(*item));
    return e.tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

Value Interpreter::eval_node(const DictExpr& e, SourcePos) {
    Dict d;
    for (const auto& [key_expr, value_expr] : e.entries) {
        const Value key = eval(*key_expr);
        if (failed()) return Value();
        if (!key.is_string()) return fail(key_expr->pos, std::string("dict keys must be strings, got ") + key.type_name());
        d.set(key.as_string(), eval(*value_expr));
    }
    return Value::dict(std::move(d));
}

Value Interpreter::eval_node(const BinaryExpr& e, SourcePos pos) {
    const Value a = eval(*e.lhs);
    if (failed()) return Value();
    if (e.op == BinaryOp::kAnd) return a.truthy() ? eval(*e.rhs) : a;
    if (e.op == BinaryOp::kOr) return a.truthy() ? a : eval(*e.rhs);
    const Value b = eval(*e.rhs);
    if (failed()) return Value();
    const BinaryOp op = e.op;
    if (op == BinaryOp::kEq) return Value::boolean(loose_equals(a, b));
    if (op == BinaryOp::kNe) return Value::boolean(!loose_equals(a, b));
    const bool membership = op == BinaryOp::kIn || op == BinaryOp::kNotIn;
    if (a.is_undefined() || b.is_undefined()) {
        if (b.is_undefined() && membership) return Value::boolean(op == BinaryOp::kNotIn);
        return fail(pos, std::string("cannot apply '") + op_name(op) + "' to an undefined value");
    }
    if (a.is_none() || b.is_none()) return fail(pos, std::string("cannot apply '") + op_name(op) + "' to none");
    if (op == BinaryOp::kConcat) {
        Result<std::string> x = to_js_string(a), y = to_js_string(b);
        if (!x.ok() || !y.ok()) return fail(pos, (!x.ok() ? x : y).status().message());
        return Value::string(*x + *y);
    }
    const auto numeric_like = [](const Value& v) { return v.is_number() || v.kind() == ValueKind::kBool; };
    if ((op == BinaryOp::kPow && numeric_like(a) && numeric_like(b)) || (a.is_number() && b.is_number()))
        return eval_arithmetic(op, a, b, pos);
    if (a.is_list() && b.is_list()) {
        if (op != BinaryOp::kAdd) return fail(pos, std::string("unsupported operator '") + op_name(op) + "' between lists");
        std::vector<Value> items = a.as_list().items;
        items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
        return Value::list(std::move(items));
    }
    if (b.is_list() && membership) {
        bool found = false;
        for (const Value& item : b.as_list().items) found = found || strict_equals(item, a);
        return Value::boolean(found == (op == BinaryOp::kIn));
    }
    if ((a.is_string() || b.is_string()) && op == BinaryOp::kAdd) {
        Result<std::string> x = to_js_string(a), y = to_js_string(b);
        if (!x.ok() || !y.ok()) return fail(pos, (!x.ok() ? x : y).status().message());
        return Value::string(*x + *y);
    }
    if (a.is_string() && b.is_string() && membership)
        return Value::boolean((b.as_string().find(a.as_string()) != std::string::npos) == (op == BinaryOp::kIn));
    if (a.is_string() && b.is_dict() && membership)
        return Value::boolean((b.as_dict().find(a.as_string()) != nullptr) == (op == BinaryOp::kIn));
    return fail(pos, std::string("unsupported operator '") + op_name(op) + "' between " + a.type_name() + " and " + b.type_name());
}

Value Interpreter::eval_arithmetic(BinaryOp op, const Value& a, const Value& b, SourcePos pos) {
    const bool ints = a.is_int() && b.is_int();
    const double x = a.as_double(), y = b.as_double();
    const auto number = [&](double d, bool integer) {
        if (!integer) return Value::floating(d);
        if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fail(pos, std::string("integer result of '") + op_name(op) + "' out of range");
        return Value::integer(static_cast<int64_t>(d));
    };
    int64_t r = 0;
    switch (op) {
        case BinaryOp::kAdd:
            if (ints) return __builtin_add_overflow(a.as_int(), b.as_int(), &r) ? fail(pos, "integer overflow") : Value::integer(r);
            return Value::floating(x + y);
        case BinaryOp::kSub:
            if (ints) return __builtin_sub_overflow(a.as_int(), b.as_int(), &r) ? fail(pos, "integer overflow") : Value::integer(r);
            return Value::floating(x - y);
        case BinaryOp::kMul:
            if (ints) return __builtin_mul_overflow(a.as_int(), b.as_int(), &r) ? fail(pos, "integer overflow") : Value::integer(r);
            return Value::floating(x * y);
        case BinaryOp::kDiv: return Value::floating(x / y);
        case BinaryOp::kFloorDiv:
            if (ints && b.as_int() == 0) return fail(pos, "integer division by zero");
            if (ints) return Value::integer(a.as_int() / b.as_int() - ((a.as_int() % b.as_int() != 0) && ((a.as_int() < 0) != (b.as_int() < 0))));
            return Value::floating(std::floor(x / y));
        case BinaryOp::kMod:  // JS remainder: the sign follows the dividend
            if (ints && b.as_int() == 0) return fail(pos, "integer modulo by zero");
            if (ints) return Value::integer(b.as_int() == -1 ? 0 : a.as_int() % b.as_int());
            return Value::floating(std::fmod(x, y));
        case BinaryOp::kPow: {
            if (x == 0 && y < 0) return fail(pos, "0 cannot be raised to a negative power");
            const double p = std::pow(x, y);
            if (!std::isfinite(p)) return fail(pos, "power result is not a finite real number");
            return number(p, a.kind() != ValueKind::kFloat && b.kind() != ValueKind::kFloat && y >= 0);
        }
        case BinaryOp::kLt: return Value::boolean(ints ? a.as_int() < b.as_int() : x < y);
        case BinaryOp::kGt: return Value::boolean(ints ? a.as_int() > b.as_int() : x > y);
        case BinaryOp::kLe: return Value::boolean(ints ? a.as_int() <= b.as_int() : x <= y);
        case BinaryOp::kGe: return Value::boolean(ints ? a.as_int() >= b.as_int() : x >= y);
        default: break;
    }
    return fail(pos, std::string("unsupported operator '") + op_name(op) + "' between numbers");
}

}  // namespace hichat::tokenizer::jinja
