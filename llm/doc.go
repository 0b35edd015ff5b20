// Package llm runs decoder-only causal language models on libtorch through
// ragen/torch: the Qwen2 (Qwen2.5-Instruct), Llama 3.x (Llama-3.2-1B/3B-
// Instruct) and Qwen3 families, each one Go file (qwen2.go, llama.go,
// qwen3.go) with its weight table and layer forward, and tiny ones for tests.
//
// # Models
//
// [Load] reads a Hugging Face model folder (config.json, model.safetensors
// or a sharded model.safetensors.index.json, generation_config.json) and
// [Model.Save] writes the same layout back, LoRA adapters merged, so vLLM or
// transformers can serve a trained model; [SaveHF] adds the tokenizer files.
// [New] builds a model from a [Config] with HF's seeded random
// initialisation; [TinyConfig] is a 2-layer model for tests and demos.
//
// Internally the q/k/v projections and the gate/up projections are fused
// into one weight each; [Model.Params] exposes views under the HF names and
// [Model.Trainable] the fused tensors an optimiser updates. Training and
// scoring ([Model.Forward], [Model.Hidden], [Model.TokenLogProbs], the
// critic) run the family's Go code over ragen/torch ops, with RMSNorm, RoPE,
// attention and SwiGLU as package torch's fused ops (one kernel and one
// autograd node each; the attention works in blocks of query times and
// keeps one float per query row for its backward, not the (B,H,T,T)
// probabilities); generation (prefill into the KV cache, decode) is one C
// call per step into the shim (internal/torch/fused), which takes the
// weights by role and keeps decoding fast at small sizes where per-op
// overhead dominates. Both agree with the same forward composed from
// elementary ops to float32 rounding (TestFusedMatchesGo,
// TestFusedOpsMatchReference).
//
// # Generation, scoring, value head, LoRA
//
// [Model.Generate] decodes a batch of prompts of different lengths (left
// padding, per-row positions, a preallocated KV cache written in place),
// greedy or sampled (temperature, top-k, top-p) with a seeded generator,
// stopping on EOS ids, stop ids and stop strings, streaming text per
// sequence. [Model.TokenLogProbs] gives teacher-forced log-probs and entropy
// with logits divided by the temperature, as veRL's actor does. [Critic] is
// the PPO value model. [Model.EnableLoRA] adds adapters and freezes the
// base. [NewScorer] adapts a model to collapse.Scorer; package
// ragen/llmpolicy adapts it to ragen.Policy (llm does not import the
// rollout core).
//
// # Prefix caching
//
// A multi-turn rollout prompts each trajectory with its whole history every
// turn. With a [PrefixCache] in [GenOptions].Prefix and a key per prompt
// (GenOptions.PrefixKeys, one per trajectory), Generate keeps each
// sequence's KV after the call, and a later prompt with the same key loads
// the KV of its longest common prefix (on token ids: a history that
// re-tokenizes differently, or a context window that dropped old turns,
// reuses what still matches) and prefills only the rest. Rows are sorted by
// the tokens they still need and prefilled in chunks of similar need.
// Identical prompts of one call (a GRPO group's first prompt) are prefilled
// once and their KV and logits copied. Both are on by default
// (GenOptions.NoPrefixCaching turns them off) and give the tokens and
// log-probs of a full prefill up to float rounding, with left padding,
// rows that stop early, per-row sampling streams, LoRA, float32 and bf16
// (TestPrefixReuseEqualsFullPrefill). The cache holds at most a cap of
// tokens, least recently used first out, and Close frees it;
// [PrefixStats] count the tokens reused, shared and prefilled.
//
// # Speed
//
// Decoding uses fp32 AVX-512 (or AVX2) kernels in the shim for the few-row
// projections (one pass over each weight instead of OpenBLAS's per-call
// packing) and for single-step attention over the KV cache; the LM head's
// log-softmax, entropy and their gradients are one GEMM and one row pass per
// chunk, in float32 or, with bfloat16 mixed precision (Options.ComputeDType,
// Options.AutoCompute), bfloat16 GEMMs that oneDNN runs on AMX where the CPU
// has it. A tied embedding's gradient is added into the head's as rows, not
// as a dense table. Training steps allocate and free the same large buffers
// every step; package torch keeps freed memory for reuse
// (torch.KeepFreedMemory, on by default). The heavy libtorch calls (forwards, backward, optimizer
// steps, the head) run on one OS thread that package torch owns, so callers
// on any goroutine get the speed of a pinned thread without
// runtime.LockOSThread.
package llm
