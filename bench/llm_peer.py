#!/usr/bin/python3
"""PyTorch-eager peer of ragen's llm benchmarks (BenchmarkDecode, BenchmarkTrainStep).

Model: Qwen2 architecture, vocab 8192, hidden 256, 4 layers, 4 heads, 4 KV
heads, intermediate 1024, untied head (8,393,984 parameters), float32.
Decode: batch 8, prompt 128 random ids, 256 new tokens, greedy, preallocated
KV cache, torch.inference_mode. Train step: batch 8 x 256, next-token
cross-entropy, backward, AdamW(lr 1e-4). Also a 2048^2 fp32 matmul for the
peak. Threads: NT (default 2). Prints one JSON line.

Usage: NT=2 OMP_NUM_THREADS=2 /usr/bin/python3 bench/llm_peer.py [decode|train|all]
"""
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

V, E, L, H, KV, I = 8192, 256, 4, 4, 4, 1024
D = E // H
THETA, EPS = 1000000.0, 1e-6


class RMSNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS))


def rot(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = RMSNorm(E), RMSNorm(E)
        self.q = nn.Linear(E, H * D)
        self.k = nn.Linear(E, KV * D)
        self.v = nn.Linear(E, KV * D)
        self.o = nn.Linear(H * D, E, bias=False)
        self.gate = nn.Linear(E, I, bias=False)
        self.up = nn.Linear(E, I, bias=False)
        self.down = nn.Linear(I, E, bias=False)

    def forward(self, x, cos, sin, mask, cache=None, start=0):
        B, T, _ = x.shape
        h = self.ln1(x)
        q = self.q(h).view(B, T, H, D).transpose(1, 2)
        k = self.k(h).view(B, T, KV, D).transpose(1, 2)
        v = self.v(h).view(B, T, KV, D).transpose(1, 2)
        q = q * cos + rot(q) * sin
        k = k * cos + rot(k) * sin
        if cache is not None:
            kc, vc = cache
            kc[:, :, start:start + T] = k
            vc[:, :, start:start + T] = v
            k, v = kc[:, :, :start + T], vc[:, :, :start + T]
        s = (q @ k.transpose(2, 3)) / math.sqrt(D)
        if mask is not None:
            s = s + mask
        a = torch.softmax(s, dim=-1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(B, T, E))
        h = self.ln2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, E)
        self.layers = nn.ModuleList([Layer() for _ in range(L)])
        self.norm = RMSNorm(E)
        self.head = nn.Linear(E, V, bias=False)
        inv = 1.0 / (THETA ** (torch.arange(0, D, 2).float() / D))
        ang = torch.arange(4096).float()[:, None] * inv[None]
        emb = torch.cat([ang, ang], -1)
        self.cos, self.sin = emb.cos(), emb.sin()

    def forward(self, ids, start=0, caches=None, last_only=False):
        B, T = ids.shape
        x = self.embed(ids)
        cos = self.cos[start:start + T][None, None]
        sin = self.sin[start:start + T][None, None]
        mask = None
        if T > 1:
            mask = torch.full((T, start + T), float("-inf")).triu(start + 1)
        for i, l in enumerate(self.layers):
            x = l(x, cos, sin, mask, None if caches is None else caches[i], start)
        if last_only:
            x = x[:, -1:]
        return self.head(self.norm(x))


def decode(m, B=8, P=128, N=256):
    torch.manual_seed(0)
    ids = torch.randint(0, V, (B, P))
    with torch.inference_mode():
        caches = [(torch.zeros(B, KV, P + N, D), torch.zeros(B, KV, P + N, D)) for _ in range(L)]
        t0 = time.perf_counter()
        logits = m(ids, 0, caches, last_only=True)
        for step in range(N):
            nxt = logits[:, -1].argmax(-1, keepdim=True)
            if step == N - 1:
                break
            logits = m(nxt, P + step, caches, last_only=True)
        dt = time.perf_counter() - t0
    return B * N / dt


def train(m, B=8, T=256, steps=5, warm=2):
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    torch.manual_seed(0)
    ids = torch.randint(0, V, (B, T))
    best = 1e9
    for i in range(warm + steps):
        t0 = time.perf_counter()
        logits = m(ids)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if i >= warm:
            best = min(best, dt)
    return best


def matmul_peak():
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    a @ b
    best = 1e9
    for _ in range(5):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * 2048 ** 3 / best / 1e9


def main():
    nt = int(os.environ.get("NT", "2"))
    torch.set_num_threads(nt)
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    torch.manual_seed(0)
    m = Model()
    out = {"threads": nt, "params": sum(p.numel() for p in m.parameters()), "torch": torch.__version__}
    if what in ("decode", "all"):
        decode(m, N=16)  # warm-up
        out["decode_tok_s"] = max(decode(m) for _ in range(2))
    if what in ("train", "all"):
        out["train_step_s"] = train(m)
    if what in ("peak", "all"):
        out["matmul_gflops"] = matmul_peak()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
