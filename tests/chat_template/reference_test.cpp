// Byte-identity of our chat-template rendering with @huggingface/jinja (see CMakeLists.txt for how the
// reference file is made). One test per real template over all conversations, plus the interpreter cases.
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenizer/template/chat_template.h"

namespace hichat::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

Json read_json(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Json();
    std::stringstream ss;
    ss << in.rdbuf();
    return Json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
}

class ReferenceTest : public ::testing::Test {
protected:
    void SetUp() override {
        reference_ = read_json(HICHAT_CHAT_TEMPLATE_REFERENCE);
        ASSERT_TRUE(reference_.is_object())
            << "missing or unreadable reference file " << HICHAT_CHAT_TEMPLATE_REFERENCE
            << ": it is made by the ctest fixture chat_template_reference (needs node and "
               "`npm ci --prefix tests/node_jinja`); run the tests through ctest";
        conversations_ = read_json(HICHAT_CHAT_TEMPLATE_CONVERSATIONS).value("conversations", Json::array());
        ASSERT_GE(conversations_.size(), 12u);
    }

    const Json& template_info(const std::string& name) const {
        for (const Json& t : reference_["templates"])
            if (t["name"] == name) return t;
        static const Json kNone;
        return kNone;
    }

    static std::string token(const Json& t, const char* key) { return t[key].is_string() ? t[key].get<std::string>() : ""; }

    // Compares one render with the reference entry (an output, or the error the reference raised).
    static void expect_matches(const Result<std::string>& ours, const Json& ref, const std::string& label) {
        if (ref.contains("output")) {
            ASSERT_TRUE(ours.ok()) << label << ": " << ours.status().message();
            EXPECT_EQ(*ours, ref["output"].get<std::string>()) << label;
        } else {
            const std::string ref_error = ref["error"];
            ASSERT_FALSE(ours.ok()) << label << ": expected the error \"" << ref_error << "\", got output:\n" << *ours;
            // The template's own raise_exception("...") text must come through unchanged.
            const std::string& message = ours.status().message();
            if (message.find("raise_exception: ") != std::string::npos) {
                EXPECT_NE(message.find("raise_exception: " + ref_error), std::string::npos) << label << ": " << message;
            }
        }
    }

    void check_template(const std::string& name) {
        const Json& info = template_info(name);
        ASSERT_TRUE(info.is_object()) << "template " << name << " missing from the reference file";
        Result<ChatTemplate> tmpl = ChatTemplate::parse(info["source"].get<std::string>());
        ASSERT_TRUE(tmpl.ok()) << tmpl.status().message();
        int num_checked = 0;
        double total_us = 0;
        for (const Json& conv : conversations_) {
            ChatTemplateInputs in;
            for (const Json& m : conv["messages"]) in.messages.push_back({m["role"], m["content"]});
            in.add_generation_prompt = conv["add_generation_prompt"];
            in.bos_token = token(info, "bos_token");
            in.eos_token = token(info, "eos_token");
            in.extra_vars = Json{{"date_string", "26 Jul 2024"}};
            if (conv.contains("extra_vars")) in.extra_vars.update(conv["extra_vars"]);
            const auto start = std::chrono::steady_clock::now();
            Result<std::string> ours = tmpl->render(in);
            total_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
            for (const Json& r : reference_["results"]) {
                if (r["template"] != name || r["conversation"] != conv["name"]) continue;
                expect_matches(ours, r, name + " / " + conv["name"].get<std::string>());
                ++num_checked;
            }
        }
        EXPECT_EQ(num_checked, static_cast<int>(conversations_.size())) << "reference entries for " << name;
        std::cout << "[ timing ] " << name << ": " << total_us / conversations_.size() << " us per render\n";
    }

    Json reference_;
    Json conversations_;
};

TEST_F(ReferenceTest, Llama3_2) { check_template("llama3_2"); }
TEST_F(ReferenceTest, Qwen2_5) { check_template("qwen2_5"); }
TEST_F(ReferenceTest, Qwen3) { check_template("qwen3"); }
TEST_F(ReferenceTest, Mistral7B) { check_template("mistral_7b"); }

TEST_F(ReferenceTest, InterpreterCases) {
    const Json cases = read_json(HICHAT_CHAT_TEMPLATE_CASES).value("cases", Json::array());
    ASSERT_EQ(cases.size(), reference_["cases"].size());
    ASSERT_GE(cases.size(), 30u);
    for (size_t i = 0; i < cases.size(); ++i) {
        const Json& c = cases[i];
        const Json& ref = reference_["cases"][i];
        ASSERT_EQ(ref["name"], c["name"]);
        const std::string label = "case " + c["name"].get<std::string>();
        ChatTemplateInputs in;
        std::string source;
        if (c.contains("template_of")) {
            const Json& info = template_info(c["template_of"]);
            ASSERT_TRUE(info.is_object()) << label;
            source = info["source"];
            in.bos_token = token(info, "bos_token");
            in.eos_token = token(info, "eos_token");
        } else {
            source = c["template"];
        }
        in.extra_vars = c.value("vars", Json::object());
        Result<ChatTemplate> tmpl = ChatTemplate::parse(source);
        ASSERT_TRUE(tmpl.ok()) << label << ": " << tmpl.status().message();
        expect_matches(tmpl->render(in), ref, label);
    }
}

}  // namespace
}  // namespace hichat::tokenizer
