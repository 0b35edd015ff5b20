package torch

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// fusedCase is one decoder op applied to its inputs.
type fusedCase struct {
	name   string
	shapes [][]int64 // the differentiable inputs
	op     func(s *Scope, in []*Tensor) *Tensor
}

// keyBias masks key 3 of row 0 and keys 0..5 of row 1 (so row 1's first
// queries, at positions below 6, have no key to attend).
func keyBias(s *Scope, B, L int64) *Tensor {
	m := make([]int64, B*L)
	for b := int64(0); b < B; b++ {
		for j := int64(0); j < L; j++ {
			if (b == 0 && j != 3) || (b == 1 && j > 5) || b > 1 {
				m[b*L+j] = 1
			}
		}
	}
	return s.KeyBias(s.Own(From(m, B, L)))
}

func fusedCases() []fusedCase {
	const B, H, KV, D = 2, 4, 2, 8
	attn := func(T, Lk, off int64) fusedCase {
		return fusedCase{fmt.Sprintf("GQAAttention/T=%d/Lk=%d/offset=%d", T, Lk, off),
			[][]int64{{B, H, T, D}, {B, KV, Lk, D}, {B, KV, Lk, D}},
			func(s *Scope, in []*Tensor) *Tensor {
				return s.GQAAttention(in[0], in[1], in[2], keyBias(s, B, Lk), off, 1/math.Sqrt(D))
			}}
	}
	return []fusedCase{
		{"RMSNorm", [][]int64{{3, 5, 20}, {20}}, func(s *Scope, in []*Tensor) *Tensor { return s.RMSNorm(in[0], in[1], 1e-6) }},
		{"SwiGLU", [][]int64{{3, 5, 2 * 19}}, func(s *Scope, in []*Tensor) *Tensor { return s.SwiGLU(in[0]) }},
		{"Rope/transposed view", [][]int64{{B, 7, 3, 20}}, func(s *Scope, in []*Tensor) *Tensor {
			// tables of the input's dtype, not differentiated
			ang := s.MulS(s.Own(From([]float32{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0}, 1, 1, 1, 20)), 1)
			ang = s.Cast(s.Add(ang, s.Zeros([]int64{B, 1, 7, 20}, Float32, CPU)), in[0].DType())
			return s.Rope(s.Transpose(in[0], 1, 2), s.Cos(ang), s.Sin(ang))
		}},
		// linear's float32 products take oneDNN's sgemm (64 rows and up)
		{"Linear/bias", [][]int64{{2, 40, 24}, {16, 24}, {16}}, func(s *Scope, in []*Tensor) *Tensor { return s.Linear(in[0], in[1], in[2]) }},
		{"Linear/no bias", [][]int64{{70, 24}, {16, 24}}, func(s *Scope, in []*Tensor) *Tensor { return s.Linear(in[0], in[1], nil) }},
		{"Linear/row slices", [][]int64{{80, 30}, {16, 24}, {16}}, func(s *Scope, in []*Tensor) *Tensor {
			return s.Linear(s.Narrow(in[0], 1, 2, 24), in[1], in[2])
		}},
		{"Linear/transposed views", [][]int64{{24, 80}, {24, 16}}, func(s *Scope, in []*Tensor) *Tensor {
			return s.Linear(s.Transpose(in[0], 0, 1), s.Transpose(in[1], 0, 1), nil)
		}},
		attn(9, 9, 0),     // a whole sequence
		attn(5, 9, 4),     // a continuation after 4 cached keys
		attn(1, 9, 8),     // one decode step
		attn(200, 200, 0), // several blocks of query times
		// one (batch row, KV head) pair: the blocks in sequence with threaded
		// GEMMs (the cases above run their pairs as parallel tasks)
		{"GQAAttention/one pair", [][]int64{{1, 3, 150, D}, {1, 1, 150, D}, {1, 1, 150, D}}, func(s *Scope, in []*Tensor) *Tensor {
			return s.GQAAttention(in[0], in[1], in[2], keyBias(s, 1, 150), 0, 1/math.Sqrt(D))
		}},
	}
}

// TestFusedOpsMatchComposition holds each fused op (float32 and bfloat16 on
// this CPU) to its ATen composition, which float64 inputs take: values and
// the gradients of every input.
func TestFusedOpsMatchComposition(t *testing.T) {
	for _, c := range fusedCases() {
		for _, dt := range []DType{Float32, BFloat16} {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) {
				s := NewScope()
				defer s.Close()
				g, err := NewGenerator(11, CPU)
				require.NoError(t, err)
				defer g.Close()
				var lo, hi []*Tensor // dt inputs and float64 copies, both leaves
				for _, sh := range c.shapes {
					x := s.Randn(g, sh, Float32, CPU)
					a, b := s.Cast(x, dt), s.Cast(s.Cast(x, dt), Float64)
					require.NoError(t, s.Err())
					require.NoError(t, a.SetRequiresGrad(true))
					require.NoError(t, b.SetRequiresGrad(true))
					lo, hi = append(lo, a), append(hi, b)
				}
				yl, yh := c.op(s, lo), c.op(s, hi)
				require.NoError(t, s.Err())
				require.Equal(t, yh.Shape(), yl.Shape())
				r := s.Randn(g, yh.Shape(), Float64, CPU)
				require.NoError(t, s.Sum(s.Mul(s.Cast(yl, Float64), r), false).Backward(nil))
				require.NoError(t, s.Sum(s.Mul(yh, r), false).Backward(nil))
				tol := 2e-5
				if dt == BFloat16 {
					tol = 2e-2
				}
				check := func(what string, a, b *Tensor) {
					av, bv := s.Float64s(s.Cast(a, Float64)), s.Float64s(b)
					require.NoError(t, s.Err())
					top, d := 0.0, 0.0
					for i := range bv {
						top = max(top, math.Abs(bv[i]))
						d = max(d, math.Abs(av[i]-bv[i]))
					}
					t.Logf("%s: max |fused - composition| %.2g of %.2g", what, d, top)
					if top == 0 || d > tol*top {
						t.Errorf("%s: fused and composed differ by %.3g (largest %.3g)", what, d, top)
					}
				}
				check("value", yl, yh)
				for i := range lo {
					ga, err := lo[i].Grad()
					require.NoError(t, err)
					gb, err := hi[i].Grad()
					require.NoError(t, err)
					require.NotNil(t, ga, "input %d has no gradient", i)
					check(fmt.Sprint("gradient of input ", i), s.Own(ga, nil), s.Own(gb, nil))
				}
			})
		}
	}
}

// TestOneDNNSgemm: where libtorch links oneDNN as a shared library (Debian's
// does) float32 linears take its sgemm, and RAGEN_GEMM=aten turns that off
// (the Linear cases above then hold ATen's products to the same standard,
// rerun in a child process).
func TestOneDNNSgemm(t *testing.T) {
	if os.Getenv("RAGEN_GEMM") == "aten" {
		require.False(t, OneDNNSgemm(), "RAGEN_GEMM=aten must turn the oneDNN path off")
		return
	}
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	if !bytes.Contains(maps, []byte("libdnnl.so")) {
		t.Skip("libtorch does not link oneDNN as a shared library here")
	}
	require.True(t, OneDNNSgemm(), "libdnnl.so is loaded, so linear should take its sgemm")
	inChild(t, "^(TestOneDNNSgemm|TestFusedOpsMatchComposition)$", "RAGEN_GEMM=aten")
}

// TestFusedOpsErrors: bad shapes and dtypes are errors that name the problem.
func TestFusedOpsErrors(t *testing.T) {
	for _, c := range []struct {
		name, want string
		op         func(s *Scope) *Tensor
	}{
		{"rms w size", "w must be (N)", func(s *Scope) *Tensor {
			return s.RMSNorm(s.Zeros([]int64{2, 4}, Float32, CPU), s.Zeros([]int64{3}, Float32, CPU), 1e-6)
		}},
		{"rms w dtype", "x's dtype", func(s *Scope) *Tensor {
			return s.RMSNorm(s.Zeros([]int64{2, 4}, Float32, CPU), s.Zeros([]int64{4}, BFloat16, CPU), 1e-6)
		}},
		{"swiglu odd", "must be even", func(s *Scope) *Tensor { return s.SwiGLU(s.Zeros([]int64{2, 5}, Float32, CPU)) }},
		{"swiglu ints", "floating", func(s *Scope) *Tensor { return s.SwiGLU(s.Zeros([]int64{2, 4}, Int64, CPU)) }},
		{"rope tables", "(B,1,T,D)", func(s *Scope) *Tensor {
			x := s.Zeros([]int64{1, 2, 3, 4}, Float32, CPU)
			return s.Rope(x, s.Zeros([]int64{1, 1, 4, 4}, Float32, CPU), s.Zeros([]int64{1, 1, 4, 4}, Float32, CPU))
		}},
		{"attention heads", "multiple of the KV heads", func(s *Scope) *Tensor {
			q, k := s.Zeros([]int64{1, 3, 2, 4}, Float32, CPU), s.Zeros([]int64{1, 2, 2, 4}, Float32, CPU)
			return s.GQAAttention(q, k, k, s.Zeros([]int64{1, 2}, Float32, CPU), 0, 0.5)
		}},
		{"attention offset", "offset + T <= Lk", func(s *Scope) *Tensor {
			q, k := s.Zeros([]int64{1, 2, 2, 4}, Float32, CPU), s.Zeros([]int64{1, 1, 2, 4}, Float32, CPU)
			return s.GQAAttention(q, k, k, s.Zeros([]int64{1, 2}, Float32, CPU), 1, 0.5)
		}},
		{"attention bias", "kbias must be float32 (B, >= Lk)", func(s *Scope) *Tensor {
			q, k := s.Zeros([]int64{1, 2, 2, 4}, Float32, CPU), s.Zeros([]int64{1, 1, 3, 4}, Float32, CPU)
			return s.GQAAttention(q, k, k, s.Zeros([]int64{1, 2}, Float32, CPU), 1, 0.5)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewScope()
			defer s.Close()
			y := c.op(s)
			require.Nil(t, y)
			require.ErrorContains(t, s.Err(), c.want)
		})
	}
}

// swigluBits runs SwiGLU forward and backward in float32 and bfloat16 on a
// row width whose 59 features leave a 16-lane, an 8-lane and a scalar part,
// at values across sigmoid's range (large of both signs, zeros, tiny), and
// returns every output and gradient element widened to float64.
func swigluBits(t *testing.T) []float64 {
	const M, I = 3, 59
	x := make([]float32, M*2*I)
	for i := range x {
		v := float32(math.Sin(float64(i)*0.731)) * float32(1+i%13) * 3
		switch i % 17 {
		case 0:
			v = -90
		case 5:
			v = 95
		case 9:
			v = 0
		case 11:
			v = 1e-30
		}
		x[i] = v
	}
	s := NewScope()
	defer s.Close()
	var out []float64
	for _, dt := range []DType{Float32, BFloat16} {
		gu := s.Cast(s.Own(From(x, M, 2*I)), dt)
		require.NoError(t, s.Err())
		require.NoError(t, gu.SetRequiresGrad(true))
		y := s.SwiGLU(gu)
		w := s.Cast(s.Sin(s.Arange(0, M*I, 1, Float32, CPU)), dt)
		require.NoError(t, s.Sum(s.Mul(y, s.Reshape(w, M, I)), false).Backward(nil))
		g, err := gu.Grad()
		require.NoError(t, err)
		out = append(out, s.Float64s(s.Cast(y, Float64))...)
		out = append(out, s.Float64s(s.Cast(s.Own(g, nil), Float64))...)
		require.NoError(t, s.Err())
	}
	return out
}

// TestSwiGLULanesSameBits: the 16-lane (AVX-512) SwiGLU passes give the bits
// of the 8-lane (AVX2) ones, forward and backward, float32 and bfloat16; a
// child process held to AVX2 (RAGEN_CPU_ISA) writes its results for the
// parent to compare. On a CPU without AVX-512 both take the 8-lane path.
func TestSwiGLULanesSameBits(t *testing.T) {
	if f := os.Getenv("RAGEN_TEST_SWIGLU_OUT"); f != "" {
		var b bytes.Buffer
		for _, v := range swigluBits(t) {
			fmt.Fprintf(&b, "%016x\n", math.Float64bits(v))
		}
		require.NoError(t, os.WriteFile(f, b.Bytes(), 0o644))
		return
	}
	wide := swigluBits(t)
	f := t.TempDir() + "/avx2.txt"
	inChild(t, "^TestSwiGLULanesSameBits$", "RAGEN_CPU_ISA=avx2", "RAGEN_TEST_SWIGLU_OUT="+f)
	raw, err := os.ReadFile(f)
	require.NoError(t, err)
	lines := bytes.Fields(raw)
	require.Len(t, lines, len(wide))
	for i, l := range lines {
		want := fmt.Sprintf("%016x", math.Float64bits(wide[i]))
		if string(l) != want {
			t.Fatalf("element %d: avx2 bits %s, default ISA bits %s (%v)", i, l, want, wide[i])
		}
	}
}
