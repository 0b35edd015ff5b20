package algo

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// MaskEps is veRL's denominator guard in masked means: Σ(x·m)/(Σm + 1e-8).
// The tensor path (package starpo) uses the same constant.
const MaskEps = 1e-8

// whitenEps is veRL's variance guard in masked_whiten: (x−μ)·rsqrt(σ²+1e-8).
const whitenEps = 1e-8

// ErrTooFewTokens is returned by whitening when the mask selects fewer than
// two elements, so the Bessel-corrected variance n/(n−1) is undefined
// (veRL raises ValueError for n = 0 and divides by zero for n = 1).
var ErrTooFewTokens = errors.New("algo: masked variance needs at least 2 masked elements")

// ErrUnknownLossAggMode is returned for a loss_agg_mode that is not one of
// LossAggModes.
var ErrUnknownLossAggMode = errors.New("algo: unknown loss_agg_mode")

// The loss_agg_mode names (actor.loss_agg_mode, critic.loss_agg_mode).
const (
	TokenMean           = "token-mean"
	SeqMeanTokenSum     = "seq-mean-token-sum"
	SeqMeanTokenMean    = "seq-mean-token-mean"
	SeqMeanTokenSumNorm = "seq-mean-token-sum-norm"
)

// LossAggModes lists the valid loss_agg_mode names.
func LossAggModes() []string {
	return []string{TokenMean, SeqMeanTokenSum, SeqMeanTokenMean, SeqMeanTokenSumNorm}
}

func checkAggMode(mode string) error {
	if slices.Contains(LossAggModes(), mode) {
		return nil
	}
	return fmt.Errorf("%w %q (valid: %s)", ErrUnknownLossAggMode, mode, strings.Join(LossAggModes(), ", "))
}

// MaskedSum is veRL's NaN-safe masked_sum: Σ where(m≠0, x, 0)·m over all
// elements. x and m must have the same length.
func MaskedSum(x, m []float64) float64 {
	s := 0.0
	for k, v := range x {
		if m[k] != 0 {
			s += v * m[k]
		}
	}
	return s
}

// MaskedMean is veRL's masked_mean over all elements:
// Σ where(m≠0, x, 0)·m / (Σm + 1e-8). An empty mask gives 0.
func MaskedMean(x, m []float64) float64 {
	n := 0.0
	for _, v := range m {
		n += v
	}
	return MaskedSum(x, m) / (n + MaskEps)
}

// RowMaskedMeans is masked_mean(x, m, axis=-1): one masked mean per row.
func RowMaskedMeans(x, m Mat) ([]float64, error) {
	if err := sameShape([]string{"x", "mask"}, x, m); err != nil {
		return nil, err
	}
	out := make([]float64, x.B)
	for i := range out {
		out[i] = MaskedMean(x.Row(i), m.Row(i))
	}
	return out, nil
}

// MaskedVar is veRL's masked_var: the masked mean of (x−μ)², times the
// Bessel factor n/(n−1) when unbiased (n = Σm). With unbiased set, n < 2
// returns ErrTooFewTokens.
func MaskedVar(x, m []float64, unbiased bool) (float64, error) {
	n := 0.0
	for _, v := range m {
		n += v
	}
	mu := MaskedMean(x, m)
	s := 0.0
	for k, v := range x {
		if m[k] != 0 {
			d := v - mu
			s += d * d * m[k]
		}
	}
	variance := s / (n + MaskEps)
	if unbiased {
		if n == 0 || n == 1 {
			return 0, fmt.Errorf("%w (mask sum %v)", ErrTooFewTokens, n)
		}
		variance *= n / (n - 1)
	}
	return variance, nil
}

// MaskedWhiten is veRL's masked_whiten: (x − μ)·rsqrt(σ² + 1e-8) applied to
// every element (masked or not), with μ, σ² the masked mean and unbiased
// masked variance. If shiftMean is false the mean is added back.
func MaskedWhiten(x, m Mat, shiftMean bool) (Mat, error) {
	if err := sameShape([]string{"x", "mask"}, x, m); err != nil {
		return Mat{}, err
	}
	mu := MaskedMean(x.Data, m.Data)
	v, err := MaskedVar(x.Data, m.Data, true)
	if err != nil {
		return Mat{}, err
	}
	r := 1 / math.Sqrt(v+whitenEps)
	out := NewMat(x.B, x.T)
	for k, xv := range x.Data {
		w := (xv - mu) * r
		if !shiftMean {
			w += mu
		}
		out.Data[k] = w
	}
	return out, nil
}

// AggLoss is agg_loss: it reduces a per-token loss matrix to a scalar.
//
//	token-mean              Σ(x·m)/(Σm + 1e-8)                       (NaN-safe masked mean)
//	seq-mean-token-sum      row mean over rows with Σm>0 of Σ_t x·m
//	seq-mean-token-mean     row mean over rows with Σm>0 of Σ_t x·m/(Σ_t m + 1e-8)
//	seq-mean-token-sum-norm Σ_all x·m / T                            (T = padded width)
//
// Row means are Σ(v·w)/(Σw + 1e-8) with w = [Σ_t m > 0]. The seq modes use a
// plain x·m product per row, so a NaN under a zero mask propagates as it
// does upstream.
func AggLoss(x, m Mat, mode string) (float64, error) {
	if err := checkAggMode(mode); err != nil {
		return 0, err
	}
	if err := sameShape([]string{"loss", "mask"}, x, m); err != nil {
		return 0, err
	}
	switch mode {
	case TokenMean:
		return MaskedMean(x.Data, m.Data), nil
	case SeqMeanTokenSumNorm:
		if x.T == 0 {
			return 0, errors.New("algo: seq-mean-token-sum-norm needs at least one column")
		}
		s := 0.0
		for k, v := range x.Data {
			s += v * m.Data[k]
		}
		return s / float64(x.T), nil
	}
	seq := make([]float64, x.B)
	w := make([]float64, x.B)
	for i := 0; i < x.B; i++ {
		xr, mr := x.Row(i), m.Row(i)
		s, n := 0.0, 0.0
		for t, v := range xr {
			s += v * mr[t]
			n += mr[t]
		}
		if mode == SeqMeanTokenMean {
			s /= n + MaskEps
		}
		seq[i] = s
		if n > 0 {
			w[i] = 1
		}
	}
	return MaskedMean(seq, w), nil
}

// AggLossGrad returns ∂AggLoss/∂x for the mask m: the aggregation is linear in
// x, so the gradient depends only on the mask and the mode.
func AggLossGrad(m Mat, mode string) (Mat, error) {
	if err := checkAggMode(mode); err != nil {
		return Mat{}, err
	}
	if err := m.check("mask"); err != nil {
		return Mat{}, err
	}
	g := NewMat(m.B, m.T)
	switch mode {
	case TokenMean:
		n := 0.0
		for _, v := range m.Data {
			n += v
		}
		for k, v := range m.Data {
			if v != 0 {
				g.Data[k] = v / (n + MaskEps)
			}
		}
		return g, nil
	case SeqMeanTokenSumNorm:
		if m.T == 0 {
			return g, nil
		}
		for k, v := range m.Data {
			g.Data[k] = v / float64(m.T)
		}
		return g, nil
	}
	rowN := make([]float64, m.B)
	rows := 0.0
	for i := 0; i < m.B; i++ {
		for _, v := range m.Row(i) {
			rowN[i] += v
		}
		if rowN[i] > 0 {
			rows++
		}
	}
	for i := 0; i < m.B; i++ {
		if rowN[i] <= 0 {
			continue
		}
		scale := 1 / (rows + MaskEps)
		if mode == SeqMeanTokenMean {
			scale /= rowN[i] + MaskEps
		}
		gr, mr := g.Row(i), m.Row(i)
		for t, v := range mr {
			gr[t] = v * scale
		}
	}
	return g, nil
}
