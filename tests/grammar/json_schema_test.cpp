// JSON Schema compiler: the subset's behaviour, error messages naming keyword and pointer, limits,
// whitespace bounds and the grammar cache.
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "grammar/grammar_cache.h"
#include "schema_test_support.h"

namespace hichat::grammar {
namespace {

using test::accepts_bytewise;

std::shared_ptr<const CompiledGrammar> schema(std::string_view text, JsonSchemaOptions options = {}) {
    auto g = compile_json_schema(text, options);
    EXPECT_TRUE(g.ok()) << text << ": " << g.status().message();
    return g.ok() ? g.value() : nullptr;
}

TEST(JsonSchema, PropertiesInSchemaOrderRequiredAndOptional) {
    auto g = schema(R"({"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"},
                        "c":{"type":"boolean"}},"required":["a"],"additionalProperties":false})");
    EXPECT_TRUE(accepts_bytewise(g, R"({"b":1,"a":"x","c":true})"));
    EXPECT_TRUE(accepts_bytewise(g, R"({"a":"x"})"));
    EXPECT_TRUE(accepts_bytewise(g, R"({"a":"x","c":false})"));
    EXPECT_FALSE(accepts_bytewise(g, R"({"b":1})"));                 // a is required
    EXPECT_FALSE(accepts_bytewise(g, R"({"a":"x","b":1})"));         // schema order
    EXPECT_FALSE(accepts_bytewise(g, R"({"a":"x","d":1})"));         // no additional
    EXPECT_FALSE(accepts_bytewise(g, R"({ "a":"x"})"));              // compact by default
}

TEST(JsonSchema, AdditionalPropertiesComeAfterDeclaredAndDifferFromThem) {
    auto g = schema(R"({"properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}})");
    EXPECT_TRUE(accepts_bytewise(g, R"({"a":1,"x":"y","z":""})"));
    EXPECT_TRUE(accepts_bytewise(g, R"({"x":"y"})"));
    EXPECT_FALSE(accepts_bytewise(g, R"({"a":1,"x":2})"));
    EXPECT_FALSE(accepts_bytewise(g, R"({"a":1,"a":"dup"})"));
    EXPECT_TRUE(accepts_bytewise(g, "5"));  // no type: any non-object value is valid
}

TEST(JsonSchema, StringsLengthPatternFormat) {
    auto g = schema(R"({"type":"string","minLength":2,"maxLength":3})");
    EXPECT_TRUE(accepts_bytewise(g, R"("ab")"));
    EXPECT_TRUE(accepts_bytewise(g, R"("\u00e9\n\"")"));  // escapes count as one character
    EXPECT_TRUE(accepts_bytewise(g, "\"\xc3\xa9\xc3\xa9\""));
    EXPECT_FALSE(accepts_bytewise(g, R"("a")"));
    EXPECT_FALSE(accepts_bytewise(g, R"("abcd")"));
    auto p = schema(R"({"type":"string","pattern":"^[A-Z]{3}-\\d+$"})");
    EXPECT_TRUE(accepts_bytewise(p, R"("ABC-12")"));
    EXPECT_FALSE(accepts_bytewise(p, R"("ABC-")"));
    auto search = schema(R"({"type":"string","pattern":"x\"y"})");  // unanchored; quote escaped in JSON
    EXPECT_TRUE(accepts_bytewise(search, R"("aax\"ybb")"));
    EXPECT_FALSE(accepts_bytewise(search, R"("xy")"));
    auto both = schema(R"({"type":"string","pattern":"^a+$","maxLength":2})");
    EXPECT_TRUE(accepts_bytewise(both, R"("aa")"));
    EXPECT_FALSE(accepts_bytewise(both, R"("aaa")"));
    auto date = schema(R"({"type":"string","format":"date-time"})");
    EXPECT_TRUE(accepts_bytewise(date, R"("2024-02-29T23:59:60.5+01:00")"));
    EXPECT_FALSE(accepts_bytewise(date, R"("2024-04-31T00:00:00Z")"));
    auto uuid = schema(R"({"format":"uuid"})");
    EXPECT_TRUE(accepts_bytewise(uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
    EXPECT_FALSE(accepts_bytewise(uuid, R"("123e4567-e89b-12d3-a456-42661417400")"));
    auto ip = schema(R"({"format":"ipv6"})");
    EXPECT_TRUE(accepts_bytewise(ip, R"("::1")"));
    EXPECT_TRUE(accepts_bytewise(ip, R"("2001:db8::8a2e:370:7334")"));
    EXPECT_FALSE(accepts_bytewise(ip, R"("1::2::3")"));
}

TEST(JsonSchema, IntegerAndNumberBounds) {
    auto g = schema(R"({"type":"integer","minimum":-15,"exclusiveMaximum":120})");
    for (int v = -30; v <= 200; ++v) {
        EXPECT_EQ(accepts_bytewise(g, std::to_string(v)), v >= -15 && v < 120) << v;
    }
    EXPECT_FALSE(accepts_bytewise(g, "007"));
    auto n = schema(R"({"type":"number","exclusiveMinimum":-2,"maximum":3})");
    for (const char* ok : {"-1.99", "0", "3", "3.000", "2.5", "-0.5"}) EXPECT_TRUE(accepts_bytewise(n, ok)) << ok;
    for (const char* bad : {"-2", "-2.0", "3.01", "4", "1e2"}) EXPECT_FALSE(accepts_bytewise(n, bad)) << bad;
    auto refused = compile_json_schema(R"({"type":"number","minimum":0.5})");
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("only integer bounds"), std::string::npos);
}

TEST(JsonSchema, ArraysPrefixItemsAndCounts) {
    auto g = schema(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],
                        "items":{"type":"boolean"},"minItems":1,"maxItems":3})");
    EXPECT_TRUE(accepts_bytewise(g, R"(["a"])"));
    EXPECT_TRUE(accepts_bytewise(g, R"(["a",1,true])"));
    EXPECT_FALSE(accepts_bytewise(g, R"([])"));
    EXPECT_FALSE(accepts_bytewise(g, R"(["a",1,true,false])"));
    EXPECT_FALSE(accepts_bytewise(g, R"([1])"));
}

TEST(JsonSchema, RefsDefsRecursionAnyOfEnumConst) {
    auto g = schema(R"({"$defs":{"node":{"type":"object","properties":{"v":{"enum":["x",2,null]},
                        "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"],
                        "additionalProperties":false}},"anyOf":[{"$ref":"#/$defs/node"},{"const":"leaf"}]})");
    EXPECT_TRUE(accepts_bytewise(g, R"({"v":"x","kids":[{"v":2},{"v":null,"kids":[]}]})"));
    EXPECT_TRUE(accepts_bytewise(g, R"("leaf")"));
    EXPECT_FALSE(accepts_bytewise(g, R"({"v":"y"})"));
    EXPECT_FALSE(accepts_bytewise(g, R"({"v":2,"kids":[{}]})"));
}

TEST(JsonSchema, AllOfMergesOrRefusesByName) {
    auto g = schema(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}}},{"required":["a"]}]})");
    EXPECT_TRUE(accepts_bytewise(g, R"({"a":1})"));
    EXPECT_FALSE(accepts_bytewise(g, R"({})"));
    auto refused = compile_json_schema(R"({"allOf":[{"pattern":"a"},{"pattern":"b"}]})");
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("'pattern' in more than one subschema"), std::string::npos);
}

TEST(JsonSchema, UnsupportedKeywordNamesKeywordAndPointer) {
    auto g = compile_json_schema(R"({"type":"object","properties":{"a":{"patternProperties":{"x":{}}}}})");
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().message(), "unsupported JSON Schema keyword 'patternProperties' at /properties/a");
    auto ref = compile_json_schema(R"({"$ref":"http://example.com/s.json"})");
    ASSERT_FALSE(ref.ok());
    EXPECT_NE(ref.status().message().find("$ref 'http://example.com/s.json' at"), std::string::npos);
    auto fmt = compile_json_schema(R"({"properties":{"u":{"format":"iri"}}})");
    ASSERT_FALSE(fmt.ok());
    EXPECT_EQ(fmt.status().message(), "unsupported format 'iri' at /properties/u");
    auto bad = compile_json_schema("{\"type\":");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("not valid JSON"), std::string::npos);
}

TEST(JsonSchema, LimitsOnSizeDepthAndRepeats) {
    JsonSchemaOptions opts;
    opts.limits.max_source_bytes = 100;
    auto big = compile_json_schema(std::string(R"({"description":")") + std::string(200, 'x') + "\"}", opts);
    ASSERT_FALSE(big.ok());
    EXPECT_NE(big.status().message().find("over the limit of 100"), std::string::npos);
    std::string deep = R"({"type":"string"})";
    for (int i = 0; i < 80; ++i) deep = R"({"type":"array","items":)" + deep + "}";
    auto d = compile_json_schema(deep);
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.status().message().find("nested deeper than 64"), std::string::npos);
    auto many = compile_json_schema(R"({"type":"string","maxLength":100000})");
    ASSERT_FALSE(many.ok());
    EXPECT_NE(many.status().message().find("'maxLength' at  is 100000, over the supported bound"), std::string::npos);
}

TEST(JsonSchema, BoundedWhitespaceMode) {
    JsonSchemaOptions opts;
    opts.max_whitespace = 2;
    auto g = schema(R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}}})", opts);
    EXPECT_TRUE(accepts_bytewise(g, "{\n \"a\" : [ 1,\n 2 ] }"));
    EXPECT_FALSE(accepts_bytewise(g, "{   \"a\":[]}"));  // three spaces
    EXPECT_TRUE(accepts_bytewise(g, R"({"a":[1,2]})"));
}

TEST(JsonSchema, JsonObjectModeAcceptsAnyObjectOnly) {
    auto g = compile_json_object();
    ASSERT_TRUE(g.ok());
    EXPECT_TRUE(accepts_bytewise(g.value(), R"({"a":[1,{"b":null}],"c":"\u20ac"})"));
    EXPECT_TRUE(accepts_bytewise(g.value(), "{}"));
    EXPECT_FALSE(accepts_bytewise(g.value(), "[1]"));
    EXPECT_FALSE(accepts_bytewise(g.value(), R"({"a":01})"));
}

TEST(GrammarCache, SameSchemaAnySpacingIsOneEntryAndLruBounds) {
    GrammarCache cache({/*max_entries=*/2});
    auto a = cache.get(GrammarKind::kJsonSchema, R"({"type":"string"})");
    auto b = cache.get(GrammarKind::kJsonSchema, R"({ "type" : "string" })");
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a.value().get(), b.value().get());
    EXPECT_EQ(cache.num_hits(), 1u);
    ASSERT_TRUE(cache.get(GrammarKind::kRegex, "a+").ok());
    ASSERT_TRUE(cache.get(GrammarKind::kGbnf, "root ::= \"x\"\n").ok());
    EXPECT_EQ(cache.size(), 2u);
    auto again = cache.get(GrammarKind::kJsonSchema, R"({"type":"string"})");  // evicted: compiled anew
    EXPECT_NE(again.value().get(), a.value().get());
    EXPECT_FALSE(cache.get(GrammarKind::kRegex, "(").ok());
}

TEST(GrammarCache, ConcurrentCompilesAreSafe) {
    GrammarCache cache;
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 20; ++i) {
                const std::string s = R"({"type":"integer","maximum":)" + std::to_string((i + t) % 7) + "}";
                if (cache.get(GrammarKind::kJsonSchema, s).ok()) ++ok;
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(ok.load(), 80);
    EXPECT_EQ(cache.size(), 7u);
}

TEST(JsonSchema, FramedValuesAsToolCallsAre) {
    JsonSchemaOptions options;
    options.frame = JsonFrame{.begin = "<c>\n", .separator = "\n</c>\n<c>\n", .end = "\n</c>", .max_values = -1};
    auto g = schema(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],
                        "additionalProperties":false})", options);
    EXPECT_TRUE(accepts_bytewise(g, "<c>\n{\"a\":1}\n</c>"));
    EXPECT_TRUE(accepts_bytewise(g, "<c>\n{\"a\":1}\n</c>\n<c>\n{\"a\":2}\n</c>\n<c>\n{\"a\":3}\n</c>"));
    EXPECT_FALSE(accepts_bytewise(g, "{\"a\":1}"));                  // the frame is required
    EXPECT_FALSE(accepts_bytewise(g, "<c>\n{\"a\":1}"));            // and its end
    EXPECT_FALSE(accepts_bytewise(g, "<c>\n{\"a\":\"x\"}\n</c>"));   // each value matches the schema
    options.frame->max_values = 2;
    auto two = schema(R"({"type":"integer"})", options);
    EXPECT_TRUE(accepts_bytewise(two, "<c>\n1\n</c>\n<c>\n2\n</c>"));
    EXPECT_FALSE(accepts_bytewise(two, "<c>\n1\n</c>\n<c>\n2\n</c>\n<c>\n3\n</c>"));
    // The frame is part of the cache key: the same schema unframed is another grammar.
    GrammarCache cache;
    auto framed = cache.get(GrammarKind::kJsonSchema, R"({"type":"integer"})", options);
    auto plain = cache.get(GrammarKind::kJsonSchema, R"({"type":"integer"})");
    ASSERT_TRUE(framed.ok() && plain.ok());
    EXPECT_NE(framed.value(), plain.value());
    EXPECT_TRUE(accepts_bytewise(plain.value(), "7"));
    EXPECT_FALSE(accepts_bytewise(framed.value(), "7"));
}

}  // namespace
}  // namespace hichat::grammar
