package algo

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestMaskedMeanVarWhiten(t *testing.T) {
	// x = [1 2 3 NaN], m = [1 1 1 0]: the NaN sits outside the mask and is
	// replaced by 0 (NaN-safe masked_sum); mean = 6/(3+1e-8) ≈ 2.
	x := []float64{1, 2, 3, math.NaN()}
	m := []float64{1, 1, 1, 0}
	assertClose(t, "MaskedMean", MaskedMean(x, m), 6/(3+1e-8), 1e-12)
	// Population variance over {1,2,3} about 2 = 2/3; Bessel ×3/2 → 1.
	v, err := MaskedVar(x, m, true)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "MaskedVar unbiased", v, 1, 1e-7)
	v, _ = MaskedVar(x, m, false)
	assertClose(t, "MaskedVar biased", v, 2.0/3, 1e-7)
	// Whitening [1 2 3 | 5 unmasked]: (x−2)/sqrt(1+1e-8), applied to every element.
	w, err := MaskedWhiten(mat(t, []float64{1, 2, 3, 5}), mat(t, m), true)
	if err != nil {
		t.Fatal(err)
	}
	assertMat(t, "whiten", w, [][]float64{{-1, 0, 1, 3}}, 1e-7)
	w, _ = MaskedWhiten(mat(t, []float64{1, 2, 3, 5}), mat(t, m), false)
	assertMat(t, "whiten no shift", w, [][]float64{{1, 2, 3, 5}}, 1e-7)
	// Empty mask mean is 0, not NaN.
	assertClose(t, "empty mean", MaskedMean([]float64{4, 5}, []float64{0, 0}), 0, 0)
}

func TestMaskedVarTooFew(t *testing.T) {
	for _, m := range [][]float64{{0, 0, 0}, {0, 1, 0}} {
		_, err := MaskedVar([]float64{1, 2, 3}, m, true)
		if !errors.Is(err, ErrTooFewTokens) {
			t.Errorf("mask %v: err = %v, want ErrTooFewTokens", m, err)
		}
		if _, err := MaskedWhiten(mat(t, []float64{1, 2, 3}), mat(t, m), true); !errors.Is(err, ErrTooFewTokens) {
			t.Errorf("whiten mask %v: err = %v", m, err)
		}
	}
	if _, err := MaskedVar([]float64{1, 2, 3}, []float64{0, 1, 0}, false); err != nil {
		t.Errorf("biased variance of one element: %v", err)
	}
}

func TestAggLossTable(t *testing.T) {
	// x = [[1 2 3] [4 5 6]], m = [[1 1 1] [1 0 0]]
	//   token-mean:              (1+2+3+4)/4 = 2.5
	//   seq-mean-token-sum:      rows 6, 4 → 5
	//   seq-mean-token-mean:     rows 2, 4 → 3
	//   seq-mean-token-sum-norm: 10/T = 10/3
	x := mat(t, []float64{1, 2, 3}, []float64{4, 5, 6})
	m := mat(t, []float64{1, 1, 1}, []float64{1, 0, 0})
	// With an all-masked row: x = [[1 2] [3 4]], m = [[1 1] [0 0]]
	//   token-mean 1.5; seq-sum 3 (the empty row does not count); seq-mean 1.5; sum-norm 3/2.
	x2 := mat(t, []float64{1, 2}, []float64{3, 4})
	m2 := mat(t, []float64{1, 1}, []float64{0, 0})
	// Everything masked: every mode gives 0.
	m3 := mat(t, []float64{0, 0}, []float64{0, 0})
	cases := []struct {
		mode      string
		x, m      Mat
		want      float64
		wantEmpty float64
	}{
		{TokenMean, x, m, 2.5, 1.5},
		{SeqMeanTokenSum, x, m, 5, 3},
		{SeqMeanTokenMean, x, m, 3, 1.5},
		{SeqMeanTokenSumNorm, x, m, 10.0 / 3, 1.5},
	}
	for _, c := range cases {
		got, err := AggLoss(c.x, c.m, c.mode)
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, c.mode, got, c.want, 1e-7)
		got, _ = AggLoss(x2, m2, c.mode)
		assertClose(t, c.mode+" empty row", got, c.wantEmpty, 1e-7)
		got, _ = AggLoss(x2, m3, c.mode)
		assertClose(t, c.mode+" all masked", got, 0, 0)
	}
}

func TestAggLossNaNOutsideMask(t *testing.T) {
	// token-mean replaces masked-out values by 0 first; the seq modes use a
	// plain x·m product, so NaN·0 = NaN propagates (as upstream).
	x := mat(t, []float64{1, math.NaN()})
	m := mat(t, []float64{1, 0})
	got, _ := AggLoss(x, m, TokenMean)
	assertClose(t, "token-mean", got, 1, 1e-7)
	for _, mode := range []string{SeqMeanTokenSum, SeqMeanTokenMean, SeqMeanTokenSumNorm} {
		got, _ := AggLoss(x, m, mode)
		if !math.IsNaN(got) {
			t.Errorf("%s = %v, want NaN", mode, got)
		}
	}
}

func TestAggLossGradMatchesFiniteDifferences(t *testing.T) {
	x := mat(t, []float64{0.3, -1.2, 2.5, 0.7}, []float64{1.1, 0.2, -0.4, 3}, []float64{5, 6, 7, 8})
	m := mat(t, []float64{1, 1, 0, 1}, []float64{0, 1, 0, 0}, []float64{0, 0, 0, 0})
	for _, mode := range LossAggModes() {
		g, err := AggLossGrad(m, mode)
		if err != nil {
			t.Fatal(err)
		}
		num := numGrad(x, func(x Mat) float64 { v, _ := AggLoss(x, m, mode); return v })
		assertMat(t, mode+" grad", g, num.Rows(), 1e-6)
	}
}

func TestAggLossErrors(t *testing.T) {
	x := mat(t, []float64{1, 2})
	_, err := AggLoss(x, x, "token-sum")
	if !errors.Is(err, ErrUnknownLossAggMode) || !strings.Contains(err.Error(), "seq-mean-token-mean") {
		t.Errorf("unknown mode: err = %v", err)
	}
	if _, err := AggLossGrad(x, "nope"); !errors.Is(err, ErrUnknownLossAggMode) {
		t.Errorf("grad unknown mode: err = %v", err)
	}
	if _, err := AggLoss(x, mat(t, []float64{1, 2, 3}), TokenMean); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("shape mismatch: err = %v", err)
	}
	if _, err := AggLoss(NewMat(2, 0), NewMat(2, 0), SeqMeanTokenSumNorm); err == nil {
		t.Error("sum-norm over zero columns: want error")
	}
	if _, err := MatFrom(2, 2, []float64{1}); err == nil {
		t.Error("MatFrom with wrong length: want error")
	}
}

// numGrad returns the central finite-difference gradient of f at x.
func numGrad(x Mat, f func(Mat) float64) Mat {
	const h = 1e-6
	g := NewMat(x.B, x.T)
	for k := range x.Data {
		xp := x.Clone()
		xp.Data[k] += h
		xm := x.Clone()
		xm.Data[k] -= h
		g.Data[k] = (f(xp) - f(xm)) / (2 * h)
	}
	return g
}
