#include "api/policy/deny_list.h"

#include <algorithm>
#include <queue>

#include "api/policy/config_lines.h"

namespace hichat::api {
namespace {

uint8_t fold(uint8_t b) { return b >= 'A' && b <= 'Z' ? static_cast<uint8_t>(b - 'A' + 'a') : b; }

}  // namespace

Result<DenyList> DenyList::load(const std::string& path) {
    Result<std::vector<ConfigLine>> lines = read_config_lines(path);
    if (!lines.ok()) return lines.status();
    std::vector<std::string> phrases;
    phrases.reserve(lines->size());
    for (ConfigLine& line : *lines) phrases.push_back(std::move(line.text));
    return from_phrases(std::move(phrases));
}

DenyList DenyList::from_phrases(std::vector<std::string> phrases) {
    DenyList list;
    std::erase_if(phrases, [](const std::string& p) { return p.empty(); });
    list.phrases_ = std::move(phrases);
    list.build();
    return list;
}

void DenyList::build() {
    build_alphabet();
    build_trie();
    build_links();
}

// Only bytes that occur in some phrase get their own class; every other byte leads back to the root.
// Keeps the DFA table at num_nodes * (distinct bytes + 1) instead of num_nodes * 256.
void DenyList::build_alphabet() {
    byte_class_.fill(0);
    num_classes_ = 1;
    for (const std::string& phrase : phrases_) {
        for (char c : phrase) {
            uint8_t b = fold(static_cast<uint8_t>(c));
            if (byte_class_[b] == 0) byte_class_[b] = static_cast<uint8_t>(num_classes_++);
        }
    }
    for (int b = 'A'; b <= 'Z'; ++b) byte_class_[b] = byte_class_[fold(static_cast<uint8_t>(b))];
}

// Trie edges go into next_ (-1: none yet); best_phrase_ marks the node that ends each phrase.
void DenyList::build_trie() {
    next_.assign(static_cast<size_t>(num_classes_), -1);
    best_phrase_.assign(1, kNoPhrase);
    for (size_t i = 0; i < phrases_.size(); ++i) {
        int32_t node = 0;
        for (char c : phrases_[i]) {
            size_t slot = static_cast<size_t>(node) * num_classes_ + byte_class_[static_cast<uint8_t>(c)];
            if (next_[slot] < 0) {
                next_[slot] = static_cast<int32_t>(best_phrase_.size());
                best_phrase_.push_back(kNoPhrase);
                next_.resize(next_.size() + num_classes_, -1);
            }
            node = next_[slot];
        }
        if (best_phrase_[node] == kNoPhrase) best_phrase_[node] = static_cast<int32_t>(i);
    }
}

// Breadth-first: fills missing edges from the failure link's edges (turning the trie into a DFA) and
// merges each node's best phrase with its failure link's (the phrases that end as its suffixes).
// Class 0 (bytes in no phrase) is never an edge, so it stays -1 and is read as "to the root".
void DenyList::build_links() {
    std::vector<int32_t> fail(best_phrase_.size(), 0);
    std::queue<int32_t> pending;
    for (int k = 1; k < num_classes_; ++k) {
        int32_t& child = next_[k];
        if (child < 0) {
            child = 0;
        } else {
            pending.push(child);
        }
    }
    next_[0] = 0;
    while (!pending.empty()) {
        int32_t node = pending.front();
        pending.pop();
        int32_t link = fail[node];
        int32_t inherited = best_phrase_[link];
        if (inherited != kNoPhrase && (best_phrase_[node] == kNoPhrase || inherited < best_phrase_[node])) {
            best_phrase_[node] = inherited;
        }
        size_t row = static_cast<size_t>(node) * num_classes_;
        size_t link_row = static_cast<size_t>(link) * num_classes_;
        next_[row] = 0;
        for (int k = 1; k < num_classes_; ++k) {
            int32_t& child = next_[row + k];
            if (child < 0) {
                child = next_[link_row + k];
            } else {
                fail[child] = next_[link_row + k];
                pending.push(child);
            }
        }
    }
}

std::optional<std::string> DenyList::find(std::string_view text) const {
    if (phrases_.empty()) return std::nullopt;
    int32_t node = 0;
    for (char c : text) {
        node = next_[static_cast<size_t>(node) * num_classes_ + byte_class_[static_cast<uint8_t>(c)]];
        if (best_phrase_[node] != kNoPhrase) return phrases_[best_phrase_[node]];
    }
    return std::nullopt;
}

}  // namespace hichat::api
