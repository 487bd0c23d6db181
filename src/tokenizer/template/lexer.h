// Splits a chat template into tokens exactly as @huggingface/jinja's lexer does (after preprocess()):
// text runs, tag delimiters with `-` whitespace control applied to the neighbouring text, comments,
// and the expression tokens inside tags. Positions refer to the original source.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hichat::tokenizer::jinja {

enum class TokenKind {
    kText, kNumber, kString, kIdentifier, kEquals,
    kOpenParen, kCloseParen, kOpenStatement, kCloseStatement, kOpenExpression, kCloseExpression,
    kOpenBracket, kCloseBracket, kOpenBrace, kCloseBrace, kComma, kDot, kColon, kPipe,
    kAdditive,        // + - ~
    kMultiplicative,  // * / // %
    kPower,           // **
    kComparison,      // < > <= >= == !=
    kUnary,           // a sign not followed by digits, where a binary operator cannot be
    kComment,
};

struct SourcePos {
    int line = 0;    // 1-based
    int column = 0;  // 1-based, in bytes
};

std::string describe(SourcePos pos);  // "line 3, column 7"

struct Token {
    TokenKind kind;
    std::string value;  // text, literal contents (escapes decoded), identifier, operator
    SourcePos pos;
};

// Fails with "chat template line L, column C: <problem>" on a character or escape the reference rejects.
Result<std::vector<Token>> tokenize(std::string_view source);

}  // namespace hichat::tokenizer::jinja
