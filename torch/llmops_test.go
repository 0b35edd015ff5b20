package torch

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/internal/torch/csrc"
)

// Key bias: attended 0, masked the lowest float32.
func TestLLMKeyBias(t *testing.T) {
	s := NewScope()
	defer s.Close()
	b := s.Float32s(s.KeyBias(s.Own(From([]int64{1, 0, 1}, 1, 3))))
	if s.Err() != nil || b[0] != 0 || b[1] != -math.MaxFloat32 || b[2] != 0 {
		t.Fatalf("%v %v", b, s.Err())
	}
}

// Log-probs: logits row (0, ln 3) has log-softmax (ln 1/4, ln 3/4) and
// entropy -(1/4 ln 1/4 + 3/4 ln 3/4) = 0.5623.
func TestLLMTokenLogProbs(t *testing.T) {
	s := NewScope()
	defer s.Close()
	l3 := float32(math.Log(3))
	logits := s.Own(From([]float32{0, l3, 5, 5}, 1, 2, 2))
	ids := s.Own(From([]int64{0, 1}, 1, 2))
	for _, chunk := range []int64{0, 1} {
		lp, ent := s.TokenLogProbs(logits, ids, 1, true, chunk)
		a, e := s.Float32s(lp), s.Float32s(ent)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if a[0] != 0 || math.Abs(float64(a[1])-math.Log(0.75)) > 1e-6 || e[0] != 0 || math.Abs(float64(e[1])-0.5623351) > 1e-6 {
			t.Fatalf("chunk %d: logp %v entropy %v", chunk, a, e)
		}
	}
	// temperature 2 halves the logits: (0, ln3/2) -> p1 = √3/(1+√3)
	lp, ent := s.TokenLogProbs(logits, ids, 2, false, 0)
	a := s.Float32s(lp)
	if ent != nil || math.Abs(float64(a[1])-math.Log(math.Sqrt(3)/(1+math.Sqrt(3)))) > 1e-6 {
		t.Fatalf("T=2: %v", a)
	}
}

func TestLLMSample(t *testing.T) {
	s := NewScope()
	defer s.Close()
	// row 0 prefers id 2, row 1 id 0
	logits := s.Own(From([]float32{0, 1, 3, 2, 1, 0}, 2, 3))
	ids, lp := s.Sample(logits, 0, 0, 1, nil)
	if got := s.Int64s(ids); got[0] != 2 || got[1] != 0 {
		t.Fatalf("greedy %v", got)
	}
	// log-prob of id 2 in row 0: 3 - ln(1 + e + e^3)
	want := 3 - math.Log(1+math.E+math.Exp(3))
	if got := s.Float32s(lp); math.Abs(float64(got[0])-want) > 1e-6 {
		t.Fatalf("greedy logp %v want %v", got[0], want)
	}
	g, err := NewGenerator(7, CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	// top-k 1 always picks the argmax whatever the temperature
	for range 20 {
		ids, _ = s.Sample(logits, 5, 1, 1, g)
		if got := s.Int64s(ids); got[0] != 2 || got[1] != 0 {
			t.Fatalf("top-k 1 sampled %v", got)
		}
	}
	// top-p 0.5: row 0 probs (0.042, 0.114, 0.844): only id 2 survives
	for range 20 {
		ids, _ = s.Sample(logits, 1, 0, 0.5, g)
		if got := s.Int64s(ids); got[0] != 2 {
			t.Fatalf("top-p sampled %v", got)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

// Sampling draws from softmax(logits/T): over a vocabulary that is not a
// multiple of the kernel's blocks, with excluded (-inf) ids, the counts of
// 40,000 draws match the probabilities, an excluded id is never drawn, and
// logp is the drawn id's log-softmax.
func TestLLMSampleDistribution(t *testing.T) {
	s := NewScope()
	defer s.Close()
	const V, B, calls, T = 203, 400, 100, 1.5
	z := make([]float32, V)
	for i := range z {
		z[i] = float32(3 * math.Sin(float64(i)*0.7))
		if i%5 == 3 || i == V-1 {
			z[i] = float32(math.Inf(-1))
		}
	}
	row := make([]float32, 0, B*V)
	for range B {
		row = append(row, z...)
	}
	logits := s.Own(From(row, B, V))
	// the expected probabilities, in float64
	p := make([]float64, V)
	var sum float64
	for i, v := range z {
		p[i] = math.Exp(float64(v) / T)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	g, err := NewGenerator(11, CPU)
	require.NoError(t, err)
	defer g.Close()
	counts := make([]float64, V)
	for range calls {
		c := NewScope()
		ids, lp := c.Sample(logits, T, 0, 1, g)
		got, lps := c.Int64s(ids), c.Float32s(lp)
		require.NoError(t, c.Err())
		for r, id := range got {
			require.Falsef(t, math.IsInf(float64(z[id]), -1), "drew excluded id %d", id)
			require.InDelta(t, math.Log(p[id]), float64(lps[r]), 1e-5, "logp of id %d", id)
			counts[id]++
		}
		c.Close()
	}
	// chi-square over the allowed ids (dof about 160): a correct sampler
	// stays well under 260 (p < 1e-6 above it); a wrong one (a temperature
	// ignored, an id off by one) lands in the thousands
	var chi float64
	n := float64(B * calls)
	for i := range p {
		if p[i] > 0 {
			d := counts[i] - n*p[i]
			chi += d * d / (n * p[i])
		}
	}
	require.Less(t, chi, 260.0, "chi-square of the draws")
	require.NoError(t, s.Err())
}

// rowLogits is a (b,v) float32 tensor of f(i) for element i, owned by s.
func rowLogits(s *Scope, b, v int, f func(i int) float64) *Tensor {
	x := make([]float32, b*v)
	for i := range x {
		x[i] = float32(f(i))
	}
	return s.Own(From(x, int64(b), int64(v)))
}

// A batch of rows draws from one generator in row order: the same ids as
// the rows drawn one at a time from a generator with the same seed.
func TestLLMSampleRowOrder(t *testing.T) {
	s := NewScope()
	defer s.Close()
	const B, V = 6, 50
	logits := rowLogits(s, B, V, func(i int) float64 { return math.Cos(float64(i) * 1.3) })
	g1, err := NewGenerator(5, CPU)
	require.NoError(t, err)
	defer g1.Close()
	g2, err := NewGenerator(5, CPU)
	require.NoError(t, err)
	defer g2.Close()
	ids, _ := s.Sample(logits, 1, 0, 1, g1)
	all := s.Int64s(ids)
	for r := range B {
		one, _ := s.Sample(s.Narrow(logits, 0, int64(r), 1), 1, 0, 1, g2)
		require.Equal(t, all[r], s.Int64s(one)[0], "row %d", r)
	}
	require.NoError(t, s.Err())
}

// A draw keeps its id when the logits move by rounding (as bf16 prefill
// paths move them): over 300 near-uniform rows, logits moved by up to 0.005
// change almost no draw from a generator with the same seed. (An
// inverse-CDF draw, whose running sums all shift, changes most of them.)
func TestLLMSampleStableUnderRounding(t *testing.T) {
	s := NewScope()
	defer s.Close()
	const B, V = 300, 500
	x, y := make([]float32, B*V), make([]float32, B*V)
	for i := range x {
		x[i] = float32(0.3 * math.Sin(float64(i)*0.37))
		y[i] = x[i] + float32(0.005*math.Cos(float64(i)*2.9))
	}
	draw := func(v []float32) []int64 {
		g, err := NewGenerator(21, CPU)
		require.NoError(t, err)
		defer g.Close()
		ids, _ := s.Sample(s.Own(From(v, B, V)), 1, 0, 1, g)
		return s.Int64s(ids)
	}
	a, b := draw(x), draw(y)
	require.NoError(t, s.Err())
	same := 0
	for i := range a {
		if a[i] == b[i] {
			same++
		}
	}
	require.GreaterOrEqual(t, same, 285, "draws kept under a 0.005 move of the logits")
}

// SampleRows draws each row from its own generator: the ids and log-probs
// of Sample on each row alone; a nil generator's row gets its greedy id and
// no generator moves; top-k and top-p restrict every row.
func TestLLMSampleRows(t *testing.T) {
	s := NewScope()
	defer s.Close()
	const B, V = 5, 300
	logits := rowLogits(s, B, V, func(i int) float64 { return 2 * math.Sin(float64(i)*0.91) })
	gens := func() []*Generator {
		gs := make([]*Generator, B)
		for i := range gs {
			g, err := NewGenerator(uint64(100+i), CPU)
			require.NoError(t, err)
			t.Cleanup(g.Close)
			gs[i] = g
		}
		return gs
	}
	for _, c := range []struct {
		k int
		p float64
	}{{0, 1}, {20, 1}, {0, 0.8}} {
		ga, gb := gens(), gens()
		ga[2] = nil
		for range 3 {
			ids, lp := s.SampleRows(logits, 1.3, c.k, c.p, ga)
			all, lps := s.Int64s(ids), s.Float32s(lp)
			require.NoError(t, s.Err())
			for r := range int64(B) {
				g, temp := gb[r], 1.3
				if r == 2 {
					g, temp = nil, 0
				}
				one, olp := s.Sample(s.Narrow(logits, 0, r, 1), temp, c.k, c.p, g)
				require.Equal(t, s.Int64s(one)[0], all[r], "top-k %d top-p %v row %d", c.k, c.p, r)
				if r != 2 {
					require.InDelta(t, s.Float32s(olp)[0], lps[r], 1e-6)
				}
			}
		}
	}
	s.SampleRows(logits, 1, 0, 1, make([]*Generator, B-1))
	require.ErrorContains(t, s.Err(), "one generator per row")
}

// Logits holding NaN fail with a clear error instead of drawing an id.
func TestLLMSampleNaN(t *testing.T) {
	s := NewScope()
	defer s.Close()
	logits := s.Own(From([]float32{0, float32(math.NaN()), 1, 2}, 1, 4))
	s.Sample(logits, 1, 0, 1, nil)
	require.Error(t, s.Err())
}

func TestSelectRowsInPlace(t *testing.T) {
	s := NewScope()
	defer s.Close()
	a := s.Own(From([]float32{1, 2, 3, 4, 5, 6}, 3, 2))
	idx := s.Own(From([]int64{2, 0}))
	if err := SelectRowsInPlace([]*Tensor{a, nil}, 0, idx); err != nil {
		t.Fatal(err)
	}
	if got := s.Float32s(a); len(got) != 4 || got[0] != 5 || got[3] != 2 {
		t.Fatalf("%v", got)
	}
}

// Head log-probs equal log-probs of the explicit logits h·Wᵀ, for any chunk.
func TestLLMHeadLogProbs(t *testing.T) {
	s := NewScope()
	defer s.Close()
	g, err := NewGenerator(3, CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	h := s.Randn(g, []int64{2, 5, 4}, Float32, CPU)
	w := s.Randn(g, []int64{7, 4}, Float32, CPU)
	ids := s.Own(From([]int64{0, 1, 2, 3, 4, 5, 6, 0, 1, 2}, 2, 5))
	logits := s.MatMul(h, s.Transpose(w, 0, 1))
	wantLP, wantH := s.TokenLogProbs(logits, ids, 0.8, true, 0)
	a, b := s.Float32s(wantLP), s.Float32s(wantH)
	for _, chunk := range []int64{1, 2, 3, 0} {
		lp, ent := s.HeadLogProbs(h, w, ids, 0.8, true, chunk)
		c, d := s.Float32s(lp), s.Float32s(ent)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if math.Abs(float64(a[i]-c[i])) > 1e-5 || math.Abs(float64(b[i]-d[i])) > 1e-5 {
				t.Fatalf("chunk %d, %d: logp %v vs %v, entropy %v vs %v", chunk, i, c[i], a[i], d[i], b[i])
			}
		}
	}
}

// The chunked head node's gradients (recomputed per chunk, closed form)
// equal autograd's through the explicit logits, for log-probs, entropies and
// both, any chunk, a temperature, and non-uniform upstream gradients.
func TestLLMHeadLogProbsGrad(t *testing.T) {
	// 9 logits: scalar tails only; 37: vector body and tail of the row kernels
	for _, V := range []int64{9, 37} {
		t.Run(fmt.Sprintf("V=%d", V), func(t *testing.T) { headLogProbsGrad(t, V) })
	}
}

func headLogProbsGrad(t *testing.T, V int64) {
	g, err := NewGenerator(5, CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	base := NewScope()
	defer base.Close()
	h0 := base.Randn(g, []int64{2, 6, 4}, Float32, CPU)
	w0 := base.MulS(base.Randn(g, []int64{V, 4}, Float32, CPU), 2)
	c1 := base.Randn(g, []int64{2, 6}, Float32, CPU)
	c2 := base.Randn(g, []int64{2, 6}, Float32, CPU)
	ids := base.Own(From([]int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 2}, 2, 6))
	// grads returns d/dh and d/dw of sum(c1*logp) + sum(c2*entropy).
	grads := func(chunked bool, useLP, useEnt bool, chunk int64) ([]float32, []float32) {
		s := NewScope()
		defer s.Close()
		h, w := s.Clone(h0), s.Clone(w0)
		if err := h.SetRequiresGrad(true); err != nil {
			t.Fatal(err)
		}
		if err := w.SetRequiresGrad(true); err != nil {
			t.Fatal(err)
		}
		var lp, ent *Tensor
		if chunked {
			lp, ent = s.HeadLogProbs(h, w, ids, 0.7, useEnt, chunk)
		} else {
			lp, ent = s.TokenLogProbs(s.MatMul(h, s.Transpose(w, 0, 1)), ids, 0.7, useEnt, 0)
		}
		var loss *Tensor
		if useLP {
			loss = s.Sum(s.Mul(lp, c1), false)
		}
		if useEnt {
			e := s.Sum(s.Mul(ent, c2), false)
			if loss == nil {
				loss = e
			} else {
				loss = s.Add(loss, e)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if err := loss.Backward(nil); err != nil {
			t.Fatal(err)
		}
		gh := s.Own(h.Grad())
		gw := s.Own(w.Grad())
		a, b := s.Float32s(gh), s.Float32s(gw)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		return a, b
	}
	defer func(k int64) { headKeepElems = k }(headKeepElems)
	defer csrc.HeadMinChunk(csrc.HeadMinChunk(1)) // the callers' chunks, so several per pass
	for _, minChunk := range []int64{1 << 27, 1} {
		csrc.HeadMinChunk(minChunk)
		for _, keep := range []int64{0, 1 << 27} { // recompute in the backward, keep log p
			headKeepElems = keep
			for _, mode := range []struct{ lp, ent bool }{{true, false}, {false, true}, {true, true}} {
				checkHeadGrads(t, grads, mode.lp, mode.ent, keep)
			}
		}
	}
	if err := base.Err(); err != nil {
		t.Fatal(err)
	}
}

func checkHeadGrads(t *testing.T, grads func(chunked, useLP, useEnt bool, chunk int64) ([]float32, []float32), lp, ent bool, keep int64) {
	t.Helper()
	mode := struct{ lp, ent bool }{lp, ent}
	{
		wh, ww := grads(false, mode.lp, mode.ent, 0)
		for _, chunk := range []int64{1, 2, 4, 0} {
			gh, gw := grads(true, mode.lp, mode.ent, chunk)
			for i := range wh {
				if math.Abs(float64(wh[i]-gh[i])) > 1e-4 {
					t.Fatalf("keep %d logp %v entropy %v chunk %d: dh[%d] %v, autograd %v", keep, mode.lp, mode.ent, chunk, i, gh[i], wh[i])
				}
			}
			for i := range ww {
				if math.Abs(float64(ww[i]-gw[i])) > 1e-4 {
					t.Fatalf("keep %d logp %v entropy %v chunk %d: dw[%d] %v, autograd %v", keep, mode.lp, mode.ent, chunk, i, gw[i], ww[i])
				}
			}
		}
	}
}

// A second backward through the head node (retained graph) gives the same
// gradients as the first: the kept log p that the first backward turned
// into the gradient in place is recomputed.
func TestLLMHeadLogProbsRetainedBackward(t *testing.T) {
	s := NewScope()
	defer s.Close()
	g, err := NewGenerator(7, CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	h := s.Randn(g, []int64{2, 5, 4}, Float32, CPU)
	w := s.Randn(g, []int64{37, 4}, Float32, CPU)
	if err := w.SetRequiresGrad(true); err != nil {
		t.Fatal(err)
	}
	ids := s.Own(From([]int64{0, 11, 2, 33, 4, 5, 36, 7, 8, 20}, 2, 5))
	lp, ent := s.HeadLogProbs(h, w, ids, 1.3, true, 0)
	loss := s.Add(s.Sum(lp, false), s.MulS(s.Sum(ent, false), 0.5))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if err := loss.BackwardRetain(nil); err != nil {
		t.Fatal(err)
	}
	first := s.Float32s(s.Clone(s.Own(w.Grad())))
	if err := loss.Backward(nil); err != nil {
		t.Fatal(err)
	}
	both := s.Float32s(s.Own(w.Grad())) // accumulated: twice the first
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for i := range first {
		if math.Abs(float64(both[i]-2*first[i])) > 1e-5*(1+math.Abs(float64(first[i]))) {
			t.Fatalf("dw[%d]: after two backwards %v, want 2 x %v", i, both[i], first[i])
		}
	}
}

// With bfloat16 hidden states and head (mixed precision) the node runs its
// GEMMs in bfloat16 and its row passes in float32: log-probs, entropies and
// both gradients match the float32 computation on the same (bf16-rounded)
// values to bfloat16 precision, in one chunk or several, kept or recomputed.
func TestLLMHeadLogProbsBFloat16(t *testing.T) {
	g, err := NewGenerator(11, CPU)
	require.NoError(t, err)
	defer g.Close()
	base := NewScope()
	defer base.Close()
	const V = 37
	h16 := base.Cast(base.Randn(g, []int64{2, 6, 8}, Float32, CPU), BFloat16)
	w16 := base.Cast(base.MulS(base.Randn(g, []int64{V, 8}, Float32, CPU), 0.5), BFloat16)
	c1 := base.Randn(g, []int64{2, 6}, Float32, CPU)
	c2 := base.Randn(g, []int64{2, 6}, Float32, CPU)
	ids := base.Own(From([]int64{0, 1, 2, 3, 4, 5, 36, 7, 8, 0, 11, 2}, 2, 6))
	require.NoError(t, base.Err())
	// run returns logp, entropy, d/dh and d/dw of sum(c1*logp) + sum(c2*entropy)
	run := func(dt DType, fused bool) [4][]float32 {
		s := NewScope()
		defer s.Close()
		h, w := s.Cast(h16, dt), s.Cast(w16, dt)
		if dt == BFloat16 { // fresh leaves
			h, w = s.Clone(h16), s.Clone(w16)
		}
		require.NoError(t, h.SetRequiresGrad(true))
		require.NoError(t, w.SetRequiresGrad(true))
		var lp, ent *Tensor
		if fused {
			lp, ent = s.HeadLogProbs(h, w, ids, 0.7, true, 2)
		} else {
			lp, ent = s.TokenLogProbs(s.MatMul(h, s.Transpose(w, 0, 1)), ids, 0.7, true, 0)
		}
		loss := s.Add(s.Sum(s.Mul(lp, c1), false), s.Sum(s.Mul(ent, c2), false))
		require.NoError(t, s.Err())
		require.NoError(t, loss.Backward(nil))
		gh, gw := s.Own(h.Grad()), s.Own(w.Grad())
		require.Equal(t, dt, gh.DType())
		out := [4][]float32{s.Float32s(lp), s.Float32s(ent), s.Float32s(s.Cast(gh, Float32)), s.Float32s(s.Cast(gw, Float32))}
		require.NoError(t, s.Err())
		return out
	}
	want := run(Float32, false)
	defer func(k int64) { headKeepElems = k }(headKeepElems)
	defer csrc.HeadMinChunk(csrc.HeadMinChunk(1))
	names := []string{"logp", "entropy", "dh", "dw"}
	for _, minChunk := range []int64{1 << 27, 1} {
		csrc.HeadMinChunk(minChunk)
		for _, keep := range []int64{0, 1 << 27} {
			headKeepElems = keep
			got := run(BFloat16, true)
			for k := range got {
				for i := range want[k] {
					tol := 0.03 + 0.02*math.Abs(float64(want[k][i]))
					if math.Abs(float64(got[k][i]-want[k][i])) > tol {
						t.Fatalf("min chunk %d keep %d: %s[%d] = %v, float32 %v", minChunk, keep, names[k], i, got[k][i], want[k][i])
					}
				}
			}
		}
	}
}
