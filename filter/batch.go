package filter

import (
	"fmt"
	"math"
)

// Metric keys produced by Apply (upstream's names; all values are float32
// numbers widened to float64).
const (
	MetricInGroupStd        = "rollout/in_group_std"
	MetricInGroupMax        = "rollout/in_group_max"
	MetricInGroupMean       = "rollout/in_group_mean"
	MetricChosenInGroupStd  = "rollout/chosen_in_group_std"
	MetricChosenInGroupMax  = "rollout/chosen_in_group_max"
	MetricChosenInGroupMean = "rollout/chosen_in_group_mean"

	MetricInGroupRewardStd        = "rollout/in_group_reward_std"
	MetricInGroupRewardMax        = "rollout/in_group_reward_max"
	MetricInGroupRewardMean       = "rollout/in_group_reward_mean"
	MetricInGroupRewardSum        = "rollout/in_group_reward_sum"
	MetricChosenInGroupRewardStd  = "rollout/chosen_in_group_reward_std"
	MetricChosenInGroupRewardMax  = "rollout/chosen_in_group_reward_max"
	MetricChosenInGroupRewardMean = "rollout/chosen_in_group_reward_mean"
	MetricChosenInGroupRewardSum  = "rollout/chosen_in_group_reward_sum"

	MetricInGroupLengthStd        = "rollout/in_group_length_std"
	MetricInGroupLengthMax        = "rollout/in_group_length_max"
	MetricInGroupLengthMean       = "rollout/in_group_length_mean"
	MetricChosenInGroupLengthStd  = "rollout/chosen_in_group_length_std"
	MetricChosenInGroupLengthMax  = "rollout/chosen_in_group_length_max"
	MetricChosenInGroupLengthMean = "rollout/chosen_in_group_length_mean"

	MetricInGroupEntropyStd        = "rollout/in_group_entropy_std"
	MetricInGroupEntropyMax        = "rollout/in_group_entropy_max"
	MetricInGroupEntropyMean       = "rollout/in_group_entropy_mean"
	MetricChosenInGroupEntropyStd  = "rollout/chosen_in_group_entropy_std"
	MetricChosenInGroupEntropyMax  = "rollout/chosen_in_group_entropy_max"
	MetricChosenInGroupEntropyMean = "rollout/chosen_in_group_entropy_mean"

	MetricKeptCount = "rollout/filter_kept_count"
	MetricKeptRatio = "rollout/filter_kept_ratio"
	MetricZeroCount = "rollout/filter_zero_count"

	// Private entries upstream puts in the metrics dict and the trainer pops
	// before logging; here they are Result fields, named by these keys.
	MetricRewardMatrix     = "rollout/_reward_matrix"
	MetricGroupRewardStd   = "rollout/_group_reward_std"
	MetricGroupIDs         = "rollout/_group_ids"
	MetricSelectedGroupIDs = "rollout/_selected_group_ids"

	// Trainer-side names derived from the private entries.
	MetricRewardTable  = "rollout/reward_table"
	MetricGroupRVTable = "rollout/group_rv_table"
)

// Batch describes a rollout batch by per-row slices. Only the slice the
// metric needs is required: Rewards for reward metrics, Lengths for length,
// Entropies for entropy metrics.
type Batch struct {
	// Rewards[r] = Σ_t original_rm_scores[r, t] (post-normalisation, with
	// the format penalty).
	Rewards []float64
	// Lengths[r] = Σ_t response_mask[r, t] (or loss_mask).
	Lengths []float64
	// Entropies[r] = Σ_t entropys·loss_mask / max(Σ_t loss_mask, 1).
	Entropies []float64
	// GroupIDs[r] is row r's group id (optional; required by the group_ids
	// grouping, reported as rollout/_group_ids otherwise).
	GroupIDs []int
	// EpisodeIDs[r] marks turn-level batches (single_turn and
	// limited_multi_turn modes): rows with the same id are turns of one
	// episode. Optional.
	EpisodeIDs []int
}

// Result is the outcome of Apply.
type Result struct {
	// Kept lists the kept row indices in original row order. When Unchanged,
	// it lists every row.
	Kept []int
	// Unchanged is true for the "no filter" setting (top_p, value ≥ 1,
	// include_zero): upstream returns the batch as it is.
	Unchanged bool
	// SelectedGroups are the chosen group indices in selection order.
	SelectedGroups []int
	// RewardStd[k] is the original (pre-filter) std of the group of row
	// Kept[k]; reward metrics only (upstream's batch.reward_std).
	RewardStd []float64
	// Metrics holds the scalar metrics under upstream's names.
	Metrics map[string]float64

	// RewardMatrix[g] holds the member scores of group g (reward metrics
	// only; rollout/_reward_matrix).
	RewardMatrix [][]float64
	// GroupRewardStd[g] is group g's reward std (rollout/_group_reward_std).
	GroupRewardStd []float64
	// GroupIDs[g] is the group id of group g's first row, or g without
	// group ids (rollout/_group_ids).
	GroupIDs []int
	// SelectedGroupIDs are GroupIDs of SelectedGroups
	// (rollout/_selected_group_ids).
	SelectedGroupIDs []int
	// RowGroup[r] is the group index of row r.
	RowGroup []int
	// GroupScores[g] is group g's selection score under the configured
	// metric (reward std, mean or sum of rewards, mean length, entropy or
	// its std): what the strategy ranked and thresholded, in the float32
	// precision upstream ranks in. Set for every metric.
	GroupScores []float64
}

// groupStats are per-group statistics of the filter's base quantity.
type groupStats struct {
	std, max, mean, sum []float64
}

// Apply filters a batch: it groups rows (episodes in turn-level batches),
// scores the groups with the configured metric, selects groups with Select's
// rules and reports the kept rows and upstream's metrics. When no group is
// selected it returns the complete Result with ErrNoneKept.
//
// Like upstream, Apply needs a valid metric and NumGroups ≥ 1; other
// settings are checked where selection uses them (see Select). Call
// Config.Validate to check a whole configuration up front.
func Apply(b Batch, cfg Config) (Result, error) {
	cfg = cfg.normalized()
	in, err := readInputs(b, cfg) // §1: config and the filter's per-row quantity
	if err != nil {
		return Result{}, err
	}
	u := collapseUnits(b.EpisodeIDs, in.vals, in.kind) // §2: rows -> episodes (turn-level)
	gr, err := groupUnits(b, cfg, u)                   // §2: units -> groups
	if err != nil {
		return Result{}, err
	}
	members := make([][]float64, cfg.NumGroups)
	for i, v := range u.vals {
		members[gr.unitGroup[i]] = append(members[gr.unitGroup[i]], v)
	}
	st := computeStats(members)
	scores := selectionScores(in.metric, st)
	top, err := selectGroups(scores, cfg) // §3
	if err != nil {
		return Result{}, err
	}
	res := keepRows(cfg, u, gr, top, st, in.kind) // §4: applying the selection
	res.Metrics = filterMetrics(in.kind, st, top, scores)
	res.GroupScores = make([]float64, len(scores))
	for g, v := range scores {
		res.GroupScores[g] = float64(v)
	}
	if in.kind == "reward" {
		res.RewardMatrix = members
		res.GroupRewardStd = st.std
	}
	if len(res.Kept) == 0 {
		return res, ErrNoneKept
	}
	return res, nil
}

// inputs are the filter's metric, the kind of per-row quantity it reads
// (reward, length or entropy) and those values as float32.
type inputs struct {
	metric, kind string
	vals         []float64
}

// readInputs checks the config and the batch and picks the per-row values
// of the filter the metric dispatches to (spec §1).
func readInputs(b Batch, cfg Config) (inputs, error) {
	if cfg.NumGroups < 1 {
		return inputs{}, fmt.Errorf("filter: num_groups must be ≥ 1, got %d", cfg.NumGroups)
	}
	metric, err := NormalizeMetric(cfg.Metric)
	if err != nil {
		return inputs{}, err
	}
	if err := oneOf("grouping", cfg.Grouping, validGroupings); err != nil {
		return inputs{}, err
	}
	var rowVals []float64
	var kind string
	switch metric {
	case MetricNameReward, MetricNameRewardSum, MetricNameRewardVariance:
		rowVals, kind = b.Rewards, "reward"
	case MetricNameLength:
		rowVals, kind = b.Lengths, "length"
	default:
		rowVals, kind = b.Entropies, "entropy"
	}
	n := len(rowVals)
	if n == 0 {
		if kind == "entropy" {
			// Upstream raises this when no log-prob function is given.
			return inputs{}, fmt.Errorf("filter: Entropy filtering requires a compute_log_prob callable (metric %s needs per-row entropy values, batch has none)", metric)
		}
		return inputs{}, fmt.Errorf("filter: metric %s needs per-row %s values, batch has none", metric, kind)
	}
	if err := checkLen("GroupIDs", b.GroupIDs, n); err != nil {
		return inputs{}, err
	}
	if err := checkLen("EpisodeIDs", b.EpisodeIDs, n); err != nil {
		return inputs{}, err
	}
	vals := make([]float64, n)
	for i, v := range rowVals {
		vals[i] = f32(v)
	}
	return inputs{metric: metric, kind: kind, vals: vals}, nil
}

// units are what the filter groups: rows, or episodes in turn-level batches.
type units struct {
	rowUnit  []int     // row -> unit
	firstRow []int     // unit -> its first row
	vals     []float64 // unit -> value
	episodes bool      // units are episodes
}

// collapseUnits turns rows into units (spec §2, turn-level batches):
// without episode ids each row is a unit; with them each episode, in order
// of first appearance, valued by its first row (reward), the sum over its
// rows (length) or their mean (entropy).
func collapseUnits(episodeIDs []int, vals []float64, kind string) units {
	n := len(vals)
	u := units{rowUnit: make([]int, n)}
	if episodeIDs == nil {
		u.vals = vals
		u.firstRow = make([]int, n)
		for r := range n {
			u.rowUnit[r], u.firstRow[r] = r, r
		}
		return u
	}
	u.episodes = true
	pos := map[int]int{}
	var members [][]int
	for r, e := range episodeIDs {
		i, ok := pos[e]
		if !ok {
			i = len(members)
			pos[e] = i
			members = append(members, nil)
			u.firstRow = append(u.firstRow, r)
		}
		members[i] = append(members[i], r)
		u.rowUnit[r] = i
	}
	u.vals = make([]float64, len(members))
	for i, rows := range members {
		switch kind {
		case "reward": // the episode's first row
			u.vals[i] = vals[rows[0]]
		case "length": // sum over its rows
			var s float64
			for _, r := range rows {
				s += vals[r]
			}
			u.vals[i] = f32(s)
		default: // entropy: mean over its rows
			var s float64
			for _, r := range rows {
				s += vals[r]
			}
			u.vals[i] = f32(s / float64(len(rows)))
		}
	}
	return u
}

// grouping assigns units to groups.
type grouping struct {
	unitGroup []int // unit -> group
	groupIDs  []int // group -> its id (first unit's GroupIDs entry, or its index)
}

// groupUnits groups units positionally (num_groups equal runs, spec §2) or
// by GroupIDs (GroupByID).
func groupUnits(b Batch, cfg Config, u units) (grouping, error) {
	n, G := len(u.vals), cfg.NumGroups
	gr := grouping{unitGroup: make([]int, n)}
	if cfg.Grouping == GroupByID {
		if b.GroupIDs == nil {
			return gr, fmt.Errorf("filter: grouping %q needs GroupIDs", GroupByID)
		}
		pos := map[int]int{}
		for i := range n {
			id := b.GroupIDs[u.firstRow[i]]
			g, ok := pos[id]
			if !ok {
				g = len(gr.groupIDs)
				pos[id] = g
				gr.groupIDs = append(gr.groupIDs, id)
			}
			gr.unitGroup[i] = g
		}
		if len(gr.groupIDs) != G {
			return gr, fmt.Errorf("filter: batch has %d distinct group ids, expected num_groups %d", len(gr.groupIDs), G)
		}
		return gr, nil
	}
	if n%G != 0 {
		if u.episodes {
			return gr, fmt.Errorf("filter: Number of episodes (%d) must be divisible by num_groups (%d)", n, G)
		}
		return gr, fmt.Errorf("filter: batch size (%d) must be divisible by num_groups (%d)", n, G)
	}
	size := n / G
	if size == 0 {
		return gr, fmt.Errorf("filter: batch of %d rows cannot form %d groups", n, G)
	}
	gr.groupIDs = make([]int, G)
	for g := range G {
		if b.GroupIDs != nil {
			gr.groupIDs[g] = b.GroupIDs[u.firstRow[g*size]]
		} else {
			gr.groupIDs[g] = g
		}
	}
	for i := range n {
		gr.unitGroup[i] = i / size
	}
	return gr, nil
}

// selectionScores are the per-group scores the selection ranks, in float32
// (spec §2): mean for reward, entropy and length, sum for reward_sum, std
// for the variance metrics.
func selectionScores(metric string, st groupStats) []float32 {
	var sc []float64
	switch metric {
	case MetricNameReward, MetricNameEntropy, MetricNameLength:
		sc = st.mean
	case MetricNameRewardSum:
		sc = st.sum
	default:
		sc = st.std
	}
	out := make([]float32, len(sc))
	for g, v := range sc {
		out[g] = float32(v)
	}
	return out
}

// filterMetrics are the rollout/ metrics of spec §4: group stats over all
// and over the selected groups, the kind's own keys, kept and zero counts.
func filterMetrics(kind string, st groupStats, top []int, scores []float32) map[string]float64 {
	m := map[string]float64{
		MetricInGroupStd:        meanAll(st.std),
		MetricInGroupMax:        meanAll(st.max),
		MetricInGroupMean:       meanAll(st.mean),
		MetricChosenInGroupStd:  meanSel(st.std, top),
		MetricChosenInGroupMax:  meanSel(st.max, top),
		MetricChosenInGroupMean: meanSel(st.mean, top),
	}
	switch kind {
	case "reward":
		m[MetricInGroupRewardStd] = meanAll(st.std)
		m[MetricInGroupRewardMax] = meanAll(st.max)
		m[MetricInGroupRewardMean] = meanAll(st.mean)
		m[MetricInGroupRewardSum] = meanAll(st.sum)
		m[MetricChosenInGroupRewardStd] = meanSel(st.std, top)
		m[MetricChosenInGroupRewardMax] = meanSel(st.max, top)
		m[MetricChosenInGroupRewardMean] = meanSel(st.mean, top)
		m[MetricChosenInGroupRewardSum] = meanSel(st.sum, top)
	case "length":
		m[MetricInGroupLengthStd] = meanAll(st.std)
		m[MetricInGroupLengthMax] = meanAll(st.max)
		m[MetricInGroupLengthMean] = meanAll(st.mean)
		m[MetricChosenInGroupLengthStd] = meanSel(st.std, top)
		m[MetricChosenInGroupLengthMax] = meanSel(st.max, top)
		m[MetricChosenInGroupLengthMean] = meanSel(st.mean, top)
	default:
		m[MetricInGroupEntropyStd] = meanAll(st.std)
		m[MetricInGroupEntropyMax] = meanAll(st.max)
		m[MetricInGroupEntropyMean] = meanAll(st.mean)
		m[MetricChosenInGroupEntropyStd] = meanSel(st.std, top)
		m[MetricChosenInGroupEntropyMax] = meanSel(st.max, top)
		m[MetricChosenInGroupEntropyMean] = meanSel(st.mean, top)
	}
	zero := 0
	for _, v := range scores {
		if float32(math.Abs(float64(v))) <= float32(zeroTol) {
			zero++
		}
	}
	m[MetricKeptCount] = float64(len(top))
	m[MetricKeptRatio] = f32(float64(len(top)) / float64(len(scores)))
	m[MetricZeroCount] = float64(zero)
	return m
}

// keepRows applies the selection (spec §4): the rows of the selected
// groups in their original order, or every row unchanged in no-filter mode
// (top_p, value ≥ 1, include_zero); reward filters attach each kept row's
// group std.
func keepRows(cfg Config, u units, gr grouping, top []int, st groupStats, kind string) Result {
	n := len(u.rowUnit)
	rowGroup := make([]int, n)
	for r := range n {
		rowGroup[r] = gr.unitGroup[u.rowUnit[r]]
	}
	res := Result{SelectedGroups: top, GroupIDs: gr.groupIDs, RowGroup: rowGroup}
	res.SelectedGroupIDs = make([]int, len(top))
	for i, g := range top {
		res.SelectedGroupIDs[i] = gr.groupIDs[g]
	}
	if cfg.Strategy == StrategyTopP && cfg.Value >= 1 && cfg.IncludeZero {
		res.Unchanged = true
		res.Kept = make([]int, n)
		for r := range n {
			res.Kept[r] = r
		}
	} else {
		chosen := make([]bool, cfg.NumGroups)
		for _, g := range top {
			chosen[g] = true
		}
		res.Kept = []int{}
		for r := range n {
			if chosen[rowGroup[r]] {
				res.Kept = append(res.Kept, r)
			}
		}
	}
	if kind == "reward" {
		res.RewardStd = make([]float64, len(res.Kept))
		for k, r := range res.Kept {
			res.RewardStd[k] = st.std[rowGroup[r]]
		}
	}
	return res
}

func checkLen(name string, v []int, n int) error {
	if v != nil && len(v) != n {
		return fmt.Errorf("filter: %s has %d entries, batch has %d rows", name, len(v), n)
	}
	return nil
}

// computeStats returns per-group float32 std (sample, n−1; NaN for one
// member), max (NaN-propagating), mean and sum.
func computeStats(groups [][]float64) groupStats {
	G := len(groups)
	st := groupStats{
		std: make([]float64, G), max: make([]float64, G),
		mean: make([]float64, G), sum: make([]float64, G),
	}
	for g, xs := range groups {
		st.std[g] = f32(sampleStd(xs))
		mx := math.Inf(-1)
		var s float64
		for _, x := range xs {
			if math.IsNaN(x) || math.IsNaN(mx) {
				mx = math.NaN()
			} else if x > mx {
				mx = x
			}
			s += x
		}
		if len(xs) == 0 {
			mx = math.NaN()
		}
		st.max[g] = f32(mx)
		st.sum[g] = f32(s)
		st.mean[g] = f32(s / float64(len(xs)))
	}
	return st
}

// sampleStd is torch.std (unbiased): NaN for fewer than two values.
func sampleStd(xs []float64) float64 {
	n := len(xs)
	if n < 2 {
		return math.NaN()
	}
	var mean float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	var ss float64
	for _, x := range xs {
		d := x - mean
		ss += d * d
	}
	return math.Sqrt(ss / float64(n-1))
}

// meanAll is the float32 mean over groups.
func meanAll(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range v {
		s += x
	}
	return f32(s / float64(len(v)))
}

// meanSel is upstream's _selected_mean: the mean over the selected groups,
// 0 when none is selected.
func meanSel(v []float64, sel []int) float64 {
	if len(sel) == 0 {
		return 0
	}
	var s float64
	for _, g := range sel {
		s += v[g]
	}
	return f32(s / float64(len(sel)))
}

// RowSums returns Σ_t x[r][t] for every row (e.g. per-row rewards from
// original_rm_scores).
func RowSums(x [][]float64) []float64 {
	out := make([]float64, len(x))
	for r, row := range x {
		var s float64
		for _, v := range row {
			s += v
		}
		out[r] = s
	}
	return out
}

// RowMaskedMeans returns Σ_t x·mask / max(Σ_t mask, 1) for every row (the
// entropy filter's per-row entropy). x and mask must have the same shape.
func RowMaskedMeans(x, mask [][]float64) ([]float64, error) {
	if len(x) != len(mask) {
		return nil, fmt.Errorf("filter: %d value rows but %d mask rows", len(x), len(mask))
	}
	out := make([]float64, len(x))
	for r := range x {
		if len(x[r]) != len(mask[r]) {
			return nil, fmt.Errorf("filter: row %d has %d values but %d mask entries", r, len(x[r]), len(mask[r]))
		}
		var s, c float64
		for t, v := range x[r] {
			s += v * mask[r][t]
			c += mask[r][t]
		}
		out[r] = s / math.Max(c, 1)
	}
	return out, nil
}

// RewardTable lays out RewardMatrix as the trainer's rollout/reward_table:
// columns group_0..group_{G−1} and one row per group member (row s holds
// member s of every group; NaN where a group has fewer members).
func (r Result) RewardTable() (columns []string, rows [][]float64) {
	size := 0
	for g, m := range r.RewardMatrix {
		columns = append(columns, fmt.Sprintf("group_%d", g))
		size = max(size, len(m))
	}
	for s := range size {
		row := make([]float64, len(r.RewardMatrix))
		for g, m := range r.RewardMatrix {
			row[g] = math.NaN()
			if s < len(m) {
				row[g] = m[s]
			}
		}
		rows = append(rows, row)
	}
	return columns, rows
}

// GroupRV is one row of the trainer's rollout/group_rv_table (logged with
// trainer.log_group_rv_table): a group's reward std at a step and whether
// the filter kept it.
type GroupRV struct {
	Step      int
	GroupID   int
	RewardStd float64
	Selected  bool
}

// GroupRVRows returns this step's group_rv_table rows, one per group in
// group order (reward metrics only).
func (r Result) GroupRVRows(step int) []GroupRV {
	// Upstream marks a row selected when its group *id* is among the
	// selected ids (so groups sharing an id are marked alike).
	sel := map[int]bool{}
	for _, g := range r.SelectedGroups {
		sel[r.GroupIDs[g]] = true
	}
	out := make([]GroupRV, len(r.GroupRewardStd))
	for g, s := range r.GroupRewardStd {
		out[g] = GroupRV{Step: step, GroupID: r.GroupIDs[g], RewardStd: s, Selected: sel[r.GroupIDs[g]]}
	}
	return out
}
