#include "tokenizer/tokenizer_json.h"

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_config.h"
#include "tokenizer/tokenizer_parts.h"

namespace hichat::tokenizer {
namespace {

using nlohmann::json;

Status with_context(const std::string& context, const Status& status) {
    if (status.ok()) return status;
    return Status(status.code(), context + ": " + status.message());
}

// Raw bytes a vocab entry stands for: byte-level text mapped back, other text as is.
std::string raw_token(const std::string& text, bool byte_level) {
    std::string bytes;
    if (byte_level && byte_level_to_bytes(text, bytes)) return bytes;
    return text;
}

Result<std::vector<std::pair<std::string, std::string>>> parse_merges(const json& merges, bool byte_level) {
    std::vector<std::pair<std::string, std::string>> out;
    if (merges.is_null()) return out;
    if (!merges.is_array()) return invalid_argument("model.merges must be an array");
    out.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
        const json& m = merges[i];
        std::string left, right;
        if (m.is_string()) {  // "a b"
            const std::string s = m.get<std::string>();
            const size_t space = s.find(' ');
            if (space == std::string::npos) return invalid_argument("merge " + std::to_string(i) + " \"" + s + "\" has no space");
            left = s.substr(0, space);
            right = s.substr(space + 1);
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {  // ["a", "b"]
            left = m[0].get<std::string>();
            right = m[1].get<std::string>();
        } else {
            return invalid_argument("merge " + std::to_string(i) + " must be \"a b\" or [\"a\", \"b\"]");
        }
        out.emplace_back(raw_token(left, byte_level), raw_token(right, byte_level));
    }
    return out;
}

Status load_bpe_model(const json& model, TokenizerParts& parts) {
    if (!model.is_object()) return invalid_argument("\"model\" must be an object");
    const std::string type = model.value("type", std::string("BPE"));
    if (type != "BPE") return unimplemented("model type \"" + type + "\" is not supported (only BPE)");
    for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        auto it = model.find(affix);
        if (it != model.end() && it->is_string() && !it->get<std::string>().empty()) {
            return unimplemented(std::string("model.") + affix + " is not supported");
        }
    }
    auto vocab_it = model.find("vocab");
    if (vocab_it == model.end() || !vocab_it->is_object()) return invalid_argument("model.vocab must be an object");
    BpeConfig config;
    config.byte_level = parts.pre_tokenizer.byte_level();
    config.byte_fallback = model.value("byte_fallback", false);
    config.ignore_merges = model.value("ignore_merges", false);
    config.fuse_unk = model.value("fuse_unk", false);
    StringMap<int32_t> vocab;
    vocab.reserve(vocab_it->size());
    parts.token_to_id.reserve(vocab_it->size() + 1024);
    for (const auto& [token, id] : vocab_it->items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
            return invalid_argument("model.vocab[\"" + token + "\"] must be a non-negative id");
        }
        set_token(parts, id.get<int32_t>(), token);
        vocab.emplace(raw_token(token, config.byte_level), id.get<int32_t>());
    }
    if (auto unk = model.find("unk_token"); unk != model.end() && unk->is_string()) {
        auto it = parts.token_to_id.find(unk->get<std::string>());
        if (it == parts.token_to_id.end()) return invalid_argument("model.unk_token is not in the vocab");
        config.unk_id = it->second;
    }
    auto merges = parse_merges(model.contains("merges") ? model["merges"] : json(), config.byte_level);
    if (!merges.ok()) return merges.status();
    auto bpe = BpeModel::create(config, std::move(vocab), merges.value());
    if (!bpe.ok()) return bpe.status();
    parts.bpe = std::move(bpe).value();
    return ok_status();
}

Result<std::vector<AddedToken>> parse_added_tokens(const json& added_tokens) {
    std::vector<AddedToken> out;
    if (added_tokens.is_null()) return out;
    if (!added_tokens.is_array()) return invalid_argument("\"added_tokens\" must be an array");
    for (const json& t : added_tokens) {
        if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") ||
            !t["content"].is_string() || t["content"].get<std::string>().empty()) {
            return invalid_argument("each added token needs an integer \"id\" and a non-empty \"content\"");
        }
        AddedToken token;
        token.id = t["id"].get<int32_t>();
        token.content = t["content"].get<std::string>();
        token.special = t.value("special", false);
        token.lstrip = t.value("lstrip", false);
        token.rstrip = t.value("rstrip", false);
        token.single_word = t.value("single_word", false);
        token.normalized = t.value("normalized", false);
        out.push_back(std::move(token));
    }
    return out;
}

// Ids of one SpecialToken item of a TemplateProcessing, looked up in its "special_tokens".
Status template_special_ids(const json& processor, const std::string& name, std::vector<int32_t>& ids) {
    const json& specials = processor.contains("special_tokens") ? processor["special_tokens"] : json::object();
    if (specials.contains(name) && specials[name].contains("ids") && specials[name]["ids"].is_array()) {
        for (const json& id : specials[name]["ids"]) ids.push_back(id.get<int32_t>());
        return ok_status();
    }
    return invalid_argument("post_processor special token \"" + name + "\" has no ids");
}

Status load_post_processor(const json& processor, TokenizerParts& parts) {
    if (processor.is_null()) return ok_status();
    const std::string type = processor.value("type", std::string());
    if (type == "Sequence") {
        for (const json& sub : processor.value("processors", json::array())) HICHAT_RETURN_IF_ERROR(load_post_processor(sub, parts));
        return ok_status();
    }
    if (type == "ByteLevel") return ok_status();  // offsets only
    if (type == "TemplateProcessing") {
        parts.has_template = true;
        parts.prefix_ids.clear();
        parts.suffix_ids.clear();
        bool seen_sequence = false;
        for (const json& item : processor.value("single", json::array())) {
            if (item.contains("Sequence")) {
                seen_sequence = true;
            } else if (item.contains("SpecialToken")) {
                const std::string name = item["SpecialToken"].value("id", std::string());
                HICHAT_RETURN_IF_ERROR(template_special_ids(processor, name, seen_sequence ? parts.suffix_ids : parts.prefix_ids));
            }
        }
        return ok_status();
    }
    if (type == "RobertaProcessing" || type == "BertProcessing") {
        parts.has_template = true;
        parts.prefix_ids = {processor.at("cls").at(1).get<int32_t>()};
        parts.suffix_ids = {processor.at("sep").at(1).get<int32_t>()};
        return ok_status();
    }
    return unimplemented("post_processor type \"" + type + "\" is not supported");
}

Status load_parts(const json& j, const TokenizerConfig& config, TokenizerParts& parts) {
    if (!j.is_object()) return invalid_argument("top level must be an object");
    if (!j.contains("model")) return invalid_argument("no \"model\"");
    auto normalizer = Normalizer::from_json(j.value("normalizer", json()));
    if (!normalizer.ok()) return normalizer.status();
    parts.normalizer = std::move(normalizer).value();
    auto pre_tokenizer = PreTokenizer::from_json(j.value("pre_tokenizer", json()));
    if (!pre_tokenizer.ok()) return pre_tokenizer.status();
    parts.pre_tokenizer = std::move(pre_tokenizer).value();
    HICHAT_RETURN_IF_ERROR(load_bpe_model(j["model"], parts));
    HICHAT_RETURN_IF_ERROR(load_post_processor(j.value("post_processor", json()), parts));
    auto added = parse_added_tokens(j.value("added_tokens", json()));
    if (!added.ok()) return added.status();
    HICHAT_RETURN_IF_ERROR(finish_tokenizer_parts(config, std::move(added).value(), /*default_add_bos=*/false, parts));
    std::vector<bool> is_added(parts.id_to_token.size(), false);
    for (const AddedToken& token : parts.added.tokens()) is_added[token.id] = true;
    auto decoder = TokenDecoder::from_json(j.value("decoder", json()), parts.id_to_token, is_added);
    if (!decoder.ok()) return decoder.status();
    parts.decoder = std::move(decoder).value();
    return ok_status();
}

}  // namespace

Status load_tokenizer_json_parts(const std::string& path, const TokenizerConfig& config, TokenizerParts& parts) {
    auto file = MappedFile::open(path);
    if (!file.ok()) return file.status();
    const auto* begin = reinterpret_cast<const char*>(file.value()->data());
    try {
        const json j = json::parse(begin, begin + file.value()->size_bytes());
        return with_context(path, load_parts(j, config, parts));
    } catch (const json::exception& e) {  // bad JSON, or a field of the wrong type deep inside
        return invalid_argument(path + ": " + e.what());
    }
}

}  // namespace hichat::tokenizer
