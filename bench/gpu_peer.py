#!/usr/bin/env python3
"""Hugging Face transformers peer of bench/cmd/gpubench (the GPU check's table).

Qwen2ForCausalLM of the given shape, random weights, on the given device:

  peak:   bf16 matmul TFLOP/s (8192^3 on CUDA, 1024^3 on a CPU), the rate
          MFU is measured against.
  decode: batch B, prompt P random ids, N new tokens, greedy, KV cache, the
          model in bf16: model.generate(max_new_tokens=N, min_new_tokens=N,
          do_sample=False); new tokens per second (best of reps after a
          warm-up generate).
  train:  B x T random ids, float32 master weights, forward under
          torch.autocast(bfloat16), log-probs of every next token
          (log_softmax + gather in float32), loss = -mean, backward, AdamW;
          seconds (best of reps after two untimed steps), and the forward,
          backward and optimizer times of one more step.

Without transformers (a CPU machine with Debian's python3-torch) it falls
back to the plain-PyTorch Qwen2 of qwen_peer.py, and says so in "impl".

Usage: python3 gpu_peer.py WHAT DEVICE LAYERS HIDDEN INTER HEADS KV VOCAB B P N T REPS
Prints one JSON line.
"""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def build(dev, L, E, I, H, KV, V, maxpos):
    """Returns (model, impl); the model's forward(ids) returns logits."""
    torch.manual_seed(0)
    try:
        from transformers import Qwen2Config, Qwen2ForCausalLM
    except ImportError:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import qwen_peer

        m = qwen_peer.Model(L, E, I, H, KV, V, maxpos).to(dev)
        m.cos, m.sin = m.cos.to(dev), m.sin.to(dev)
        return m, "plain pytorch (transformers not installed)"
    import transformers

    cfg = Qwen2Config(vocab_size=V, hidden_size=E, intermediate_size=I, num_hidden_layers=L,
                      num_attention_heads=H, num_key_value_heads=KV, max_position_embeddings=maxpos,
                      rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
                      use_sliding_window=False, pad_token_id=0, bos_token_id=0, eos_token_id=1)
    m = Qwen2ForCausalLM(cfg).to(dev)
    m.eval()
    impl = "transformers %s (%s attention)" % (transformers.__version__,
                                               getattr(m.config, "_attn_implementation", "default"))
    return m, impl


def logits_of(m, ids):
    out = m(ids)
    return out.logits if hasattr(out, "logits") else out


def peak(dev, reps):
    n = 8192 if dev.type == "cuda" else 1024
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    sync(dev)
    best = 1e9
    for _ in range(max(reps, 5)):
        t0 = time.perf_counter()
        for _ in range(10):
            a @ b
        sync(dev)
        best = min(best, (time.perf_counter() - t0) / 10)
    return 2 * n ** 3 / best / 1e12


def decode(m, impl, dev, V, B, P, N):
    torch.manual_seed(1)
    ids = torch.randint(2, V, (B, P), device=dev)
    with torch.inference_mode():
        sync(dev)
        t0 = time.perf_counter()
        if impl.startswith("transformers"):
            out = m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=N, min_new_tokens=N,
                             do_sample=False, use_cache=True, pad_token_id=0)
            n = out.shape[1] - P
        else:
            if dev.type != "cpu":
                raise SystemExit("gpu_peer.py: the plain-PyTorch fallback runs on a CPU only; install transformers")
            import qwen_peer  # the fallback's own greedy loop with a KV cache

            return qwen_peer.decode(m, B, P, N, torch.bfloat16)
        sync(dev)
        dt = time.perf_counter() - t0
    return B * n / dt


def train(m, dev, V, B, T, reps):
    """Returns (best step seconds, [forward, backward, optimizer] of one more step)."""
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    torch.manual_seed(2)
    ids = torch.randint(0, V, (B, T), device=dev)
    best = 1e9
    phases = []
    for i in range(3 + reps):
        last = i == 2 + reps  # timed by phase, not in best
        sync(dev)
        t0 = time.perf_counter()
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = logits_of(m, ids)
        lp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        loss = -lp.mean()
        if last:
            sync(dev)
            t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if last:
            sync(dev)
            t2 = time.perf_counter()
        opt.step()
        sync(dev)
        dt = time.perf_counter() - t0
        del logits, lp, loss
        if last:
            phases = [t1 - t0, t2 - t1, time.perf_counter() - t2]
        elif i >= 2:
            best = min(best, dt)
    return best, phases


def main():
    what, device = sys.argv[1], sys.argv[2]
    L, E, I, H, KV, V, B, P, N, T, reps = (int(x) for x in sys.argv[3:14])
    dev = torch.device(device)
    if dev.type == "cpu":
        torch.set_num_threads(int(os.environ.get("NT", str(os.cpu_count() or 2))))
    out = {"torch": torch.__version__, "device": str(dev)}
    if dev.type == "cuda":
        out["gpu"] = torch.cuda.get_device_name(dev)
    if what == "peak":
        out["bf16_tflops"] = peak(dev, reps)
        print(json.dumps(out))
        return
    m, impl = build(dev, L, E, I, H, KV, V, max(P + N, T) + 1)
    out["impl"] = impl
    out["params"] = sum(p.numel() for p in m.parameters())
    if what == "decode":
        m = m.to(torch.bfloat16)
        decode(m, impl, dev, V, B, P, min(N, 4))  # warm-up
        out["decode_tok_s"] = max(decode(m, impl, dev, V, B, P, N) for _ in range(reps))
    elif what == "train":
        out["train_step_s"], out["phases_s"] = train(m, dev, V, B, T, reps)
    else:
        raise SystemExit("gpu_peer.py: unknown workload %r (peak, decode, train)" % what)
    if dev.type == "cuda":
        out["peak_mem_gib"] = torch.cuda.max_memory_allocated(dev) / 2 ** 30
    print(json.dumps(out))


if __name__ == "__main__":
    main()
