package algo

import (
	"fmt"
	"math"
)

func checkLogits(logits []float64, vocab int) (int, error) {
	if vocab <= 0 {
		return 0, fmt.Errorf("algo: vocab size %d must be positive", vocab)
	}
	if len(logits)%vocab != 0 {
		return 0, fmt.Errorf("algo: %d logits is not a whole number of rows of vocab size %d", len(logits), vocab)
	}
	return len(logits) / vocab, nil
}

// logSumExp returns log Σ exp(z) computed stably, and the row maximum.
func logSumExp(z []float64) (lse, mx float64) {
	mx = math.Inf(-1)
	for _, v := range z {
		if v > mx || math.IsNaN(v) {
			mx = v
		}
	}
	if math.IsInf(mx, 0) || math.IsNaN(mx) {
		// all −∞ (lse = −∞), any +∞ (lse = +∞) or NaN: as torch.logsumexp.
		return mx, mx
	}
	s := 0.0
	for _, v := range z {
		s += math.Exp(v - mx)
	}
	return mx + math.Log(s), mx
}

// EntropyFromLogits is veRL's entropy_from_logits for rows of vocab logits
// (row-major, len = N·vocab): H = logsumexp(z) − Σ softmax(z)·z per row,
// computed stably by shifting by the row maximum. As upstream, a −∞ logit
// gives NaN (0·−∞); see EntropyFromLogitsSafe. Divide logits by the sampling
// temperature first, as the actor does.
func EntropyFromLogits(logits []float64, vocab int) ([]float64, error) {
	return entropy(logits, vocab, false)
}

// EntropyFromLogitsSafe is EntropyFromLogits except that −∞ logits (masked
// vocabulary entries) contribute 0 instead of NaN.
func EntropyFromLogitsSafe(logits []float64, vocab int) ([]float64, error) {
	return entropy(logits, vocab, true)
}

func entropy(logits []float64, vocab int, safe bool) ([]float64, error) {
	n, err := checkLogits(logits, vocab)
	if err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for i := range out {
		z := logits[i*vocab : (i+1)*vocab]
		lse, mx := logSumExp(z)
		if math.IsInf(mx, 0) || math.IsNaN(mx) {
			out[i] = math.NaN()
			continue
		}
		// Σ p·z = Σ p·(z − mx) + mx; p = exp(z − lse).
		s := 0.0
		for _, v := range z {
			if safe && math.IsInf(v, -1) {
				continue
			}
			p := math.Exp(v - lse)
			s += p * (v - mx)
		}
		out[i] = lse - mx - s
	}
	return out, nil
}

// LogProbsFromLogits returns log softmax(z)[label] for every row of vocab
// logits (veRL's logprobs_from_logits); labels has one entry per row.
func LogProbsFromLogits(logits []float64, vocab int, labels []int) ([]float64, error) {
	n, err := checkLogits(logits, vocab)
	if err != nil {
		return nil, err
	}
	if len(labels) != n {
		return nil, fmt.Errorf("algo: %d labels for %d logit rows", len(labels), n)
	}
	out := make([]float64, n)
	for i, lab := range labels {
		if lab < 0 || lab >= vocab {
			return nil, fmt.Errorf("algo: label %d at row %d is outside vocab [0, %d)", lab, i, vocab)
		}
		z := logits[i*vocab : (i+1)*vocab]
		lse, _ := logSumExp(z)
		out[i] = z[lab] - lse
	}
	return out, nil
}
