#!/usr/bin/env python3
"""PyTorch peer of bench/torchstep.go: same shapes, same initial values, same
threads. Prints one JSON object {workload: seconds per step (min of runs)}.

Usage: /usr/bin/python3 bench/torch_peer.py THREADS WARMUP RUNS
"""
import json
import math
import sys
import time

import torch

threads, warmup, runs = (int(a) for a in sys.argv[1:4])
torch.set_num_threads(threads)


def det(n, a, b, scale):
    return torch.tensor([scale * math.sin(a * i + b) for i in range(n)], dtype=torch.float32)


def mlp():
    B, I, H, O = 256, 512, 2048, 512
    dims = [(I, H), (H, H), (H, O)]
    ws, bs = [], []
    for i, (din, dout) in enumerate(dims):
        ws.append(det(din * dout, 0.37 + i, 0.1, 1 / math.sqrt(din)).reshape(dout, din).requires_grad_())
        bs.append(det(dout, 1.3, float(i), 0.01).requires_grad_())
    x = det(B * I, 0.11, 0.2, 1).reshape(B, I)
    y = det(B * O, 0.23, 0.4, 1).reshape(B, O)
    opt = torch.optim.AdamW(ws + bs, lr=1e-4, weight_decay=0.01, foreach=False)

    def step():
        opt.zero_grad()
        h = x
        for i in range(3):
            h = torch.nn.functional.linear(h, ws[i], bs[i])
            if i < 2:
                h = torch.nn.functional.gelu(h)
        loss = ((h - y) ** 2).mean()
        loss.backward()
        opt.step()

    return step


def attention():
    B, T, D, NH, F, L = 8, 128, 256, 4, 1024, 2
    hd = D // NH
    params, layers = [], []
    for l in range(L):
        def mk(k, out, inp):
            return det(out * inp, 0.31 + 0.07 * k + l, 0.5, 1 / math.sqrt(inp)).reshape(out, inp).requires_grad_()
        n1 = torch.ones(D, requires_grad=True)
        n2 = torch.ones(D, requires_grad=True)
        wq, wk, wv, wo = (mk(i, D, D) for i in range(4))
        w1, w2 = mk(4, F, D), mk(5, D, F)
        layers.append((n1, wq, wk, wv, wo, n2, w1, w2))
        params += [n1, n2, wq, wk, wv, wo, w1, w2]
    x = det(B * T * D, 0.13, 0.3, 1).reshape(B, T, D)
    mask = torch.full((T, T), float("-inf")).triu(1)
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, foreach=False)
    scale = 1 / math.sqrt(hd)
    F_ = torch.nn.functional

    def rms(h, w):
        return h * torch.rsqrt((h * h).mean(-1, keepdim=True) + 1e-6) * w

    def heads(t):
        return t.view(B, T, NH, hd).transpose(1, 2)

    def step():
        opt.zero_grad()
        h = x
        for n1, wq, wk, wv, wo, n2, w1, w2 in layers:
            a = rms(h, n1)
            q, k, v = heads(F_.linear(a, wq)), heads(F_.linear(a, wk)), heads(F_.linear(a, wv))
            att = (q @ k.transpose(2, 3)) * scale + mask
            o = (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D)
            h = h + F_.linear(o, wo)
            h = h + F_.linear(F_.gelu(F_.linear(rms(h, n2), w1)), w2)
        loss = (h * h).mean()
        loss.backward()
        opt.step()

    return step


def timeit(step):
    for _ in range(warmup):
        step()
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - t0)
    return best


out = {"mlp_step": timeit(mlp()), "attention_step": timeit(attention()), "torch": torch.__version__}
print(json.dumps(out))
