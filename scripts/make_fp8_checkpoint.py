#!/usr/bin/env python3
"""Writes an FP8 (E4M3) copy of a bf16 Hugging Face checkpoint folder in one of the layouts HiChat
reads, the way the producers write them (torch; run on the GPU machine, or anywhere torch is):

  ct_tensor_static    compressed-tensors FP8: weight_scale [1], input_scale [1] (calibration: amax of
                      a unit-variance activation, i.e. a fixed 4.0 / 448 here: no data is seen)
  ct_channel_dynamic  compressed-tensors FP8_DYNAMIC: weight_scale [N, 1], dynamic per-token activations
  ct_block            compressed-tensors FP8_BLOCK: weight_scale [ceil(N/128), ceil(K/128)]
  hf_block            transformers FineGrainedFP8 (quant_method "fp8"): weight_scale_inv, block [128, 128]

Every linear weight but lm_head becomes q = sat(w / s) with s = amax / 448 per tensor, row or block
(the scale a dequantizing reader multiplies by). Other tensors, the tokenizer and generation files are
copied. Usage: python3 scripts/make_fp8_checkpoint.py LAYOUT IN_DIR OUT_DIR [--scale-dtype f32|bf16]
"""
import argparse
import json
import os
import shutil

import torch
from safetensors.torch import load_file, save_file

FP8_MAX = 448.0
BLOCK = 128


def fp8_args(strategy, dynamic, **extra):
    return dict(num_bits=8, type="float", symmetric=True, strategy=strategy, dynamic=dynamic,
                group_size=None, block_structure=None, actorder=None, observer=None if dynamic else "minmax", **extra)


def quantization_config(layout):
    if layout == "hf_block":
        return dict(quant_method="fp8", fmt="e4m3", activation_scheme="dynamic", weight_block_size=[BLOCK, BLOCK],
                    modules_to_not_convert=["lm_head"])
    if layout == "ct_tensor_static":
        weights, acts = fp8_args("tensor", False), fp8_args("tensor", False)
    elif layout == "ct_channel_dynamic":
        weights, acts = fp8_args("channel", False), fp8_args("token", True)
    else:
        weights = fp8_args("block", False)
        weights["block_structure"] = [BLOCK, BLOCK]
        acts = fp8_args("group", True)
        acts["group_size"] = BLOCK
    return dict(quant_method="compressed-tensors", format="float-quantized", quantization_status="compressed",
                config_groups=dict(group_0=dict(targets=["Linear"], weights=weights, input_activations=acts,
                                                output_activations=None, format="float-quantized")),
                ignore=["lm_head"], kv_cache_scheme=None, sparsity_config={})


def quantize(w, layout):
    """(q fp8 [N, K], dequant scales) for a [N, K] weight."""
    w = w.float()
    n, k = w.shape
    if layout == "ct_tensor_static":
        s = (w.abs().amax() / FP8_MAX).clamp(min=1e-12).reshape(1)
        q = (w / s).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
        return q, s
    if layout == "ct_channel_dynamic":
        s = (w.abs().amax(dim=1, keepdim=True) / FP8_MAX).clamp(min=1e-12)
        q = (w / s).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
        return q, s
    gn, gk = (n + BLOCK - 1) // BLOCK, (k + BLOCK - 1) // BLOCK
    padded = torch.zeros(gn * BLOCK, gk * BLOCK, device=w.device)
    padded[:n, :k] = w
    blocks = padded.reshape(gn, BLOCK, gk, BLOCK)
    s = (blocks.abs().amax(dim=(1, 3)) / FP8_MAX).clamp(min=1e-12)
    q = (blocks / s[:, None, :, None]).clamp(-FP8_MAX, FP8_MAX).reshape(gn * BLOCK, gk * BLOCK)[:n, :k]
    return q.contiguous().to(torch.float8_e4m3fn), s


def convert_file(src, dst, layout, scale_dtype, device):
    tensors = load_file(src, device=device)
    out = {}
    scale_name = "weight_scale_inv" if layout == "hf_block" else "weight_scale"
    for name, t in tensors.items():
        if not name.endswith("_proj.weight"):
            out[name] = t
            continue
        module = name[: -len(".weight")]
        q, s = quantize(t, layout)
        out[name] = q
        out[f"{module}.{scale_name}"] = s.to(scale_dtype)
        if layout == "ct_tensor_static":
            out[f"{module}.input_scale"] = torch.tensor([4.0 / FP8_MAX], dtype=scale_dtype, device=device)
    save_file({k: v.contiguous().cpu() for k, v in out.items()}, dst, metadata={"format": "pt"})
    return {k: os.path.basename(dst) for k in out}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("layout", choices=["ct_tensor_static", "ct_channel_dynamic", "ct_block", "hf_block"])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--scale-dtype", choices=["f32", "bf16"], default="f32")
    args = ap.parse_args()
    scale_dtype = torch.float32 if args.scale_dtype == "f32" else torch.bfloat16
    device = "cuda" if torch.cuda.is_available() else "cpu"
    os.makedirs(args.dst, exist_ok=True)
    files = sorted(f for f in os.listdir(args.src) if f.endswith(".safetensors"))
    weight_map = {}
    for f in files:
        weight_map.update(convert_file(os.path.join(args.src, f), os.path.join(args.dst, f), args.layout, scale_dtype,
                                       device))
    with open(os.path.join(args.src, "config.json")) as fh:
        config = json.load(fh)
    config["quantization_config"] = quantization_config(args.layout)
    with open(os.path.join(args.dst, "config.json"), "w") as fh:
        json.dump(config, fh, indent=2)
    if os.path.exists(os.path.join(args.src, "model.safetensors.index.json")):
        with open(os.path.join(args.dst, "model.safetensors.index.json"), "w") as fh:
            json.dump({"metadata": {}, "weight_map": weight_map}, fh, indent=2)
    for f in os.listdir(args.src):
        if f.endswith(".safetensors") or f in ("config.json", "model.safetensors.index.json"):
            continue
        path = os.path.join(args.src, f)
        if os.path.isfile(path):
            shutil.copy(path, args.dst)
    print(f"{args.dst}: {args.layout}, {len(weight_map)} tensors in {len(files)} files")


if __name__ == "__main__":
    main()
