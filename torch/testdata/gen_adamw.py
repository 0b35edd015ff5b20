#!/usr/bin/env python3
"""Writes adamw_ref.json: 50 AdamW steps of a small regression in PyTorch.

Run with Debian's python3-torch:  /usr/bin/python3 internal/torch/testdata/gen_adamw.py
The Go test (optim_test.go) builds the same problem from the same formulas
and must reproduce the losses and final parameters.
"""
import json
import math
import os

import torch

torch.set_num_threads(1)


def fill(n, a, b):
    # deterministic values: sin(a*i + b), i = 0..n-1, rounded to float32
    return [math.sin(a * i + b) for i in range(n)]


X = torch.tensor(fill(8 * 4, 0.7, 0.1), dtype=torch.float32).reshape(8, 4)
Y = torch.tensor(fill(8 * 3, 1.3, 0.5), dtype=torch.float32).reshape(8, 3)
W = torch.tensor(fill(4 * 3, 0.9, 0.2), dtype=torch.float32).reshape(4, 3).requires_grad_(True)
B = torch.tensor(fill(3, 2.1, 0.3), dtype=torch.float32).requires_grad_(True)

opt = torch.optim.AdamW([W, B], lr=0.01, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1, foreach=False)
losses = []
for step in range(50):
    opt.zero_grad()
    loss = ((X @ W + B - Y) ** 2).mean()
    loss.backward()
    opt.step()
    losses.append(loss.item())

out = {
    "torch_version": torch.__version__,
    "losses": losses,
    "W": W.detach().reshape(-1).tolist(),
    "B": B.detach().reshape(-1).tolist(),
}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "adamw_ref.json"), "w") as f:
    json.dump(out, f, indent=1)
