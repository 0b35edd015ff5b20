package filter

import (
	"math"
	"reflect"
	"testing"
)

// One "all" bucket of 4 rows (row stds 1,1,3,3; groups 1 and 3 → mean 2)
// and a bucket_1 trimmed to 2 of its 3 rows for 2 data-parallel ranks.
// grad_norm/task reduces [2, 4] → 3; per_sample 3/4; per_token 3/12.
func TestGradientMetrics(t *testing.T) {
	all := Bucket{Name: BucketAll, Rows: []int{0, 1, 2, 3}, RowRewardStd: []float64{1, 1, 3, 3},
		RewardStdMean: 2, RewardStdValues: []float64{1, 3}, GroupIDs: []int{0, 1}}
	b1 := Bucket{Name: "bucket_1", Rows: []int{4, 5, 6}, RowRewardStd: []float64{0.5, 0.25, 0.1},
		RewardStdMean: 0.3, RewardStdValues: []float64{0.3}, GroupIDs: []int{2}}
	n, ok := DataParallelTrim(len(b1.Rows), 2)
	if !ok || n != 2 {
		t.Fatalf("trim %d %v", n, ok)
	}
	got, err := GradientMetrics(PrefixGradNorm, []BucketGrad{
		{Bucket: all, TotalSamples: 7, NumTokens: 12, ActorMetrics: map[string][]float64{
			"actor/grad_norm/task": {2, 4}, "actor/loss/kl": {0.5}, "actor/pg_loss": {1, 3},
		}},
		{Bucket: b1, SampleCount: n, TotalSamples: 7, ActorMetrics: map[string][]float64{
			"actor/grad_norm/entropy": {0.8},
		}},
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"grad_norm/all/sample_count":         4,
		"grad_norm/all/sample_pct":           4.0 / 7,
		"grad_norm/all/reward_std_mean":      2,
		"grad_norm/all/reward_std_min":       1,
		"grad_norm/all/reward_std_max":       3,
		"grad_norm/all/group_rv_count":       2,
		"grad_norm/all/task":                 3,
		"grad_norm/all/per_sample/task":      0.75,
		"grad_norm/all/per_token/task":       0.25,
		"grad_norm/all/loss/kl":              0.5,
		"grad_norm/all/actor/pg_loss":        2,
		"actor/grad_norm/task":               3, // mirrored from "all"
		"actor/loss/kl":                      0.5,
		"actor/pg_loss":                      2,
		"grad_norm/bucket_1/sample_count":    2,
		"grad_norm/bucket_1/sample_pct":      2.0 / 7,
		"grad_norm/bucket_1/reward_std_mean": 0.3,
		// min/max over the 2 rows used: 0.5, 0.25.
		"grad_norm/bucket_1/reward_std_min":     0.25,
		"grad_norm/bucket_1/reward_std_max":     0.5,
		"grad_norm/bucket_1/group_rv_count":     1,
		"grad_norm/bucket_1/entropy":            0.8,
		"grad_norm/bucket_1/per_sample/entropy": 0.4,
	}
	if !reflect.DeepEqual(keys(got), keys(want)) {
		t.Fatalf("keys\n got %v\nwant %v", keys(got), keys(want))
	}
	for k, w := range want {
		if math.Abs(got[k]-w) > 1e-12 {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}
	if _, err := GradientMetrics(PrefixGradNorm, []BucketGrad{{Bucket: b1, SampleCount: 9}}, false); err == nil {
		t.Fatal("want error for a sample count above the bucket size")
	}
}

func keys(m map[string]float64) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func TestDataParallelTrim(t *testing.T) {
	tests := []struct {
		count, dp, n int
		ok           bool
	}{
		{5, 2, 4, true}, {1, 2, 0, false}, {4, 1, 4, true}, {6, 3, 6, true}, {0, 1, 0, false}, {7, 0, 7, true},
	}
	for _, tc := range tests {
		n, ok := DataParallelTrim(tc.count, tc.dp)
		if n != tc.n || ok != tc.ok {
			t.Errorf("DataParallelTrim(%d, %d) = %d, %v; want %d, %v", tc.count, tc.dp, n, ok, tc.n, tc.ok)
		}
	}
}

func TestAnalysisFilterMetrics(t *testing.T) {
	got := AnalysisFilterMetrics(map[string]float64{
		MetricKeptRatio: 0.5, MetricInGroupRewardStd: 1.25, "rollout/_group_reward_std": 3,
	})
	want := map[string]float64{"grad_analysis/filter_kept_ratio": 0.5, "grad_analysis/in_group_reward_std": 1.25}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%v", got)
	}
}
