package llm

import (
	"testing"
	"time"

	"ragen/torch"
)

// BenchmarkForwardPaths compares the fused C++ forward with the Go forward
// on a small Qwen2-shaped model (hidden 256, 4 layers, vocab 4096), batch
// 8 x 128: scoring (no gradients) and a training forward+backward. The two
// paths alternate within each iteration, so that load drift on a shared
// machine hits both alike; fused-ms and go-ms are the mean times per pass.
//
//	go test ./llm -run NONE -bench ForwardPaths
func BenchmarkForwardPaths(b *testing.B) {
	cfg := TinyConfig(4096)
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumHiddenLayers = 256, 768, 4
	m, err := New(cfg, DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	seqs := make([][]int, 8)
	for i := range seqs {
		for t := range 128 {
			seqs[i] = append(seqs[i], (i*131+t*17)%4096)
		}
	}
	paths := []func(s *torch.Scope, ids, pos, attn *torch.Tensor) *torch.Tensor{
		func(s *torch.Scope, ids, pos, attn *torch.Tensor) *torch.Tensor {
			return m.fusedForward(s, ids, pos, attn, true)
		},
		func(s *torch.Scope, ids, pos, attn *torch.Tensor) *torch.Tensor {
			return m.goForward(s, ids, pos, attn, true)
		},
	}
	score := func(fwd func(s *torch.Scope, ids, pos, attn *torch.Tensor) *torch.Tensor) {
		s := torch.NewScope()
		defer s.Close()
		ids, pos, attn := batch(b, s, seqs, false)
		if err := torch.NoGrad(func() error { fwd(s, ids, pos, attn); return s.Err() }); err != nil {
			b.Fatal(err)
		}
	}
	train := func(fwd func(s *torch.Scope, ids, pos, attn *torch.Tensor) *torch.Tensor) {
		s := torch.NewScope()
		defer s.Close()
		ids, pos, attn := batch(b, s, seqs, false)
		loss := s.Mean(fwd(s, ids, pos, attn), false)
		if err := s.Err(); err != nil {
			b.Fatal(err)
		}
		if err := loss.Backward(nil); err != nil {
			b.Fatal(err)
		}
		if err := torch.ZeroGrad(m.Trainable()); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		run  func(func(s *torch.Scope, ids, pos, attn *torch.Tensor) *torch.Tensor)
	}{{"score", score}, {"train", train}} {
		b.Run(c.name, func(b *testing.B) {
			var spent [2]time.Duration
			for i := range b.N {
				for k := range 2 {
					p := (i + k) % 2 // alternate which path goes first
					t0 := time.Now()
					c.run(paths[p])
					spent[p] += time.Since(t0)
				}
			}
			b.ReportMetric(float64(spent[0].Milliseconds())/float64(b.N), "fused-ms")
			b.ReportMetric(float64(spent[1].Milliseconds())/float64(b.N), "go-ms")
		})
	}
}
