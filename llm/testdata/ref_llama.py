#!/usr/bin/python3
"""Plain-PyTorch Llama 3.x reference for ragen's llm package (no transformers).

Usage: /usr/bin/python3 ref_llama.py MODEL_DIR INPUTS_JSON OUT_PREFIX

Follows transformers' modeling_llama.py: RMSNorm in float32, rotary
embeddings with rope_theta and the "llama3" rope_scaling
(_compute_llama3_parameters), grouped-query attention without biases,
SwiGLU MLP, tied or untied head. Reads MODEL_DIR/config.json and
model.safetensors, runs the cases of INPUTS_JSON and writes
OUT_PREFIX.safetensors (float32 logits per case) and OUT_PREFIX.json
(greedy continuations by full recompute).
"""
import math
import sys

import torch

from parity_ref import run


def inv_freq(cfg, D):
    theta = cfg["rope_theta"]
    inv = 1.0 / torch.tensor([theta ** (2 * j / D) for j in range(D // 2)], dtype=torch.float64)
    sc = cfg.get("rope_scaling")
    if not sc or sc.get("rope_type", sc.get("type")) in (None, "default"):
        return inv
    assert sc.get("rope_type", sc.get("type")) == "llama3"
    factor, low, high = sc["factor"], sc["low_freq_factor"], sc["high_freq_factor"]
    old = sc["original_max_position_embeddings"]
    low_wave, high_wave = old / low, old / high
    wave = 2 * math.pi / inv
    scaled = torch.where(wave > low_wave, inv / factor, inv)
    smooth = (old / wave - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wave < high_wave) & ~(wave > low_wave)
    return torch.where(medium, smoothed, scaled)


class Llama:
    def __init__(self, cfg, w):
        self.c, self.w = cfg, w
        self.H = cfg["num_attention_heads"]
        self.KV = cfg.get("num_key_value_heads") or self.H
        self.D = cfg.get("head_dim") or cfg["hidden_size"] // self.H
        self.eps = cfg["rms_norm_eps"]
        P = cfg["max_position_embeddings"]
        ang = torch.arange(P, dtype=torch.float64)[:, None] * inv_freq(cfg, self.D)[None, :]
        emb = torch.cat([ang, ang], dim=-1)
        self.cos, self.sin = emb.cos().float(), emb.sin().float()

    def rms(self, x, w):
        var = x.pow(2).mean(-1, keepdim=True)
        return w * (x * torch.rsqrt(var + self.eps))

    @staticmethod
    def rot(x):
        h = x.shape[-1] // 2
        return torch.cat([-x[..., h:], x[..., :h]], dim=-1)

    def forward(self, ids, pos, attn):
        """ids, pos, attn: (B,T) long. Returns (B,T,V) float32 logits."""
        w, B, T = self.w, ids.shape[0], ids.shape[1]
        H, KV, D = self.H, self.KV, self.D
        x = w["model.embed_tokens.weight"][ids]
        cos = self.cos[pos][:, None]  # (B,1,T,D)
        sin = self.sin[pos][:, None]
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        allowed = causal[None, None] & (attn[:, None, None, :] != 0)  # (B,1,T,T)
        lowest = torch.finfo(torch.float32).min
        for i in range(self.c["num_hidden_layers"]):
            p = "model.layers.%d." % i
            h = self.rms(x, w[p + "input_layernorm.weight"])
            q = (h @ w[p + "self_attn.q_proj.weight"].T).view(B, T, H, D).transpose(1, 2)
            k = (h @ w[p + "self_attn.k_proj.weight"].T).view(B, T, KV, D).transpose(1, 2)
            v = (h @ w[p + "self_attn.v_proj.weight"].T).view(B, T, KV, D).transpose(1, 2)
            q = q * cos + self.rot(q) * sin
            k = k * cos + self.rot(k) * sin
            k = k.repeat_interleave(H // KV, dim=1)
            v = v.repeat_interleave(H // KV, dim=1)
            s = (q @ k.transpose(2, 3)) / math.sqrt(D)
            s = s.masked_fill(~allowed, lowest)
            a = torch.softmax(s, dim=-1) @ v
            a = a.transpose(1, 2).reshape(B, T, H * D)
            x = x + a @ w[p + "self_attn.o_proj.weight"].T
            h = self.rms(x, w[p + "post_attention_layernorm.weight"])
            g = torch.nn.functional.silu(h @ w[p + "mlp.gate_proj.weight"].T)
            u = h @ w[p + "mlp.up_proj.weight"].T
            x = x + (g * u) @ w[p + "mlp.down_proj.weight"].T
        x = self.rms(x, w["model.norm.weight"])
        head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
        return x @ head.T


if __name__ == "__main__":
    run(Llama, sys.argv[1], sys.argv[2], sys.argv[3])
