"""The peer in the same run: transformers generate() (greedy, bf16, sdpa, default dynamic cache) on the
same checkpoint and shapes as `hichat bench engine`. Prints one JSON line per setting with the fields of
bench/results (engine, batch, prompt_len, output_len, ms_per_token, output_tok_s, ttft_ms).
Usage: python3 bench/transformers_generate.py CHECKPOINT_DIR BATCH:PROMPT:OUTPUT [...]
An OUTPUT of 1 measures the time to the first token of the prompt (prefill + one token)."""
import json
import sys
import time

import torch
from transformers import AutoModelForCausalLM


def timed(fn):
    torch.cuda.synchronize()
    t = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t


def main():
    model_dir, settings = sys.argv[1], sys.argv[2:]
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16, attn_implementation="sdpa")
    model = model.cuda().eval()
    vocab = model.config.vocab_size
    for setting in settings:
        batch, prompt, output = (int(v) for v in setting.split(":"))
        ids = torch.randint(0, vocab, (batch, prompt), device="cuda")
        gen = lambda n: model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                                       min_new_tokens=n, do_sample=False, pad_token_id=0)
        with torch.inference_mode():
            gen(2)  # warm-up
            first = timed(lambda: gen(1))
            total = timed(lambda: gen(output)) if output > 1 else first
        decode = max(total - first, 1e-9)
        print(json.dumps({"engine": "transformers-generate", "model": model_dir, "batch": batch,
                          "prompt_len": prompt, "output_len": output, "ttft_ms": first * 1e3,
                          "ms_per_token": decode / max(output - 1, 1) * 1e3,
                          "output_tok_s": batch * output / total}), flush=True)


if __name__ == "__main__":
    main()
