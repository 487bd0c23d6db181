// The pre-tokenizer step of tokenizer.json: splits a normalized section into words for BPE.
// Immutable after construction; any thread may call pre_tokenize().
//
// ByteLevel's byte-to-character mapping is not applied here: the BPE model works on raw bytes
// and its vocab was mapped back to bytes at load time, so ByteLevel only splits (use_regex) and
// adds the prefix space. It must therefore be the last step.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "tokenizer/regex.h"

namespace hichat::tokenizer {

class PreTokenizer {
public:
    // Parses tokenizer.json's "pre_tokenizer" (null, a step, or a Sequence). Supported: Split,
    // ByteLevel, Metaspace, Sequence. Errors: kUnimplemented for other types or a ByteLevel that
    // is not last, kInvalidArgument for malformed steps.
    static Result<PreTokenizer> from_json(const nlohmann::json& config);

    bool byte_level() const { return byte_level_; }
    // Calls emit for each word of section (valid UTF-8); section_index counts the sections of one
    // input between added tokens (Metaspace's prepend_scheme "first" uses it).
    void pre_tokenize(std::string_view section, size_t section_index,
                      const std::function<void(std::string_view)>& emit) const;

private:
    enum class Kind { kSplit, kByteLevel, kMetaspace };
    enum class Behavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };
    enum class PrependScheme { kAlways, kFirst, kNever };
    struct Step {
        Kind kind = Kind::kSplit;
        std::shared_ptr<Regex> regex;  // Split pattern, or ByteLevel's GPT-2 regex (null: no split)
        Behavior behavior = Behavior::kIsolated;
        bool invert = false;
        bool add_prefix_space = false;  // ByteLevel
        std::string replacement;        // Metaspace
        PrependScheme prepend_scheme = PrependScheme::kAlways;
        bool split = true;              // Metaspace: split before each replacement character
    };
    struct Context;

    static Status add_steps(const nlohmann::json& config, std::vector<Step>& steps);
    static Result<Step> parse_split(const nlohmann::json& config);
    static Result<Step> parse_byte_level(const nlohmann::json& config);
    static Result<Step> parse_metaspace(const nlohmann::json& config);
    void run(size_t step_index, std::string_view piece, Context& ctx) const;
    void run_split(size_t step_index, std::string_view piece, Regex::Matcher& matcher, const Step& step,
                   Context& ctx) const;

    std::vector<Step> steps_;
    bool byte_level_ = false;
};

}  // namespace hichat::tokenizer
