#!/usr/bin/env python3
"""Compares `hichat score` logits files with transformers' logits of the same ids (fp32, on the GPU
when there is one) and with each other: relative error ||a - b|| / ||b|| and top-1 agreement per file.

Usage: python3 scripts/compare_logits.py MODEL_DIR IDS LABEL=FILE [LABEL=FILE ...]
IDS as given to `hichat score --ids` (comma-separated). Needs torch and transformers (the GPU machine).
Prints one line per file against transformers, then each file against the first one.
"""
import sys

import numpy as np
import torch
from transformers import AutoModelForCausalLM


def stats(a, b):
    rel = float(np.linalg.norm(a - b) / np.linalg.norm(b))
    top1 = float(np.mean(np.argmax(a, axis=1) == np.argmax(b, axis=1)))
    return rel, top1


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    model_dir, ids = sys.argv[1], [int(x) for x in sys.argv[2].split(",")]
    files = [arg.split("=", 1) for arg in sys.argv[3:]]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(device).eval()
    with torch.no_grad():
        ref = model(torch.tensor([ids], device=device)).logits[0].float().cpu().numpy()
    got = {}
    for label, path in files:
        got[label] = np.fromfile(path, dtype="<f4").reshape(len(ids), -1)
        rel, top1 = stats(got[label], ref)
        print(f"{label} vs transformers: relative error {rel:.3e}, top-1 {top1:.4f}")
    first = files[0][0]
    for label, _ in files[1:]:
        rel, top1 = stats(got[label], got[first])
        print(f"{label} vs {first}: relative error {rel:.3e}, top-1 {top1:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
