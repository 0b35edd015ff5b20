// Package llm runs Qwen2-family causal language models (Qwen2.5-Instruct
// 0.5B-7B and tiny ones for tests) on libtorch through ragen/torch.
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
// [Model.Trainable] the fused tensors an optimiser updates. A whole forward
// pass (embedding, every decoder layer, KV-cache writes, final norm and
// head) is one C call into the shim, which keeps decoding fast at small
// sizes where per-op overhead dominates.
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
// base. [NewPolicy] and [NewScorer] adapt a model to ragen.Policy and
// collapse.Scorer.
//
// # Speed
//
// Decoding uses fp32 AVX2 kernels in the shim for the few-row projections
// (one pass over each weight instead of OpenBLAS's per-call packing) and for
// single-step attention over the KV cache. Training steps allocate and free
// the same large buffers every step; torch.KeepFreedMemory(1<<30) at
// start-up avoids a page fault per fresh page (about 10% per step here).
// With more than one intra-op thread, issue torch calls from one goroutine
// locked to its OS thread (runtime.LockOSThread): every OS thread entering
// libtorch gets its own OpenMP team, and idle teams spin against the active
// one. Generate pins itself while it runs.
package llm
