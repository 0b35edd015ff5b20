package llm_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"

	"ragen/collapse"
	"ragen/llm"
	"ragen/llm/llmbench"
	"ragen/torch"
)

// benchShape is the model of the benchmarks: peers.md's 8.4M model, or with
// RAGEN_BENCH_SHAPE=qwen0.5b Qwen2.5-0.5B's shape with RAGEN_BENCH_LAYERS
// layers (default 2).
func benchShape(b *testing.B) llm.Config {
	switch os.Getenv("RAGEN_BENCH_SHAPE") {
	case "", "tiny":
		return llmbench.Config()
	case "qwen0.5b":
		n, _ := strconv.Atoi(os.Getenv("RAGEN_BENCH_LAYERS"))
		return llmbench.Qwen05B(max(n, 2))
	default:
		b.Fatalf("RAGEN_BENCH_SHAPE %q: want tiny or qwen0.5b", os.Getenv("RAGEN_BENCH_SHAPE"))
	}
	return llm.Config{}
}

// callers runs f as each kind of caller: a goroutine locked to its OS thread
// and an ordinary goroutine, the torch thread on (the default) and off.
func callers(b *testing.B, f func(b *testing.B)) {
	for _, c := range []struct {
		name           string
		pin, torchThrd bool
	}{{"goroutine", false, true}, {"pinned", true, true}, {"goroutine-nothread", false, false}, {"pinned-nothread", true, false}} {
		b.Run(c.name, func(b *testing.B) {
			prev := torch.SetTorchThread(c.torchThrd)
			defer torch.SetTorchThread(prev)
			if c.pin {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			f(b)
		})
	}
}

// BenchmarkDecode: batch 8, prompt 128, 256 new greedy tokens (64 at the
// Qwen shape), by caller kind. Compare with bench/llm_peer.py decode (go run
// ./bench/llm_compare).
func BenchmarkDecode(b *testing.B) {
	torch.SetNumThreads(runtime.GOMAXPROCS(0))
	cfg := benchShape(b)
	n := 256
	if cfg.VocabSize > 8192 {
		n = 64
	}
	m, err := llm.New(cfg, llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	prompts := llmbench.Prompts(8, 128, cfg.VocabSize, 1)
	callers(b, func(b *testing.B) {
		var tps float64
		for b.Loop() {
			v, err := llmbench.Decode(m, prompts, n)
			if err != nil {
				b.Fatal(err)
			}
			tps = max(tps, v)
		}
		b.ReportMetric(tps, "tokens/s")
	})
}

// BenchmarkTrainStep: forward, backward and AdamW on a batch of 8 x 256
// (1 x 512 at the Qwen shape), by caller kind.
func BenchmarkTrainStep(b *testing.B) {
	torch.SetNumThreads(runtime.GOMAXPROCS(0))
	cfg := benchShape(b)
	B, T := 8, 256
	if cfg.VocabSize > 8192 {
		B, T = 1, 512
	}
	m, err := llm.New(cfg, llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	tr, err := llmbench.NewTrainer(m, B, T, 1e-4)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Step(); err != nil { // warm-up
		b.Fatal(err)
	}
	callers(b, func(b *testing.B) {
		best := 1e9
		for b.Loop() {
			t := b.Elapsed()
			if _, err := tr.Step(); err != nil {
				b.Fatal(err)
			}
			best = min(best, (b.Elapsed() - t).Seconds())
		}
		b.ReportMetric(best, "s/step-min")
	})
}

// BenchmarkSmallOp: one add of two 2x2 tensors and its free, the cgo cost
// every small op pays.
func BenchmarkSmallOp(b *testing.B) {
	s := torch.NewScope()
	defer s.Close()
	x := s.Own(torch.From([]float32{1, 2, 3, 4}, 2, 2))
	for b.Loop() {
		t := torch.NewScope()
		t.Add(x, x)
		t.Close()
	}
	if err := s.Err(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDeferredOp: an add of two 40,000-element tensors, big enough to
// open an OpenMP region; with the torch thread on (and RAGEN_TORCH_THREAD not heavy)
// it is handed to it (the handoff cost), by caller kind.
func BenchmarkDeferredOp(b *testing.B) {
	s := torch.NewScope()
	defer s.Close()
	x := s.Full([]int64{200, 200}, 1, torch.Float32, torch.CPU)
	callers(b, func(b *testing.B) {
		for b.Loop() {
			t := torch.NewScope()
			t.Add(x, x)
			t.Close()
		}
		if err := s.Err(); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkCollapseScorer: a 16 x 16 collapse matrix (prompts of 400
// tokens, reasonings of 60) scored by the plain scorer (every pair a whole
// sequence) and by the prefix scorer (each prompt once, reasonings as KV
// continuations), on the 8.4M benchmark model.
func BenchmarkCollapseScorer(b *testing.B) {
	torch.SetNumThreads(runtime.GOMAXPROCS(0))
	cfg := llmbench.Config()
	m, err := llm.New(cfg, llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	prompts := llmbench.Prompts(16, 400, cfg.VocabSize, 1)
	reasoning := llmbench.Prompts(16, 60, cfg.VocabSize, 2)
	for _, sc := range []struct {
		name string
		s    collapse.Scorer
	}{{"plain", llm.NewScorer(m, 16)}, {"prefix", llm.NewPrefixScorer(m, 16, 1)}} {
		b.Run(sc.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := collapse.CrossScores(context.Background(), sc.s, prompts, reasoning, 256, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
