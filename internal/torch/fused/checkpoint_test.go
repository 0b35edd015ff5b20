package fused

import (
	"strings"
	"testing"

	"ragen/torch"
)

// TestCheckpointLayerErrors: bad inputs to CheckpointLayer are errors that
// name the problem (package llm's TestCheckpointMatchesPlain checks values
// and gradients).
func TestCheckpointLayerErrors(t *testing.T) {
	const B, T, E, H, KV, D, I = 1, 3, 8, 2, 1, 4, 6
	sh := Shape{Heads: H, KVHeads: KV, HeadDim: D, Eps: 1e-6}
	for _, tc := range []struct {
		name, want string
		edit       func(s *torch.Scope, l *Layer, lora *[14]*torch.Tensor, bias **torch.Tensor)
	}{
		{"ok", "", func(*torch.Scope, *Layer, *[14]*torch.Tensor, **torch.Tensor) {}},
		{"no down", "required weight", func(_ *torch.Scope, l *Layer, _ *[14]*torch.Tensor, _ **torch.Tensor) { l.Down = nil }},
		{"bias shape", "key bias must be float32 (B,T)", func(s *torch.Scope, _ *Layer, _ *[14]*torch.Tensor, b **torch.Tensor) {
			*b = s.Zeros([]int64{B, 1, 1, T, T}, torch.Float32, torch.CPU)
		}},
		{"bias dtype", "key bias must be float32 (B,T)", func(s *torch.Scope, _ *Layer, _ *[14]*torch.Tensor, b **torch.Tensor) {
			*b = s.Zeros([]int64{B, T}, torch.Float64, torch.CPU)
		}},
		{"lora A only", "A without B", func(s *torch.Scope, _ *Layer, lo *[14]*torch.Tensor, _ **torch.Tensor) {
			lo[0] = s.Zeros([]int64{2, E}, torch.Float32, torch.CPU)
		}},
		{"qkv shape", "qkv weight", func(s *torch.Scope, l *Layer, _ *[14]*torch.Tensor, _ **torch.Tensor) {
			l.QKV = s.Zeros([]int64{(H + KV) * D, E}, torch.Float32, torch.CPU)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := torch.NewScope()
			defer s.Close()
			w := func(v float64, shape ...int64) *torch.Tensor { return s.Full(shape, v, torch.Float32, torch.CPU) }
			l := Layer{Ln1: w(1, E), QKV: w(0.1, (H+2*KV)*D, E), O: w(0.1, E, H*D), Ln2: w(1, E),
				GateUp: w(0.1, 2*I, E), Down: w(0.1, E, I)}
			var lora [14]*torch.Tensor
			bias := s.Zeros([]int64{B, T}, torch.Float32, torch.CPU)
			tc.edit(s, &l, &lora, &bias)
			x := w(0.5, B, T, E)
			y := CheckpointLayer(s, x, &l, &lora, 2, sh, w(1, B, 1, T, D), w(0, B, 1, T, D), bias)
			err := s.Err()
			if tc.want == "" {
				if err != nil || y == nil || y.Size(2) != E {
					t.Fatalf("valid layer: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
