package collapse

// The helpers below are the small functions of upstream's
// collapse_metrics.py that the Detector uses internally, exposed so that a
// program can check its own data against them (shared spec collapse.md
// §3–5).

// PadTokenBatch right-pads token sequences to one width, at least 1 (a
// batch of empty sequences still has one column), with padID, and returns
// the padded ids (rows × width) and the mask (1 on real tokens, 0 on
// padding). Upstream pads reasoning ids this way before the cross
// log-probability pass, with the pad id found at the training batch's
// first padded position (else 0).
func PadTokenBatch(seqs [][]int, padID int) (ids, mask [][]int) {
	width := 1
	for _, s := range seqs {
		width = max(width, len(s))
	}
	ids = make([][]int, len(seqs))
	mask = make([][]int, len(seqs))
	for i, s := range seqs {
		ids[i] = make([]int, width)
		mask[i] = make([]int, width)
		for t := range width {
			if t < len(s) {
				ids[i][t], mask[i][t] = s[t], 1
			} else {
				ids[i][t] = padID
			}
		}
	}
	return ids, mask
}

// ValidReasoningIndices returns the rows whose reasoning is non-empty, in
// order: the rows the first-turn sample draws from (collapse.md §3).
func ValidReasoningIndices(reasoning [][]int) []int {
	var valid []int
	for r, z := range reasoning {
		if len(z) > 0 {
			valid = append(valid, r)
		}
	}
	return valid
}

// PrefixMetrics returns metrics with every name prefixed by family and
// "/", as they are logged (e.g. "collapse_first_turn_sample/mi_estimate").
func PrefixMetrics(family string, metrics map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(metrics))
	for k, v := range metrics {
		out[family+"/"+k] = v
	}
	return out
}
