package filter_test

import (
	"errors"
	"fmt"

	"ragen/filter"
)

func ExampleSelect() {
	cfg := filter.DefaultConfig()
	cfg.Value = 0.6 // keep groups until 60% of the total score
	sel, err := filter.Select([]float64{4, 3, 2, 1}, cfg)
	fmt.Println(sel, err)
	// Output: [0 1] <nil>
}

func ExampleApply() {
	cfg := filter.DefaultConfig()
	cfg.NumGroups = 3
	cfg.Strategy = filter.StrategyTopK
	cfg.Value = 0.34 // int(0.34·3) = 1 group
	// Three groups of two rollouts; the middle group has the largest reward spread.
	res, err := filter.Apply(filter.Batch{Rewards: []float64{1, 1, 0, 4, 2, 3}}, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("kept rows:", res.Kept)
	fmt.Printf("kept ratio: %.4f\n", res.Metrics[filter.MetricKeptRatio])
	fmt.Printf("reward std of kept rows: %.4f\n", res.RewardStd)

	// An all-equal batch under top_p < 1 keeps nothing: a value, not a panic.
	cfg.Strategy, cfg.Value = filter.StrategyTopP, 0.9
	res, err = filter.Apply(filter.Batch{Rewards: []float64{1, 1, 2, 2, 3, 3}}, cfg)
	fmt.Println(errors.Is(err, filter.ErrNoneKept), len(res.Kept), res.Metrics[filter.MetricZeroCount])
	// Output:
	// kept rows: [2 3]
	// kept ratio: 0.3333
	// reward std of kept rows: [2.8284 2.8284]
	// true 0 3
}

func ExampleSplitBuckets() {
	cfg := filter.DefaultConfig()
	cfg.BucketCount = 2
	cfg.GroupSize = 2
	buckets, err := filter.SplitBuckets([]float64{0.5, 0.5, 2, 2, 0, 0}, nil, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range buckets {
		fmt.Printf("%s rows=%v groups=%v mean=%.4f\n", b.Name, b.Rows, b.GroupIDs, b.RewardStdMean)
	}
	// Output:
	// all rows=[0 1 2 3 4 5] groups=[0 1 2] mean=0.8333
	// bucket_1 rows=[4 5] groups=[2] mean=0.0000
	// bucket_2 rows=[0 1 2 3] groups=[0 1] mean=1.2500
}
