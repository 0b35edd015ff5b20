package torch

import (
	"encoding/json"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// gradCheck compares autograd's gradient of f at x with central finite
// differences in float64.
func gradCheck(t *testing.T, name string, x0 []float64, shape []int64, f func(s *Scope, x *Tensor) *Tensor) {
	t.Helper()
	scoped(t, func(s *Scope) {
		x := s.Own(From(x0, shape...))
		require.NoError(t, x.SetRequiresGrad(true))
		y := f(s, x)
		require.NoError(t, s.Err(), name)
		require.NoError(t, y.Backward(nil), name)
		g, err := x.Grad()
		require.NoError(t, err)
		require.NotNil(t, g, name)
		got := s.Float64s(s.Own(g, nil))
		const h = 1e-6
		for i := range x0 {
			eval := func(d float64) float64 {
				xs := append([]float64(nil), x0...)
				xs[i] += d
				var v float64
				require.NoError(t, NoGrad(func() error {
					s2 := NewScope()
					v = s2.Item(f(s2, s2.Own(From(xs, shape...))))
					return s2.Close()
				}))
				return v
			}
			want := (eval(h) - eval(-h)) / (2 * h)
			require.InDelta(t, want, got[i], 1e-5*math.Max(1, math.Abs(want)), "%s: d/dx[%d]", name, i)
		}
	})
}

func TestGradientsMatchFiniteDifferences(t *testing.T) {
	x := []float64{0.3, -1.2, 0.7, 2.1, -0.4, 0.9}
	pos := []float64{0.3, 1.2, 0.7, 2.1, 0.4, 0.9}
	shape := []int64{2, 3}
	w := []float64{0.5, -0.3, 0.8, 0.1, 0.2, -0.7}
	cases := []struct {
		name string
		x    []float64
		f    func(s *Scope, x *Tensor) *Tensor
	}{
		{"silu", x, func(s *Scope, x *Tensor) *Tensor { return s.Sum(s.SiLU(x), false) }},
		{"gelu", x, func(s *Scope, x *Tensor) *Tensor { return s.Sum(s.GELU(x), false) }},
		{"tanh*sigmoid", x, func(s *Scope, x *Tensor) *Tensor { return s.Sum(s.Mul(s.Tanh(x), s.Sigmoid(x)), false) }},
		{"log_softmax gather", x, func(s *Scope, x *Tensor) *Tensor {
			lp := s.LogSoftmax(x, 1)
			return s.Sum(s.Gather(lp, 1, s.Own(From([]int64{2, 0}, 2, 1))), false)
		}},
		{"softmax entropy", x, func(s *Scope, x *Tensor) *Tensor {
			p := s.Softmax(x, -1)
			return s.Neg(s.Sum(s.Mul(p, s.LogSoftmax(x, -1)), false))
		}},
		{"logsumexp", x, func(s *Scope, x *Tensor) *Tensor { return s.Sum(s.LogSumExp(x, false, 1), false) }},
		{"rsqrt mean (rmsnorm)", x, func(s *Scope, x *Tensor) *Tensor {
			r := s.Rsqrt(s.AddS(s.Mean(s.Square(x), true, -1), 1e-6))
			return s.Sum(s.Mul(s.Mul(x, r), s.Own(From(w, shape...))), false)
		}},
		{"matmul linear", x, func(s *Scope, x *Tensor) *Tensor {
			wt := s.Own(From(w, 3, 2))
			return s.Sum(s.Square(s.Linear(x, s.Transpose(wt, 0, 1), nil)), false)
		}},
		{"var std", x, func(s *Scope, x *Tensor) *Tensor {
			return s.Add(s.Sum(s.Var(x, false, 1), false), s.Sum(s.Std(x, false), false))
		}},
		{"sqrt log exp pow", pos, func(s *Scope, x *Tensor) *Tensor {
			return s.Sum(s.Add(s.Add(s.Sqrt(x), s.Log(x)), s.Add(s.Exp(s.MulS(x, 0.1)), s.PowS(x, 3))), false)
		}},
		{"clamp min max where", x, func(s *Scope, x *Tensor) *Tensor {
			c := s.Clamp(x, -1, 1)
			m := s.Where(s.GtS(x, 0), s.MulS(x, 2), s.Square(x))
			return s.Sum(s.Add(c, s.Add(m, s.Maximum(x, s.MinS(x, 0.5)))), false)
		}},
		{"views cat narrow", x, func(s *Scope, x *Tensor) *Tensor {
			a := s.Narrow(s.Permute(x, 1, 0), 0, 1, 2)
			c := s.Cat([]*Tensor{a, s.Reshape(x, 3, 2)}, 0)
			return s.Sum(s.Mul(c, c), false)
		}},
		{"masked_fill triu div", x, func(s *Scope, x *Tensor) *Tensor {
			m := s.MaskedFill(x, s.LtS(x, 0), 0)
			return s.Sum(s.Div(s.Triu(m, 0), s.AddS(s.Abs(x), 1)), false)
		}},
	}
	for _, c := range cases {
		gradCheck(t, c.name, c.x, shape, c.f)
	}
}

func TestBackwardWithGradArgumentAndZeroGrad(t *testing.T) {
	scoped(t, func(s *Scope) {
		x := s.Own(From([]float32{1, 2, 3}))
		require.NoError(t, x.SetRequiresGrad(true))
		y := s.MulS(x, 2) // dy/dx = 2
		require.NoError(t, y.BackwardRetain(s.Own(From([]float32{1, 10, 100}))))
		g, err := x.Grad()
		require.NoError(t, err)
		require.Equal(t, []float32{2, 20, 200}, s.Float32s(s.Own(g, nil)))
		// gradients accumulate across backward calls
		require.NoError(t, y.Backward(s.Own(From([]float32{1, 1, 1}))))
		g, _ = x.Grad()
		require.Equal(t, []float32{4, 22, 202}, s.Float32s(s.Own(g, nil)))
		require.NoError(t, ZeroGrad([]*Tensor{x}))
		g, err = x.Grad()
		require.NoError(t, err)
		require.Nil(t, g)
		// detach cuts the graph
		d := s.Detach(y)
		require.False(t, d.RequiresGrad())
		require.True(t, y.RequiresGrad())
	})
}

func TestNoGradIsThreadSafe(t *testing.T) {
	// NoGrad on some goroutines must not leak into others running ops
	// concurrently (grad mode is thread-local in libtorch).
	start := Live()
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				s := NewScope()
				x := s.Own(From([]float32{1, 2}))
				_ = x.SetRequiresGrad(true)
				if g%2 == 0 {
					_ = NoGrad(func() error {
						if s.MulS(x, 2).RequiresGrad() {
							errs <- "result requires grad inside NoGrad"
						}
						return nil
					})
				} else if !s.MulS(x, 2).RequiresGrad() {
					errs <- "grad mode off outside NoGrad"
				}
				_ = s.Close()
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	require.Equal(t, start, Live())
}

func fill(n int, a, b float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(math.Sin(a*float64(i) + b))
	}
	return out
}

func TestAdamWMatchesPyTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/adamw_ref.json")
	require.NoError(t, err)
	var ref struct {
		Losses []float64 `json:"losses"`
		W, B   []float64
	}
	require.NoError(t, json.Unmarshal(raw, &ref))
	start := Live()
	W, err := From(fill(12, 0.9, 0.2), 4, 3)
	require.NoError(t, err)
	B, err := From(fill(3, 2.1, 0.3), 3)
	require.NoError(t, err)
	defer W.Free()
	defer B.Free()
	require.NoError(t, W.SetRequiresGrad(true))
	require.NoError(t, B.SetRequiresGrad(true))
	opt, err := NewAdamW([]*Tensor{W, B}, AdamWConfig{LR: 0.01, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1})
	require.NoError(t, err)
	defer opt.Close()
	s := NewScope()
	X := s.Own(From(fill(32, 0.7, 0.1), 8, 4))
	Y := s.Own(From(fill(24, 1.3, 0.5), 8, 3))
	for step := range 50 {
		require.NoError(t, ZeroGrad([]*Tensor{W, B}))
		ls := NewScope()
		loss := ls.Mean(ls.Square(ls.Sub(ls.Add(ls.MatMul(X, W), B), Y)), false)
		require.NoError(t, ls.Err())
		require.NoError(t, loss.Backward(nil))
		require.InDelta(t, ref.Losses[step], ls.Item(loss), 2e-6, "loss at step %d", step)
		require.NoError(t, ls.Close())
		require.NoError(t, opt.Step(0.01))
	}
	require.EqualValues(t, 50, opt.StepCount())
	near(t, ref.W, s.Float64s(W), 2e-6)
	near(t, ref.B, s.Float64s(B), 2e-6)
	require.NoError(t, s.Close())
	opt.Close()
	W.Free()
	B.Free()
	require.Equal(t, start, Live())
}

func TestSGDAndClipGradNorm(t *testing.T) {
	scoped(t, func(s *Scope) {
		p := s.Own(From([]float32{1, 2}))
		require.NoError(t, p.SetRequiresGrad(true))
		// loss = 3*p0 + 4*p1 → grad [3 4], norm 5
		loss := s.Sum(s.Mul(p, s.Own(From([]float32{3, 4}))), false)
		require.NoError(t, loss.Backward(nil))
		n, err := ClipGradNorm([]*Tensor{p}, 1)
		require.NoError(t, err)
		require.InDelta(t, 5, n, 1e-6)
		g, _ := p.Grad()
		near(t, []float64{0.6, 0.8}, s.Float64s(s.Own(g, nil)), 1e-5) // scaled by 1/(5+1e-6)
		// under the limit: unchanged
		n, err = ClipGradNorm([]*Tensor{p}, 10)
		require.NoError(t, err)
		require.InDelta(t, 1, n, 1e-5)
		o, err := NewSGD([]*Tensor{p}, 0.5, 0.9, 0)
		require.NoError(t, err)
		defer o.Close()
		require.NoError(t, o.Step(0.5))
		// p - 0.5*g = [1-0.3, 2-0.4]
		near(t, []float64{0.7, 1.6}, s.Float64s(p), 1e-5)
		require.NoError(t, o.Step(0.5)) // momentum: buf = 0.9*g + g = 1.9g
		near(t, []float64{0.7 - 0.5*1.9*0.6, 1.6 - 0.5*1.9*0.8}, s.Float64s(p), 1e-5)
	})
	_, err := NewAdamW(nil, AdamWConfig{LR: -1, Beta1: 1, Beta2: 0.9, Eps: 0})
	require.ErrorContains(t, err, "lr=-1")
	require.ErrorContains(t, err, "beta1=1")
	require.ErrorContains(t, err, "eps=0")
}

func rssKB(t *testing.T) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			v, err := strconv.ParseInt(f[1], 10, 64)
			require.NoError(t, err)
			return v
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

func TestLongLoopKeepsMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 iterations")
	}
	// 10,000 iterations of randn(128,128) -> matmul -> softmax with a scope
	// per iteration: 3 x 64 KiB per iteration, 1.9 GB if nothing were freed.
	start := Live()
	g, err := NewGenerator(1, CPU)
	require.NoError(t, err)
	defer g.Close()
	var after1k int64
	for i := range 10000 {
		s := NewScope()
		a := s.Randn(g, []int64{128, 128}, Float32, CPU)
		s.Softmax(s.MatMul(a, a), -1)
		require.NoError(t, s.Close())
		if i == 1000 {
			after1k = rssKB(t)
		}
	}
	end := rssKB(t)
	require.Less(t, end-after1k, int64(64<<10), "RSS grew by %d KiB between iteration 1,000 and 10,000", end-after1k)
	require.Equal(t, start, Live())
	runtime.GC()
	runtime.GC()
	require.Zero(t, Leaked(), "tensors reclaimed by the GC without Free")
}

// Freed tensor memory stays with the process (no trimming: the next
// training step would fault the same pages in again) until
// ReleaseFreedMemory hands it back.
func TestFreedMemoryKeptUntilReleased(t *testing.T) {
	if os.Getenv("RAGEN_KEEP_FREED_MEMORY") == "0" {
		t.Skip("RAGEN_KEEP_FREED_MEMORY=0")
	}
	// four 300 MiB tensors, every page written: each is below the mmap
	// threshold, and together they pass any trim threshold up to 1 GiB
	const mib = 4 * 300
	base := rssKB(t)
	s := NewScope()
	for range 4 {
		s.Full([]int64{300 << 18}, 1, Float32, CPU)
	}
	require.NoError(t, s.Err())
	held := rssKB(t)
	require.Greater(t, held-base, int64(mib-16)<<10, "the tensor's pages are resident")
	require.NoError(t, s.Close())
	kept := rssKB(t)
	require.Greater(t, kept-base, int64(mib-16)<<10, "freed memory was returned at once (trimmed)")
	ReleaseFreedMemory()
	released := rssKB(t)
	require.Less(t, released-base, int64(32<<10), "ReleaseFreedMemory left %d KiB", released-base)
}

func TestRuntimeInfo(t *testing.T) {
	require.Equal(t, 2, NumThreads())
	require.False(t, CUDAAvailable() && CUDADeviceCount() == 0)
	require.Contains(t, BuildInfo(), "libtorch")
}

// The fused float32 AdamW pass (vector body and tail: 1,067 elements)
// follows the float64 ATen sequence to float32 rounding over 20 steps of
// changing gradients, with and without weight decay.
func TestAdamWFusedMatchesFloat64(t *testing.T) {
	for _, wd := range []float64{0, 0.1} {
		s := NewScope()
		g, err := NewGenerator(11, CPU)
		require.NoError(t, err)
		p32 := s.Randn(g, []int64{97, 11}, Float32, CPU)
		p64 := s.To(p32, Float64, CPU)
		require.NoError(t, s.Err())
		require.NoError(t, p32.SetRequiresGrad(true))
		require.NoError(t, p64.SetRequiresGrad(true))
		cfg := AdamWConfig{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: wd}
		o32, err := NewAdamW([]*Tensor{p32}, cfg)
		require.NoError(t, err)
		o64, err := NewAdamW([]*Tensor{p64}, cfg)
		require.NoError(t, err)
		for step := range 20 {
			require.NoError(t, ZeroGrad([]*Tensor{p32, p64}))
			ls := NewScope()
			c := ls.Randn(g, []int64{97, 11}, Float32, CPU)
			l32 := ls.Sum(ls.Mul(ls.Square(p32), c), false) // grad 2 p c
			l64 := ls.Sum(ls.Mul(ls.Square(p64), ls.To(c, Float64, CPU)), false)
			require.NoError(t, ls.Err())
			require.NoError(t, l32.Backward(nil))
			require.NoError(t, l64.Backward(nil))
			require.NoError(t, o32.Step(0.01))
			require.NoError(t, o64.Step(0.01))
			require.NoError(t, ls.Close(), "step %d", step)
		}
		a, b := s.Float64s(p32), s.Float64s(p64)
		for i := range a {
			require.InDelta(t, b[i], a[i], 2e-5*(1+math.Abs(b[i])), "wd %g element %d", wd, i)
		}
		o32.Close()
		o64.Close()
		g.Close()
		require.NoError(t, s.Close())
	}
}

// A CPU table that wants gradients gets the lookup's gradient as rows added
// into its .grad (no dense (V,E) embedding gradient): the same numbers as
// autograd's dense backward, reached through a non-leaf copy of the table,
// for a tied head (the head's dense gradient lands first), for a lookup
// alone (.grad undefined when the rows arrive), and accumulated over two
// backward passes.
func TestEmbeddingRowGradientMatchesDense(t *testing.T) {
	table := []float32{0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0, 1.1, 1.2, -1.3, 1.4, 1.5}
	c := []float32{1, 2, 3, -1, 0.5, 2, 0.25, -3, 1, 2, 2, 1, -1, 1, 0.5, 3, -2, 1}
	d := []float32{1, -1, 2, 0.5, 3, -2, 1, 1, -0.5, 2}
	for _, tied := range []bool{true, false} {
		scoped(t, func(s *Scope) {
			grads := make([][]float64, 2)
			for k, dense := range []bool{false, true} {
				w := f32(s, table, 5, 3)
				require.NoError(t, w.SetRequiresGrad(true))
				ids := s.Own(From([]int64{1, 4, 1, 0, 1, 3}, 2, 3))
				for range 2 { // the second pass accumulates into .grad
					inner := NewScope()
					tw := w
					if dense { // a non-leaf table: autograd's dense backward
						tw = inner.MulS(w, 1)
					}
					x := inner.Embedding(tw, ids) // (2,3,3)
					require.True(t, x.RequiresGrad())
					loss := inner.Sum(inner.Mul(x, inner.Own(From(c, 2, 3, 3))), false)
					if tied { // the head reads the table too: logits (2,5) from x[:, 0]
						h := inner.Reshape(inner.Narrow(x, 1, 0, 1), 2, 3)
						loss = inner.Add(loss, inner.Sum(inner.Mul(inner.Linear(h, tw, nil), inner.Own(From(d, 2, 5))), false))
					}
					require.NoError(t, loss.Backward(nil))
					require.NoError(t, inner.Close())
				}
				g, err := w.Grad()
				require.NoError(t, err)
				require.NotNil(t, g)
				grads[k] = s.Float64s(s.Own(g, nil))
			}
			near(t, grads[1], grads[0], 1e-5)
			require.NotZero(t, grads[0][1*3]) // row 1, looked up three times
			if !tied {
				require.Zero(t, grads[0][2*3]) // row 2, never looked up
			}
		})
	}
	scoped(t, func(s *Scope) { // no gradients wanted: a plain lookup
		w := f32(s, table, 5, 3)
		require.NoError(t, w.SetRequiresGrad(true))
		require.NoError(t, NoGrad(func() error {
			x := s.Embedding(w, s.Own(From([]int64{1, 2}, 2)))
			require.False(t, x.RequiresGrad())
			return s.Err()
		}))
	})
}
