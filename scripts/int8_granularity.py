#!/usr/bin/python3
"""int8 weights per channel against per block of 32, side by side, on a trained model's held-out text.

Usage: /usr/bin/python3 scripts/int8_granularity.py HICHAT MODEL_DIR GOLDEN_JSON WORK_DIR
  HICHAT       the hichat binary (its `score` command)
  MODEL_DIR    a bf16 checkpoint of one safetensors file (models/default)
  GOLDEN_JSON  tests/fixtures/default_model_golden.json: heldout.windows (token ids) and transformers'
               mean NLL over them
  WORK_DIR     where the dequantized checkpoints and logits go

Every linear of the decoder layers (q, k, v, o, gate, up, down) is quantized to symmetric int8 codes
two ways: one f32 scale per output row (what `--quantization int8` does: absmax / 127, half away from
zero) and one f16 scale per block of 32 inputs (absmax / 127 rounded to f16, the codes from that
scale). Each is written back dequantized as an f32 checkpoint, so that `hichat score` runs it with f32
activations: the two differ only in the weights' granularity. Also scored: the bf16 checkpoint itself
`--quantization int8` (per-channel weights with the activations quantized to int8 per token, the
kernels HiChat runs) and, for scale, `--quantization q4`. Prints per configuration the mean next-token NLL over the held-out windows and
its difference from the bf16 run, the mean KL divergence of its next-token distributions from the bf16
run's, how often its top-1 token is the bf16 run's, and its weight bytes per element.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np

from make_int_checkpoint import read_safetensors, to_f32, write_safetensors

LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def round_half_away(x):
    return np.trunc(x + np.copysign(0.5, x))


def per_channel(w):
    amax = np.abs(w).max(axis=1, keepdims=True)
    scale = np.where(amax > 0, amax / np.float32(127), np.float32(1)).astype(np.float32)
    codes = round_half_away(np.clip(w / scale, -127, 127))
    return (codes * scale).astype(np.float32)


def per_block32(w):
    n, k = w.shape
    if k % 32:
        raise SystemExit(f"k = {k} is not a multiple of 32")
    blocks = w.reshape(n, k // 32, 32)
    amax = np.abs(blocks).max(axis=2, keepdims=True)
    scale = (amax / np.float32(127)).astype(np.float16).astype(np.float32)
    scale = np.where(scale > 0, scale, np.float32(1))
    codes = round_half_away(np.clip(blocks / scale, -127, 127))
    return (codes * scale).reshape(n, k).astype(np.float32)


def dequantized_checkpoint(model_dir, tensors, quantize, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(model_dir):
        if not name.endswith(".safetensors"):
            shutil.copy(os.path.join(model_dir, name), out_dir)
    out = {}
    for name, t in tensors.items():
        w = quantize(t) if t.ndim == 2 and any(p in name for p in LINEARS) else t
        out[name] = ("F32", w.shape, np.ascontiguousarray(w, np.float32).tobytes())
    write_safetensors(os.path.join(out_dir, "model.safetensors"), out)
    return out_dir


def log_softmax(logits):
    top = logits.max(axis=1, keepdims=True)
    return logits - top - np.log(np.exp(logits - top).sum(axis=1, keepdims=True))


def score(hichat, model_dir, windows, vocab, work, flags):
    """The log-probabilities [positions, vocab] of every window, and the mean next-token NLL."""
    logp, nll = [], []
    for i, ids in enumerate(windows):
        out = os.path.join(work, f"logits_{i}.bin")
        subprocess.run([hichat, "score", "--model", model_dir, "--ids", ",".join(map(str, ids)), "--out", out,
                        "--device", "cpu"] + flags, check=True, capture_output=True)
        lp = log_softmax(np.fromfile(out, dtype=np.float32).reshape(len(ids), vocab).astype(np.float64))
        logp.append(lp)
        nll.append(float(-np.mean(lp[np.arange(len(ids) - 1), ids[1:]])))
    return logp, float(np.mean(nll))


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    hichat, model_dir, golden_path, work = sys.argv[1:]
    golden = json.load(open(golden_path))["heldout"]
    windows = golden["windows"]
    vocab = json.load(open(os.path.join(model_dir, "config.json")))["vocab_size"]
    files = [f for f in os.listdir(model_dir) if f.endswith(".safetensors")]
    if len(files) != 1:
        raise SystemExit(f"{model_dir}: expected one safetensors file, found {len(files)}")
    tensors = {name: to_f32(*stored) for name, stored in read_safetensors(os.path.join(model_dir, files[0])).items()}
    os.makedirs(work, exist_ok=True)
    channel_dir = dequantized_checkpoint(model_dir, tensors, per_channel, os.path.join(work, "per_channel"))
    block_dir = dequantized_checkpoint(model_dir, tensors, per_block32, os.path.join(work, "per_block32"))
    runs = [("bf16 checkpoint", model_dir, [], "2"),
            ("int8 per channel, weights only (f32 activations)", channel_dir, [], "1 + 4/k"),
            ("int8 per block of 32, f16 scales, weights only", block_dir, [], "1.0625"),
            ("--quantization int8 (per channel, int8 activations per token)", model_dir, ["--quantization", "int8"],
             "1 + 4/k"),
            ("--quantization q4 (4-bit per 32, f16 scales; lm_head int8 unless tied)", model_dir,
             ["--quantization", "q4"], "0.5625")]
    print(f"{len(windows)} held-out windows of {len(windows[0])} tokens; transformers fp32 mean NLL "
          f"{golden['mean_nll']:.5f}")
    base = None
    print(f"{'configuration':<72} {'mean NLL':>9} {'vs bf16':>9} {'KL(bf16||q)':>12} {'top-1 = bf16':>12}  bytes/weight")
    for label, path, flags, bytes_per_weight in runs:
        logp, nll = score(hichat, path, windows, vocab, work, flags)
        base = (logp, nll) if base is None else base
        kl = np.mean([np.mean(np.sum(np.exp(b) * (b - q), axis=1)) for b, q in zip(base[0], logp)])
        top1 = np.mean([np.mean(np.argmax(b, axis=1) == np.argmax(q, axis=1)) for b, q in zip(base[0], logp)])
        print(f"{label:<72} {nll:9.5f} {nll - base[1]:+9.5f} {kl:12.3e} {top1:12.4f}  {bytes_per_weight}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
