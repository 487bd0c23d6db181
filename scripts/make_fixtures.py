#!/usr/bin/env python3
"""Makes the tiny random checkpoints and transformers-golden outputs under tests/fixtures/.

Needs torch and transformers (the GPU machine has them). For each case it saves a bf16 Hugging Face
folder, then reloads it in float32 (the same stored bf16 values, upcast) and records, computed by
transformers on the CPU in fp32 with eager attention:
  logits_<n>.bin   float32 little-endian [n x vocab] for the ids in golden.json "ids_<n>"
  golden.json      {"ids_40": [...], "ids_300": [...], "prompt": [...], "greedy": [...]}
Norm weights and biases are made far from their defaults so that a missing one fails the test.

Usage: python3 scripts/make_fixtures.py OUT_DIR
"""
import json
import os
import sys

import torch
import transformers
from transformers import (AutoModelForCausalLM, LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config)

VOCAB = 320
# Head dims are 64 or 128 so that the same fixtures run on the CUDA kernels.
COMMON = dict(vocab_size=VOCAB, intermediate_size=160, num_hidden_layers=2, max_position_embeddings=2048,
              rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)


def cases():
    # GQA 2:1, head_dim 64 given (hidden / heads would be 16).
    yield "llama3", LlamaConfig(**COMMON, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                                rope_parameters=dict(rope_type="llama3", rope_theta=500000.0, factor=8.0,
                                                     low_freq_factor=1.0, high_freq_factor=4.0,
                                                     original_max_position_embeddings=64),
                                tie_word_embeddings=False)
    # Tied embeddings, GQA 4:1, head_dim 64 != hidden / heads.
    yield "llama_tied", LlamaConfig(**COMMON, hidden_size=64, num_attention_heads=4, num_key_value_heads=1,
                                    head_dim=64, tie_word_embeddings=True,
                                    rope_parameters=dict(rope_type="linear", rope_theta=10000.0, factor=2.0))
    # q/k/v biases; head_dim derived: 128 / 2.
    yield "qwen2", Qwen2Config(**COMMON, hidden_size=128, num_attention_heads=2, num_key_value_heads=1,
                               rope_parameters=dict(rope_type="default", rope_theta=1000000.0),
                               tie_word_embeddings=False)
    # q/k norms, head_dim 128.
    yield "qwen3", Qwen3Config(**COMMON, hidden_size=64, num_attention_heads=2, num_key_value_heads=1, head_dim=128,
                               rope_parameters=dict(rope_type="default", rope_theta=1000000.0),
                               tie_word_embeddings=False)
    # head_dim derived: 128 / 2; no GQA.
    yield "mistral", MistralConfig(**COMMON, hidden_size=128, num_attention_heads=2, num_key_value_heads=2,
                                   head_dim=None, rope_parameters=dict(rope_type="default", rope_theta=10000.0),
                                   sliding_window=None, tie_word_embeddings=False)


def randomize(model, gen):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.5 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias"):
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.15 * torch.randn(p.shape, generator=gen))


def to_old_rope_spelling(path):
    """Rewrites config.json from rope_parameters to rope_theta + rope_scaling (older files)."""
    with open(path) as f:
        cfg = json.load(f)
    rp = cfg.pop("rope_parameters")
    cfg["rope_theta"] = rp.pop("rope_theta")
    cfg["rope_scaling"] = None if rp.get("rope_type") == "default" else rp
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)


def make_case(name, config, out_dir, seed):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    config.torch_dtype = torch.bfloat16
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    randomize(model, gen)
    model = model.to(torch.bfloat16)
    case_dir = os.path.join(out_dir, name)
    model.save_pretrained(case_dir, safe_serialization=True)
    for extra in ("generation_config.json",):
        p = os.path.join(case_dir, extra)
        if os.path.exists(p):
            os.remove(p)

    ref = AutoModelForCausalLM.from_pretrained(case_dir, dtype=torch.float32, attn_implementation="eager")
    ref.eval()
    golden = {"transformers": transformers.__version__, "torch": torch.__version__}
    with torch.no_grad():
        for n in (40, 300):
            ids = torch.randint(3, VOCAB, (1, n), generator=gen)
            logits = ref(ids).logits[0].float().contiguous()
            logits.numpy().astype("<f4").tofile(os.path.join(case_dir, f"logits_{n}.bin"))
            golden[f"ids_{n}"] = ids[0].tolist()
        prompt = torch.randint(3, VOCAB, (1, 12), generator=gen)
        out = ref.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                           max_new_tokens=40, min_new_tokens=40, eos_token_id=None, pad_token_id=0)
        golden["prompt"] = prompt[0].tolist()
        golden["greedy"] = out[0, prompt.shape[1]:].tolist()
    with open(os.path.join(case_dir, "golden.json"), "w") as f:
        json.dump(golden, f)
    if name in ("qwen2", "mistral", "llama3"):
        to_old_rope_spelling(os.path.join(case_dir, "config.json"))
    print(name, "ok", sorted(os.listdir(case_dir)), flush=True)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures"
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(8)
    for i, (name, config) in enumerate(cases()):
        make_case(name, config, out_dir, seed=1234 + i)


if __name__ == "__main__":
    main()
