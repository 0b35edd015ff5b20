#!/usr/bin/python3
"""Plain-PyTorch Qwen2 peer of bench/qwen.go (the 0.5B- and 1.5B-shaped rows).

The model is Hugging Face's Qwen2 written out in eager PyTorch (RMSNorm,
RoPE, grouped-query attention with q/k/v bias and repeat_kv, SwiGLU, tied
head), float32, random weights: transformers is not installed here, and HF
and a plain loop are within 5% (notes/peers.md).

  decode: batch B, prompt P random ids, N new greedy tokens, preallocated KV
          cache, torch.inference_mode; new tokens per second (best of reps).
  train:  batch B x T next-token cross-entropy, backward, AdamW; seconds
          (best of reps after TRAIN_WARMUP untimed steps).
  train_bf16: the same under torch.autocast("cpu", bfloat16): bf16 compute,
          float32 parameters, gradients and AdamW, float32 logits for the loss.
  update: one RL update as veRL computes it without its chunking switches:
          logits -> log_softmax/gather log-probs and entropy_from_logits,
          loss = -mean(logp) - 0.001 mean(entropy), backward, AdamW; peak RSS.
  peak:   fp32 2048^2 matmul GFLOP/s; stream: copy bandwidth GB/s (256 MB).

Usage: NT=2 python3 bench/qwen_peer.py WHAT LAYERS HIDDEN INTER HEADS KV VOCAB B P N T REPS
Prints one JSON line.
"""
import json
import math
import os
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

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
    def __init__(self, E, I, H, KV):
        super().__init__()
        self.E, self.H, self.KV, self.D = E, H, KV, E // H
        D = self.D
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
        H, KV, D = self.H, self.KV, self.D
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
        rep = H // KV
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        s = (q @ k.transpose(2, 3)) / math.sqrt(D)
        if mask is not None:
            s = s + mask
        a = torch.softmax(s, dim=-1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(B, T, H * D))
        h = self.ln2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Model(nn.Module):
    def __init__(self, L, E, I, H, KV, V, maxpos):
        super().__init__()
        self.V, self.KV, self.D = V, KV, E // H
        self.embed = nn.Embedding(V, E)
        self.layers = nn.ModuleList([Layer(E, I, H, KV) for _ in range(L)])
        self.norm = RMSNorm(E)
        D = self.D
        inv = 1.0 / (THETA ** (torch.arange(0, D, 2).float() / D))
        ang = torch.arange(maxpos).float()[:, None] * inv[None]
        emb = torch.cat([ang, ang], -1)
        self.cos, self.sin = emb.cos(), emb.sin()

    def forward(self, ids, start=0, caches=None, last_only=False):
        B, T = ids.shape
        x = self.embed(ids)
        cos = self.cos[start:start + T][None, None].to(x.dtype)
        sin = self.sin[start:start + T][None, None].to(x.dtype)
        mask = None
        if T > 1:
            mask = torch.full((T, start + T), float("-inf"), dtype=x.dtype).triu(start + 1)
        for i, l in enumerate(self.layers):
            x = l(x, cos, sin, mask, None if caches is None else caches[i], start)
        if last_only:
            x = x[:, -1:]
        return F.linear(self.norm(x), self.embed.weight)  # tied head


def decode(m, B, P, N, dtype=torch.float32):
    torch.manual_seed(0)
    ids = torch.randint(0, m.V, (B, P))
    with torch.inference_mode():
        caches = [(torch.zeros(B, m.KV, P + N, m.D, dtype=dtype), torch.zeros(B, m.KV, P + N, m.D, dtype=dtype))
                  for _ in m.layers]
        t0 = time.perf_counter()
        logits = m(ids, 0, caches, last_only=True)
        for step in range(N):
            nxt = logits[:, -1].argmax(-1, keepdim=True)
            if step == N - 1:
                break
            logits = m(nxt, P + step, caches, last_only=True)
        dt = time.perf_counter() - t0
    return B * N / dt


# warm-up steps before a timed training step: the first steps grow the
# process's heap (gradients, then AdamW's state), which the steady state does
# not (bench/qwen.go's trainWarmup)
TRAIN_WARMUP = 2


def train(m, B, T, reps, amp=False):
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    torch.manual_seed(0)
    ids = torch.randint(0, m.V, (B, T))
    best = 1e9
    for i in range(TRAIN_WARMUP + reps):
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            logits = m(ids)
        # float32 logits for the loss, as transformers' Qwen2ForCausalLM upcasts them
        loss = F.cross_entropy(logits[:, :-1].float().reshape(-1, m.V), ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if i >= TRAIN_WARMUP:
            best = min(best, dt)
    return best


def update(m, B, T):
    opt = torch.optim.AdamW(m.parameters(), lr=1e-6)
    torch.manual_seed(0)
    ids = torch.randint(0, m.V, (B, T))
    t0 = time.perf_counter()
    logits = m(ids)[:, :-1]
    lp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    pd = torch.softmax(logits, -1)  # veRL entropy_from_logits
    ent = torch.logsumexp(logits, -1) - (pd * logits).sum(-1)
    loss = -lp.mean() - 0.001 * ent.mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return time.perf_counter() - t0


def matmul_peak():
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    a @ b
    best = 1e9
    for _ in range(5):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * 2048 ** 3 / best / 1e9


def stream():
    n = 64 << 20  # 256 MB of float32
    a, b = torch.ones(n), torch.empty(n)
    b.copy_(a)
    best = 1e9
    for _ in range(5):
        t0 = time.perf_counter()
        b.copy_(a)
        best = min(best, time.perf_counter() - t0)
    return 2 * 4 * n / best / 1e9


def main():
    nt = int(os.environ.get("NT", "2"))
    torch.set_num_threads(nt)
    what = sys.argv[1]
    L, E, I, H, KV, V, B, P, N, T, reps = (int(x) for x in sys.argv[2:13])
    out = {"threads": nt, "torch": torch.__version__}
    if what == "peak":
        out["matmul_gflops"] = matmul_peak()
        out["stream_gb_s"] = stream()
        print(json.dumps(out))
        return
    torch.manual_seed(0)
    m = Model(L, E, I, H, KV, V, max(P + N, T) + 1)
    out["params"] = sum(p.numel() for p in m.parameters())
    if what == "decode":
        decode(m, B, P, 4)  # warm-up
        out["decode_tok_s"] = max(decode(m, B, P, N) for _ in range(reps))
    elif what == "decode_bf16":
        # the model in bf16 (weights, activations, KV cache), as a bf16 rollout
        m = m.to(torch.bfloat16)
        decode(m, B, P, 4, torch.bfloat16)
        out["decode_tok_s"] = max(decode(m, B, P, N, torch.bfloat16) for _ in range(reps))
    elif what == "train":
        out["train_step_s"] = train(m, B, T, reps)
    elif what == "train_bf16":
        out["train_step_s"] = train(m, B, T, reps, amp=True)
    elif what == "update":
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out["update_s"] = update(m, B, T)
        out["rss_before_mb"] = rss0 / 1024
        out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


if __name__ == "__main__":
    main()
