package filter

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

var benchSizes = []int{10, 100, 1000, 10000}

func benchScores(n int) []float64 {
	r := rand.New(rand.NewPCG(1, 2))
	s := make([]float64, n)
	for i := range s {
		s[i] = r.Float64() * 2
		if i%7 == 0 {
			s[i] = 0
		}
	}
	return s
}

func BenchmarkSelect(b *testing.B) {
	cases := []struct {
		name string
		cfg  Config
	}{
		{"top_p_linear", cfgWith(StrategyTopP, 0.6)},
		{"top_p_softmax", cfgWith(StrategyTopP, 0.6, softmaxMode)},
		{"top_k", cfgWith(StrategyTopK, 0.25)},
		{"min_p", cfgWith(StrategyMinP, 0.5)},
	}
	for _, c := range cases {
		for _, n := range benchSizes {
			scores := benchScores(n)
			b.Run(fmt.Sprintf("%s/groups=%d", c.name, n), func(b *testing.B) {
				for b.Loop() {
					if _, err := Select(scores, c.cfg); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "groups/s")
			})
		}
	}
}

// BenchmarkApply filters batches of n groups × 8 rows with the reward
// variance metric (top_p 0.6 linear).
func BenchmarkApply(b *testing.B) {
	for _, n := range benchSizes {
		rewards := benchScores(n * 8)
		cfg := cfgWith(StrategyTopP, 0.6, groups(n))
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Apply(Batch{Rewards: rewards}, cfg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*8)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func BenchmarkSplitBuckets(b *testing.B) {
	for _, n := range benchSizes {
		rs := benchScores(n * 8)
		cfg := DefaultConfig()
		cfg.GroupSize = 8
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := SplitBuckets(rs, nil, cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
