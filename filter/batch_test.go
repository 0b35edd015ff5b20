package filter

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b))
}

func checkMetrics(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("metric %s missing", k)
			continue
		}
		if !near(g, w) {
			t.Errorf("metric %s = %v, want %v", k, g, w)
		}
	}
}

// §6.1: 4 groups × 2 rows of arange scores over 3 columns: row r sums to
// 9r+3, every group is (9r+3, 9r+12) with std 9/√2 = 6.3639610; all ties,
// so top_k 0.5 keeps groups 0 and 1 = rows 0..3.
func TestApplyUpstreamArange(t *testing.T) {
	scores := make([][]float64, 8)
	for r := range scores {
		scores[r] = []float64{float64(3 * r), float64(3*r + 1), float64(3*r + 2)}
	}
	cfg := cfgWith(StrategyTopK, 0.5, groups(4))
	res, err := Apply(Batch{Rewards: RowSums(scores)}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Kept, []int{0, 1, 2, 3}) {
		t.Fatalf("kept %v", res.Kept)
	}
	checkMetrics(t, res.Metrics, map[string]float64{MetricInGroupStd: 9 / math.Sqrt2})
}

// §6.2: entropy metric, 2 groups × 3 rows, entropies linspace(0.1, 1.0, 24)
// over 4 columns, mask all ones. Row r mean = 0.1 + (4r+1.5)·0.9/23; group
// means 0.3152174 and 0.7847826; top_k 0.5 keeps group 1 = rows 3..5. Each
// group's rows are 4·0.9/23 = 0.1565217 apart, so its std is 0.1565217.
func TestApplyUpstreamEntropy(t *testing.T) {
	ent := make([][]float64, 6)
	mask := make([][]float64, 6)
	for r := range ent {
		for c := range 4 {
			ent[r] = append(ent[r], 0.1+float64(4*r+c)*0.9/23)
			mask[r] = append(mask[r], 1)
		}
	}
	rows, err := RowMaskedMeans(ent, mask)
	if err != nil {
		t.Fatal(err)
	}
	cfg := cfgWith(StrategyTopK, 0.5, groups(2), func(c *Config) { c.Metric = "entropy" })
	res, err := Apply(Batch{Entropies: rows}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Kept, []int{3, 4, 5}) {
		t.Fatalf("kept %v", res.Kept)
	}
	checkMetrics(t, res.Metrics, map[string]float64{
		MetricInGroupEntropyStd:        0.1565217,
		MetricInGroupEntropyMean:       (0.3152174 + 0.7847826) / 2,
		MetricChosenInGroupEntropyMean: 0.7847826,
		MetricChosenInGroupEntropyMax:  0.1 + 21.5*0.9/23,
	})
	if res.RewardStd != nil || res.RewardMatrix != nil {
		t.Fatal("entropy filter must not attach reward data")
	}
}

// §6.3: metric reward, rows [10, 11 | 0, 5]: means 10.5 and 2.5, top_k 0.5
// keeps group 0 although its std (0.7071) is the lower one.
func TestApplyUpstreamRewardMean(t *testing.T) {
	res, err := Apply(Batch{Rewards: []float64{10, 11, 0, 5}},
		cfgWith(StrategyTopK, 0.5, groups(2), func(c *Config) { c.Metric = "reward" }))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Kept, []int{0, 1}) {
		t.Fatalf("kept %v", res.Kept)
	}
	checkMetrics(t, res.Metrics, map[string]float64{
		MetricChosenInGroupRewardStd:  math.Sqrt(0.5),
		MetricInGroupRewardStd:        (math.Sqrt(0.5) + math.Sqrt(12.5)) / 2,
		MetricChosenInGroupRewardMean: 10.5,
	})
}

// §6.4: reward_sum over rows [3,2],[1,4] | [2,1],[1,2] | [2,2],[1,2] |
// [0,1],[0,0]: row sums 5,5 | 3,3 | 4,3 | 1,0, group sums 10, 6, 7, 1;
// top_k 0.5 keeps groups 0 and 2 (rows 0,1,4,5 in original order).
// in_group_reward_sum = 24/4 = 6, chosen = 17/2 = 8.5; means 5,3,3.5,0.5;
// stds 0,0,√½,√½; maxes 5,3,4,1.
func TestApplyUpstreamRewardSum(t *testing.T) {
	rows := RowSums([][]float64{{3, 2}, {1, 4}, {2, 1}, {1, 2}, {2, 2}, {1, 2}, {0, 1}, {0, 0}})
	res, err := Apply(Batch{Rewards: rows}, cfgWith(StrategyTopK, 0.5, groups(4), func(c *Config) { c.Metric = "reward_sum" }))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Kept, []int{0, 1, 4, 5}) || !reflect.DeepEqual(res.SelectedGroups, []int{0, 2}) {
		t.Fatalf("kept %v groups %v", res.Kept, res.SelectedGroups)
	}
	r := math.Sqrt(0.5)
	checkMetrics(t, res.Metrics, map[string]float64{
		MetricInGroupRewardSum:        6,
		MetricChosenInGroupRewardSum:  8.5,
		MetricInGroupRewardMean:       3,
		MetricChosenInGroupRewardMean: 4.25,
		MetricInGroupRewardStd:        r / 2,
		MetricChosenInGroupRewardStd:  r / 2,
		MetricInGroupRewardMax:        3.25,
		MetricChosenInGroupRewardMax:  4.5,
		MetricInGroupStd:              r / 2,
		MetricInGroupMax:              3.25,
		MetricInGroupMean:             3,
		MetricChosenInGroupStd:        r / 2,
		MetricChosenInGroupMax:        4.5,
		MetricChosenInGroupMean:       4.25,
		MetricKeptCount:               2,
		MetricKeptRatio:               0.5,
		MetricZeroCount:               0,
	})
	if !reflect.DeepEqual(res.RewardMatrix, [][]float64{{5, 5}, {3, 3}, {4, 3}, {1, 0}}) {
		t.Fatalf("reward matrix %v", res.RewardMatrix)
	}
	if !reflect.DeepEqual(res.GroupIDs, []int{0, 1, 2, 3}) || !reflect.DeepEqual(res.SelectedGroupIDs, []int{0, 2}) {
		t.Fatalf("group ids %v selected %v", res.GroupIDs, res.SelectedGroupIDs)
	}
	wantStd := []float64{0, 0, float64(float32(r)), float64(float32(r))}
	if !reflect.DeepEqual(res.RewardStd, wantStd) {
		t.Fatalf("reward std %v want %v", res.RewardStd, wantStd)
	}
}

// verify_lower_ratio.py intent: stds G0 0.71 ([0,1]), G1 0 ([5,5]), G2 7.07
// ([10,20]); include_zero=false, top_k 0.5 → int(1.5) = 1 group → G2, whose
// rows carry rewards 10 and 20.
func TestApplyLowerRatio(t *testing.T) {
	res, err := Apply(Batch{Rewards: []float64{0, 1, 5, 5, 10, 20}}, cfgWith(StrategyTopK, 0.5, groups(3), excludeZero))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Kept, []int{4, 5}) {
		t.Fatalf("kept %v", res.Kept)
	}
	checkMetrics(t, res.Metrics, map[string]float64{MetricZeroCount: 1, MetricKeptRatio: float64(float32(1.0 / 3))})
}

// The default (no filter) returns every row and still attaches reward_std.
func TestApplyNoFilter(t *testing.T) {
	res, err := Apply(Batch{Rewards: []float64{1, 3, 2, 2}}, cfgWith(StrategyTopP, 1, groups(2)))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Unchanged || !reflect.DeepEqual(res.Kept, []int{0, 1, 2, 3}) {
		t.Fatalf("unchanged %v kept %v", res.Unchanged, res.Kept)
	}
	s := float64(float32(math.Sqrt2))
	if !reflect.DeepEqual(res.RewardStd, []float64{s, s, 0, 0}) {
		t.Fatalf("reward std %v", res.RewardStd)
	}
	// zero_count counts group 1 (std 0); kept 2 of 2.
	checkMetrics(t, res.Metrics, map[string]float64{MetricZeroCount: 1, MetricKeptCount: 2, MetricKeptRatio: 1})
}

// All-zero variance with linear top_p < 1: threshold −eps ≤ 0 → nothing
// kept. Apply reports ErrNoneKept with full metrics; chosen means are 0.
func TestApplyNoneKept(t *testing.T) {
	res, err := Apply(Batch{Rewards: []float64{1, 1, 2, 2}}, cfgWith(StrategyTopP, 0.9, groups(2)))
	if !errors.Is(err, ErrNoneKept) {
		t.Fatalf("err = %v, want ErrNoneKept", err)
	}
	if len(res.Kept) != 0 || len(res.RewardStd) != 0 {
		t.Fatalf("kept %v", res.Kept)
	}
	checkMetrics(t, res.Metrics, map[string]float64{
		MetricKeptCount: 0, MetricKeptRatio: 0, MetricZeroCount: 2,
		MetricChosenInGroupRewardStd: 0, MetricChosenInGroupRewardMean: 0,
		MetricInGroupRewardMean: 1.5,
	})
}

// Groups of one: std is NaN (n−1 = 0), propagating into the means; top_k
// ranks NaN first, so int(0.34·3) = 1 → group 0.
func TestApplySingletonGroupsNaN(t *testing.T) {
	res, err := Apply(Batch{Rewards: []float64{1, 2, 3}}, cfgWith(StrategyTopK, 0.34, groups(3)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Kept, []int{0}) {
		t.Fatalf("kept %v", res.Kept)
	}
	if !math.IsNaN(res.Metrics[MetricInGroupRewardStd]) || !math.IsNaN(res.RewardStd[0]) {
		t.Fatalf("want NaN std, got %v %v", res.Metrics[MetricInGroupRewardStd], res.RewardStd)
	}
	checkMetrics(t, res.Metrics, map[string]float64{MetricInGroupRewardMean: 2, MetricZeroCount: 0})
}

// A single group: top_k keeps it whatever the value.
func TestApplySingleGroup(t *testing.T) {
	res, err := Apply(Batch{Rewards: []float64{0, 1, 0}}, cfgWith(StrategyTopK, 0.1, groups(1)))
	if err != nil || !reflect.DeepEqual(res.Kept, []int{0, 1, 2}) {
		t.Fatalf("kept %v err %v", res.Kept, err)
	}
}

// Length metric: lengths 10,20 | 30,30 → means 15, 30 → top_k 0.5 keeps
// group 1. stds √50 and 0 → mean 3.5355339; maxes 20, 30.
func TestApplyLength(t *testing.T) {
	res, err := Apply(Batch{Lengths: []float64{10, 20, 30, 30}}, cfgWith(StrategyTopK, 0.5, groups(2), func(c *Config) { c.Metric = "LENGTH" }))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Kept, []int{2, 3}) {
		t.Fatalf("kept %v", res.Kept)
	}
	checkMetrics(t, res.Metrics, map[string]float64{
		MetricInGroupLengthStd: math.Sqrt(50) / 2, MetricInGroupLengthMax: 25, MetricInGroupLengthMean: 22.5,
		MetricChosenInGroupLengthStd: 0, MetricChosenInGroupLengthMax: 30, MetricChosenInGroupLengthMean: 30,
		MetricZeroCount: 0,
	})
}

// entropy_std is an alias of entropy_variance: per-row entropies
// 0.1,0.3 | 0.5,0.5 → stds 0.1414214, 0 → top_k 0.5 keeps group 0.
func TestApplyEntropyVarianceAlias(t *testing.T) {
	res, err := Apply(Batch{Entropies: []float64{0.1, 0.3, 0.5, 0.5}}, cfgWith(StrategyTopK, 0.5, groups(2), func(c *Config) { c.Metric = "entropy_std" }))
	if err != nil || !reflect.DeepEqual(res.Kept, []int{0, 1}) {
		t.Fatalf("kept %v err %v", res.Kept, err)
	}
	checkMetrics(t, res.Metrics, map[string]float64{MetricChosenInGroupEntropyStd: math.Sqrt(0.02), MetricZeroCount: 1})
}

// Turn-level batch: rows of episodes 5,5,5 | 8 | 9,9 | 2,2 with 2 groups
// → episodes (5,8) form group 0 and (9,2) group 1. Reward = an episode's
// first row: [1, 3] (std √2) and [2, 6] (std 2√2); top_k 0.5 keeps group 1
// = all rows of episodes 9 and 2.
func TestApplyTurnLevelReward(t *testing.T) {
	b := Batch{
		Rewards:    []float64{1, 1, 1, 3, 2, 2, 6, 6},
		EpisodeIDs: []int{5, 5, 5, 8, 9, 9, 2, 2},
		GroupIDs:   []int{40, 40, 40, 40, 41, 41, 41, 41},
	}
	res, err := Apply(b, cfgWith(StrategyTopK, 0.5, groups(2)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Kept, []int{4, 5, 6, 7}) {
		t.Fatalf("kept %v", res.Kept)
	}
	s2 := float64(float32(2 * math.Sqrt2))
	if !reflect.DeepEqual(res.RewardStd, []float64{s2, s2, s2, s2}) {
		t.Fatalf("reward std %v", res.RewardStd)
	}
	if !reflect.DeepEqual(res.GroupIDs, []int{40, 41}) || !reflect.DeepEqual(res.SelectedGroupIDs, []int{41}) {
		t.Fatalf("group ids %v %v", res.GroupIDs, res.SelectedGroupIDs)
	}
	if !reflect.DeepEqual(res.RewardMatrix, [][]float64{{1, 3}, {2, 6}}) {
		t.Fatalf("matrix %v", res.RewardMatrix)
	}
	// No-filter mode is where upstream crashes (per-episode reward_std):
	// here every row gets its group's std.
	res, err = Apply(b, cfgWith(StrategyTopP, 1, groups(2)))
	if err != nil {
		t.Fatal(err)
	}
	s1 := float64(float32(math.Sqrt2))
	if !reflect.DeepEqual(res.RewardStd, []float64{s1, s1, s1, s1, s2, s2, s2, s2}) {
		t.Fatalf("reward std %v", res.RewardStd)
	}
}

// Turn-level length sums an episode's rows, entropy averages them.
// Lengths 1,2,3 | 4 | 5,6 | 7,8 → episodes 6, 4, 11, 15 → means 5, 13.
// Entropies 0.1,0.2,0.3 | 0.4 | 0.5,0.7 | 0.8,0.8 → episodes 0.2, 0.4, 0.6,
// 0.8 → means 0.3, 0.7.
func TestApplyTurnLevelLengthEntropy(t *testing.T) {
	b := Batch{
		Lengths:    []float64{1, 2, 3, 4, 5, 6, 7, 8},
		Entropies:  []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.8, 0.8},
		EpisodeIDs: []int{0, 0, 0, 1, 2, 2, 3, 3},
	}
	res, err := Apply(b, cfgWith(StrategyTopK, 0.5, groups(2), smallest, func(c *Config) { c.Metric = "length" }))
	if err != nil || !reflect.DeepEqual(res.Kept, []int{0, 1, 2, 3}) {
		t.Fatalf("kept %v err %v", res.Kept, err)
	}
	checkMetrics(t, res.Metrics, map[string]float64{MetricInGroupLengthMean: 9, MetricInGroupLengthMax: 10.5})
	res, err = Apply(b, cfgWith(StrategyTopK, 0.5, groups(2), func(c *Config) { c.Metric = "entropy" }))
	if err != nil || !reflect.DeepEqual(res.Kept, []int{4, 5, 6, 7}) {
		t.Fatalf("kept %v err %v", res.Kept, err)
	}
	checkMetrics(t, res.Metrics, map[string]float64{MetricInGroupEntropyMean: 0.5, MetricChosenInGroupEntropyMean: 0.7})
}

// Grouping by ids: rows with ids 7,3,7,3 → groups (id 7: rewards 0,1, std
// 0.7071) and (id 3: 10,10, std 0) in order of first appearance.
func TestApplyGroupByID(t *testing.T) {
	cfg := cfgWith(StrategyTopK, 0.5, groups(2), func(c *Config) { c.Grouping = GroupByID })
	res, err := Apply(Batch{Rewards: []float64{0, 10, 1, 10}, GroupIDs: []int{7, 3, 7, 3}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Kept, []int{0, 2}) || !reflect.DeepEqual(res.GroupIDs, []int{7, 3}) ||
		!reflect.DeepEqual(res.SelectedGroupIDs, []int{7}) || !reflect.DeepEqual(res.RowGroup, []int{0, 1, 0, 1}) {
		t.Fatalf("%+v", res)
	}
	// Positional grouping reports each group's first-row id.
	res, err = Apply(Batch{Rewards: []float64{0, 1, 2, 2, 3, 5}, GroupIDs: []int{43, 43, 26, 26, 9, 9}}, cfgWith(StrategyTopK, 0.5, groups(3)))
	if err != nil || !reflect.DeepEqual(res.GroupIDs, []int{43, 26, 9}) || !reflect.DeepEqual(res.SelectedGroupIDs, []int{9}) {
		t.Fatalf("%v %v %v", res.GroupIDs, res.SelectedGroupIDs, err)
	}
}

func TestApplyErrors(t *testing.T) {
	tests := []struct {
		name string
		b    Batch
		cfg  Config
		want string
	}{
		{"indivisible", Batch{Rewards: []float64{1, 2, 3}}, cfgWith(StrategyTopK, 0.5, groups(2)), "batch size (3) must be divisible by num_groups (2)"},
		{"episodes indivisible", Batch{Rewards: []float64{1, 2, 3}, EpisodeIDs: []int{0, 1, 2}}, cfgWith(StrategyTopK, 0.5, groups(2)), "Number of episodes (3) must be divisible by num_groups (2)"},
		{"fewer rows than groups", Batch{Rewards: []float64{}}, cfgWith(StrategyTopK, 0.5, groups(2)), "needs per-row reward values"},
		{"no entropies", Batch{Rewards: []float64{1, 2}}, cfgWith(StrategyTopK, 0.5, groups(1), func(c *Config) { c.Metric = "entropy" }), "needs per-row entropy values"},
		{"no lengths", Batch{Rewards: []float64{1, 2}}, cfgWith(StrategyTopK, 0.5, groups(1), func(c *Config) { c.Metric = "length" }), "needs per-row length values"},
		{"bad metric", Batch{Rewards: []float64{1, 2}}, cfgWith(StrategyTopK, 0.5, groups(1), func(c *Config) { c.Metric = "kl" }), `Unsupported rollout filter metric: kl (valid: reward_variance, reward, reward_sum, length, entropy, entropy_variance`},
		{"group ids length", Batch{Rewards: []float64{1, 2}, GroupIDs: []int{1}}, cfgWith(StrategyTopK, 0.5, groups(1)), "GroupIDs has 1 entries, batch has 2 rows"},
		{"group ids needed", Batch{Rewards: []float64{1, 2}}, cfgWith(StrategyTopK, 0.5, groups(1), func(c *Config) { c.Grouping = GroupByID }), "needs GroupIDs"},
		{"group id count", Batch{Rewards: []float64{1, 2}, GroupIDs: []int{1, 2}}, cfgWith(StrategyTopK, 0.5, groups(1), func(c *Config) { c.Grouping = GroupByID }), "2 distinct group ids, expected num_groups 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Apply(tc.b, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want containing %q", err, tc.want)
			}
		})
	}
}

func TestRowMaskedMeans(t *testing.T) {
	// row 0: (1·1 + 3·1)/2 = 2; row 1: nothing masked → 0/max(0,1) = 0.
	got, err := RowMaskedMeans([][]float64{{1, 3, 100}, {5, 5}}, [][]float64{{1, 1, 0}, {0, 0}})
	if err != nil || !reflect.DeepEqual(got, []float64{2, 0}) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := RowMaskedMeans([][]float64{{1}}, [][]float64{{1, 1}}); err == nil {
		t.Fatal("want shape error")
	}
}

// Tables from §6.4's result: 4 groups of 2 → 2 rows × 4 columns; group
// 2's std √½ and groups 0 and 2 selected.
func TestResultTables(t *testing.T) {
	rows := RowSums([][]float64{{3, 2}, {1, 4}, {2, 1}, {1, 2}, {2, 2}, {1, 2}, {0, 1}, {0, 0}})
	res, err := Apply(Batch{Rewards: rows, GroupIDs: []int{5, 5, 6, 6, 7, 7, 8, 8}}, cfgWith(StrategyTopK, 0.5, groups(4), func(c *Config) { c.Metric = "reward_sum" }))
	if err != nil {
		t.Fatal(err)
	}
	cols, table := res.RewardTable()
	if !reflect.DeepEqual(cols, []string{"group_0", "group_1", "group_2", "group_3"}) ||
		!reflect.DeepEqual(table, [][]float64{{5, 3, 4, 1}, {5, 3, 3, 0}}) {
		t.Fatalf("%v %v", cols, table)
	}
	rv := res.GroupRVRows(7)
	r := float64(float32(math.Sqrt(0.5)))
	want := []GroupRV{{7, 5, 0, true}, {7, 6, 0, false}, {7, 7, r, true}, {7, 8, r, false}}
	if !reflect.DeepEqual(rv, want) {
		t.Fatalf("%v", rv)
	}
	// Ragged groups (group_ids grouping) pad with NaN.
	res, err = Apply(Batch{Rewards: []float64{1, 2, 3}, GroupIDs: []int{0, 0, 1}}, cfgWith(StrategyTopK, 1, groups(2), func(c *Config) { c.Grouping = GroupByID }))
	if err != nil {
		t.Fatal(err)
	}
	_, table = res.RewardTable()
	if len(table) != 2 || table[0][1] != 3 || !math.IsNaN(table[1][1]) {
		t.Fatalf("%v", table)
	}
}

// Upstream's alignment test (tests/test_rollout_filter.py,
// test_reward_std_and_metadata_stay_aligned_after_filtering): 3 groups of 2
// episodes with rewards [-1, 1] | [2, 2] | [0, 6] (stds √2, 0, 3√2 =
// 1.4142, 0, 4.2426), group ids 43, 26, 9 (= [2,1,0]·17+9), and episodes
// of 1 row each, or of 3,1,2,4,1,5 rows, contiguous or interleaved by turn.
// Selections, worked by hand:
//   - top_p 1 include_zero → every group; without zeros → [0, 2];
//   - top_p 0.9: Σ 5.6569, thr 5.0812; 4.2426 < thr, +1.4142 ≥ → [2, 0];
//   - top_p 0.5: thr 2.8184 ≤ 4.2426 → [2];
//   - top_k 0.5: int(1.5) = 1 → [2]; min_p 0.75: keep ≥ 3.18 → [2].
//
// Kept rows are those of the selected groups in original order, each
// carrying its group's pre-filter std.
func TestApplyUpstreamAlignment(t *testing.T) {
	epReward := [][]float64{{-1, 1}, {2, 2}, {0, 6}}
	std := []float64{float64(float32(math.Sqrt2)), 0, float64(float32(3 * math.Sqrt2))}
	ids := []int{43, 26, 9}
	layout := func(mode string) (episodes []int) {
		counts := []int{3, 1, 2, 4, 1, 5}
		if mode == "episodes" {
			counts = []int{1, 1, 1, 1, 1, 1}
		}
		if mode == "interleaved_turns" {
			for turn := range 5 {
				for e, c := range counts {
					if turn < c {
						episodes = append(episodes, e)
					}
				}
			}
			return episodes
		}
		for e, c := range counts {
			for range c {
				episodes = append(episodes, e)
			}
		}
		return episodes
	}
	settings := []struct {
		strategy    string
		value       float64
		includeZero bool
		want        []int
	}{
		{StrategyTopP, 1.0, true, []int{0, 1, 2}},
		{StrategyTopP, 1.0, false, []int{0, 2}},
		{StrategyTopP, 0.9, true, []int{2, 0}},
		{StrategyTopP, 0.5, true, []int{2}},
		{StrategyTopK, 0.5, true, []int{2}},
		{StrategyMinP, 0.75, true, []int{2}},
	}
	for _, mode := range []string{"episodes", "turns", "interleaved_turns"} {
		for _, s := range settings {
			episodes := layout(mode)
			b := Batch{}
			for _, e := range episodes {
				b.Rewards = append(b.Rewards, epReward[e/2][e%2])
				b.GroupIDs = append(b.GroupIDs, ids[e/2])
				b.EpisodeIDs = append(b.EpisodeIDs, 3*e+101)
			}
			if mode == "episodes" {
				b.EpisodeIDs = nil
			}
			cfg := cfgWith(s.strategy, s.value, groups(3), func(c *Config) { c.IncludeZero = s.includeZero })
			res, err := Apply(b, cfg)
			if err != nil {
				t.Fatalf("%s %+v: %v", mode, s, err)
			}
			if !reflect.DeepEqual(res.SelectedGroups, s.want) {
				t.Fatalf("%s %+v: selected %v", mode, s, res.SelectedGroups)
			}
			sel := map[int]bool{}
			var wantIDs []int
			for _, g := range s.want {
				sel[g] = true
				wantIDs = append(wantIDs, ids[g])
			}
			var wantKept []int
			var wantStd []float64
			for r, e := range episodes {
				if sel[e/2] {
					wantKept = append(wantKept, r)
					wantStd = append(wantStd, std[e/2])
				}
			}
			if !reflect.DeepEqual(res.Kept, wantKept) || !reflect.DeepEqual(res.RewardStd, wantStd) {
				t.Fatalf("%s %+v: kept %v std %v, want %v %v", mode, s, res.Kept, res.RewardStd, wantKept, wantStd)
			}
			if !reflect.DeepEqual(res.RewardMatrix, epReward) || !reflect.DeepEqual(res.GroupRewardStd, std) ||
				!reflect.DeepEqual(res.GroupIDs, ids) || !reflect.DeepEqual(res.SelectedGroupIDs, wantIDs) {
				t.Fatalf("%s %+v: private entries %v %v %v %v", mode, s, res.RewardMatrix, res.GroupRewardStd, res.GroupIDs, res.SelectedGroupIDs)
			}
			checkMetrics(t, res.Metrics, map[string]float64{MetricKeptRatio: float64(float32(float64(len(s.want)) / 3))})
		}
	}
}

// group_rv_table marks rows by group id like upstream (int(group_id) in
// selected ids): two positional groups that share id 5, top_k keeps group 1
// (std √2 > 0), and both rows read selected.
func TestGroupRVRowsByID(t *testing.T) {
	res, err := Apply(Batch{Rewards: []float64{1, 1, 0, 2}, GroupIDs: []int{5, 5, 5, 5}}, cfgWith(StrategyTopK, 0.5, groups(2)))
	if err != nil {
		t.Fatal(err)
	}
	s := float64(float32(math.Sqrt2))
	want := []GroupRV{{3, 5, 0, true}, {3, 5, s, true}}
	if got := res.GroupRVRows(3); !reflect.DeepEqual(got, want) {
		t.Fatalf("%v", got)
	}
}
