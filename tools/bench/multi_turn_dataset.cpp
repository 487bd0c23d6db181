#include "bench/multi_turn_dataset.h"

#include <array>
#include <random>
#include <string_view>

#include "base/check.h"

namespace hichat::tools::bench {
namespace {

// Common short English words; with their leading space most are one token in the usual byte-level BPE
// vocabularies (GPT-2, Llama 3, Qwen), so a message of N words is about N tokens.
constexpr std::array<std::string_view, 64> kWords = {
    "the",   "of",    "and",  "to",    "in",    "is",     "that",  "for",   "it",   "as",    "was",
    "with",  "be",    "by",   "on",    "not",   "he",     "this",  "are",   "or",   "his",   "from",
    "at",    "which", "but",  "have",  "an",    "had",    "they",  "you",   "were", "their", "one",
    "all",   "we",    "can",  "her",   "has",   "there",  "been",  "if",    "more", "when",  "will",
    "would", "who",   "so",   "no",    "time",  "people", "year",  "way",   "day",  "man",   "world",
    "life",  "work",  "part", "place", "water", "city",   "house", "music", "story"};

std::string random_words(std::mt19937_64& rng, int num_words) {
    std::string out;
    for (int i = 0; i < num_words; ++i) {
        out += ' ';
        out += kWords[rng() % kWords.size()];
    }
    return out;
}

}  // namespace

MultiTurnDataset::MultiTurnDataset(const MultiTurnConfig& config) : config_(config) {
    std::mt19937_64 rng(config.seed);
    const size_t n = static_cast<size_t>(config.num_conversations) * config.num_turns;
    user_messages_.reserve(n);
    for (size_t i = 0; i < n; ++i) user_messages_.push_back(random_words(rng, config.input_len));
    prompts_.resize(n);
}

size_t MultiTurnDataset::index(int conversation, int turn) const {
    CHECK(conversation >= 0 && conversation < config_.num_conversations && turn >= 0 &&
          turn < config_.num_turns)
        << "conversation " << conversation << " turn " << turn;
    return static_cast<size_t>(conversation) * config_.num_turns + turn;
}

const std::string& MultiTurnDataset::user_message(int conversation, int turn) const {
    return user_messages_[index(conversation, turn)];
}

const std::string& MultiTurnDataset::build_prompt(int conversation, int turn,
                                                  const std::string& previous_answer) {
    std::string& out = prompts_[index(conversation, turn)];
    out = turn == 0 ? std::string() : prompt(conversation, turn - 1) + previous_answer;
    out += user_message(conversation, turn);
    return out;
}

const std::string& MultiTurnDataset::prompt(int conversation, int turn) const {
    return prompts_[index(conversation, turn)];
}

}  // namespace hichat::tools::bench
