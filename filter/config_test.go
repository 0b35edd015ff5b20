package filter

import (
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestDefaultConfigValid(t *testing.T) {
	for _, c := range []Config{DefaultConfig(), CodeDefaultConfig()} {
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	if c := CodeDefaultConfig(); c.Value != 0.25 || c.EmptyStopSteps != 10 {
		t.Fatalf("%+v", c)
	}
}

func TestValidateReportsEverything(t *testing.T) {
	c := DefaultConfig()
	c.Strategy = "top_q"
	c.FilterType = "middle"
	c.TopPProbMode = "cubic"
	c.Metric = "kl"
	c.BucketMode = "decile"
	c.BucketCount = -1
	c.NumGroups = 0
	c.Value = -1
	err := c.Validate()
	if err == nil {
		t.Fatal("want error")
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 8 {
		t.Fatalf("want 8 joined errors, got %v", err)
	}
	for _, s := range []string{
		`actor_rollout_ref.rollout.rollout_filter_strategy: unknown value "top_q" (did you mean top_k?); valid: min_p, top_k, top_k_abs, top_p`,
		`actor_rollout_ref.rollout.rollout_filter_type: unknown value "middle"; valid: largest, smallest`,
		`actor_rollout_ref.rollout.rollout_filter_top_p_prob_mode: unknown value "cubic"; valid: linear, softmax`,
		`actor_rollout_ref.rollout.rollout_filter_metric: unknown value "kl"; valid: entropy,`,
		`actor_rollout_ref.rollout.gradient_analysis_bucket_mode: unknown value "decile"`,
		`actor_rollout_ref.rollout.gradient_analysis_num_buckets: -1 is out of range: want >= 1`,
		`es_manager.train.env_groups: must be >= 1, got 0`,
		`actor_rollout_ref.rollout.rollout_filter_value: -1 is out of range: want >= 0`,
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("missing %q in %v", s, err)
		}
	}
}

func TestNormalizeMetric(t *testing.T) {
	tests := map[string]string{
		"": "reward_variance", "reward_std": "reward_variance", "Reward_Variance": "reward_variance",
		"REWARD": "reward", "reward_sum": "reward_sum", "length": "length", "entropy": "entropy",
		"entropy_std": "entropy_variance", "Entropy_Variance": "entropy_variance",
	}
	for in, want := range tests {
		got, err := NormalizeMetric(in)
		if err != nil || got != want {
			t.Errorf("NormalizeMetric(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	// Upstream only lower-cases ((metric or "reward_variance").lower()):
	// surrounding spaces make an unknown name.
	for _, bad := range []string{"loss", " reward", "length "} {
		if _, err := NormalizeMetric(bad); err == nil {
			t.Fatalf("NormalizeMetric(%q): want error", bad)
		}
	}
}

func TestConfigYAML(t *testing.T) {
	src := `
temperature: 1
rollout_filter_ratio: 0.5
rollout_filter_strategy: top_k
rollout_filter_type: smallest
rollout_filter_include_zero: false
rollout_filter_top_p_prob_mode: softmax
rollout_filter_selection_eps: 0.02
rollout_filter_metric: null
rollout_filter_empty_stop_steps: 3
gradient_analysis_num_buckets: 4
gradient_analysis_bucket_mode: fixed_rv
`
	c := DefaultConfig()
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.Value, want.Strategy, want.FilterType, want.IncludeZero = 0.5, StrategyTopK, TypeSmallest, false
	want.TopPProbMode, want.SelectionEps, want.Metric, want.EmptyStopSteps = ProbSoftmax, 0.02, MetricNameRewardVariance, 3
	want.BucketCount, want.BucketMode = 4, BucketFixedRV
	if c != want {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
	// rollout_filter_value wins over the legacy alias; absent keys keep defaults.
	c = DefaultConfig()
	if err := yaml.Unmarshal([]byte("rollout_filter_ratio: 0.5\nrollout_filter_value: 0.75\n"), &c); err != nil {
		t.Fatal(err)
	}
	if c.Value != 0.75 || c.Strategy != StrategyTopP {
		t.Fatalf("%+v", c)
	}
	for _, bad := range []string{"[1, 2]", "rollout_filter_value: abc", "rollout_filter_include_zero: maybe"} {
		c = DefaultConfig()
		if err := yaml.Unmarshal([]byte(bad), &c); err == nil || !strings.HasPrefix(err.Error(), "filter:") {
			t.Errorf("%q: err %v", bad, err)
		}
	}
}

// A Config literal with only upstream's required fields behaves like
// upstream's dataclass defaults (strategy top_p, linear, quantile buckets).
func TestPartialConfigLiteral(t *testing.T) {
	c := Config{Value: 0.6, FilterType: TypeLargest, NumGroups: 4, SelectionEps: 0.01}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	sel, err := Select([]float64{4, 3, 2, 1}, c)
	if err != nil || len(sel) != 2 {
		t.Fatalf("%v %v", sel, err)
	}
	res, err := Apply(Batch{Rewards: []float64{0, 4, 0, 3, 0, 2, 0, 1}}, Config{Value: 0.5, Strategy: StrategyTopK, FilterType: TypeLargest, NumGroups: 4})
	if err != nil || len(res.Kept) != 4 || res.Kept[0] != 0 || res.Kept[3] != 3 {
		t.Fatalf("%v %v", res.Kept, err)
	}
	bs, err := SplitBuckets([]float64{1, 2}, []int{0, 1}, Config{})
	if err != nil || len(bs) != 3 {
		t.Fatalf("%v %v", bs, err)
	}
}

func TestValidateValuePerStrategy(t *testing.T) {
	for _, c := range []struct {
		strategy string
		value    float64
		want     string // "" = valid
	}{
		{StrategyMinP, 1, ""}, {StrategyMinP, 2, "2 is out of range: want 0 <= x <= 1"},
		{StrategyTopP, 1, ""}, {StrategyTopP, 0, "0 is out of range: want 0 < x <= 1"},
		{StrategyTopK, 1.5, "1.5 is out of range: want 0 < x <= 1"}, {StrategyTopK, 0.25, ""},
		{StrategyTopKAbs, 3, ""}, {StrategyTopKAbs, 0.5, "0.5 is out of range: want >= 1"},
		{StrategyTopKAbs, -1, "-1 is out of range: want >= 0"},
	} {
		cfg := DefaultConfig()
		cfg.Strategy, cfg.Value = c.strategy, c.value
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %v: %v", c.strategy, c.value, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), "actor_rollout_ref.rollout.rollout_filter_value: "+c.want)):
			t.Errorf("%s %v: %v, want %q", c.strategy, c.value, err, c.want)
		}
	}
}
