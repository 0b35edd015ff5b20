package fused

import (
	"math"
	"testing"

	"ragen/torch"
)

// The fused forward with no layers is embedding -> RMSNorm -> head; checked
// by hand: ids [1,0], embed rows e0=(1,2), e1=(3,4), norm weight (1,1),
// eps 0, head = identity: rms(e1) = sqrt((9+16)/2) = 3.5355, so the logits
// of position 0 are (3,4)/3.5355 = (0.8485, 1.1314); position 1: rms(e0) =
// sqrt(2.5) = 1.5811 -> (0.6325, 1.2649).
func TestForwardNoLayers(t *testing.T) {
	s := torch.NewScope()
	defer s.Close()
	embed := s.Own(torch.From([]float32{1, 2, 3, 4}, 2, 2))
	norm := s.Own(torch.From([]float32{1, 1}, 2))
	head := s.Own(torch.From([]float32{1, 0, 0, 1}, 2, 2))
	ids := s.Own(torch.From([]int64{1, 0}, 1, 2))
	pos := s.Own(torch.From([]int64{0, 1}, 1, 2))
	cos := s.Full([]int64{4, 2}, 1, torch.Float32, torch.CPU)
	sin := s.Zeros([]int64{4, 2}, torch.Float32, torch.CPU)
	kb := s.KeyBias(s.Own(torch.From([]int64{1, 1}, 1, 2)))
	out := Forward(s, &Weights{Embed: embed, Norm: norm, Head: head}, Shape{Heads: 1, KVHeads: 1, HeadDim: 2, Eps: 0},
		ForwardArgs{IDs: ids, Pos: pos, Cos: cos, Sin: sin, KeyBias: kb})
	got := s.Float32s(out)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	want := []float64{3 / math.Sqrt(12.5), 4 / math.Sqrt(12.5), 1 / math.Sqrt(2.5), 2 / math.Sqrt(2.5)}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 1e-6 {
			t.Fatalf("logit %d = %v, want %v", i, got[i], want[i])
		}
	}
}
