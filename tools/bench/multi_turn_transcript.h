// --mt-transcript: what a multi-turn run sent and got, one JSON line per turn that was sent, in
// conversation-major order: {conversation, turn, success, prompt, answer, prompt_tokens, cached_tokens,
// start_ms, ttft_ms, e2el_ms} (the token counts are the server's usage, null when not reported).
// Lets a reader check that each prompt carries the history it should.
#pragma once

#include <string>

#include "base/status.h"
#include "bench/load_generator.h"
#include "bench/multi_turn_dataset.h"

namespace hichat::tools::bench {

// `load` is the run_conversations() result for `dataset`. Overwrites `path`; an error names the flag.
Status write_multi_turn_transcript(const std::string& path, const MultiTurnDataset& dataset,
                                   const LoadResult& load);

}  // namespace hichat::tools::bench
