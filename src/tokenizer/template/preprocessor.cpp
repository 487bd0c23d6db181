#include "tokenizer/template/preprocessor.h"

#include "tokenizer/template/unicode_text.h"

namespace hichat::tokenizer::jinja {
namespace {

void keep(const PreprocessedSource& in, size_t i, PreprocessedSource& out) {
    out.text += in.text[i];
    out.offsets.push_back(in.offsets[i]);
}

// JS multiline `^`: start of input or after \n, \r, U+2028, U+2029.
bool is_line_start(std::string_view t, size_t i) {
    if (i == 0 || t[i - 1] == '\n' || t[i - 1] == '\r') return true;
    return i >= 3 && t.substr(i - 3, 2) == "\xE2\x80" && (t[i - 1] == '\xA8' || t[i - 1] == '\xA9');
}

// /^[ \t]*({[#%-])/gm -> "$1"
PreprocessedSource lstrip_blocks(const PreprocessedSource& in) {
    PreprocessedSource out;
    const std::string& t = in.text;
    for (size_t i = 0; i < t.size();) {
        if (is_line_start(t, i)) {
            size_t j = i;
            while (j < t.size() && (t[j] == ' ' || t[j] == '\t')) ++j;
            if (j + 1 < t.size() && t[j] == '{' && (t[j + 1] == '#' || t[j + 1] == '%' || t[j + 1] == '-')) {
                for (size_t k = j; k < j + 2; ++k) keep(in, k, out);
                i = j + 2;
                continue;
            }
        }
        keep(in, i++, out);
    }
    return out;
}

// /([#%-]})\n/g -> "$1"
PreprocessedSource trim_blocks(const PreprocessedSource& in) {
    PreprocessedSource out;
    const std::string& t = in.text;
    for (size_t i = 0; i < t.size(); ++i) {
        keep(in, i, out);
        if (i + 2 < t.size() && (t[i] == '#' || t[i] == '%' || t[i] == '-') && t[i + 1] == '}' && t[i + 2] == '\n') {
            keep(in, i + 1, out);
            i += 2;  // skip the newline
        }
    }
    return out;
}

size_t skip_spaces(std::string_view t, size_t i) {
    while (size_t n = js_space_length(t, i)) i += n;
    return i;
}

// Matches {%(-?)\s*(?:end)?generation\s*(-?)%} at i; returns its end or 0.
size_t match_generation_tag(std::string_view t, size_t i, bool* strip_before, bool* strip_after) {
    if (t.substr(i, 2) != "{%") return 0;
    size_t j = i + 2;
    *strip_before = j < t.size() && t[j] == '-';
    if (*strip_before) ++j;
    j = skip_spaces(t, j);
    if (t.substr(j, 3) == "end") j += 3;
    if (t.substr(j, 10) != "generation") return 0;
    j = skip_spaces(t, j + 10);
    *strip_after = j < t.size() && t[j] == '-';
    if (*strip_after) ++j;
    return t.substr(j, 2) == "%}" ? j + 2 : 0;
}

// Start of the run of whitespace code points that ends `t`, not looking before `from`.
size_t trailing_space_start(std::string_view t, size_t from) {
    size_t run_start = from;
    for (size_t i = from; i < t.size();) {
        if (size_t n = js_space_length(t, i)) {
            i += n;
        } else {
            decode_utf8(t, &i);
            run_start = i;
        }
    }
    return run_start;
}

// /(\s*){%(-?)\s*(?:end)?generation\s*(-?)%}(\s*)/gs -> (lstrip ? "" : before) + (rstrip ? "" : after)
PreprocessedSource remove_generation_tags(const PreprocessedSource& in) {
    PreprocessedSource out;
    const std::string& t = in.text;
    size_t protected_size = 0;  // output before this belongs to an earlier match
    for (size_t i = 0; i < t.size();) {
        bool strip_before = false, strip_after = false;
        const size_t end = match_generation_tag(t, i, &strip_before, &strip_after);
        if (end == 0) {
            keep(in, i++, out);
            continue;
        }
        if (strip_before) {
            const size_t cut = trailing_space_start(out.text, protected_size);
            out.text.resize(cut);
            out.offsets.resize(cut);
        }
        const size_t after_end = skip_spaces(t, end);
        if (!strip_after)
            for (size_t k = end; k < after_end; ++k) keep(in, k, out);
        protected_size = out.text.size();
        i = after_end;
    }
    return out;
}

}  // namespace

PreprocessedSource preprocess(std::string_view source) {
    PreprocessedSource src;
    src.text.assign(source);
    for (size_t i = 0; i < source.size(); ++i) src.offsets.push_back(static_cast<uint32_t>(i));
    if (!src.text.empty() && src.text.back() == '\n') {
        src.text.pop_back();
        src.offsets.pop_back();
    }
    return remove_generation_tags(trim_blocks(lstrip_blocks(src)));
}

}  // namespace hichat::tokenizer::jinja
