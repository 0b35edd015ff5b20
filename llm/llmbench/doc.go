// Package llmbench holds the speed measurements shared by package llm's
// benchmarks and bench/llm_compare, which runs them side by side with the
// PyTorch-eager peer bench/llm_peer.py on the same model shape.
package llmbench
