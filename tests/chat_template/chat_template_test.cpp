// ChatTemplate behaviour that needs no reference renderer: load-time rejection of unsupported constructs
// with line and column, error statuses at render time, variables and the injectable clock.
// Rendered outputs are checked in reference_test.cpp against @huggingface/jinja.
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tokenizer/template/chat_template.h"

namespace hichat::tokenizer {
namespace {

std::string parse_error(std::string_view source) {
    Result<ChatTemplate> t = ChatTemplate::parse(source);
    return t.ok() ? std::string("<parsed>") : t.status().message();
}

Result<std::string> render(std::string_view source, ChatTemplateInputs in = {}) {
    Result<ChatTemplate> t = ChatTemplate::parse(source);
    if (!t.ok()) return t.status();
    return t->render(in);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(ChatTemplateParse, RejectsUnsupportedStatementsAtLoadTime) {
    for (const char* source : {"{% include 'x.jinja' %}", "{% extends 'base' %}", "{% block b %}{% endblock %}",
                               "{% raw %}x{% endraw %}", "{% call f() %}x{% endcall %}", "{% filter upper %}x{% endfilter %}",
                               "{% with a = 1 %}{% endwith %}"}) {
        const std::string error = parse_error(source);
        EXPECT_TRUE(contains(error, "unsupported statement")) << source << " -> " << error;
        EXPECT_TRUE(contains(error, "line 1, column 1")) << source << " -> " << error;
    }
}

TEST(ChatTemplateParse, NamesLineAndColumnOfUnknownFilterAndTest) {
    std::string error = parse_error("hello\n  {{ x | frobnicate }}");
    EXPECT_TRUE(contains(error, "line 2, column 10")) << error;
    EXPECT_TRUE(contains(error, "unsupported filter 'frobnicate'")) << error;
    error = parse_error("{% if x %}\n{% if y is divisibleby %}{% endif %}{% endif %}");
    EXPECT_TRUE(contains(error, "line 2, column 12")) << error;
    EXPECT_TRUE(contains(error, "unsupported test 'divisibleby'")) << error;
}

TEST(ChatTemplateParse, PositionsSurvivePreprocessing) {
    // lstrip_blocks removes the indentation and trim_blocks the newline before `{{`; the column still
    // refers to the original source.
    const std::string error = parse_error("{% if true %}\n    {% if x %}\n  {{ a ! b }}{% endif %}{% endif %}");
    EXPECT_TRUE(contains(error, "line 3, column 8")) << error;
    EXPECT_TRUE(contains(error, "unexpected character '!'")) << error;
}

// Found by fuzz/chat_template_fuzzer: 2,000 nested parentheses (4 KB) overflowed the parser's stack.
TEST(ChatTemplateParse, DeepNestingIsAnErrorNotAStackOverflow) {
    auto repeat = [](const std::string& s, int n) {
        std::string out;
        for (int i = 0; i < n; ++i) out += s;
        return out;
    };
    const int deep = 50000;
    for (const std::string& source :
         {"{{ " + repeat("(", deep) + "1" + repeat(")", deep) + " }}", "{{ " + repeat("[", deep) + repeat("]", deep) + " }}",
          "{{ " + repeat("{'a': ", deep) + "1" + repeat("}", deep) + " }}", "{{ " + repeat("not ", deep) + "x }}",
          "{{ " + repeat("- ", deep) + "1 }}", "{{ " + repeat("f(", deep) + repeat(")", deep) + " }}",
          repeat("{% if x %}", deep) + repeat("{% endif %}", deep),
          repeat("{% for x in y %}", deep) + repeat("{% endfor %}", deep)}) {
        const std::string error = parse_error(source);
        EXPECT_TRUE(contains(error, "nested too deeply")) << source.substr(0, 40) << " -> " << error;
        EXPECT_TRUE(contains(error, "line 1, column ")) << error;
    }
    // Nesting that real templates could use still parses and renders.
    auto shallow = render("{{ " + repeat("(", 40) + "1 + 1" + repeat(")", 40) + " }}" + repeat("{% if true %}", 40) + "x" +
                          repeat("{% endif %}", 40));
    ASSERT_TRUE(shallow.ok()) << shallow.status().message();
    EXPECT_EQ(*shallow, "2x");
}

TEST(ChatTemplateParse, RejectsMalformedTemplates) {
    EXPECT_TRUE(contains(parse_error("{% if x %}never closed"), "missing {% elif or else or endif %}"));
    EXPECT_TRUE(contains(parse_error("{% for x in y %}"), "missing {% endfor or else %}"));
    EXPECT_TRUE(contains(parse_error("{{ 'unterminated }}"), "unterminated string literal"));
    EXPECT_TRUE(contains(parse_error("{{ '\\q' }}"), "unexpected escaped character 'q'"));
    EXPECT_TRUE(contains(parse_error("{{ x "), "unexpected end of template"));
    EXPECT_TRUE(contains(parse_error("{# never closed"), "missing end of comment"));
    EXPECT_TRUE(contains(parse_error("{% break %}"), "'break' outside of a for loop"));
    EXPECT_TRUE(contains(parse_error("{% for x in y %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}"),
                         "'continue' outside of a for loop"));
    EXPECT_TRUE(contains(parse_error("{{ f(*args) }}"), "argument unpacking"));
    EXPECT_TRUE(contains(parse_error("{{ f(a=1, 2) }}"), "positional argument follows keyword argument"));
    EXPECT_TRUE(contains(parse_error("{% set 1 = 2 %}"), "cannot assign"));
    EXPECT_TRUE(contains(parse_error("{% endif %}"), "unsupported statement '{% endif %}'"));
    EXPECT_TRUE(contains(parse_error("{{ 99999999999999999999 }}"), "out of range"));
    EXPECT_EQ(parse_error("{% for k, v in d.items() if v %}{{ k }}{% else %}-{% endfor %}"), "<parsed>");
}

TEST(ChatTemplateRender, RaiseExceptionIsAnErrorStatusWithTheMessage) {
    ChatTemplateInputs in;
    in.messages = {{"tool", "x"}};
    Result<std::string> out = render("ok\n{% if messages[0].role == 'tool' %}{{ raise_exception('No tools, got ' ~ messages[0].role) }}{% endif %}", in);
    ASSERT_FALSE(out.ok());
    EXPECT_TRUE(contains(out.status().message(), "raise_exception: No tools, got tool")) << out.status().message();
    EXPECT_TRUE(contains(out.status().message(), "line 2, column ")) << out.status().message();
    in.messages = {{"user", "x"}};
    EXPECT_TRUE(render("{% if messages[0].role == 'tool' %}{{ raise_exception('no') }}{% endif %}", in).ok());
}

TEST(ChatTemplateRender, RuntimeErrorsNamePositionAndStopRendering) {
    Result<std::string> out = render("a\n  {{ 1 + missing }}{{ raise_exception('not reached') }}");
    ASSERT_FALSE(out.ok());
    EXPECT_TRUE(contains(out.status().message(), "line 2, column 6")) << out.status().message();
    EXPECT_TRUE(contains(out.status().message(), "undefined")) << out.status().message();
    EXPECT_FALSE(render("{{ 5 | trim }}").ok());
    EXPECT_FALSE(render("{% for c in 'abc' %}{% endfor %}").ok());
    EXPECT_FALSE(render("{{ range }}").ok());
    EXPECT_FALSE(render("{% set x = 1 %}{% set x.a = 2 %}").ok());
}

TEST(ChatTemplateRender, RunawayTemplatesFailInsteadOfCrashing) {
    Result<std::string> out = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    ASSERT_FALSE(out.ok());
    EXPECT_TRUE(contains(out.status().message(), "nested too deeply")) << out.status().message();
    out = render("{% for i in range(100000000) %}{% endfor %}");
    ASSERT_FALSE(out.ok());
    EXPECT_TRUE(contains(out.status().message(), "range() is too long")) << out.status().message();
    EXPECT_FALSE(render("{{ 9223372036854775807 + 1 }}").ok());
    EXPECT_FALSE(render("{{ 1 // 0 }}").ok());
}

TEST(ChatTemplateRender, SpecialTokensAndVariables) {
    const char* source = "{{ bos_token is defined }},{{ eos_token }},{{ add_generation_prompt }},{{ messages | length }},{{ tools }}";
    ChatTemplateInputs in;
    in.messages = {{"user", "a"}, {"assistant", "b"}};
    in.add_generation_prompt = false;
    in.eos_token = "</s>";
    in.extra_vars = {{"tools", {1, 2}}};
    Result<std::string> out = render(source, in);
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(*out, "false,</s>,false,2,[1, 2]");
    in.bos_token = "<s>";
    in.extra_vars = {{"messages", {{{"role", "x"}}}}};  // extra variables override the fields
    out = render(source, in);
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(*out, "true,</s>,false,1,");
}

TEST(ChatTemplateRender, RejectsBadExtraVars) {
    ChatTemplateInputs in;
    in.extra_vars = nlohmann::ordered_json::array({1});
    EXPECT_TRUE(contains(render("x", in).status().message(), "extra_vars must be a JSON object"));
    in.extra_vars = {{"true", 1}};
    EXPECT_TRUE(contains(render("x", in).status().message(), "clashes with a built-in"));
}

TEST(ChatTemplateRender, StrftimeNowUsesTheInjectedClock) {
    ChatTemplateInputs in;
    std::tm t{};
    t.tm_year = 2024 - 1900;
    t.tm_mon = 6;
    t.tm_mday = 6;
    t.tm_hour = 9;
    t.tm_min = 5;
    in.local_time = t;
    Result<std::string> out = render("{{ strftime_now('%d %b %Y|%m %B %H:%M %% %S') }}", in);
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(*out, "06 Jul 2024|07 July 09:05 % %S");  // unsupported codes stay literal, as in the reference
    in.local_time.reset();
    out = render("{{ strftime_now('%Y') }}", in);
    ASSERT_TRUE(out.ok());
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    EXPECT_EQ(*out, std::to_string(local.tm_year + 1900));
}

TEST(ChatTemplateRender, InvalidUtf8ContentDoesNotCrash) {
    ChatTemplateInputs in;
    in.messages = {{"user", std::string("\xff\xfe \xe2\x80 abc \xf0\x9f")}};
    Result<std::string> out = render("{{ messages[0].content | trim | length }}|{{ messages[0].content | tojson }}|"
                                     "{{ messages[0].content[::-1] | length }}|{{ messages[0].content.split() | length }}", in);
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_FALSE(out->empty());
}

TEST(ChatTemplateRender, ConcurrentRendersOfOneTemplateAgree) {
    Result<ChatTemplate> t = ChatTemplate::parse(
        "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}<{{ m.role }}:{{ m.content | trim }}>{% endfor %}{{ ns.n }}");
    ASSERT_TRUE(t.ok()) << t.status().message();
    ChatTemplateInputs in;
    for (int i = 0; i < 50; ++i) in.messages.push_back({"user", " message " + std::to_string(i) + " "});
    const Result<std::string> expected = t->render(in);
    ASSERT_TRUE(expected.ok());
    std::vector<std::thread> threads;
    std::vector<int> num_mismatches(4, 0);
    for (int w = 0; w < 4; ++w) {
        threads.emplace_back([&, w] {
            for (int i = 0; i < 50; ++i) {
                Result<std::string> out = t->render(in);
                if (!out.ok() || *out != *expected) ++num_mismatches[w];
            }
        });
    }
    for (auto& th : threads) th.join();
    for (int w = 0; w < 4; ++w) EXPECT_EQ(num_mismatches[w], 0);
    EXPECT_TRUE(contains(*expected, "<user:message 49>50"));
}

}  // namespace
}  // namespace hichat::tokenizer
