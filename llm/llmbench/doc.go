// Package llmbench holds the speed measurements shared by package llm's
// benchmarks, bench/llm_compare (which runs them side by side with the
// PyTorch-eager peer bench/llm_peer.py on the same model shape), package
// bench's tables and the GPU check's gpubench: model shapes (the small
// benchmark model, Qwen2.5-0.5B and -1.5B), decode and training-step
// timers, TimeStep and the MFU FLOP count.
package llmbench
