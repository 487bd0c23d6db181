#include "tokenize_command.h"

#include <cstdint>
#include <iostream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include "command.h"
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

// One flag per row.
// clang-format off
constexpr FlagSpec kFlags[] = {
    {.name = "model", .value_name = "DIR", .help = "folder with tokenizer.json or tokenizer.model", .required = true},
    {.name = "decode", .kind = FlagKind::kBool, .help = "read arrays of ids, print strings (default: encode)"},
};
// clang-format on

int tokenize_main(const CliArgs& cli) {
    auto tok = tokenizer::Tokenizer::load(cli.get("model"));
    if (!tok.ok()) return fail(tok.status().message());
    const std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    const json input = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (input.is_discarded()) return fail("stdin is not valid JSON");
    auto output = cli.has("decode") ? decode_all(*tok.value(), input) : encode_all(*tok.value(), input);
    if (!output.ok()) return fail(output.status().message());
    std::cout << output.value().dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace) << "\n";
    return 0;
}

}  // namespace

const Command& tokenize_command() {
    static const Command command{
        .name = "tokenize",
        .summary = "encode or decode JSON on stdin with a model's tokenizer, JSON on stdout",
        .details =
            "Encode: stdin is a JSON array of strings, stdout an array of id arrays (special tokens added\n"
            "and parsed). --decode: stdin is an array of id arrays, stdout an array of strings.\n",
        .flags = kFlags,
        .run = tokenize_main};
    return command;
}

}  // namespace hichat::tools
