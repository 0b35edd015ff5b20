#!/usr/bin/python3
"""Plain-PyTorch Qwen2 reference for ragen's llm package (no transformers).

Usage: /usr/bin/python3 parity_ref.py MODEL_DIR OUT_PREFIX

Reads MODEL_DIR/config.json and MODEL_DIR/model.safetensors (written by the
Go code), runs the forward pass on the inputs in MODEL_DIR/../parity_inputs.json
and writes OUT_PREFIX.safetensors (float32 logits per input case) and
OUT_PREFIX.json (greedy continuations). The model follows Hugging Face's
modeling_qwen2.py: RMSNorm in float32, rotary embeddings with rope_theta,
grouped-query attention with q/k/v bias, SwiGLU MLP, tied or untied head.
"""
import json
import math
import os
import struct
import sys

import torch

DT = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16, "F64": torch.float64}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    head = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in head.items():
        if name == "__metadata__":
            continue
        b, en = e["data_offsets"]
        buf = bytearray(data[base + b:base + en])
        t = torch.frombuffer(buf, dtype=DT[e["dtype"]]).clone() if en > b else torch.empty(0, dtype=DT[e["dtype"]])
        out[name] = t.reshape(e["shape"]).to(torch.float32)
    return out


def write_safetensors(path, tensors):
    head, blobs, off = {}, [], 0
    for name, t in tensors.items():
        b = t.contiguous().to(torch.float32).numpy().tobytes()
        head[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    js = json.dumps(head).encode()
    js += b" " * ((8 - (8 + len(js)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)))
        f.write(js)
        for b in blobs:
            f.write(b)


class Qwen2:
    def __init__(self, cfg, w):
        self.c, self.w = cfg, w
        self.H = cfg["num_attention_heads"]
        self.KV = cfg.get("num_key_value_heads") or self.H
        self.D = cfg.get("head_dim") or cfg["hidden_size"] // self.H
        self.eps = cfg["rms_norm_eps"]
        D, theta = self.D, cfg["rope_theta"]
        P = cfg["max_position_embeddings"]
        inv = 1.0 / torch.tensor([theta ** (2 * j / D) for j in range(D // 2)], dtype=torch.float64)
        ang = torch.arange(P, dtype=torch.float64)[:, None] * inv[None, :]
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
            q = (h @ w[p + "self_attn.q_proj.weight"].T + w[p + "self_attn.q_proj.bias"]).view(B, T, H, D).transpose(1, 2)
            k = (h @ w[p + "self_attn.k_proj.weight"].T + w[p + "self_attn.k_proj.bias"]).view(B, T, KV, D).transpose(1, 2)
            v = (h @ w[p + "self_attn.v_proj.weight"].T + w[p + "self_attn.v_proj.bias"]).view(B, T, KV, D).transpose(1, 2)
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


def greedy(m, prompt, n):
    """n greedy tokens after prompt, recomputing the whole sequence each step."""
    ids = list(prompt)
    for _ in range(n):
        t = torch.tensor([ids])
        logits = m.forward(t, torch.arange(len(ids))[None], torch.ones_like(t))
        ids.append(int(logits[0, -1].argmax()))
    return ids[len(prompt):]


def run(model_class, model_dir, inputs_path, out):
    """Loads model_dir into model_class, runs the cases of inputs_path and
    writes out.safetensors (logits per case) and out.json (greedy runs)."""
    torch.set_num_threads(1)
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    m = model_class(cfg, read_safetensors(os.path.join(model_dir, "model.safetensors")))
    with open(inputs_path) as f:
        inputs = json.load(f)
    logits = {}
    with torch.no_grad():
        for i, case in enumerate(inputs["forward"]):
            ids = torch.tensor(case["ids"])
            pos = torch.tensor(case["positions"])
            attn = torch.tensor(case["attn"])
            logits["case%d" % i] = m.forward(ids, pos, attn)
        runs = [greedy(m, p, inputs["greedy_new"]) for p in inputs["greedy"]]
    write_safetensors(out + ".safetensors", logits)
    with open(out + ".json", "w") as f:
        json.dump({"greedy": runs, "torch": torch.__version__}, f)
        f.write("\n")


def main():
    model_dir = sys.argv[1]
    inputs = os.path.join(os.path.dirname(model_dir.rstrip("/")), "parity_inputs.json")
    run(Qwen2, model_dir, inputs, sys.argv[2])


if __name__ == "__main__":
    main()
