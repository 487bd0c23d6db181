// GrammarCache: compiled grammars by (kind, canonical source text, options), least recently used
// dropped first beyond max_entries or max_bytes. Compilation runs on the calling thread outside
// the lock (two threads asking for the same new key may both compile; one result is kept).
// Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "grammar/grammar.h"

namespace hichat::grammar {

enum class GrammarKind { kJsonSchema, kJsonObject, kRegex, kGbnf };

struct GrammarCacheConfig {
    size_t max_entries = 512;              // compiled grammars kept
    size_t max_bytes = size_t{256} << 20;  // their CompiledGrammar::memory_bytes() together
};

class GrammarCache {
public:
    explicit GrammarCache(GrammarCacheConfig config = {}) : config_(config) {}

    // The compiled grammar for this source, compiled now if not cached. Errors are those of the
    // compile_* function of the kind (never cached). For kJsonObject, text is ignored.
    Result<std::shared_ptr<const CompiledGrammar>> get(GrammarKind kind, std::string_view text,
                                                       const JsonSchemaOptions& options = {});

    size_t size() const;
    size_t num_hits() const;
    size_t num_misses() const;

private:
    struct Entry {
        std::string key;
        std::shared_ptr<const CompiledGrammar> grammar;
    };
    static Result<std::string> canonical_key(GrammarKind kind, std::string_view text, const JsonSchemaOptions& options);
    void insert_locked(const std::string& key, std::shared_ptr<const CompiledGrammar> grammar);

    GrammarCacheConfig config_;
    mutable std::mutex mu_;
    std::list<Entry> lru_;  // front: most recently used
    std::unordered_map<std::string, std::list<Entry>::iterator> index_;
    size_t bytes_ = 0;
    size_t hits_ = 0, misses_ = 0;
};

}  // namespace hichat::grammar
