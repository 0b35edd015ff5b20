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
// of the 24-feature blocks, hidden sizes not a multiple of the vector width,
// and hidden sizes split into chunks (1100: three float32 chunks, two bf16
// ones). The reference is float64 in Go.
func TestDecodeLinearShapes(t *testing.T) {
	for _, dt := range []torch.DType{torch.Float32, torch.BFloat16} {
		t.Run(dt.String(), func(t *testing.T) { decodeLinearShapes(t, dt) })
	}
}

// headOnly runs a layerless forward (embedding, RMSNorm, head) of the
// one-token rows ids in dt without gradients (the decode kernels' path) and
// returns its (len(ids), V) logits as float32.
func headOnly(t *testing.T, dt torch.DType, emb, norm, head []float32, K int, ids []int64) []float32 {
	t.Helper()
	s := torch.NewScope()
	M, V := int64(len(ids)), int64(len(head)/K)
	pos := make([]int64, M)
	one := make([]int64, M)
	for i := range one {
		one[i] = 1
	}
	in := func(x []float32, shape ...int64) *torch.Tensor { return s.Cast(s.Own(torch.From(x, shape...)), dt) }
	out := Forward(s, &Weights{Embed: in(emb, V, int64(K)), Norm: in(norm, int64(K)), Head: in(head, V, int64(K))},
		Shape{Heads: 1, KVHeads: 1, HeadDim: K, Eps: 1e-6},
		ForwardArgs{IDs: s.Own(torch.From(ids, M, 1)), Pos: s.Own(torch.From(pos, M, 1)),
			Cos: s.Full([]int64{1, int64(K)}, 1, torch.Float32, torch.CPU), Sin: s.Zeros([]int64{1, int64(K)}, torch.Float32, torch.CPU),
			KeyBias: s.KeyBias(s.Own(torch.From(one, M, 1))), NoGrad: true})
	got := s.Float32s(s.Cast(out, torch.Float32))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestDecodeLinearBatchInvariant: a row's decode projection is the same
// bits whatever rows share its batch and wherever it sits among them (the
// kernels add every row's products in one order), so a trajectory's tokens
// do not depend on which other trajectories are still generating.
func TestDecodeLinearBatchInvariant(t *testing.T) {
	const V, K = 101, 1100
	r := rand.New(rand.NewPCG(3, 4))
	emb, head, norm := make([]float32, V*K), make([]float32, V*K), make([]float32, K)
	for i := range emb {
		emb[i], head[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	for i := range norm {
		norm[i] = float32(0.5 + r.Float64())
	}
	ids := make([]int64, 13)
	for i := range ids {
		ids[i] = int64(r.IntN(V))
	}
	for _, dt := range []torch.DType{torch.Float32, torch.BFloat16} {
		all := headOnly(t, dt, emb, norm, head, K, ids)
		for m, id := range ids {
			one := headOnly(t, dt, emb, norm, head, K, []int64{id})
			for n := range one {
				if math.Float32bits(one[n]) != math.Float32bits(all[m*V+n]) {
					t.Fatalf("%s: row %d of 13, output %d: %v alone, %v in the batch", dt, m, n, one[n], all[m*V+n])
				}
			}
		}
	}
}

// bf16Round rounds v to the nearest bfloat16 (ties to even), as a float32.
func bf16Round(v float32) float32 {
	u := math.Float32bits(v)
	u += 0x7fff + (u>>16)&1
	return math.Float32frombits(u &^ 0xffff)
}

// decodeLinearShapes runs the check with weights and activations in dt (bf16:
// the generation path of a mixed-precision model): for bfloat16 the
// reference takes the bf16-rounded weights, and the error
// (the normed hidden state rounded to bf16 twice, each of K terms off by
// about 2^-9, and the output rounded) is measured against sqrt(K) + |want|,
// the size of a sum of K unit terms.
func decodeLinearShapes(t *testing.T, dt torch.DType) {
	const V = 1003
	r := rand.New(rand.NewPCG(1, 2))
	tol, floor := 1e-4, func(int) float64 { return 1 }
	round := func(v float32) float32 { return v }
	if dt == torch.BFloat16 {
		tol, floor, round = 2e-2, func(k int) float64 { return math.Sqrt(float64(k)) }, bf16Round
	}
	for _, K := range []int{37, 64, 200, 208, 1100} {
		for _, M := range []int{1, 3, 5, 8, 13, 16, 17} {
			emb := make([]float32, V*K)
			head := make([]float32, V*K)
			norm := make([]float32, K)
			for i := range emb {
				emb[i] = round(float32(r.NormFloat64()))
				head[i] = round(float32(r.NormFloat64()))
			}
			for i := range norm {
				norm[i] = round(float32(0.5 + r.Float64()))
			}
			ids := make([]int64, M)
			for i := range ids {
				ids[i] = int64(r.IntN(V))
			}
			got := headOnly(t, dt, emb, norm, head, K, ids)
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
					worst = max(worst, math.Abs(float64(got[m*V+n])-want)/(floor(K)+math.Abs(want)))
				}
			}
			t.Logf("K=%d rows=%d: worst relative error %.2g", K, M, worst)
			if worst > tol {
				t.Errorf("K=%d rows=%d: worst relative error %.3g", K, M, worst)
			}
		}
	}
}

// TestDecodeKernelsNarrowISA reruns TestDecodeLinearShapes and
// TestDecodeAttentionMatchesFull with the kernels
// held to AVX2 and to plain ATen (RAGEN_CPU_ISA), the paths a wider CPU
// never takes.
func TestDecodeKernelsNarrowISA(t *testing.T) {
	if os.Getenv("RAGEN_CPU_ISA") != "" {
		t.Skip("already running under RAGEN_CPU_ISA")
	}
	for _, isa := range []string{"avx2", "generic"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^(TestDecodeLinearShapes|TestDecodeAttentionMatchesFull)$", "-test.count=1")
		cmd.Env = append(os.Environ(), "RAGEN_CPU_ISA="+isa)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("RAGEN_CPU_ISA=%s: %v\n%s", isa, err, out)
		}
	}
}

// TestDecodeAttentionMatchesFull: a one-token decode step through the KV
// cache (the grouped AVX-512 attention, or the per-head form at other head
// sizes) gives the logits of a full forward over the whole sequence, at
// head sizes 16 to 128 and 1 to 7 query heads a KV head, over a context
// that is not a multiple of 16, with a left-padded row (and a q/k/v bias,
// which the decode projections add).
func TestDecodeAttentionMatchesFull(t *testing.T) {
	for _, c := range []struct{ H, KV, D int }{{4, 2, 16}, {6, 2, 32}, {14, 2, 64}, {6, 2, 128}, {3, 3, 24}} {
		for _, dt := range []torch.DType{torch.Float32, torch.BFloat16} {
			decodeVsFull(t, c.H, c.KV, c.D, dt)
		}
	}
}

func decodeVsFull(t *testing.T, H, KV, D int, dt torch.DType) {
	const V, E, I, B, T, pad = 50, 48, 64, 2, 37, 5
	r := rand.New(rand.NewPCG(uint64(H*1000+D), 5))
	s := torch.NewScope()
	defer s.Close()
	rnd := func(scale float64, shape ...int64) *torch.Tensor {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * scale)
		}
		return s.Cast(s.Own(torch.From(x, shape...)), dt)
	}
	ones := func(n int64) *torch.Tensor { return s.Cast(s.Full([]int64{n}, 1, torch.Float32, torch.CPU), dt) }
	q, k := int64(H*D), int64(KV*D)
	w := &Weights{Embed: rnd(1, V, E), Norm: ones(E), Head: rnd(0.2, V, E)}
	for range 2 {
		w.Layers = append(w.Layers, Layer{Ln1: ones(E), QKV: rnd(0.3, q+2*k, E), QKVBias: rnd(0.1, q+2*k), O: rnd(0.1, E, q), Ln2: ones(E),
			GateUp: rnd(0.15, 2*I, E), Down: rnd(0.1, E, I)})
	}
	ids, pos, attn := make([]int64, B*T), make([]int64, B*T), make([]int64, B*T)
	for b := range B {
		for j := range T {
			ids[b*T+j] = int64(r.IntN(V))
			p := j - b*pad
			if p >= 0 {
				attn[b*T+j], pos[b*T+j] = 1, int64(p)
			}
		}
	}
	cos, sin := make([]float32, T*D), make([]float32, T*D)
	for p := range T {
		for d := range D {
			a := float64(p) / math.Pow(100, float64(d%(D/2))/float64(D/2))
			cos[p*D+d], sin[p*D+d] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	sh := Shape{Heads: H, KVHeads: KV, HeadDim: D, Eps: 1e-6}
	ti := func(x []int64, t0, n int64) *torch.Tensor {
		return s.Narrow(s.Own(torch.From(x, B, T)), 1, t0, n)
	}
	base := ForwardArgs{Cos: s.Own(torch.From(cos, T, int64(D))), Sin: s.Own(torch.From(sin, T, int64(D))),
		KeyBias: s.KeyBias(s.Own(torch.From(attn, B, T))), NoGrad: true}
	full := base
	full.IDs, full.Pos = ti(ids, 0, T), ti(pos, 0, T)
	want := s.Float32s(s.Cast(s.Narrow(Forward(s, w, sh, full), 1, T-1, 1), torch.Float32))
	var kv []*torch.Tensor
	for range 2 * len(w.Layers) {
		kv = append(kv, s.Zeros([]int64{B, int64(KV), T + 3, int64(D)}, dt, torch.CPU))
	}
	pre := base
	pre.IDs, pre.Pos, pre.KV = ti(ids, 0, T-1), ti(pos, 0, T-1), kv
	Forward(s, w, sh, pre)
	step := base
	step.IDs, step.Pos, step.KV, step.CachePos = ti(ids, T-1, 1), ti(pos, T-1, 1), kv, T-1
	got := s.Float32s(s.Cast(Forward(s, w, sh, step), torch.Float32))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	worst, big := 0.0, 0.0
	for i := range want {
		worst = max(worst, math.Abs(float64(got[i]-want[i])))
		big = max(big, math.Abs(float64(want[i])))
	}
	tol := 1e-4
	if dt == torch.BFloat16 {
		tol = 3e-2
	}
	t.Logf("H=%d KV=%d D=%d %s: worst |decode - full| %.2g of logits up to %.2g", H, KV, D, dt, worst, big)
	if worst > tol*(1+big) {
		t.Errorf("H=%d KV=%d D=%d %s: decode step differs from the full forward by %.3g (logits up to %.3g)", H, KV, D, dt, worst, big)
	}
}
