#include "tokenize_command.h"

#include <cstdint>
#include <iostream>
#include <iterator>
#include <limits>

#include <nlohmann/json.hpp>

#include "cli_args.h"
#include "tokenizer/tokenizer.h"

namespace hichat::tools {
namespace {

using nlohmann::json;

int fail(const std::string& message) {
    std::cerr << "hichat tokenize: " << message << "\n";
    return 2;
}

Result<json> encode_all(const tokenizer::Tokenizer& tok, const json& input) {
    if (!input.is_array()) return invalid_argument("stdin must be a JSON array of strings");
    json out = json::array();
    for (size_t i = 0; i < input.size(); ++i) {
        if (!input[i].is_string()) return invalid_argument("element " + std::to_string(i) + " is not a string");
        out.push_back(tok.encode(input[i].get<std::string>()));
    }
    return out;
}

Result<json> decode_all(const tokenizer::Tokenizer& tok, const json& input) {
    if (!input.is_array()) return invalid_argument("stdin must be a JSON array of arrays of ids");
    json out = json::array();
    for (size_t i = 0; i < input.size(); ++i) {
        if (!input[i].is_array()) return invalid_argument("element " + std::to_string(i) + " is not an array of ids");
        std::vector<int32_t> ids;
        for (const json& id : input[i]) {
            if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= tok.vocab_size()) {
                return invalid_argument("element " + std::to_string(i) + " has an id outside [0, " +
                                        std::to_string(tok.vocab_size()) + "): " + id.dump());
            }
            ids.push_back(id.get<int32_t>());
        }
        out.push_back(tok.decode(ids));
    }
    return out;
}

}  // namespace

int tokenize_main(const std::vector<std::string>& args) {
    auto cli = CliArgs::parse(args, {"model"}, {"decode"});
    if (!cli.ok()) return fail(cli.status().message());
    auto model_dir = cli->required("model");
    if (!model_dir.ok()) return fail(model_dir.status().message());
    auto tok = tokenizer::Tokenizer::load(model_dir.value());
    if (!tok.ok()) return fail(tok.status().message());

    const std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    const json input = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (input.is_discarded()) return fail("stdin is not valid JSON");
    auto output = cli->has("decode") ? decode_all(*tok.value(), input) : encode_all(*tok.value(), input);
    if (!output.ok()) return fail(output.status().message());
    std::cout << output.value().dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace) << "\n";
    return 0;
}

}  // namespace hichat::tools
