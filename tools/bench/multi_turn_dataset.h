// The multi-turn dataset: num_conversations conversations of num_turns turns. Each turn adds a user
// message of input_len words and asks for output_len tokens; turn t+1's prompt is turn t's prompt,
// then turn t's answer, then the new user message, so every turn's prompt extends the previous one
// and a prefix cache can serve all of it but the new message.
//
// Why text and not token ids: a token-exact history needs the answer's token ids, and HiChat's
// /v1/completions streams text only (as the OpenAI API does). So prompts are text and the server
// tokenizes them; the history is byte-exact, and token-exact wherever re-tokenizing the answer gives
// back the ids the model produced (true of most text; a merge across the seam between two pieces can
// differ). The user words are common short English words, mostly one token each in the usual BPE
// vocabularies, so a message is about input_len tokens; the report counts the prompt tokens the
// server reports (usage.prompt_tokens), not the words.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hichat::tools::bench {

// How a turn carries the conversation so far:
//   kCompletions: POST /v1/completions, prompt = the whole history as text (this file);
//   kResponses: POST /v1/responses with the new user message as input and the previous turn's
//     previous_response_id: the server keeps the history (as token ids, so every turn extends the last
//     one's tokens exactly). max_output_tokens is the turn's length; there is no ignore_eos, so a
//     model may end a turn early at an end-of-sequence token.
enum class MultiTurnMode { kCompletions, kResponses };

struct MultiTurnConfig {
    int num_conversations = 16;
    int num_turns = 10;
    int input_len = 128;   // words (about tokens) of each user message
    int output_len = 128;  // max_tokens of each turn (ignore_eos)
    uint64_t seed = 0;
};

// The user messages and the prompts built from them. Not thread-safe; the run's thread only.
class MultiTurnDataset {
public:
    explicit MultiTurnDataset(const MultiTurnConfig& config);

    const MultiTurnConfig& config() const { return config_; }

    // The user message of `turn` in `conversation`: input_len words, each with its leading space.
    const std::string& user_message(int conversation, int turn) const;

    // Turn 0: its user message. Turn t > 0: prompt(t - 1) + `previous_answer` + user message t.
    // Records the prompt (turns must be built in order: 0, 1, ...) and returns it.
    const std::string& build_prompt(int conversation, int turn, const std::string& previous_answer);

    // The prompt build_prompt() returned for that turn ("" if not built yet).
    const std::string& prompt(int conversation, int turn) const;

private:
    size_t index(int conversation, int turn) const;

    MultiTurnConfig config_;
    std::vector<std::string> user_messages_;  // [num_conversations * num_turns]
    std::vector<std::string> prompts_;        // [num_conversations * num_turns]
};

}  // namespace hichat::tools::bench
