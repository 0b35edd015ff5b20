package collapse

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// Pair is one teacher-forced scoring request: the reasoning tokens z scored
// after the prompt tokens x, i.e. the sequence [x ‖ z] with position ids
// 0..len−1, attention on every real token. Neither slice is padded; a
// Scorer that batches pairs pads the reasoning itself and masks the pads.
type Pair struct {
	Prompt    []int // x: the rebuilt inference prompt (ends with "<think>")
	Reasoning []int // z: the tokens inside the <think> block
}

// Score is a Scorer's answer for one Pair.
type Score struct {
	// SumLogProb is Σ_t log p(z_t | x, z_<t) over the real reasoning tokens,
	// from the current actor with logits divided by the rollout temperature.
	SumLogProb float64
	// Tokens is the number of reasoning tokens summed (len(Reasoning)).
	Tokens int
}

// Scorer scores reasoning under prompts. The llm package implements it with
// the actor model; it must return one Score per pair, in order.
type Scorer interface {
	ScoreReasoning(ctx context.Context, pairs []Pair) ([]Score, error)
}

// ScorerFunc adapts a function to Scorer.
type ScorerFunc func(ctx context.Context, pairs []Pair) ([]Score, error)

// ScoreReasoning calls f.
func (f ScorerFunc) ScoreReasoning(ctx context.Context, pairs []Pair) ([]Score, error) {
	return f(ctx, pairs)
}

// CrossScores scores every reasoning (rows) under every prompt (columns)
// and returns the per-token matrix L[i][j] = S[i][j] / max(tokens, 1) and
// the sequence matrix S[i][j] = Σ log-probs. Pairs are sent column by
// column in chunks of at most microBatch pairs; with worldSize > 1 each
// chunk is padded to a multiple of worldSize with copies of its last pair
// and the extra scores are dropped. Empty reasoning is not sent: its scores
// are 0 (upstream's masked sum over no token).
func CrossScores(ctx context.Context, s Scorer, prompts, reasoning [][]int, microBatch, worldSize int) (L, S [][]float64, err error) {
	if microBatch < 1 {
		return nil, nil, fmt.Errorf("collapse: micro batch size must be ≥ 1, got %d", microBatch)
	}
	worldSize = max(worldSize, 1)
	nr, nc := len(reasoning), len(prompts)
	L = make([][]float64, nr)
	S = make([][]float64, nr)
	for i := range L {
		L[i] = make([]float64, nc)
		S[i] = make([]float64, nc)
	}
	type cell struct{ i, j int }
	var cells []cell
	for j := range nc {
		for i := range nr {
			if len(reasoning[i]) > 0 {
				cells = append(cells, cell{i, j})
			}
		}
	}
	for start := 0; start < len(cells); start += microBatch {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("collapse: scoring: %w", err)
		}
		chunk := cells[start:min(start+microBatch, len(cells))]
		pairs := make([]Pair, len(chunk), len(chunk)+worldSize)
		for k, c := range chunk {
			pairs[k] = Pair{Prompt: prompts[c.j], Reasoning: reasoning[c.i]}
		}
		for len(pairs)%worldSize != 0 {
			pairs = append(pairs, pairs[len(chunk)-1])
		}
		scores, err := s.ScoreReasoning(ctx, pairs)
		if err != nil {
			return nil, nil, fmt.Errorf("collapse: scoring pairs %d..%d: %w", start, start+len(chunk)-1, err)
		}
		if len(scores) != len(pairs) {
			return nil, nil, fmt.Errorf("collapse: scorer returned %d scores for %d pairs", len(scores), len(pairs))
		}
		for k, c := range chunk {
			sc := scores[k]
			if math.IsNaN(sc.SumLogProb) || sc.SumLogProb > 0 && math.IsInf(sc.SumLogProb, 1) {
				return nil, nil, fmt.Errorf("collapse: scorer returned log-prob %v for row %d column %d", sc.SumLogProb, c.i, c.j)
			}
			if sc.Tokens < 0 || sc.Tokens > len(reasoning[c.i]) {
				return nil, nil, fmt.Errorf("collapse: scorer counted %d tokens for row %d column %d, reasoning has %d",
					sc.Tokens, c.i, c.j, len(reasoning[c.i]))
			}
			S[c.i][c.j] = sc.SumLogProb
			L[c.i][c.j] = sc.SumLogProb / float64(max(sc.Tokens, 1))
		}
	}
	return L, S, nil
}

// Matrix is a cross log-probability matrix with its labels.
type Matrix struct {
	// L[i][j] is the per-token mean log-prob of row i's reasoning under
	// column j's prompt; S[i][j] the sequence sum. Both [rows][N].
	L, S [][]float64
	// Col[i] is the column of row i's own prompt, c(i).
	Col []int
	// Sig[j] is column j's prompt-signature id: columns with identical
	// prompt token lists share one. Nil means every column is distinct.
	Sig []int
}

// Signatures numbers the distinct prompts in column order: columns with
// identical token lists get the same id.
func Signatures(prompts [][]int) []int {
	sig := make([]int, len(prompts))
	next := 0
	for j, p := range prompts {
		sig[j] = -1
		for k := range j {
			if slices.Equal(prompts[k], p) {
				sig[j] = sig[k]
				break
			}
		}
		if sig[j] < 0 {
			sig[j] = next
			next++
		}
	}
	return sig
}

// EMA is the cross-step state of one metric family: the exponential moving
// averages of the marginal std (per-token and sequence variants).
type EMA struct {
	Std, StdSeq float64
	Set         bool // false before the first update
}

func (e EMA) update(std, stdSeq, decay float64) EMA {
	if !e.Set {
		return EMA{Std: std, StdSeq: stdSeq, Set: true}
	}
	return EMA{
		Std:    decay*e.Std + (1-decay)*std,
		StdSeq: decay*e.StdSeq + (1-decay)*stdSeq,
		Set:    true,
	}
}

// Metric names within a family (logged as <family>/<name>).
const (
	NameMIEstimate          = "mi_estimate"
	NameMIUpperBound        = "mi_upper_bound"
	NameMatchedLogProbMean  = "matched_log_prob_mean"
	NameMarginalLogProbMean = "marginal_log_prob_mean"
	NameMISeqEstimate       = "mi_seq_estimate"
	NameRetrievalAccuracy   = "retrieval_accuracy"
	NameRetrievalChance     = "retrieval_chance_level"
	NameRetrievalAbove      = "retrieval_above_chance"
	NameCondEntropy         = "conditional_entropy_est"
	NameReasoningEntropy    = "reasoning_entropy_est"
	NameCondEntropySeq      = "conditional_entropy_seq_est"
	NameReasoningEntropySeq = "reasoning_entropy_seq_est"
	NameMarginalStd         = "marginal_std"
	NameMarginalStdSeq      = "marginal_std_seq"
	NameMIZScore            = "mi_zscore"
	NameMIZScoreSeq         = "mi_zscore_seq"
	NameMarginalStdEMA      = "marginal_std_ema"
	NameMarginalStdEMASeq   = "marginal_std_ema_seq"
	NameMIZScoreEMA         = "mi_zscore_ema"
	NameMIZScoreEMASeq      = "mi_zscore_ema_seq"
)

// RetrievalKs are the top-k levels of retrieval_accuracy@k.
var RetrievalKs = []int{2, 4, 8}

// MatrixMetrics computes a family's metrics (un-prefixed names, see the
// Name* constants and retrieval_{accuracy,chance_level,above_chance}@k)
// from a cross matrix, given the family's EMA state; it returns the
// updated state. stdEps stabilises the z-scores, decay is the EMA decay.
func MatrixMetrics(m Matrix, stdEps, decay float64, prev EMA) (map[string]float64, EMA, error) {
	rows := len(m.L)
	if rows == 0 {
		return nil, prev, fmt.Errorf("collapse: empty cross matrix")
	}
	N := len(m.L[0])
	if N == 0 {
		return nil, prev, fmt.Errorf("collapse: cross matrix has no column")
	}
	if len(m.S) != rows || len(m.Col) != rows {
		return nil, prev, fmt.Errorf("collapse: matrix has %d per-token rows, %d sequence rows, %d column labels", rows, len(m.S), len(m.Col))
	}
	for i := range rows {
		if len(m.L[i]) != N || len(m.S[i]) != N {
			return nil, prev, fmt.Errorf("collapse: matrix row %d has %d/%d columns, want %d", i, len(m.L[i]), len(m.S[i]), N)
		}
		if m.Col[i] < 0 || m.Col[i] >= N {
			return nil, prev, fmt.Errorf("collapse: row %d labelled with column %d of %d", i, m.Col[i], N)
		}
	}
	sig := m.Sig
	if sig == nil {
		sig = make([]int, N)
		for j := range sig {
			sig[j] = j
		}
	} else if len(sig) != N {
		return nil, prev, fmt.Errorf("collapse: %d signatures for %d columns", len(sig), N)
	}

	lnN := math.Log(float64(N))
	matched, marginal := stats(m.L, m.Col, lnN)
	matchedS, marginalS := stats(m.S, m.Col, lnN)
	out := map[string]float64{}
	mm, mg := mean(matched), mean(marginal)
	out[NameMIEstimate] = mm - mg
	out[NameMIUpperBound] = lnN
	out[NameMatchedLogProbMean] = mm
	out[NameMarginalLogProbMean] = mg
	diff := make([]float64, rows)
	diffS := make([]float64, rows)
	for i := range rows {
		diff[i] = matched[i] - marginal[i]
		diffS[i] = matchedS[i] - marginalS[i]
	}
	out[NameMISeqEstimate] = mean(diffS)
	maps := retrieval(m.L, m.Col, sig)
	for k, v := range maps {
		out[k] = v
	}
	out[NameCondEntropy] = -mm
	out[NameReasoningEntropy] = -mg
	out[NameCondEntropySeq] = -mean(matchedS)
	out[NameReasoningEntropySeq] = -mean(marginalS)
	std, stdS := popStd(marginal), popStd(marginalS)
	out[NameMarginalStd] = std
	out[NameMarginalStdSeq] = stdS
	out[NameMIZScore] = mean(diff) / (std + stdEps)
	out[NameMIZScoreSeq] = mean(diffS) / (stdS + stdEps)
	next := prev.update(std, stdS, decay)
	out[NameMarginalStdEMA] = next.Std
	out[NameMarginalStdEMASeq] = next.StdSeq
	out[NameMIZScoreEMA] = mean(diff) / (next.Std + stdEps)
	out[NameMIZScoreEMASeq] = mean(diffS) / (next.StdSeq + stdEps)
	return out, next, nil
}

// stats returns matched_i = X[i][c(i)] and marginal_i = logsumexp_j X[i][j] − ln N.
func stats(x [][]float64, col []int, lnN float64) (matched, marginal []float64) {
	matched = make([]float64, len(x))
	marginal = make([]float64, len(x))
	for i, row := range x {
		matched[i] = row[col[i]]
		marginal[i] = logSumExp(row) - lnN
	}
	return matched, marginal
}

func logSumExp(x []float64) float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		if math.IsNaN(v) {
			return v
		}
		mx = math.Max(mx, v)
	}
	if math.IsInf(mx, 0) {
		return mx
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - mx)
	}
	return mx + math.Log(s)
}

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// popStd is the population std (÷n).
func popStd(x []float64) float64 {
	mu := mean(x)
	var ss float64
	for _, v := range x {
		d := v - mu
		ss += d * d
	}
	return math.Sqrt(ss / float64(len(x)))
}

// retrieval computes top-1 and top-k retrieval accuracy with signature
// equivalence. The ranking of a row is by value descending with ties to the
// lower column (torch.argmax returns the first maximum) and NaN first.
func retrieval(L [][]float64, col, sig []int) map[string]float64 {
	N := len(sig)
	counts := map[int]int{}
	for _, s := range sig {
		counts[s]++
	}
	kMax := min(8, N)
	var acc, chance float64
	accK := make([]float64, len(RetrievalKs))
	top := make([]int, 0, kMax)
	for i, row := range L {
		top = topK(row, kMax, top[:0])
		truth := sig[col[i]]
		if sig[top[0]] == truth {
			acc++
		}
		chance += float64(counts[truth]) / float64(N)
		for ki, k := range RetrievalKs {
			kEff := min(k, kMax)
			for _, j := range top[:kEff] {
				if sig[j] == truth {
					accK[ki]++
					break
				}
			}
		}
	}
	n := float64(len(L))
	acc /= n
	chance /= n
	out := map[string]float64{
		NameRetrievalAccuracy: acc,
		NameRetrievalChance:   chance,
		NameRetrievalAbove:    acc - chance,
	}
	for ki, k := range RetrievalKs {
		kEff := min(k, kMax)
		a := accK[ki] / n
		c := math.Min(1, chance*float64(kEff))
		out[fmt.Sprintf("%s@%d", NameRetrievalAccuracy, k)] = a
		out[fmt.Sprintf("%s@%d", NameRetrievalChance, k)] = c
		out[fmt.Sprintf("%s@%d", NameRetrievalAbove, k)] = a - c
	}
	return out
}

// ranksAbove reports whether x ranks strictly above y: larger, NaN above
// every number (torch's ordering).
func ranksAbove(x, y float64) bool {
	if math.IsNaN(x) {
		return !math.IsNaN(y)
	}
	return x > y
}

// topK appends to dst the indices of the k highest values of row in rank
// order, ties to the lower index (stable), in O(len(row)·k).
func topK(row []float64, k int, dst []int) []int {
	for j, v := range row {
		if len(dst) == k && !ranksAbove(v, row[dst[k-1]]) {
			continue
		}
		pos := len(dst)
		for pos > 0 && ranksAbove(v, row[dst[pos-1]]) {
			pos--
		}
		if len(dst) < k {
			dst = append(dst, 0)
		}
		copy(dst[pos+1:], dst[pos:len(dst)-1])
		dst[pos] = j
	}
	return dst
}
