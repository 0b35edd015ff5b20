package filter

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ErrNoneKept reports that the filter selected no group. Apply returns it
// together with a complete Result (metrics included); the trainer counts the
// step as empty instead of updating.
var ErrNoneKept = errors.New("filter: no group kept")

// zeroTol is upstream's |score| threshold for "zero" groups.
const zeroTol = 1e-10

// f32 rounds x to float32 precision: upstream's scores are float32 tensors.
func f32(x float64) float64 { return float64(float32(x)) }

// Select returns the indices of the groups chosen from one score per group,
// in upstream's order (_select_top_groups): index order for top_p with
// value ≥ 1 and for min_p, score order otherwise. The number of groups is
// len(scores). Scores are rounded to float32 like upstream's tensors; a NaN
// score sorts above every number (torch's rule). Errors are returned where
// upstream raises: an unknown strategy, probability mode or filter type in a
// branch that uses it (cfg is not validated as a whole, so values upstream
// accepts behave as upstream). An empty strategy or probability mode means
// top_p / linear. An empty result is not an error here.
func Select(scores []float64, cfg Config) ([]int, error) {
	s := make([]float32, len(scores))
	for i, v := range scores {
		s[i] = float32(v)
	}
	return selectGroups(s, cfg.normalized())
}

func selectGroups(all []float32, cfg Config) ([]int, error) {
	idx, scores := dropZero(all, cfg.IncludeZero)
	if len(idx) == 0 {
		return []int{}, nil
	}
	var local []int // positions in scores
	var err error
	switch cfg.Strategy {
	case StrategyTopP:
		if cfg.Value >= 1.0 {
			return idx, nil
		}
		local, err = selectTopP(scores, cfg)
	case StrategyTopK, StrategyTopKAbs:
		local, err = selectTopK(scores, len(all), cfg)
	case StrategyMinP:
		local, err = selectMinP(scores, cfg)
	default:
		return nil, fmt.Errorf("filter: Unknown strategy: %s (valid: %s)",
			cfg.Strategy, strings.Join(validStrategies, ", "))
	}
	if err != nil {
		return nil, err
	}
	out := make([]int, len(local))
	for i, l := range local {
		out[i] = idx[l]
	}
	return out, nil
}

// dropZero keeps the groups selection considers: all of them, or without
// include_zero those with |score| > 1e-10 (NaN scores are dropped too). It
// returns their indices and scores.
func dropZero(all []float32, includeZero bool) (idx []int, scores []float32) {
	idx = make([]int, 0, len(all))
	scores = make([]float32, 0, len(all))
	for i, v := range all {
		// abs(s) > 1e-10 is false for NaN, so NaN groups are dropped too.
		if !includeZero && !(float32(math.Abs(float64(v))) > float32(zeroTol)) {
			continue
		}
		idx = append(idx, i)
		scores = append(scores, v)
	}
	return idx, scores
}

// selectTopP is top_p below 1 in either probability mode (spec §3).
func selectTopP(scores []float32, cfg Config) ([]int, error) {
	switch cfg.TopPProbMode {
	case ProbSoftmax:
		return topPSoftmax(scores, cfg)
	case ProbLinear:
		return topPLinear(scores, cfg)
	}
	return nil, fmt.Errorf("filter: Unknown top_p_prob_mode: %s. Expected one of {'linear', 'softmax'}.", cfg.TopPProbMode)
}

// topPSoftmax keeps the most probable groups under softmax(±scores) until
// their cumulative probability reaches value (at least one group).
func topPSoftmax(scores []float32, cfg Config) ([]int, error) {
	logits := make([]float32, len(scores))
	switch cfg.FilterType {
	case TypeLargest:
		copy(logits, scores)
	case TypeSmallest:
		for i, v := range scores {
			logits[i] = -v
		}
	default:
		return nil, errFilterType(cfg.FilterType)
	}
	p := softmax32(logits)
	order := sortOrder(p, true)
	sorted := make([]float32, len(p))
	for i, o := range order {
		sorted[i] = p[o]
	}
	cum := cumsum32(sorted)
	k := min(lowerBound32(cum, float32(cfg.Value))+1, len(scores))
	return order[:k], nil
}

// topPLinear walks the groups in score order, summing scores until the sum
// reaches value·Σscores − selection_eps; a score ≤ 0 ends the walk, and a
// walk that never reaches the threshold keeps nothing.
func topPLinear(scores []float32, cfg Config) ([]int, error) {
	var order []int
	switch cfg.FilterType {
	case TypeLargest:
		order = sortOrder(scores, true)
	case TypeSmallest:
		order = sortOrder(scores, false)
	default:
		return nil, errFilterType(cfg.FilterType)
	}
	// threshold = value·Σscores − eps, in float32 like the tensor op.
	threshold := float32(cfg.Value)*sum32(scores) - float32(cfg.SelectionEps)
	cum := 0.0 // Python float
	count := 0
	for _, o := range order {
		if float32(cum) >= threshold || float64(scores[o]) <= 0 {
			break
		}
		cum += float64(scores[o])
		count++
	}
	if float32(cum) >= threshold {
		return order[:count], nil
	}
	return []int{}, nil
}

// selectTopK is top_k (k = int(value·num_groups)) and top_k_abs (k =
// int(value)), k clamped to [1, remaining], in score order.
func selectTopK(scores []float32, numGroups int, cfg Config) ([]int, error) {
	var k int
	if cfg.Strategy == StrategyTopK {
		k = truncInt(cfg.Value * float64(cfg.numGroupsFor(numGroups)))
	} else {
		k = truncInt(cfg.Value)
	}
	k = max(min(k, len(scores)), 1)
	keys := make([]float32, len(scores))
	switch cfg.FilterType {
	case TypeLargest:
		copy(keys, scores)
	case TypeSmallest:
		for i, v := range scores {
			keys[i] = -v // (-scores).topk: NaN stays NaN and still ranks first
		}
	default:
		return nil, errFilterType(cfg.FilterType)
	}
	return sortOrder(keys, true)[:k], nil
}

// selectMinP keeps, in index order, the groups within a factor value of the
// best score: ≥ max·value − 1e-10 (largest) or ≤ min/(value + 1e-10) +
// 1e-10 (smallest).
func selectMinP(scores []float32, cfg Config) ([]int, error) {
	var keep func(v float32) bool
	switch cfg.FilterType {
	case TypeLargest:
		cut := float32(max32(scores)*float32(cfg.Value)) - float32(zeroTol) // rounded product: no FMA
		keep = func(v float32) bool { return v >= cut }
	case TypeSmallest:
		cut := float32(min32(scores)/float32(cfg.Value+1e-10)) + float32(zeroTol)
		keep = func(v float32) bool { return v <= cut }
	default:
		return nil, errFilterType(cfg.FilterType)
	}
	out := []int{}
	for l, v := range scores {
		if keep(v) {
			out = append(out, l)
		}
	}
	return out, nil
}

// numGroupsFor is the configured group count used by top_k (upstream uses
// self.num_groups, not the number of remaining groups); it falls back to
// the number of scores when NumGroups is unset or disagrees with them.
func (c Config) numGroupsFor(n int) int {
	if c.NumGroups > 0 && c.NumGroups == n {
		return c.NumGroups
	}
	return n
}

func errFilterType(t string) error {
	return fmt.Errorf("filter: Invalid rollout filter type: %s (valid: %s)", t, strings.Join(validTypes, ", "))
}

// truncInt is Python's int() on a float: truncation toward zero, clamped to
// the int range (NaN → 0).
func truncInt(x float64) int {
	switch {
	case math.IsNaN(x):
		return 0
	case x >= math.MaxInt32:
		return math.MaxInt32
	case x <= math.MinInt32:
		return math.MinInt32
	}
	return int(x)
}

// sortOrder returns indices ordering v descending (or ascending), NaN
// treated as larger than every number (torch.sort/topk), ties by lower
// index. The index tie-break makes the order total, so an unstable
// O(n log n) sort gives the stable result.
func sortOrder(v []float32, descending bool) []int {
	order := make([]int, len(v))
	for i := range order {
		order[i] = i
	}
	// cmpAsc orders a before b (ascending, NaN last).
	cmpAsc := func(a, b float32) int {
		an, bn := a != a, b != b
		switch {
		case an && bn:
			return 0
		case an:
			return 1
		case bn:
			return -1
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	slices.SortFunc(order, func(i, j int) int {
		c := cmpAsc(v[i], v[j])
		if descending {
			c = -c
		}
		if c != 0 {
			return c
		}
		return i - j
	})
	return order
}

// softmax32 is torch.softmax over a float32 vector: exp(x − max) · (1/Σ).
func softmax32(x []float32) []float32 {
	out := make([]float32, len(x))
	if len(x) == 0 {
		return out
	}
	mx := max32(x)
	var sum float64
	for i, v := range x {
		e := float32(math.Exp(float64(v - mx)))
		out[i] = e
		sum += float64(e)
	}
	// ATen's softmax multiplies by the float32 reciprocal of the sum.
	inv := 1 / float32(sum)
	for i := range out {
		out[i] *= inv
	}
	return out
}

// cumsum32 is torch.cumsum on float32 (CPU accumulates in double).
func cumsum32(x []float32) []float32 {
	out := make([]float32, len(x))
	var acc float64
	for i, v := range x {
		acc += float64(v)
		out[i] = float32(acc)
	}
	return out
}

// lowerBound32 is torch.searchsorted(sorted, v) (side left): the first i
// with sorted[i] ≥ v, found by torch's binary search.
func lowerBound32(sorted []float32, v float32) int {
	start, end := 0, len(sorted)
	for start < end {
		mid := start + (end-start)/2
		if !(sorted[mid] >= v) {
			start = mid + 1
		} else {
			end = mid
		}
	}
	return start
}

func sum32(x []float32) float32 {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	return float32(s)
}

// max32 is torch.max over a vector: NaN if any element is NaN.
func max32(x []float32) float32 {
	m := x[0]
	for _, v := range x {
		if v != v {
			return v
		}
		if v > m {
			m = v
		}
	}
	return m
}

// min32 is torch.min over a vector: NaN if any element is NaN.
func min32(x []float32) float32 {
	m := x[0]
	for _, v := range x {
		if v != v {
			return v
		}
		if v < m {
			m = v
		}
	}
	return m
}
