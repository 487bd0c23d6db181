#!/usr/bin/env python3
"""Makes a random-weight bf16 Llama checkpoint shaped like models/default but with another head_dim
(default 32, which the CUDA kernels do not have), with the default model's tokenizer files beside it,
so that every hichat command runs on it. Python's standard library only (no numpy, no torch).

Usage: /usr/bin/python3 scripts/make_head_dim_checkpoint.py OUT_DIR [HEAD_DIM] [BASE_MODEL_DIR]
BASE_MODEL_DIR defaults to models/default (its config.json gives every other field).

On a GPU machine (issue 16, item 2), with a CUDA build of hichat on PATH:
  python3 scripts/make_head_dim_checkpoint.py /tmp/hd32
  hichat score --model /tmp/hd32 --ids 1,2,3 --out /tmp/hd32.bin --device auto; echo "rc=$?"
    -> rc=0, stderr: hichat score: device auto: using the CPU: the CUDA backend needs head_dim 64, 80, 96,
       128 or 256, this model has 32
  hichat score --model /tmp/hd32 --ids 1,2,3 --out /tmp/hd32.bin --device cuda; echo "rc=$?"
    -> rc=2, stderr: hichat score: --device cuda: the CUDA backend needs head_dim 64, 80, 96, 128 or 256,
       this model has 32
  hichat generate --model /tmp/hd32 --prompt "Once upon a time" --max-tokens 16 --device auto
"""
import json
import math
import os
import random
import shutil
import struct
import sys
from array import array

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_bench_checkpoint import tensor_shapes  # noqa: E402 (the same Llama tensor names and shapes)

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "generation_config.json", "tokenizer.model",
                   "special_tokens_map.json")


def bf16_bits(x):
    """A float -> its bf16 bit pattern, rounded to nearest even."""
    (bits,) = struct.unpack("<I", struct.pack("<f", x))
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


POOL_VALUES = 1 << 20   # random matrix values, reused cyclically (from a random start per tensor)


def write_safetensors(c, path):
    rng = random.Random(0)
    pool = array("H", (bf16_bits(rng.gauss(0.0, 0.05)) for _ in range(POOL_VALUES)))
    if sys.byteorder != "little":
        pool.byteswap()
    pool_bytes = pool.tobytes()
    shapes = list(tensor_shapes(c))
    header, offset = {}, 0
    for name, shape in shapes:
        n = math.prod(shape) * 2
        header[name] = dict(dtype="BF16", shape=list(shape), data_offsets=[offset, offset + n])
        offset += n
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for name, shape in shapes:
            if len(shape) == 1:   # norm weights near 1
                f.write(struct.pack(f"<{shape[0]}H", *(bf16_bits(1.0 + rng.gauss(0.0, 0.1)) for _ in range(shape[0]))))
                continue
            left = math.prod(shape) * 2
            at = 2 * rng.randrange(POOL_VALUES)
            while left > 0:
                part = pool_bytes[at:at + left]
                f.write(part)
                left -= len(part)
                at = 0


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out_dir = sys.argv[1]
    head_dim = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    base = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(__file__), "..", "models", "default")
    with open(os.path.join(base, "config.json")) as f:
        c = json.load(f)
    c["head_dim"] = head_dim
    c["dtype"] = "bfloat16"
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    write_safetensors(c, os.path.join(out_dir, "model.safetensors"))
    for name in TOKENIZER_FILES:
        if os.path.exists(os.path.join(base, name)):
            shutil.copy(os.path.join(base, name), out_dir)
    print(f"{out_dir}: {c['num_hidden_layers']} layers, {c['num_attention_heads']}/{c['num_key_value_heads']} "
          f"heads x head_dim {head_dim}, hidden {c['hidden_size']}, vocab {c['vocab_size']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
