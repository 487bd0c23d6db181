#include "tokenizer/pre_tokenizer.h"

#include <nlohmann/json.hpp>

#include "tokenizer/json_pattern.h"
#include "tokenizer/utf8.h"

namespace hichat::tokenizer {
namespace {

// GPT-2's split, used by ByteLevel when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

bool bool_field(const nlohmann::json& config, const char* name, bool fallback) {
    auto it = config.find(name);
    return it != config.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

struct Segment {
    size_t begin;
    size_t end;
    bool is_delimiter;
};

}  // namespace

struct PreTokenizer::Context {
    size_t section_index;
    const std::function<void(std::string_view)>& emit;
    std::vector<std::unique_ptr<Regex::Matcher>> matchers;  // [num_steps] created on first use
};

Result<PreTokenizer> PreTokenizer::from_json(const nlohmann::json& config) {
    PreTokenizer pre_tokenizer;
    if (config.is_null()) return pre_tokenizer;
    HICHAT_RETURN_IF_ERROR(add_steps(config, pre_tokenizer.steps_));
    for (size_t i = 0; i < pre_tokenizer.steps_.size(); ++i) {
        if (pre_tokenizer.steps_[i].kind != Kind::kByteLevel) continue;
        if (i + 1 != pre_tokenizer.steps_.size()) {
            return unimplemented("pre_tokenizer ByteLevel must be the last step of the sequence");
        }
        pre_tokenizer.byte_level_ = true;
    }
    return pre_tokenizer;
}

Status PreTokenizer::add_steps(const nlohmann::json& config, std::vector<Step>& steps) {
    if (!config.is_object() || !config.contains("type") || !config["type"].is_string()) {
        return invalid_argument("pre_tokenizer must be an object with a \"type\", got " + config.dump().substr(0, 200));
    }
    const std::string type = config["type"].get<std::string>();
    Result<Step> step = invalid_argument("");
    if (type == "Sequence") {
        if (!config.contains("pretokenizers") || !config["pretokenizers"].is_array()) {
            return invalid_argument("pre_tokenizer Sequence needs a \"pretokenizers\" array");
        }
        for (const auto& sub : config["pretokenizers"]) HICHAT_RETURN_IF_ERROR(add_steps(sub, steps));
        return ok_status();
    } else if (type == "Split") {
        step = parse_split(config);
    } else if (type == "ByteLevel") {
        step = parse_byte_level(config);
    } else if (type == "Metaspace") {
        step = parse_metaspace(config);
    } else {
        return unimplemented("pre_tokenizer type \"" + type + "\" is not supported");
    }
    if (!step.ok()) return step.status();
    steps.push_back(std::move(step).value());
    return ok_status();
}

Result<PreTokenizer::Step> PreTokenizer::parse_split(const nlohmann::json& config) {
    Step step;
    step.kind = Kind::kSplit;
    if (!config.contains("pattern")) return invalid_argument("pre_tokenizer Split needs a \"pattern\"");
    auto regex = parse_pattern(config["pattern"]);
    if (!regex.ok()) return invalid_argument("pre_tokenizer Split: " + regex.status().message());
    step.regex = std::move(regex).value();
    step.invert = bool_field(config, "invert", false);
    const std::string behavior = config.value("behavior", std::string("Isolated"));
    if (behavior == "Isolated") step.behavior = Behavior::kIsolated;
    else if (behavior == "Removed") step.behavior = Behavior::kRemoved;
    else if (behavior == "MergedWithPrevious") step.behavior = Behavior::kMergedWithPrevious;
    else if (behavior == "MergedWithNext") step.behavior = Behavior::kMergedWithNext;
    else if (behavior == "Contiguous") step.behavior = Behavior::kContiguous;
    else return invalid_argument("pre_tokenizer Split: unknown behavior \"" + behavior + "\"");
    return step;
}

Result<PreTokenizer::Step> PreTokenizer::parse_byte_level(const nlohmann::json& config) {
    Step step;
    step.kind = Kind::kByteLevel;
    step.add_prefix_space = bool_field(config, "add_prefix_space", true);
    if (bool_field(config, "use_regex", true)) {
        auto regex = Regex::compile(kGpt2Pattern);
        if (!regex.ok()) return regex.status();
        step.regex = std::move(regex).value();
    }
    return step;
}

Result<PreTokenizer::Step> PreTokenizer::parse_metaspace(const nlohmann::json& config) {
    Step step;
    step.kind = Kind::kMetaspace;
    auto it = config.find("replacement");
    if (it == config.end() || !it->is_string() || it->get<std::string>().empty()) {
        return invalid_argument("pre_tokenizer Metaspace needs a non-empty \"replacement\" string");
    }
    step.replacement = it->get<std::string>();
    step.split = bool_field(config, "split", true);
    const std::string scheme = config.value("prepend_scheme", std::string("always"));
    if (scheme == "always") step.prepend_scheme = PrependScheme::kAlways;
    else if (scheme == "first") step.prepend_scheme = PrependScheme::kFirst;
    else if (scheme == "never") step.prepend_scheme = PrependScheme::kNever;
    else return invalid_argument("pre_tokenizer Metaspace: unknown prepend_scheme \"" + scheme + "\"");
    if (!bool_field(config, "add_prefix_space", true)) step.prepend_scheme = PrependScheme::kNever;
    return step;
}

void PreTokenizer::pre_tokenize(std::string_view section, size_t section_index,
                                const std::function<void(std::string_view)>& emit) const {
    Context ctx{section_index, emit, {}};
    ctx.matchers.resize(steps_.size());
    run(0, section, ctx);
}

void PreTokenizer::run(size_t step_index, std::string_view piece, Context& ctx) const {
    if (piece.empty()) return;
    if (step_index == steps_.size()) {
        ctx.emit(piece);
        return;
    }
    const Step& step = steps_[step_index];
    std::string rewritten;  // owns a changed piece while the later steps look at it
    if (step.kind == Kind::kByteLevel && step.add_prefix_space && piece.front() != ' ') {
        rewritten = " " + std::string(piece);
        piece = rewritten;
    }
    if (step.kind == Kind::kMetaspace) {
        for (const char c : piece) {
            if (c == ' ') rewritten += step.replacement;
            else rewritten.push_back(c);
        }
        const bool prepend = step.prepend_scheme == PrependScheme::kAlways ||
                             (step.prepend_scheme == PrependScheme::kFirst && ctx.section_index == 0);
        if (prepend && rewritten.compare(0, step.replacement.size(), step.replacement) != 0) {
            rewritten.insert(0, step.replacement);
        }
        piece = rewritten;
        if (!step.split) return run(step_index + 1, piece, ctx);
    }
    if (step.kind == Kind::kMetaspace) {
        // Split before each replacement character (Rust's MergedWithNext on the replacement).
        size_t begin = 0;
        for (size_t pos = piece.find(step.replacement, 1); pos != std::string_view::npos;
             pos = piece.find(step.replacement, pos + step.replacement.size())) {
            run(step_index + 1, piece.substr(begin, pos - begin), ctx);
            begin = pos;
        }
        return run(step_index + 1, piece.substr(begin), ctx);
    }
    if (step.regex == nullptr) return run(step_index + 1, piece, ctx);
    if (ctx.matchers[step_index] == nullptr) ctx.matchers[step_index] = std::make_unique<Regex::Matcher>(*step.regex);
    run_split(step_index, piece, *ctx.matchers[step_index], step, ctx);
}

void PreTokenizer::run_split(size_t step_index, std::string_view piece, Regex::Matcher& matcher, const Step& step,
                             Context& ctx) const {
    std::vector<Segment> segments;
    size_t covered = 0;  // end of the last segment
    size_t pos = 0, begin = 0, end = 0;
    while (pos < piece.size() && matcher.find(piece, pos, begin, end)) {
        if (end == begin) {  // empty match: not a delimiter; look again one character later
            if (begin >= piece.size()) break;
            pos = begin + utf8_sequence_length(static_cast<uint8_t>(piece[begin]));
            continue;
        }
        if (begin > covered) segments.push_back({covered, begin, step.invert});
        segments.push_back({begin, end, !step.invert});
        covered = pos = end;
    }
    if (covered < piece.size()) segments.push_back({covered, piece.size(), step.invert});

    const size_t next = step_index + 1;
    size_t pending = 0;  // start of the piece being merged (MergedWith*, Contiguous)
    for (size_t i = 0; i < segments.size(); ++i) {
        const Segment& s = segments[i];
        switch (step.behavior) {
            case Behavior::kIsolated: run(next, piece.substr(s.begin, s.end - s.begin), ctx); break;
            case Behavior::kRemoved:
                if (!s.is_delimiter) run(next, piece.substr(s.begin, s.end - s.begin), ctx);
                break;
            case Behavior::kMergedWithPrevious:
                if (s.is_delimiter) {
                    run(next, piece.substr(pending, s.end - pending), ctx);
                    pending = s.end;
                }
                break;
            case Behavior::kMergedWithNext:
                if (s.is_delimiter && s.begin > pending) {
                    run(next, piece.substr(pending, s.begin - pending), ctx);
                    pending = s.begin;
                }
                break;
            case Behavior::kContiguous: {
                const bool last_of_run = i + 1 == segments.size() || segments[i + 1].is_delimiter != s.is_delimiter ||
                                         !s.is_delimiter;
                if (last_of_run) {
                    run(next, piece.substr(pending, s.end - pending), ctx);
                    pending = s.end;
                }
                break;
            }
        }
    }
    if ((step.behavior == Behavior::kMergedWithPrevious || step.behavior == Behavior::kMergedWithNext) &&
        pending < piece.size()) {
        run(next, piece.substr(pending), ctx);
    }
}

}  // namespace hichat::tokenizer
