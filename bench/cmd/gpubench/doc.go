// Command gpubench is the GPU check's speed table (scripts/gpu-bundle.sh's
// gpu-check.sh runs it): ragen against Hugging Face transformers
// (bench/gpu_peer.py) on the same device in the same run, at Qwen2.5-0.5B
// and -1.5B shapes with random weights.
//
//   - decode: batch 64, prompt 256, +256 new tokens, greedy, KV cache, the
//     model in bf16; generated tokens per second.
//   - train: 8 x 1024 tokens, log-probs of every token, backward, AdamW,
//     bf16 compute on float32 master weights; seconds per step and MFU
//     (PaLM's FLOPs per token, bench/llmbench.TrainFLOPs) against the bf16
//     matmul rate measured in the same run (the higher of ragen's and
//     PyTorch's measurement).
//
// -quick runs tiny shapes, for proving the check end to end on a CPU.
package main
