#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace hichat::tokenizer {

Result<std::unique_ptr<Regex>> Regex::compile(std::string_view pattern) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
    if (code == nullptr) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error_code, message, sizeof(message));
        return invalid_argument("bad regex '" + std::string(pattern) + "' at offset " + std::to_string(error_offset) +
                                ": " + reinterpret_cast<const char*>(message));
    }
    const bool jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    return std::unique_ptr<Regex>(new Regex(std::string(pattern), code, jit));
}

Result<std::unique_ptr<Regex>> Regex::literal(std::string_view text) {
    std::string quoted = "\\Q";
    for (size_t pos = 0; pos < text.size(); ++pos) {
        // "\E" inside \Q...\E would end the quote early; split it.
        if (text.compare(pos, 2, "\\E") == 0) {
            quoted += "\\E\\\\\\QE";
            ++pos;
            continue;
        }
        quoted.push_back(text[pos]);
    }
    quoted += "\\E";
    return compile(quoted);
}

Regex::~Regex() { pcre2_code_free(code_); }

Regex::Matcher::Matcher(const Regex& regex)
    : regex_(regex), match_data_(pcre2_match_data_create_from_pattern(regex.code_, nullptr)) {}

Regex::Matcher::~Matcher() { pcre2_match_data_free(match_data_); }

bool Regex::Matcher::find(std::string_view subject, size_t start, size_t& begin, size_t& end) {
    const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
    // The caller guarantees valid UTF-8 (Tokenizer::encode replaces invalid bytes first).
    int rc = PCRE2_ERROR_JIT_STACKLIMIT;
    if (regex_.jit_) {
        rc = pcre2_jit_match(regex_.code_, data, subject.size(), start, PCRE2_NO_UTF_CHECK, match_data_, nullptr);
    }
    // Without JIT, or when a very long run exhausts the JIT stack, the interpreter (heap frames) takes over.
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(regex_.code_, data, subject.size(), start, PCRE2_NO_UTF_CHECK, match_data_, nullptr);
    }
    if (rc < 0) return false;
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_data_);
    begin = ovector[0];
    end = ovector[1];
    return true;
}

}  // namespace hichat::tokenizer
