#!/usr/bin/python3
"""Runs several family references in one process (one torch import).

Usage: /usr/bin/python3 ref_run.py INPUTS_JSON FAMILY MODEL_DIR OUT_PREFIX [FAMILY MODEL_DIR OUT_PREFIX ...]

FAMILY is qwen2, llama or qwen3 (parity_ref.py, ref_llama.py, ref_qwen3.py).
"""
import sys

import parity_ref
import ref_llama
import ref_qwen3

CLASSES = {"qwen2": parity_ref.Qwen2, "llama": ref_llama.Llama, "qwen3": ref_qwen3.Qwen3}

if __name__ == "__main__":
    inputs, rest = sys.argv[1], sys.argv[2:]
    if not rest or len(rest) % 3:
        sys.exit(__doc__)
    for i in range(0, len(rest), 3):
        parity_ref.run(CLASSES[rest[i]], rest[i + 1], inputs, rest[i + 2])
