package llm_test

import (
	"runtime"
	"testing"

	"ragen/llm"
	"ragen/llm/llmbench"
	"ragen/torch"
)

// BenchmarkDecode: batch 8, prompt 128, 256 new greedy tokens on the
// peers.md model. Compare with bench/llm_peer.py decode (go run ./bench/llm_compare).
func BenchmarkDecode(b *testing.B) {
	runtime.LockOSThread() // one OpenMP team (see bench/llm_compare)
	defer runtime.UnlockOSThread()
	m, err := llm.New(llmbench.Config(), llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	prompts := llmbench.Prompts(8, 128, 8192, 1)
	var tps float64
	for b.Loop() {
		v, err := llmbench.Decode(m, prompts, 256)
		if err != nil {
			b.Fatal(err)
		}
		tps = max(tps, v)
	}
	b.ReportMetric(tps, "tokens/s")
}

// BenchmarkTrainStep: forward, backward and AdamW on a batch of 8 x 256.
func BenchmarkTrainStep(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m, err := llm.New(llmbench.Config(), llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	tr, err := llmbench.NewTrainer(m, 8, 256, 1e-4)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Step(); err != nil { // warm-up
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := tr.Step(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(8*256*b.N)/b.Elapsed().Seconds(), "tokens/s")
}
