package algo

import (
	"math/rand/v2"
	"testing"
)

// Upstream's default actor batch: 8 groups × 16 rollouts = 128 rows, and a
// 512-token response window.
const benchB, benchT = 128, 512

func benchInputs() (r, v, m, lp, old, adv Mat, uids []int) {
	rng := rand.New(rand.NewPCG(42, 42))
	r, v, m = NewMat(benchB, benchT), NewMat(benchB, benchT), NewMat(benchB, benchT)
	lp, old, adv = NewMat(benchB, benchT), NewMat(benchB, benchT), NewMat(benchB, benchT)
	uids = make([]int, benchB)
	for i := 0; i < benchB; i++ {
		uids[i] = i / 16
		n := 100 + rng.IntN(benchT-100)
		for t := 0; t < n; t++ {
			m.Set(i, t, 1)
		}
		r.Set(i, n-1, rng.Float64())
	}
	for k := range v.Data {
		v.Data[k] = rng.Float64() * m.Data[k]
		old.Data[k] = -rng.Float64() * 3
		lp.Data[k] = old.Data[k] + (rng.Float64()-0.5)*0.5
		adv.Data[k] = rng.NormFloat64()
	}
	return
}

func BenchmarkGAE(b *testing.B) {
	r, v, m, _, _, _, _ := benchInputs()
	b.SetBytes(int64(benchB * benchT * 8 * 3))
	for b.Loop() {
		if _, _, err := GAE(r, v, m, 1, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchB*benchT)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkGRPO(b *testing.B) {
	r, _, m, _, _, _, uids := benchInputs()
	for b.Loop() {
		if _, _, err := GRPO(r, m, uids, nil, true, 1e-6); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchB*benchT)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkPolicyLoss(b *testing.B) {
	_, _, m, lp, old, adv, _ := benchInputs()
	cfg := DefaultPolicyLossConfig()
	for b.Loop() {
		if _, _, _, err := PolicyLoss(lp, old, adv, m, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchB*benchT)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
