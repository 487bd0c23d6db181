#include "tokenizer/template/lexer.h"

#include <algorithm>
#include <utility>

#include "tokenizer/template/preprocessor.h"
#include "tokenizer/template/unicode_text.h"

namespace hichat::tokenizer::jinja {

std::string describe(SourcePos pos) {
    return "line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column);
}

namespace {

// Ordered as the reference tries them: longer sequences before their prefixes.
constexpr std::pair<std::string_view, TokenKind> kFixedTokens[] = {
    {"{%", TokenKind::kOpenStatement}, {"%}", TokenKind::kCloseStatement},
    {"{{", TokenKind::kOpenExpression}, {"}}", TokenKind::kCloseExpression},
    {"(", TokenKind::kOpenParen}, {")", TokenKind::kCloseParen},
    {"{", TokenKind::kOpenBrace}, {"}", TokenKind::kCloseBrace},
    {"[", TokenKind::kOpenBracket}, {"]", TokenKind::kCloseBracket},
    {",", TokenKind::kComma}, {".", TokenKind::kDot}, {":", TokenKind::kColon}, {"|", TokenKind::kPipe},
    {"<=", TokenKind::kComparison}, {">=", TokenKind::kComparison}, {"==", TokenKind::kComparison},
    {"!=", TokenKind::kComparison}, {"<", TokenKind::kComparison}, {">", TokenKind::kComparison},
    {"+", TokenKind::kAdditive}, {"-", TokenKind::kAdditive}, {"~", TokenKind::kAdditive},
    {"**", TokenKind::kPower}, {"*", TokenKind::kMultiplicative}, {"//", TokenKind::kMultiplicative},
    {"/", TokenKind::kMultiplicative}, {"%", TokenKind::kMultiplicative}, {"=", TokenKind::kEquals},
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
public:
    explicit Lexer(std::string_view source) : src_(preprocess(source)), text_(src_.text) {
        line_starts_.push_back(0);
        for (size_t i = 0; i < source.size(); ++i)
            if (source[i] == '\n') line_starts_.push_back(i + 1);
        end_offset_ = static_cast<uint32_t>(source.size());
    }

    Result<std::vector<Token>> run() {
        while (cur_ < text_.size() && error_.ok()) step();
        if (!error_.ok()) return error_;
        return std::move(tokens_);
    }

private:
    SourcePos pos_at(size_t i) const {
        const uint32_t offset = i < src_.offsets.size() ? src_.offsets[i] : end_offset_;
        const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - 1;
        return {static_cast<int>(it - line_starts_.begin()) + 1, static_cast<int>(offset - *it) + 1};
    }
    void fail(size_t at, const std::string& problem) {
        if (error_.ok()) error_ = invalid_argument("chat template " + describe(pos_at(at)) + ": " + problem);
    }
    char peek(size_t ahead = 0) const { return cur_ + ahead < text_.size() ? text_[cur_ + ahead] : '\0'; }
    bool starts_with(std::string_view s) const { return text_.compare(cur_, s.size(), s) == 0; }
    const Token* last() const { return tokens_.empty() ? nullptr : &tokens_.back(); }
    void push(TokenKind kind, std::string value, size_t at) { tokens_.push_back({kind, std::move(value), pos_at(at)}); }
    bool at_tag_open() const { return peek() == '{' && (peek(1) == '%' || peek(1) == '{' || peek(1) == '#'); }

    // The reference's consumeWhile() fails when a run inside a tag reaches the end of the template.
    template <typename Pred>
    std::string consume_while(Pred pred) {
        const size_t begin = cur_;
        while (cur_ < text_.size() && pred(cur_)) {
            cur_ += std::max<size_t>(1, pred(cur_));
            if (cur_ >= text_.size()) fail(begin, "unexpected end of template");
        }
        return text_.substr(begin, cur_ - begin);
    }
    void skip_spaces() { while (size_t n = js_space_length(text_, cur_)) cur_ += n; }

    void strip_trailing_space_of_text() {
        if (tokens_.empty() || tokens_.back().kind != TokenKind::kText) return;
        std::string& t = tokens_.back().value;
        t.resize(js_trim_end(t).size());
        if (t.empty()) tokens_.pop_back();
    }

    void step();
    bool lex_text();
    void lex_comment();
    bool lex_sign();
    void lex_string();
    void lex_number();

    PreprocessedSource src_;
    const std::string& text_;
    std::vector<uint32_t> line_starts_;
    uint32_t end_offset_ = 0;
    std::vector<Token> tokens_;
    size_t cur_ = 0;
    int curly_depth_ = 0;  // `{` nesting inside an expression, where `}}` is two closing braces
    Status error_;
};

void Lexer::step() {
    const Token* prev = last();
    if (!prev || prev->kind == TokenKind::kCloseStatement || prev->kind == TokenKind::kCloseExpression ||
        prev->kind == TokenKind::kComment) {
        if (lex_text()) return;
    }
    if (starts_with("{#")) return lex_comment();
    if (starts_with("{%-") || starts_with("{{-")) {
        strip_trailing_space_of_text();
        const bool statement = peek(1) == '%';
        push(statement ? TokenKind::kOpenStatement : TokenKind::kOpenExpression, statement ? "{%" : "{{", cur_);
        if (!statement) curly_depth_ = 0;
        cur_ += 3;
        return;
    }
    consume_while([&](size_t i) { return js_space_length(text_, i); });
    if (!error_.ok()) return;
    if (starts_with("-%}") || starts_with("-}}")) {
        const bool statement = peek(1) == '%';
        push(statement ? TokenKind::kCloseStatement : TokenKind::kCloseExpression, statement ? "%}" : "}}", cur_);
        cur_ += 3;
        skip_spaces();
        return;
    }
    if ((peek() == '-' || peek() == '+') && lex_sign()) return;
    for (const auto& [seq, kind] : kFixedTokens) {
        if (seq == "}}" && curly_depth_ > 0) continue;
        if (!starts_with(seq)) continue;
        push(kind, std::string(seq), cur_);
        if (kind == TokenKind::kOpenExpression) curly_depth_ = 0;
        if (kind == TokenKind::kOpenBrace) ++curly_depth_;
        if (kind == TokenKind::kCloseBrace) --curly_depth_;
        cur_ += seq.size();
        return;
    }
    const char c = peek();
    if (c == '\'' || c == '"') return lex_string();
    if (is_digit(c)) return lex_number();
    if (is_word_byte(c)) {
        const size_t begin = cur_;
        std::string word = consume_while([&](size_t i) { return is_word_byte(text_[i]) ? 1 : 0; });
        return push(TokenKind::kIdentifier, std::move(word), begin);
    }
    size_t next = cur_;
    decode_utf8(text_, &next);
    fail(cur_, "unexpected character '" + text_.substr(cur_, next - cur_) + "'");
}

bool Lexer::lex_text() {
    const size_t begin = cur_;
    while (cur_ < text_.size() && !at_tag_open()) ++cur_;
    if (cur_ == begin) return false;
    push(TokenKind::kText, text_.substr(begin, cur_ - begin), begin);
    return true;
}

void Lexer::lex_comment() {
    const size_t begin = cur_;
    cur_ += 2;
    const bool strip_before = peek() == '-';
    if (strip_before) ++cur_;
    const size_t body = cur_;
    while (peek() != '#' || peek(1) != '}') {
        if (cur_ + 2 >= text_.size()) return fail(begin, "missing end of comment tag '#}'");
        ++cur_;
    }
    std::string comment = text_.substr(body, cur_ - body);
    const bool strip_after = !comment.empty() && comment.back() == '-';
    if (strip_after) comment.pop_back();
    if (strip_before) strip_trailing_space_of_text();
    push(TokenKind::kComment, std::move(comment), begin);
    cur_ += 2;
    if (strip_after) skip_spaces();
}

// A sign is binary after an operand, else unary (folded into a number literal when digits follow).
bool Lexer::lex_sign() {
    const Token* prev = last();
    if (!prev || prev->kind == TokenKind::kText) {
        fail(cur_, std::string("unexpected character '") + peek() + "'");
        return true;
    }
    switch (prev->kind) {
        case TokenKind::kIdentifier: case TokenKind::kNumber: case TokenKind::kString:
        case TokenKind::kCloseParen: case TokenKind::kCloseBracket:
            return false;
        default: break;
    }
    const size_t begin = cur_;
    const char sign = text_[cur_++];
    std::string num = consume_while([&](size_t i) { return is_digit(text_[i]) ? 1 : 0; });
    if (!num.empty() && peek() == '.' && is_digit(peek(1))) {
        ++cur_;
        num += "." + consume_while([&](size_t i) { return is_digit(text_[i]) ? 1 : 0; });
    }
    push(num.empty() ? TokenKind::kUnary : TokenKind::kNumber, sign + num, begin);
    return true;
}

void Lexer::lex_string() {
    const size_t begin = cur_;
    const char quote = text_[cur_++];
    std::string value;
    while (true) {
        if (cur_ >= text_.size()) return fail(begin, "unterminated string literal");
        const char c = text_[cur_++];
        if (c == quote) break;
        if (c != '\\') {
            value += c;
            continue;
        }
        if (cur_ >= text_.size()) return fail(begin, "unterminated string literal");
        const char e = text_[cur_++];
        switch (e) {
            case 'n': value += '\n'; break;
            case 't': value += '\t'; break;
            case 'r': value += '\r'; break;
            case 'b': value += '\b'; break;
            case 'f': value += '\f'; break;
            case 'v': value += '\v'; break;
            case '\'': case '"': case '\\': value += e; break;
            case 'x': case 'u': {
                const size_t num_hex = e == 'x' ? 2 : 4;
                const std::string hex = text_.substr(cur_, num_hex);
                if (hex.size() != num_hex || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
                    return fail(cur_ - 2, "invalid escape sequence '\\" + std::string(1, e) + hex + "'");
                const uint32_t cp = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
                if (cp >= 0xD800 && cp <= 0xDFFF) return fail(cur_ - 2, "surrogate escape '\\u" + hex + "' is not supported");
                append_utf8(cp, value);
                cur_ += num_hex;
                break;
            }
            default: return fail(cur_ - 2, "unexpected escaped character '" + std::string(1, e) + "'");
        }
    }
    push(TokenKind::kString, std::move(value), begin);
}

void Lexer::lex_number() {
    const size_t begin = cur_;
    std::string num = consume_while([&](size_t i) { return is_digit(text_[i]) ? 1 : 0; });
    const Token* prev = last();
    if ((!prev || prev->kind != TokenKind::kDot) && peek() == '.' && is_digit(peek(1))) {
        ++cur_;
        num += "." + consume_while([&](size_t i) { return is_digit(text_[i]) ? 1 : 0; });
    }
    push(TokenKind::kNumber, std::move(num), begin);
}

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source) {
    if (source.size() >= UINT32_MAX) return invalid_argument("chat template is too large");
    return Lexer(source).run();
}

}  // namespace hichat::tokenizer::jinja
