// Reading the optional files of a model folder that only the command line tools need.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "tokenizer/template/chat_template.h"

namespace hichat::tools {

struct ChatTemplateFiles {
    std::optional<tokenizer::ChatTemplate> chat_template;  // nullopt: the folder has none
    std::string bos_token, eos_token;                      // from tokenizer_config.json; may be empty
    std::string source;                                    // the template's text (empty: none)
};

// tokenizer_config.json's chat_template (a string, or the "default" of a list of named templates),
// else chat_template.jinja. A template that does not parse is an error naming the file.
Result<ChatTemplateFiles> load_chat_template(const std::string& model_dir);

}  // namespace hichat::tools
