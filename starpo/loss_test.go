package starpo

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/starpo/algo"
	"ragen/torch"
)

// randMat returns a (b, t) matrix of uniforms in [lo, hi).
func randMat(r *rand.Rand, b, t int, lo, hi float64) algo.Mat {
	m := algo.NewMat(b, t)
	for k := range m.Data {
		m.Data[k] = lo + (hi-lo)*r.Float64()
	}
	return m
}

// randMask returns a 0/1 mask; row 0 is all zeros when emptyRow is set (so the
// seq modes see a row without tokens).
func randMask(r *rand.Rand, b, t int, emptyRow bool) algo.Mat {
	m := algo.NewMat(b, t)
	for k := range m.Data {
		if r.Float64() < 0.7 {
			m.Data[k] = 1
		}
	}
	if emptyRow {
		for k := 0; k < t; k++ {
			m.Data[k] = 0
		}
	}
	return m
}

func tensorOf(t *testing.T, s *torch.Scope, m algo.Mat, grad bool) *torch.Tensor {
	t.Helper()
	x := s.Own(torch.From(append([]float64(nil), m.Data...), int64(m.B), int64(m.T)))
	require.NoError(t, s.Err())
	if grad {
		require.NoError(t, x.SetRequiresGrad(true))
	}
	return x
}

func gradOf(t *testing.T, s *torch.Scope, x *torch.Tensor) []float64 {
	t.Helper()
	g, err := x.Grad()
	require.NoError(t, err)
	require.NotNil(t, g)
	return s.Float64s(s.Own(g, nil))
}

func assertClose(t *testing.T, want, got []float64, tol float64, msg string) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	for i := range want {
		assert.InDelta(t, want[i], got[i], tol*math.Max(1, math.Abs(want[i])), "%s[%d]", msg, i)
	}
}

func assertMetrics(t *testing.T, want, got map[string]float64, msg string) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		if assert.True(t, ok, "%s: metric %s missing", msg, k) {
			assert.InDelta(t, v, g, 1e-9*math.Max(1, math.Abs(v)), "%s: %s", msg, k)
		}
	}
}

// TestTensorPathMatchesAlgo checks every loss of the tensor path against the
// float64 reference on random inputs: values, metrics and the gradients
// autograd computes versus algo's analytic gradients.
func TestTensorPathMatchesAlgo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 6; trial++ {
		b, T := 2+r.IntN(4), 3+r.IntN(6)
		lp := randMat(r, b, T, -3, 0)
		old := lp.Clone()
		for k := range old.Data { // ratios around 1 so every clip branch is hit
			old.Data[k] += r.NormFloat64() * 0.4
		}
		ref := randMat(r, b, T, -3, 0)
		adv := randMat(r, b, T, -2, 2)
		ent := randMat(r, b, T, 0, 3)
		mask := randMask(r, b, T, trial%2 == 1)
		for _, mode := range algo.LossAggModes() {
			pcfg := algo.DefaultPolicyLossConfig()
			pcfg.LossAggMode = mode
			wantV, wantG, wantM, err := algo.PolicyLoss(lp, old, adv, mask, pcfg)
			require.NoError(t, err)
			scoped(t, func(s *torch.Scope) {
				x := tensorOf(t, s, lp, true)
				loss, met := PolicyLoss(s, x, tensorOf(t, s, old, false), tensorOf(t, s, adv, false), tensorOf(t, s, mask, false), pcfg)
				require.NoError(t, s.Err())
				assert.InDelta(t, wantV, s.Item(loss), 1e-10, "policy %s", mode)
				assertMetrics(t, wantM, met.Read(s), "policy "+mode)
				require.NoError(t, loss.Backward(nil))
				assertClose(t, wantG.Data, gradOf(t, s, x), 1e-9, "policy grad "+mode)
			})

			wantV, wantG, wantM, err = algo.EntropyLoss(ent, mask, mode)
			require.NoError(t, err)
			scoped(t, func(s *torch.Scope) {
				x := tensorOf(t, s, ent, true)
				loss := AggLoss(s, x, tensorOf(t, s, mask, false), mode)
				require.NoError(t, s.Err())
				assert.InDelta(t, wantV, s.Item(loss), 1e-10, "entropy %s", mode)
				assert.InDelta(t, wantM[algo.MetricEntropyLoss], s.Item(loss), 1e-10)
				require.NoError(t, loss.Backward(nil))
				assertClose(t, wantG.Data, gradOf(t, s, x), 1e-9, "agg grad "+mode)
			})

			for _, kt := range []string{"kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3", "k3+", "kl+", "abs+"} {
				wantV, wantG, wantM, err = algo.KLLoss(lp, ref, mask, kt, 0.3, mode)
				require.NoError(t, err)
				scoped(t, func(s *torch.Scope) {
					x := tensorOf(t, s, lp, true)
					agg := AggLoss(s, KLPenalty(s, x, tensorOf(t, s, ref, false), kt), tensorOf(t, s, mask, false), mode)
					loss := s.MulS(agg, 0.3)
					require.NoError(t, s.Err())
					assert.InDelta(t, wantV, s.Item(loss), 1e-10, "kl %s %s", kt, mode)
					assert.InDelta(t, wantM[algo.MetricKLLoss], s.Item(agg), 1e-10)
					require.NoError(t, loss.Backward(nil))
					assertClose(t, wantG.Data, gradOf(t, s, x), 1e-9, "kl grad "+kt+" "+mode)
				})
			}

			vcfg := algo.DefaultValueLossConfig()
			vcfg.LossAggMode, vcfg.GradAccum = mode, 3
			vpred := randMat(r, b, T, -1, 1)
			vold := vpred.Clone()
			for k := range vold.Data {
				vold.Data[k] += r.NormFloat64() * 0.6
			}
			ret := randMat(r, b, T, -1, 1)
			wantV, wantG, wantM, err = algo.ValueLoss(vpred, vold, ret, mask, vcfg)
			require.NoError(t, err)
			scoped(t, func(s *torch.Scope) {
				x := tensorOf(t, s, vpred, true)
				loss, met := ValueLoss(s, x, tensorOf(t, s, vold, false), tensorOf(t, s, ret, false), tensorOf(t, s, mask, false), vcfg)
				require.NoError(t, s.Err())
				assert.InDelta(t, wantV, s.Item(loss), 1e-10, "value %s", mode)
				assertMetrics(t, wantM, met.Read(s), "value "+mode)
				require.NoError(t, loss.Backward(nil))
				assertClose(t, wantG.Data, gradOf(t, s, x), 1e-9, "value grad "+mode)
			})

			acfg := algo.DefaultActorLossConfig()
			acfg.Policy.LossAggMode = mode
			acfg.UseKLLoss, acfg.KLLossType, acfg.KLLossCoef = true, "low_var_kl", 0.05
			in := algo.ActorLossInput{LogProb: lp, OldLogProb: old, Advantages: adv, Mask: mask, Entropy: ent, RefLogProb: ref}
			want, wantM2, err := algo.ActorLoss(in, acfg)
			require.NoError(t, err)
			scoped(t, func(s *torch.Scope) {
				x := tensorOf(t, s, lp, true)
				h := tensorOf(t, s, ent, true)
				loss, met := ActorLoss(s, x, h, tensorOf(t, s, old, false), tensorOf(t, s, ref, false), tensorOf(t, s, adv, false), tensorOf(t, s, mask, false), acfg)
				require.NoError(t, s.Err())
				assert.InDelta(t, want.Loss, s.Item(loss), 1e-10, "actor %s", mode)
				assertMetrics(t, wantM2, met.Read(s), "actor "+mode)
				require.NoError(t, loss.Backward(nil))
				assertClose(t, want.GradLogProb.Data, gradOf(t, s, x), 1e-9, "actor grad lp "+mode)
				assertClose(t, want.GradEntropy.Data, gradOf(t, s, h), 1e-9, "actor grad H "+mode)
			})
		}
	}
}

// Hand-derived cases for the dual clip and clip fractions (A = −1, c = 3):
// lp − old = log 5 → ρ = 5, L1 = 5, L2 = 1.28, Lc = 5, −A·c = 3, so the dual
// clip bounds the loss at 3 and pg_clipfrac_lower = 1; pg_clipfrac = [L2>L1] = 0.
// A = +1, ρ = 0.5: L1 = −0.5, L2 = −0.8 → Lc = −0.5, no clip.
func TestPolicyLossDualClipHand(t *testing.T) {
	scoped(t, func(s *torch.Scope) {
		lp := s.Own(torch.From([]float64{math.Log(5), math.Log(0.5)}, 1, 2))
		old := s.Own(torch.From([]float64{0, 0}, 1, 2))
		adv := s.Own(torch.From([]float64{-1, 1}, 1, 2))
		m := s.Own(torch.From([]float64{1, 1}, 1, 2))
		cfg := algo.DefaultPolicyLossConfig()
		cfg.LossAggMode = algo.SeqMeanTokenSum
		loss, met := PolicyLoss(s, lp, old, adv, m, cfg)
		require.NoError(t, s.Err())
		assert.InDelta(t, 3-0.5, s.Item(loss), 1e-7) // ÷ (1 row + 1e-8)
		got := met.Read(s)
		assert.InDelta(t, 0.5, got[algo.MetricPGClipFracLower], 1e-8)
		assert.InDelta(t, 0.0, got[algo.MetricPGClipFrac], 1e-12)
		assert.InDelta(t, -(math.Log(5)+math.Log(0.5))/2, got[algo.MetricPPOKL], 1e-8)
	})
}

func TestLossErrorsNameTheProblem(t *testing.T) {
	scoped(t, func(s *torch.Scope) {
		x := s.Own(torch.From([]float64{1, 2}, 1, 2))
		assert.Nil(t, AggLoss(s, x, x, "token-sum"))
		assert.ErrorIs(t, s.Err(), algo.ErrUnknownLossAggMode)
		assert.ErrorContains(t, s.Err(), "token-sum")
	})
	scoped(t, func(s *torch.Scope) {
		x := s.Own(torch.From([]float64{1, 2}, 1, 2))
		assert.Nil(t, KLPenalty(s, x, x, "low-var-kl"))
		assert.True(t, errors.Is(s.Err(), algo.ErrUnknownKLType))
	})
	scoped(t, func(s *torch.Scope) {
		x := s.Own(torch.From([]float64{1, 2}, 1, 2))
		cfg := algo.DefaultPolicyLossConfig()
		cfg.ClipRatioC = 0.5
		l, _ := PolicyLoss(s, x, x, x, x, cfg)
		assert.Nil(t, l)
		assert.ErrorContains(t, s.Err(), "clip_ratio_c")
	})
}

// scoped runs f with a fresh scope and checks that no tensor leaks.
func scoped(t *testing.T, f func(s *torch.Scope)) {
	t.Helper()
	before := torch.Live()
	s := torch.NewScope()
	f(s)
	_ = s.Close()
	assert.Equal(t, before, torch.Live(), "live tensors")
}

func TestLogitsHelpersMatchAlgo(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const rows, vocab = 5, 7
	z := make([]float64, rows*vocab)
	for k := range z {
		z[k] = r.NormFloat64() * 3
	}
	labels := []int{0, 6, 3, 2, 5}
	wantH, err := algo.EntropyFromLogits(z, vocab)
	require.NoError(t, err)
	wantLP, err := algo.LogProbsFromLogits(z, vocab, labels)
	require.NoError(t, err)
	scoped(t, func(s *torch.Scope) {
		x := s.Own(torch.From(append([]float64(nil), z...), rows, vocab))
		lab := s.Own(torch.From([]int64{0, 6, 3, 2, 5}, rows))
		assertClose(t, wantH, s.Float64s(EntropyFromLogits(s, x)), 1e-12, "entropy")
		assertClose(t, wantLP, s.Float64s(LogProbsFromLogits(s, x, lab)), 1e-12, "logprobs")
		require.NoError(t, s.Err())
	})
}
