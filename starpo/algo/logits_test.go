package algo

import (
	"math"
	"testing"
)

func TestEntropyFromLogits(t *testing.T) {
	// [0 0]: uniform over 2 → ln 2.
	// [0 ln3]: p = [¼ ¾] → −(¼ln¼ + ¾ln¾) = .5623351446188083.
	// [1000 1000]: still ln 2 (stable shift by the row max).
	// [5]: one token → 0.
	logits := []float64{0, 0, 0, math.Log(3), 1000, 1000, -1000, -1000}
	h, err := EntropyFromLogits(logits, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []float64{math.Ln2, .5623351446188083, math.Ln2, math.Ln2} {
		assertClose(t, "H", h[i], w, 1e-12)
	}
	h, _ = EntropyFromLogits([]float64{5}, 1)
	assertClose(t, "one token", h[0], 0, 1e-15)

	// A −∞ logit: upstream gives NaN (0·−∞); the safe variant ignores it.
	inf := []float64{0, math.Inf(-1), 0, 0, math.Inf(-1)}
	h, _ = EntropyFromLogits(inf, 5)
	if !math.IsNaN(h[0]) {
		t.Errorf("−∞ logit: H = %v, want NaN as upstream", h[0])
	}
	h, _ = EntropyFromLogitsSafe(inf, 5)
	assertClose(t, "safe", h[0], math.Log(3), 1e-12)

	if _, err := EntropyFromLogits([]float64{1, 2, 3}, 2); err == nil {
		t.Error("ragged logits: want error")
	}
	if _, err := EntropyFromLogits(nil, 0); err == nil {
		t.Error("vocab 0: want error")
	}
}

func TestLogProbsFromLogits(t *testing.T) {
	// [0 ln3]: log softmax = [ln¼ ln¾]; [1000 0]: label 1 → −1000 (no overflow).
	lp, err := LogProbsFromLogits([]float64{0, math.Log(3), 1000, 0}, 2, []int{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "lp0", lp[0], math.Log(.75), 1e-12)
	assertClose(t, "lp1", lp[1], -1000, 1e-12)
	if _, err := LogProbsFromLogits([]float64{0, 0}, 2, []int{2}); err == nil {
		t.Error("label out of range: want error")
	}
	if _, err := LogProbsFromLogits([]float64{0, 0}, 2, []int{0, 1}); err == nil {
		t.Error("label count: want error")
	}
}
