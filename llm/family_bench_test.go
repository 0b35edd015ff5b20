package llm

import (
	"fmt"
	"testing"

	"ragen/torch"
)

// BenchmarkForwardPaths compares the fused C++ forward with the Go forward
// on a small Qwen2-shaped model (hidden 256, 4 layers, vocab 4096), batch
// 8 x 128: scoring (no gradients) and a training forward+backward.
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
	for _, path := range []string{"fused", "go"} {
		fwd := func(s *torch.Scope, ids, pos, attn *torch.Tensor) *torch.Tensor {
			if path == "go" {
				return m.goForward(s, ids, pos, attn, true)
			}
			return m.fusedForward(s, ids, pos, attn, true)
		}
		b.Run(fmt.Sprintf("%s/score", path), func(b *testing.B) {
			for range b.N {
				s := torch.NewScope()
				ids, pos, attn := batch(b, s, seqs, false)
				if err := torch.NoGrad(func() error { fwd(s, ids, pos, attn); return s.Err() }); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
		b.Run(fmt.Sprintf("%s/train", path), func(b *testing.B) {
			for range b.N {
				s := torch.NewScope()
				ids, pos, attn := batch(b, s, seqs, false)
				loss := s.Mean(fwd(s, ids, pos, attn), false)
				if err := s.Err(); err != nil {
					b.Fatal(err)
				}
				if err := loss.Backward(nil); err != nil {
					b.Fatal(err)
				}
				s.Close()
				if err := torch.ZeroGrad(m.Trainable()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
