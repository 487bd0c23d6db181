// A compiled PCRE2 pattern (UTF + UCP, JIT when available) for pre-tokenizer splits and Replace.
// Immutable after compile; any thread may call find() with its own Regex::Matcher.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

struct pcre2_real_code_8;
struct pcre2_real_match_data_8;

namespace hichat::tokenizer {

class Regex {
public:
    // Errors: kInvalidArgument with PCRE2's message and offset.
    static Result<std::unique_ptr<Regex>> compile(std::string_view pattern);
    // A pattern matching the literal text.
    static Result<std::unique_ptr<Regex>> literal(std::string_view text);
    ~Regex();
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

    // Per-call scratch space; one per thread.
    class Matcher {
    public:
        explicit Matcher(const Regex& regex);
        ~Matcher();
        Matcher(const Matcher&) = delete;
        Matcher& operator=(const Matcher&) = delete;
        // Finds the next match at or after start in subject (valid UTF-8). Returns false if none;
        // otherwise sets [begin, end). Empty matches are reported as begin == end.
        bool find(std::string_view subject, size_t start, size_t& begin, size_t& end);

    private:
        const Regex& regex_;
        pcre2_real_match_data_8* match_data_;
    };

    const std::string& pattern() const { return pattern_; }

private:
    Regex(std::string pattern, pcre2_real_code_8* code, bool jit) : pattern_(std::move(pattern)), code_(code), jit_(jit) {}

    std::string pattern_;
    pcre2_real_code_8* code_;
    bool jit_;
};

}  // namespace hichat::tokenizer
