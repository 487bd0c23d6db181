#include "tokenizer/added_vocabulary.h"

#include <utf8proc.h>

#include "tokenizer/utf8.h"

namespace hichat::tokenizer {
namespace {

bool is_whitespace(char32_t cp) {
    if (cp == ' ' || (cp >= '\t' && cp <= '\r')) return true;
    const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
    return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

bool is_word_char(char32_t cp) {
    if (cp == '_') return true;
    const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
    return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
           (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

// Start of the code point that ends just before pos.
size_t previous_char_start(std::string_view text, size_t pos) {
    size_t start = pos - 1;
    while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
    return start;
}

}  // namespace

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
    trie_.emplace_back();
    for (size_t i = 0; i < tokens_.size(); ++i) {
        const std::string& content = tokens_[i].content;
        index_by_content_.emplace(content, i);
        if (content.empty()) continue;
        first_bytes_[static_cast<uint8_t>(content[0])] = true;
        int32_t node = 0;
        for (const char c : content) {
            int32_t next = child(node, static_cast<uint8_t>(c));
            if (next < 0) {
                next = static_cast<int32_t>(trie_.size());
                trie_[node].children.emplace_back(static_cast<uint8_t>(c), next);
                trie_.emplace_back();
            }
            node = next;
        }
        trie_[node].token_index = static_cast<int32_t>(i);
    }
}

const AddedToken* AddedVocabulary::find(std::string_view content) const {
    auto it = index_by_content_.find(content);
    return it == index_by_content_.end() ? nullptr : &tokens_[it->second];
}

int32_t AddedVocabulary::child(int32_t node, uint8_t byte) const {
    for (const auto& [b, index] : trie_[node].children) {
        if (b == byte) return index;
    }
    return -1;
}

int32_t AddedVocabulary::match_at(std::string_view text, size_t pos, bool parse_special, size_t& end) const {
    int32_t best = -1;
    int32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
        node = child(node, static_cast<uint8_t>(text[i]));
        if (node < 0) break;
        const int32_t index = trie_[node].token_index;
        if (index < 0) continue;
        const AddedToken& token = tokens_[index];
        if (token.special && !parse_special) continue;
        if (token.single_word) {
            size_t p = i + 1;
            const bool word_after = p < text.size() && is_word_char(next_code_point(text, p));
            size_t q = pos > 0 ? previous_char_start(text, pos) : 0;
            const bool word_before = pos > 0 && is_word_char(next_code_point(text, q));
            if (word_after || word_before) continue;
        }
        best = index;
        end = i + 1;
    }
    return best;
}

void AddedVocabulary::split(std::string_view text, bool parse_special, std::vector<Section>& sections) const {
    sections.clear();
    size_t plain_begin = 0;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = 0;
        const int32_t index = first_bytes_[static_cast<uint8_t>(text[pos])] ? match_at(text, pos, parse_special, end) : -1;
        if (index < 0) {
            ++pos;
            continue;
        }
        const AddedToken& token = tokens_[index];
        size_t plain_end = pos;
        while (token.lstrip && plain_end > plain_begin) {
            const size_t start = previous_char_start(text, plain_end);
            size_t p = start;
            if (!is_whitespace(next_code_point(text, p))) break;
            plain_end = start;
        }
        if (plain_end > plain_begin) sections.push_back({text.substr(plain_begin, plain_end - plain_begin), -1});
        sections.push_back({text.substr(pos, end - pos), token.id});
        pos = end;
        while (token.rstrip && pos < text.size()) {
            size_t p = pos;
            if (!is_whitespace(next_code_point(text, p))) break;
            pos = p;
        }
        plain_begin = pos;
    }
    if (plain_begin < text.size()) sections.push_back({text.substr(plain_begin), -1});
}

}  // namespace hichat::tokenizer
