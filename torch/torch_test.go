package torch

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	SetNumThreads(2)
	SetLeakCheck(true)
	os.Exit(m.Run())
}

// inChild reruns the tests matching pattern (a -test.run expression) in a
// child process with env added to this one's, failing t with the child's
// output when they fail.
func inChild(t *testing.T, pattern string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", pattern, "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", env, err, out)
	}
}

// scoped runs f with a fresh scope and checks that every tensor it made is
// freed afterwards (the live count returns to its start).
func scoped(t *testing.T, f func(s *Scope)) {
	t.Helper()
	start := Live()
	s := NewScope()
	f(s)
	require.NoError(t, s.Close())
	require.Equal(t, start, Live(), "live tensor count must return to its start")
}

func f32(s *Scope, data []float32, shape ...int64) *Tensor { return s.Own(From(data, shape...)) }

func near(t *testing.T, want, got []float64, tol float64) {
	t.Helper()
	require.Equal(t, len(want), len(got), "length")
	for i := range want {
		if math.IsNaN(want[i]) {
			require.True(t, math.IsNaN(got[i]), "index %d: want NaN, got %v", i, got[i])
			continue
		}
		// tol is relative for |want| > 1 (float32 results)
		require.InDelta(t, want[i], got[i], tol*math.Max(1, math.Abs(want[i])), "index %d (want %v, got %v)", i, want, got)
	}
}

func TestRoundTripDTypes(t *testing.T) {
	scoped(t, func(s *Scope) {
		a := s.Own(From([]float64{1.5, -2, 3}, 3))
		require.Equal(t, []int64{3}, a.Shape())
		require.Equal(t, Float64, a.DType())
		require.Equal(t, CPU, a.Device())
		require.Equal(t, []float64{1.5, -2, 3}, s.Float64s(a))
		require.Equal(t, []int64{1, -2, 3}, s.Int64s(a)) // truncation toward zero, as torch's cast

		i := s.Own(From([]int32{7, 8, 9, 10}, 2, 2))
		require.Equal(t, Int32, i.DType())
		require.Equal(t, []float32{7, 8, 9, 10}, s.Float32s(i))

		b := s.Own(From([]bool{true, false}))
		got, err := Data[bool](b)
		require.NoError(t, err)
		require.Equal(t, []bool{true, false}, got)

		// bfloat16 keeps 8 mantissa bits: 1.00390625 = 1+2^-8 rounds to 1 (ties to even),
		// 3.0 is exact, 1000.5 rounds to 1000 (bf16 spacing at 1000 is 4).
		x := f32(s, []float32{1.00390625, 3, 1000.5})
		bf := s.Cast(x, BFloat16)
		require.Equal(t, BFloat16, bf.DType())
		require.Equal(t, []float32{1, 3, 1000}, s.Float32s(bf))
		raw, err := Bytes(bf, BFloat16)
		require.NoError(t, err)
		require.Len(t, raw, 6)
		back := s.Own(FromBytes(raw, BFloat16, 3))
		require.Equal(t, []float32{1, 3, 1000}, s.Float32s(back))
		// float16 has 10 mantissa bits: 1+2^-11 rounds to 1.
		h := s.Cast(s.Own(From([]float32{1 + 1.0/2048, 0.5})), Float16)
		require.Equal(t, []float32{1, 0.5}, s.Float32s(h))

		e := s.Own(From([]float32{}, 0, 4))
		require.Equal(t, []int64{0, 4}, e.Shape())
		require.Empty(t, s.Float32s(e))
	})
}

func TestFromErrors(t *testing.T) {
	_, err := From([]float32{1, 2, 3}, 2, 2)
	var te *Error
	require.ErrorAs(t, err, &te)
	require.Equal(t, "from_data", te.Op)
	require.Contains(t, err.Error(), "holds 4 elements, data has 3")
	_, err = FromBytes([]byte{1, 2, 3}, BFloat16, 1)
	require.ErrorContains(t, err, "not a whole number")
	_, err = ParseDType("fp8")
	require.ErrorContains(t, err, "valid: float32")
	_, err = ParseDevice("tpu")
	require.ErrorContains(t, err, "cuda:N")
	d, err := ParseDevice("cuda:1")
	require.NoError(t, err)
	require.Equal(t, "cuda:1", d.String())
}

func TestElementwise(t *testing.T) {
	scoped(t, func(s *Scope) {
		a := f32(s, []float32{-2, -0.5, 0, 1, 4})
		b := f32(s, []float32{1, 2, 3, 4, 5})
		sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
		xs := []float64{-2, -0.5, 0, 1, 4}
		mapf := func(f func(float64) float64) []float64 {
			out := make([]float64, len(xs))
			for i, x := range xs {
				out[i] = f(x)
			}
			return out
		}
		cases := []struct {
			name string
			got  *Tensor
			want []float64
		}{
			{"neg", s.Neg(a), []float64{2, 0.5, 0, -1, -4}},
			{"abs", s.Abs(a), []float64{2, 0.5, 0, 1, 4}},
			{"sign", s.Sign(a), []float64{-1, -1, 0, 1, 1}},
			{"exp", s.Exp(a), mapf(math.Exp)},
			{"log", s.Log(b), []float64{0, math.Ln2, math.Log(3), math.Log(4), math.Log(5)}},
			{"log1p", s.Log1p(b), []float64{math.Log(2), math.Log(3), math.Log(4), math.Log(5), math.Log(6)}},
			{"sqrt", s.Sqrt(b), []float64{1, math.Sqrt2, math.Sqrt(3), 2, math.Sqrt(5)}},
			{"rsqrt", s.Rsqrt(b), []float64{1, 1 / math.Sqrt2, 1 / math.Sqrt(3), 0.5, 1 / math.Sqrt(5)}},
			{"square", s.Square(a), []float64{4, 0.25, 0, 1, 16}},
			{"reciprocal", s.Reciprocal(b), []float64{1, 0.5, 1.0 / 3, 0.25, 0.2}},
			{"floor", s.Floor(a), []float64{-2, -1, 0, 1, 4}},
			{"sigmoid", s.Sigmoid(a), mapf(sig)},
			{"silu", s.SiLU(a), mapf(func(x float64) float64 { return x * sig(x) })},
			{"relu", s.ReLU(a), []float64{0, 0, 0, 1, 4}},
			{"tanh", s.Tanh(a), mapf(math.Tanh)},
			{"cos", s.Cos(a), mapf(math.Cos)},
			{"sin", s.Sin(a), mapf(math.Sin)},
			// exact GELU: x * Φ(x) = x/2 (1 + erf(x/√2))
			{"gelu", s.GELU(a), mapf(func(x float64) float64 { return x / 2 * (1 + math.Erf(x/math.Sqrt2)) })},
			{"gelu_tanh", s.GELUTanh(a), mapf(func(x float64) float64 {
				return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
			})},
			{"add", s.Add(a, b), []float64{-1, 1.5, 3, 5, 9}},
			{"sub", s.Sub(a, b), []float64{-3, -2.5, -3, -3, -1}},
			{"mul", s.Mul(a, b), []float64{-2, -1, 0, 4, 20}},
			{"div", s.Div(a, b), []float64{-2, -0.25, 0, 0.25, 0.8}},
			{"pow", s.Pow(b, f32(s, []float32{2, 2, 2, 0.5, 0})), []float64{1, 4, 9, 2, 1}},
			{"minimum", s.Minimum(a, s.MulS(b, 0.5)), []float64{-2, -0.5, 0, 1, 2.5}},
			{"maximum", s.Maximum(a, s.MulS(b, 0.5)), []float64{0.5, 1, 1.5, 2, 4}},
			{"add_s", s.AddS(a, 1), []float64{-1, 0.5, 1, 2, 5}},
			{"sub_s", s.SubS(a, 1), []float64{-3, -1.5, -1, 0, 3}},
			{"mul_s", s.MulS(a, -2), []float64{4, 1, 0, -2, -8}},
			{"div_s", s.DivS(a, 4), []float64{-0.5, -0.125, 0, 0.25, 1}},
			{"pow_s", s.PowS(b, 2), []float64{1, 4, 9, 16, 25}},
			{"rsub_s", s.RSubS(a, 1), []float64{3, 1.5, 1, 0, -3}},
			{"rdiv_s", s.RDivS(b, 1), []float64{1, 0.5, 1.0 / 3, 0.25, 0.2}},
			{"min_s", s.MinS(a, 0.5), []float64{-2, -0.5, 0, 0.5, 0.5}},
			{"max_s", s.MaxS(a, 0.5), []float64{0.5, 0.5, 0.5, 1, 4}},
			{"clamp", s.Clamp(a, -1, 2), []float64{-1, -0.5, 0, 1, 2}},
		}
		for _, c := range cases {
			require.NotNil(t, c.got, "%s: %v", c.name, s.Err())
			near(t, c.want, s.Float64s(c.got), 1e-6)
		}
		cmp := []struct {
			name string
			got  *Tensor
			want []bool
		}{
			{"eq", s.Eq(a, s.SubS(b, 3)), []bool{true, false, true, true, false}},
			{"ne", s.Ne(a, s.SubS(b, 3)), []bool{false, true, false, false, true}},
			{"lt", s.Lt(a, f32(s, []float32{0, 0, 0, 0, 0})), []bool{true, true, false, false, false}},
			{"le_s", s.LeS(a, 0), []bool{true, true, true, false, false}},
			{"gt_s", s.GtS(a, 0), []bool{false, false, false, true, true}},
			{"ge_s", s.GeS(a, 1), []bool{false, false, false, true, true}},
			{"eq_s", s.EqS(a, 0), []bool{false, false, true, false, false}},
			{"ne_s", s.NeS(a, 0), []bool{true, true, false, true, true}},
			{"lt_s", s.LtS(a, -1), []bool{true, false, false, false, false}},
			{"le", s.Le(a, a), []bool{true, true, true, true, true}},
			{"gt", s.Gt(b, a), []bool{true, true, true, true, true}},
			{"ge", s.Ge(a, b), []bool{false, false, false, false, false}},
			{"not", s.Not(s.GtS(a, 0)), []bool{true, true, true, false, false}},
			{"and", s.And(s.GtS(a, -1), s.LtS(a, 2)), []bool{false, true, true, true, false}},
			{"or", s.Or(s.LtS(a, -1), s.GtS(a, 2)), []bool{true, false, false, false, true}},
			{"isnan", s.IsNaN(s.Log(a)), []bool{true, true, false, false, false}},
		}
		for _, c := range cmp {
			require.NotNil(t, c.got, "%s: %v", c.name, s.Err())
			got, err := Data[bool](c.got)
			require.NoError(t, err)
			require.Equal(t, c.want, got, c.name)
		}
	})
}

func TestReductions(t *testing.T) {
	scoped(t, func(s *Scope) {
		// m = [[1 2 3]
		//      [4 5 9]]
		m := f32(s, []float32{1, 2, 3, 4, 5, 9}, 2, 3)
		near(t, []float64{24}, s.Float64s(s.Sum(m, false)), 1e-6)
		near(t, []float64{5, 7, 12}, s.Float64s(s.Sum(m, false, 0)), 1e-6)
		near(t, []float64{2, 6}, s.Float64s(s.Mean(m, false, 1)), 1e-6)
		require.Equal(t, []int64{2, 1}, s.Mean(m, true, 1).Shape())
		// row 0: mean 2, squares 1+0+1 = 2: unbiased var 1, population 2/3
		// row 1: mean 6, squares 4+1+9 = 14: unbiased 7, population 14/3
		near(t, []float64{1, 7}, s.Float64s(s.Var(m, false, 1)), 1e-5)
		near(t, []float64{1, math.Sqrt(7)}, s.Float64s(s.Std(m, false, 1)), 1e-5)
		near(t, []float64{2.0 / 3, 14.0 / 3}, s.Float64s(s.VarPop(m, false, 1)), 1e-5)
		near(t, []float64{math.Sqrt(2.0 / 3), math.Sqrt(14.0 / 3)}, s.Float64s(s.StdPop(m, false, 1)), 1e-5)
		// all six: mean 4, squares 9+4+1+0+1+25=40 → unbiased 8
		near(t, []float64{8}, s.Float64s(s.Var(m, false)), 1e-5)
		near(t, []float64{3, 9}, s.Float64s(s.Max(m, false, 1)), 1e-6)
		near(t, []float64{1, 2, 3}, s.Float64s(s.Min(m, false, 0)), 1e-6)
		near(t, []float64{6, 180}, s.Float64s(s.Prod(m, false, 1)), 1e-4)
		lse := math.Log(math.Exp(1) + math.Exp(2) + math.Exp(3))
		near(t, []float64{lse}, s.Float64s(s.Narrow(s.LogSumExp(m, false, 1), 0, 0, 1)), 1e-5)
		near(t, []float64{math.Sqrt(1 + 4 + 9 + 16 + 25 + 81)}, s.Float64s(s.Norm(m, false)), 1e-4)
		v, i := s.MaxDim(m, 1, false)
		near(t, []float64{3, 9}, s.Float64s(v), 0)
		require.Equal(t, []int64{2, 2}, s.Int64s(i))
		require.Equal(t, []int64{1, 1, 1}, s.Int64s(s.Argmax(m, 0, false)))
		near(t, []float64{1, 3, 6, 4, 9, 18}, s.Float64s(s.Cumsum(m, 1)), 1e-6)
		anyv, err := Data[bool](s.Any(s.GtS(m, 4), false, 1))
		require.NoError(t, err)
		require.Equal(t, []bool{false, true}, anyv)
		allv, err := Data[bool](s.All(s.GtS(m, 0), false))
		require.NoError(t, err)
		require.Equal(t, []bool{true}, allv)

		x := f32(s, []float32{3, 1, 4, 1, 5})
		tv, ti := s.TopK(x, 2, 0, true)
		near(t, []float64{5, 4}, s.Float64s(tv), 0)
		require.Equal(t, []int64{4, 2}, s.Int64s(ti))
		sv, si := s.Sort(x, 0, false, true)
		near(t, []float64{1, 1, 3, 4, 5}, s.Float64s(sv), 0)
		require.Equal(t, []int64{1, 3, 0, 2, 4}, s.Int64s(si)) // stable: the two 1s keep their order

		// softmax([0, ln 3]) = [1/4, 3/4]
		p := s.Softmax(f32(s, []float32{0, float32(math.Log(3))}, 1, 2), -1)
		near(t, []float64{0.25, 0.75}, s.Float64s(p), 1e-6)
		near(t, []float64{math.Log(0.25), math.Log(0.75)}, s.Float64s(s.LogSoftmax(f32(s, []float32{0, float32(math.Log(3))}), 0)), 1e-6)
		require.NoError(t, s.Err())
	})
}

func TestMatmulFamily(t *testing.T) {
	scoped(t, func(s *Scope) {
		a := f32(s, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
		w := f32(s, []float32{1, 0, -1, 2, 1, 0}, 2, 3) // out=2, in=3
		bias := f32(s, []float32{10, 20})
		// a @ w^T: row0 [1-3, 2+2] = [-2, 4]; row1 [4-6, 8+5] = [-2, 13]
		near(t, []float64{8, 24, 8, 33}, s.Float64s(s.Linear(a, w, bias)), 1e-6)
		near(t, []float64{-2, 4, -2, 13}, s.Float64s(s.Linear(a, w, nil)), 1e-6)
		near(t, []float64{-2, 4, -2, 13}, s.Float64s(s.MatMul(a, s.Transpose(w, 0, 1))), 1e-6)
		ba := s.Reshape(a, 1, 2, 3)
		bw := s.Reshape(s.Transpose(w, 0, 1), 1, 3, 2)
		near(t, []float64{-2, 4, -2, 13}, s.Float64s(s.BMM(ba, s.Contiguous(bw))), 1e-6)

		emb := f32(s, []float32{0, 0, 1, 1, 2, 2}, 3, 2)
		ids := s.Own(From([]int64{2, 0, 2}, 3))
		near(t, []float64{2, 2, 0, 0, 2, 2}, s.Float64s(s.Embedding(emb, ids)), 0)
		require.NoError(t, s.Err())
	})
}

func TestViewsAndIndexing(t *testing.T) {
	scoped(t, func(s *Scope) {
		// m = [[0 1 2] [3 4 5]]; b-3 in TestElementwise = [-2 -1 0 1 2]
		m := s.Own(From([]float32{0, 1, 2, 3, 4, 5}, 2, 3))
		near(t, []float64{0, 3, 1, 4, 2, 5}, s.Float64s(s.Transpose(m, 0, 1)), 0)
		near(t, []float64{0, 3, 1, 4, 2, 5}, s.Float64s(s.Permute(m, 1, 0)), 0)
		require.Equal(t, []int64{3, 2}, s.View(m, 3, -1).Shape())
		near(t, []float64{1, 2, 4, 5}, s.Float64s(s.Narrow(m, 1, 1, 2)), 0)
		near(t, []float64{0, 2, 3, 5}, s.Float64s(s.Slice(m, 1, 0, 3, 2)), 0)
		near(t, []float64{3, 4, 5}, s.Float64s(s.Squeeze(s.Narrow(m, 0, 1, 1), 0)), 0)
		require.Equal(t, []int64{2, 1, 3}, s.Unsqueeze(m, 1).Shape())
		near(t, []float64{2, 0, 5, 3}, s.Float64s(s.IndexSelect(m, 1, s.Own(From([]int64{2, 0})))), 0)
		// gather row-wise: row0 picks col 2, row1 picks col 0
		near(t, []float64{2, 3}, s.Float64s(s.Gather(m, 1, s.Own(From([]int64{2, 0}, 2, 1)))), 0)
		z := s.Zeros([]int64{2, 3}, Float32, CPU)
		near(t, []float64{0, 0, 7, 8, 0, 0}, s.Float64s(s.Scatter(z, 1, s.Own(From([]int64{2, 0}, 2, 1)), s.Own(From([]float32{7, 8}, 2, 1)))), 0)
		near(t, []float64{7, 0, 0, 0, 0, 0}, s.Float64s(s.ScatterAdd(z, 1, s.Own(From([]int64{0, 0}, 1, 2)), s.Own(From([]float32{3, 4}, 1, 2)))), 0)
		near(t, []float64{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}, s.Float64s(s.Cat([]*Tensor{m, m}, 0)), 0)
		require.Equal(t, []int64{2, 2, 3}, s.Stack([]*Tensor{m, m}, 0).Shape())
		near(t, []float64{0, 1, 2, 0, 1, 2}, s.Float64s(s.Expand(s.Narrow(m, 0, 0, 1), 2, -1)), 0)
		sq := s.Own(From([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, 3, 3))
		near(t, []float64{1, 2, 3, 0, 5, 6, 0, 0, 9}, s.Float64s(s.Triu(sq, 0)), 0)
		near(t, []float64{0, 0, 0, 4, 0, 0, 7, 8, 0}, s.Float64s(s.Tril(sq, -1)), 0)
		mask := s.GtS(sq, 5)
		near(t, []float64{1, 2, 3, 4, 5, -1, -1, -1, -1}, s.Float64s(s.MaskedFill(sq, mask, -1)), 0)
		near(t, []float64{0, 0, 0, 0, 0, 6, 7, 8, 9}, s.Float64s(s.Where(mask, sq, s.Zeros([]int64{1}, Float32, CPU))), 0)
		near(t, []float64{0, 1, 2, 3}, s.Float64s(s.Arange(0, 4, 1, Float32, CPU)), 0)

		// in place: fill, copy into a view, index_copy
		buf := s.Zeros([]int64{2, 3}, Float32, CPU)
		s.FillInto(buf, 1)
		s.CopyInto(s.Narrow(buf, 1, 0, 1), s.Own(From([]float32{5, 6}, 2, 1)))
		near(t, []float64{5, 1, 1, 6, 1, 1}, s.Float64s(buf), 0)
		s.IndexCopyInto(buf, 0, s.Own(From([]int64{1})), s.Own(From([]float32{9, 9, 9}, 1, 3)))
		near(t, []float64{5, 1, 1, 9, 9, 9}, s.Float64s(buf), 0)
		require.NoError(t, s.Err())
		require.Contains(t, m.String(), "3")
	})
}

func TestErrorNamesOp(t *testing.T) {
	start := Live()
	s := NewScope()
	a := s.Own(From([]float32{1, 2, 3, 4, 5, 6}, 2, 3))
	c := s.MatMul(a, a) // 2x3 @ 2x3
	require.Nil(t, c)
	var te *Error
	require.ErrorAs(t, s.Err(), &te)
	require.Equal(t, "matmul", te.Op)
	require.Contains(t, te.Msg, "cannot be multiplied")
	require.NotContains(t, te.Msg, "Exception raised from") // no C++ backtrace
	// sticky: later ops are no-ops and the first error stays
	require.Nil(t, s.Add(a, a))
	require.Equal(t, te, s.Err())
	err := s.Close()
	require.ErrorContains(t, err, "torch: matmul: ")
	require.Equal(t, start, Live())

	// other ops name themselves too
	s2 := NewScope()
	s2.Reshape(s2.Own(From([]float32{1, 2, 3})), 2, 2)
	require.ErrorContains(t, s2.Err(), "torch: reshape:")
	require.Error(t, s2.Close())
	s3 := NewScope()
	s3.Cat(nil, 0)
	require.ErrorContains(t, s3.Close(), "needs at least one tensor")

	// freed tensors are an error, not a crash
	x, err := From([]float32{1})
	require.NoError(t, err)
	x.Free()
	x.Free()
	s4 := NewScope()
	require.Nil(t, s4.Exp(x))
	require.ErrorIs(t, s4.Close(), ErrFreed)
	_, err = x.Item()
	require.ErrorIs(t, err, ErrFreed)
	require.Equal(t, start, Live())
}

func TestEscapeAndOwn(t *testing.T) {
	start := Live()
	s := NewScope()
	a := s.Own(From([]float32{1, 2}))
	b := s.Escape(s.MulS(a, 3))
	require.NoError(t, s.Close())
	require.False(t, a.Valid())
	require.True(t, b.Valid())
	v, err := Data[float32](b)
	require.NoError(t, err)
	require.Equal(t, []float32{3, 6}, v)
	b.Free()
	require.Equal(t, start, Live())
	// Own with an error records it
	s = NewScope()
	require.Nil(t, s.Own(From([]float32{1}, 2)))
	require.ErrorContains(t, s.Close(), "holds 2 elements")
	require.Equal(t, start, Live())
}

func TestGeneratorsAndSampling(t *testing.T) {
	scoped(t, func(s *Scope) {
		g1, err := NewGenerator(42, CPU)
		require.NoError(t, err)
		defer g1.Close()
		g2, err := NewGenerator(42, CPU)
		require.NoError(t, err)
		defer g2.Close()
		a := s.Float64s(s.Randn(g1, []int64{5}, Float32, CPU))
		b := s.Float64s(s.Randn(g2, []int64{5}, Float32, CPU))
		require.Equal(t, a, b, "same seed, same draws")
		// state save/restore reproduces the next draws
		st, err := g1.State()
		require.NoError(t, err)
		x1 := s.Float64s(s.Rand(g1, []int64{4}, Float32, CPU))
		require.NoError(t, g1.SetState(st))
		x2 := s.Float64s(s.Rand(g1, []int64{4}, Float32, CPU))
		require.Equal(t, x1, x2)
		for _, v := range x1 {
			require.True(t, v >= 0 && v < 1)
		}
		// multinomial never picks zero-probability entries
		probs := s.Own(From([]float32{0, 1, 0, 0, 0, 0, 0.5, 0.5}, 2, 4))
		for range 20 {
			idx := s.Int64s(s.Multinomial(probs, 1, true, g2))
			require.Equal(t, int64(1), idx[0])
			require.Contains(t, []int64{2, 3}, idx[1])
		}
		require.NoError(t, s.Err())
	})
}

func TestOpErrorsDoNotLeakAndAreTyped(t *testing.T) {
	var te *Error
	err := errors.New("x")
	require.False(t, errors.As(err, &te))
}

func TestDeviceZeroValueIsCPU(t *testing.T) {
	var d Device
	require.Equal(t, CPU, d)
	require.False(t, d.IsCUDA())
	require.Equal(t, -1, d.Ordinal())
	require.Equal(t, "cuda:0", CUDA(0).String())
	require.Equal(t, 2, CUDA(2).Ordinal())
	p, err := ParseDevice("cuda")
	require.NoError(t, err)
	require.Equal(t, CUDA(0), p)
}
