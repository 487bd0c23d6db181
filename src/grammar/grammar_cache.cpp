#include "grammar/grammar_cache.h"

#include <nlohmann/json.hpp>

namespace hichat::grammar {

Result<std::string> GrammarCache::canonical_key(GrammarKind kind, std::string_view text,
                                                const JsonSchemaOptions& options) {
    std::string key = std::to_string(static_cast<int>(kind)) + "|" + std::to_string(options.max_whitespace) + "|" +
                      (options.strict_additional_properties ? "s" : "l") +
                      (options.integers_with_zero_fraction ? "z" : "") + "|";
    if (const auto& f = options.frame) {
        key += nlohmann::json::array({f->begin, f->separator, f->end, f->min_values, f->max_values}).dump() + "|";
    }
    if (kind == GrammarKind::kJsonSchema) {
        if (text.size() > options.limits.max_source_bytes) return key + std::string(text);  // compile refuses it
        try {
            key += nlohmann::ordered_json::parse(text).dump();  // same schema, any spacing: one entry
        } catch (const std::exception&) {
            key += text;  // compile reports the parse error
        }
    } else if (kind != GrammarKind::kJsonObject) {
        key += text;
    }
    return key;
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCache::get(GrammarKind kind, std::string_view text,
                                                                 const JsonSchemaOptions& options) {
    auto key = canonical_key(kind, text, options);
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = index_.find(key.value());
        if (it != index_.end()) {
            lru_.splice(lru_.begin(), lru_, it->second);
            ++hits_;
            return it->second->grammar;
        }
        ++misses_;
    }
    Result<std::shared_ptr<const CompiledGrammar>> compiled = [&]() -> Result<std::shared_ptr<const CompiledGrammar>> {
        switch (kind) {
            case GrammarKind::kJsonSchema: return compile_json_schema(text, options);
            case GrammarKind::kJsonObject: return compile_json_object(options);
            case GrammarKind::kRegex: return compile_regex(text, options.limits);
            case GrammarKind::kGbnf: return compile_gbnf(text, options.limits);
        }
        return invalid_argument("unknown grammar kind");
    }();
    if (!compiled.ok()) return compiled.status();
    std::lock_guard<std::mutex> lock(mu_);
    insert_locked(key.value(), compiled.value());
    return compiled;
}

void GrammarCache::insert_locked(const std::string& key, std::shared_ptr<const CompiledGrammar> grammar) {
    if (index_.count(key)) return;
    bytes_ += grammar->memory_bytes();
    lru_.push_front({key, std::move(grammar)});
    index_.emplace(key, lru_.begin());
    while (lru_.size() > 1 && (lru_.size() > config_.max_entries || bytes_ > config_.max_bytes)) {
        bytes_ -= lru_.back().grammar->memory_bytes();
        index_.erase(lru_.back().key);
        lru_.pop_back();
    }
}

size_t GrammarCache::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lru_.size();
}
size_t GrammarCache::num_hits() const {
    std::lock_guard<std::mutex> lock(mu_);
    return hits_;
}
size_t GrammarCache::num_misses() const {
    std::lock_guard<std::mutex> lock(mu_);
    return misses_;
}

}  // namespace hichat::grammar
