package game2048

import (
	"math"
	"testing"
)

// Expected values are CPython's math.log2(r + 1.0) * 0.1 (C's log2, as
// np.log2 uses), printed with repr. Go's math.Log2 misses r = 8 and 106 by
// one ulp.
func TestLogRewardMatchesCLog2(t *testing.T) {
	tests := []struct {
		raw  float64
		log2 float64
		want float64
	}{
		{4, 2.321928094887362, 0.23219280948873622},
		{8, 3.169925001442312, 0.31699250014423125},
		{12, 3.700439718141092, 0.37004397181410925},
		{106, 6.741466986401147, 0.6741466986401148},
		{136, 7.098032082960526, 0.7098032082960527},
		{2048, 11.000704269011246, 1.1000704269011246},
		{4096, 12.0003521774803, 1.20003521774803},
		{32768, 15.000044026886828, 1.500004402688683},
	}
	for _, tc := range tests {
		if got := log2(tc.raw + 1.0); got != tc.log2 {
			t.Errorf("log2(%v+1) = %v, want %v", tc.raw, got, tc.log2)
		}
		if got := log2(tc.raw+1.0) * 0.1; got != tc.want {
			t.Errorf("0.1·log2(%v+1) = %v, want %v", tc.raw, got, tc.want)
		}
	}
	// Exact powers of two and the edges.
	for _, x := range []float64{1, 2, 4, 1024, 1 << 40} {
		if got := log2(x); got != math.Log2(x) || got != math.Round(got) {
			t.Errorf("log2(%v) = %v", x, got)
		}
	}
	if !math.IsNaN(log2(math.NaN())) || !math.IsInf(log2(math.Inf(1)), 1) {
		t.Error("log2 of NaN/Inf")
	}
}

func BenchmarkLog2(b *testing.B) {
	for b.Loop() {
		_ = log2(107)
	}
}
