#!/usr/bin/env python3
"""Writes an integer-quantized copy of a bf16 / f16 / f32 Hugging Face checkpoint folder in one of the
layouts users download, packed as the formats' specifications give them (numpy only: runs here and on
the GPU machine), for benchmarks of real shapes (tests use tests/model/int_checkpoint_writer, which
writes the same layouts from known integers):

  gptq       quant_method "gptq", 4-bit, group 128, sym, desc_act false, checkpoint_format "gptq" (v1):
             qweight I32 [K/8, N] packed along K, qzeros I32 [K/128, N/8] (zero - 1 = 7), scales F16
             [K/128, N], g_idx I32 [K]; scale = 2 max|w| / 15, q = clamp(round(w / scale) + 8, 0, 15)
  awq        quant_method "awq", 4-bit, group 128, zero_point, version "gemm": qweight I32 [K, N/8] and
             qzeros I32 [K/128, N/8] packed along N in nibble order 0 2 4 6 1 3 5 7, scales F16; scale =
             (max - min) / 15, zero = clamp(round(-min / scale), 0, 15)
  ct_w4a16   compressed-tensors pack-quantized, int4 symmetric, group 128: weight_packed I32
             [N, K/8] (value + 8 along K), weight_scale BF16 [N, K/128], weight_shape I64 [2];
             scale = 2 max|w| / 15, value = clamp(round(w / scale), -8, 7)
  ct_w8a8    compressed-tensors int-quantized, int8 per channel, dynamic per-token activations:
             weight I8 [N, K], weight_scale BF16 [N, 1]; scale = max|w| / 127

Every linear weight "*_proj.weight" is quantized (round to nearest, no calibration); embeddings,
norms and lm_head are copied as stored, and so are the tokenizer and generation files.
Usage: /usr/bin/python3 scripts/make_int_checkpoint.py LAYOUT IN_DIR OUT_DIR
"""
import glob
import json
import os
import shutil
import struct
import sys

import numpy as np

GROUP = 128
AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]   # the output column at nibble j of an AWQ word


def read_safetensors(path):
    """{name: (dtype string, shape, raw bytes)} of one file."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, v in header.items():
        if name == "__metadata__":
            continue
        b, e = v["data_offsets"]
        out[name] = (v["dtype"], v["shape"], data[b:e])
    return out


def to_f32(dtype, shape, raw):
    if dtype == "BF16":
        return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
    if dtype == "F16":
        return np.frombuffer(raw, np.float16).astype(np.float32).reshape(shape)
    if dtype == "F32":
        return np.frombuffer(raw, np.float32).reshape(shape)
    raise SystemExit(f"{dtype} weights: this script quantizes BF16, F16 or F32 checkpoints")


def to_bf16_bytes(x):
    """Round to nearest even, as torch does."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16).tobytes()


def pack_rows(values, axis):
    """uint32 codes 0..15 packed 8 per int32 along `axis` (element 8 i + j at bits 4 j of word i)."""
    v = np.moveaxis(values.astype(np.uint32), axis, -1)
    v = v.reshape(v.shape[:-1] + (v.shape[-1] // 8, 8))
    words = np.zeros(v.shape[:-1], np.uint32)
    for j in range(8):
        words |= v[..., j] << np.uint32(4 * j)
    return np.moveaxis(words, -1, axis).view(np.int32)


def grouped(w):
    n, k = w.shape
    assert k % GROUP == 0, f"in_features {k} is not a multiple of {GROUP}"
    return w.reshape(n, k // GROUP, GROUP)


def gptq(w):
    g = grouped(w)
    scale = (2 * np.abs(g).max(axis=2) / 15).astype(np.float16)          # [N, G]
    s = np.where(scale == 0, np.float16(1), scale).astype(np.float32)[..., None]
    q = np.clip(np.rint(g / s) + 8, 0, 15).reshape(w.shape)               # [N, K]
    n, k = w.shape
    zeros = np.full((k // GROUP, n), 7, np.uint32)                        # v1 stores zero - 1
    return {"qweight": ("I32", pack_rows(q.T, 0)), "qzeros": ("I32", pack_rows(zeros, 1)),
            "scales": ("F16", np.ascontiguousarray(scale.T)), "g_idx": ("I32", (np.arange(k) // GROUP).astype(np.int32))}


def awq_interleave(values):
    """[rows, N] codes -> [rows, N] with each 8 columns in AWQ's nibble order."""
    v = values.reshape(values.shape[0], -1, 8)
    return v[:, :, AWQ_ORDER].reshape(values.shape)


def awq(w):
    g = grouped(w)
    lo, hi = g.min(axis=2), g.max(axis=2)
    scale = ((hi - lo) / 15).astype(np.float16)
    s = np.where(scale == 0, np.float16(1), scale).astype(np.float32)
    zero = np.clip(np.rint(-lo / s), 0, 15)
    q = np.clip(np.rint(g / s[..., None]) + zero[..., None], 0, 15).reshape(w.shape)
    return {"qweight": ("I32", pack_rows(awq_interleave(q.T), 1)),
            "qzeros": ("I32", pack_rows(awq_interleave(zero.T), 1)),
            "scales": ("F16", np.ascontiguousarray(scale.T))}


def ct_w4a16(w):
    g = grouped(w)
    scale = to_bf16_bytes(2 * np.abs(g).max(axis=2) / 15)
    s = (np.frombuffer(scale, np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(g.shape[:2])
    s = np.where(s == 0, 1, s)
    v = np.clip(np.rint(g / s[..., None]), -8, 7).reshape(w.shape)
    return {"weight_packed": ("I32", pack_rows(v + 8, 1)), "weight_scale": ("BF16", scale, list(g.shape[:2])),
            "weight_shape": ("I64", np.array(w.shape, np.int64))}


def ct_w8a8(w):
    scale = to_bf16_bytes(np.abs(w).max(axis=1) / 127)
    s = (np.frombuffer(scale, np.uint16).astype(np.uint32) << 16).view(np.float32)
    s = np.where(s == 0, 1, s)
    q = np.clip(np.rint(w / s[:, None]), -127, 127).astype(np.int8)
    return {"weight": ("I8", q), "weight_scale": ("BF16", scale, [w.shape[0], 1])}


def ct_config(fmt, weights, acts):
    return {"quant_method": "compressed-tensors", "format": fmt, "quantization_status": "compressed",
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights, "input_activations": acts,
                                          "output_activations": None, "format": fmt}},
            "ignore": ["lm_head"], "kv_cache_scheme": None, "sparsity_config": {}}


def int_args(bits, strategy, symmetric, group=None):
    return {"num_bits": bits, "type": "int", "symmetric": symmetric, "strategy": strategy, "group_size": group,
            "dynamic": False, "actorder": None, "observer": "minmax"}


LAYOUTS = {
    "gptq": (gptq, {"quant_method": "gptq", "bits": 4, "group_size": GROUP, "desc_act": False, "sym": True,
                    "checkpoint_format": "gptq", "damp_percent": 0.01, "true_sequential": True, "static_groups": False}),
    "awq": (awq, {"quant_method": "awq", "bits": 4, "group_size": GROUP, "zero_point": True, "version": "gemm",
                  "modules_to_not_convert": None}),
    "ct_w4a16": (ct_w4a16, ct_config("pack-quantized", int_args(4, "group", True, GROUP), None)),
    "ct_w8a8": (ct_w8a8, ct_config("int-quantized", int_args(8, "channel", True),
                                   {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token",
                                    "dynamic": True})),
}


def write_safetensors(path, tensors):
    """tensors: {name: (dtype, shape, bytes)}."""
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in LAYOUTS:
        raise SystemExit(__doc__)
    layout, src, dst = sys.argv[1:]
    quantize, qconfig = LAYOUTS[layout]
    os.makedirs(dst, exist_ok=True)
    tensors = {}
    for path in sorted(glob.glob(os.path.join(src, "*.safetensors"))):
        tensors.update(read_safetensors(path))
    out = {}
    for name, (dtype, shape, raw) in tensors.items():
        if not (name.endswith("_proj.weight") and len(shape) == 2):
            out[name] = (dtype, shape, raw)
            continue
        module = name[: -len(".weight")]
        for part, value in quantize(to_f32(dtype, shape, raw)).items():
            kind, data = value[0], value[1]
            part_shape = value[2] if len(value) == 3 else list(data.shape)
            raw_part = data if isinstance(data, bytes) else np.ascontiguousarray(data).tobytes()
            out[f"{module}.{part}"] = (kind, part_shape, raw_part)
    write_safetensors(os.path.join(dst, "model.safetensors"), out)
    with open(os.path.join(src, "config.json")) as f:
        config = json.load(f)
    config["quantization_config"] = qconfig
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    for extra in ("tokenizer.json", "tokenizer_config.json", "generation_config.json", "special_tokens_map.json"):
        if os.path.exists(os.path.join(src, extra)):
            shutil.copy(os.path.join(src, extra), dst)
    print(f"wrote {dst} ({layout})")


if __name__ == "__main__":
    main()
