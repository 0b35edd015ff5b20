package fused

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
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

// TestDecodeLinearShapes drives the decode projection kernels (the skinny
// AVX-512 and AVX2 tiles, at most 16 rows without gradients) through the
// head of a layerless forward at shapes that leave every tail: rows not a
// multiple of the row tile, outputs not a multiple of the weight tile and
// of the 48-feature blocks, hidden sizes not a multiple of the vector width.
// The reference is float64 in Go.
func TestDecodeLinearShapes(t *testing.T) {
	const V = 1003
	r := rand.New(rand.NewPCG(1, 2))
	for _, K := range []int{37, 64, 200} {
		for _, M := range []int{1, 3, 5, 8, 13, 16, 17} {
			s := torch.NewScope()
			emb := make([]float32, V*K)
			head := make([]float32, V*K)
			norm := make([]float32, K)
			for i := range emb {
				emb[i] = float32(r.NormFloat64())
				head[i] = float32(r.NormFloat64())
			}
			for i := range norm {
				norm[i] = float32(0.5 + r.Float64())
			}
			ids := make([]int64, M)
			pos := make([]int64, M)
			one := make([]int64, M)
			for i := range ids {
				ids[i] = int64(r.IntN(V))
				one[i] = 1
			}
			out := Forward(s, &Weights{Embed: s.Own(torch.From(emb, V, int64(K))), Norm: s.Own(torch.From(norm, int64(K))),
				Head: s.Own(torch.From(head, V, int64(K)))}, Shape{Heads: 1, KVHeads: 1, HeadDim: K, Eps: 1e-6},
				ForwardArgs{IDs: s.Own(torch.From(ids, int64(M), 1)), Pos: s.Own(torch.From(pos, int64(M), 1)),
					Cos: s.Full([]int64{1, int64(K)}, 1, torch.Float32, torch.CPU), Sin: s.Zeros([]int64{1, int64(K)}, torch.Float32, torch.CPU),
					KeyBias: s.KeyBias(s.Own(torch.From(one, int64(M), 1))), NoGrad: true})
			got := s.Float32s(out)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for m, id := range ids {
				x := emb[int(id)*K : int(id+1)*K]
				ms := 0.0
				for _, v := range x {
					ms += float64(v) * float64(v)
				}
				inv := 1 / math.Sqrt(ms/float64(K)+1e-6)
				for n := 0; n < V; n++ {
					want := 0.0
					for k, v := range x {
						want += float64(v) * inv * float64(norm[k]) * float64(head[n*K+k])
					}
					worst = max(worst, math.Abs(float64(got[m*V+n])-want)/(1+math.Abs(want)))
				}
			}
			if worst > 1e-4 {
				t.Errorf("K=%d rows=%d: worst relative error %.3g", K, M, worst)
			}
		}
	}
}

// TestDecodeKernelsNarrowISA reruns TestDecodeLinearShapes with the kernels
// held to AVX2 and to plain ATen (RAGEN_CPU_ISA), the paths a wider CPU
// never takes.
func TestDecodeKernelsNarrowISA(t *testing.T) {
	if os.Getenv("RAGEN_CPU_ISA") != "" {
		t.Skip("already running under RAGEN_CPU_ISA")
	}
	for _, isa := range []string{"avx2", "generic"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestDecodeLinearShapes$", "-test.count=1")
		cmd.Env = append(os.Environ(), "RAGEN_CPU_ISA="+isa)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("RAGEN_CPU_ISA=%s: %v\n%s", isa, err, out)
		}
	}
}
