package filter

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"ragen/config/rule"
)

// Strategy names (rollout_filter_strategy).
const (
	StrategyTopP    = "top_p"     // nucleus-like: keep groups until a share of the total score is reached
	StrategyTopK    = "top_k"     // keep int(value·NumGroups) groups
	StrategyTopKAbs = "top_k_abs" // keep int(value) groups
	StrategyMinP    = "min_p"     // keep groups whose score is within a factor of the best
)

// Filter types (rollout_filter_type).
const (
	TypeLargest  = "largest"
	TypeSmallest = "smallest"
)

// top_p probability modes (rollout_filter_top_p_prob_mode).
const (
	ProbLinear  = "linear"
	ProbSoftmax = "softmax"
)

// Metric names (rollout_filter_metric), after alias resolution.
const (
	MetricNameRewardVariance  = "reward_variance"
	MetricNameReward          = "reward"
	MetricNameRewardSum       = "reward_sum"
	MetricNameLength          = "length"
	MetricNameEntropy         = "entropy"
	MetricNameEntropyVariance = "entropy_variance"
)

// Bucket modes (gradient_analysis_bucket_mode).
const (
	BucketQuantile = "quantile"
	BucketFixedRV  = "fixed_rv"
)

// Grouping modes: how rows are assigned to groups (a ragen option, no
// upstream key).
const (
	// GroupPositional is upstream's rule: with E rows (or episodes) and G
	// groups, row r belongs to group r div (E div G).
	GroupPositional = "positional"
	// GroupByID groups rows (episodes) by their group id, groups ordered by
	// first appearance. Groups may then differ in size.
	GroupByID = "group_ids"
)

var (
	validStrategies = []string{StrategyTopP, StrategyTopK, StrategyTopKAbs, StrategyMinP}
	validTypes      = []string{TypeLargest, TypeSmallest}
	validProbModes  = []string{ProbLinear, ProbSoftmax}
	validMetrics    = []string{MetricNameRewardVariance, MetricNameReward, MetricNameRewardSum,
		MetricNameLength, MetricNameEntropy, MetricNameEntropyVariance}
	validBucketModes = []string{BucketQuantile, BucketFixedRV}
	validGroupings   = []string{GroupPositional, GroupByID}
	// metricAliases are the other names NormalizeMetric accepts.
	metricAliases = map[string]string{"reward_std": MetricNameRewardVariance, "entropy_std": MetricNameEntropyVariance}
)

// Strategies lists the rollout_filter_strategy names.
func Strategies() []string { return slices.Clone(validStrategies) }

// Types lists the rollout_filter_type names.
func Types() []string { return slices.Clone(validTypes) }

// ProbModes lists the rollout_filter_top_p_prob_mode names.
func ProbModes() []string { return slices.Clone(validProbModes) }

// Metrics lists the rollout_filter_metric names NormalizeMetric accepts
// (in any case): the metrics, then their aliases, sorted.
func Metrics() []string {
	out := slices.Clone(validMetrics)
	for a := range metricAliases {
		out = append(out, a)
	}
	slices.Sort(out[len(validMetrics):])
	return out
}

// BucketModes lists the gradient_analysis_bucket_mode names.
func BucketModes() []string { return slices.Clone(validBucketModes) }

// Config holds the rollout filter settings. YAML tags are upstream's keys
// under actor_rollout_ref.rollout; NumGroups and GroupSize come from
// es_manager.train.env_groups and es_manager.train.group_size.
type Config struct {
	// Value is the strategy parameter: the score share for top_p, the
	// fraction of groups for top_k, the group count for top_k_abs and the
	// factor for min_p. Legacy alias key: rollout_filter_ratio.
	Value float64 `yaml:"rollout_filter_value"`
	// Strategy is one of top_p, top_k, top_k_abs, min_p.
	Strategy string `yaml:"rollout_filter_strategy"`
	// FilterType is largest (prefer high scores) or smallest.
	FilterType string `yaml:"rollout_filter_type"`
	// IncludeZero keeps groups whose score is 0 (|s| ≤ 1e-10) as candidates.
	IncludeZero bool `yaml:"rollout_filter_include_zero"`
	// TopPProbMode is linear or softmax (top_p only).
	TopPProbMode string `yaml:"rollout_filter_top_p_prob_mode"`
	// SelectionEps is subtracted from the linear top_p threshold.
	SelectionEps float64 `yaml:"rollout_filter_selection_eps"`
	// Metric names the group score: reward_variance (alias reward_std),
	// reward, reward_sum, length, entropy, entropy_variance (alias
	// entropy_std). Case-insensitive; empty means reward_variance.
	Metric string `yaml:"rollout_filter_metric"`
	// EmptyStopSteps stops training after this many consecutive steps whose
	// filtered batch is empty (0 disables). Used by the trainer.
	EmptyStopSteps int `yaml:"rollout_filter_empty_stop_steps"`
	// BucketCount is the number of quantile buckets for gradient analysis.
	BucketCount int `yaml:"gradient_analysis_num_buckets"`
	// BucketMode is quantile or fixed_rv.
	BucketMode string `yaml:"gradient_analysis_bucket_mode"`

	// NumGroups (G) is the number of groups per batch (es_manager.train.env_groups).
	NumGroups int `yaml:"-"`
	// GroupSize (N) is the number of rollouts per group (es_manager.train.group_size);
	// used by SplitBuckets when rows carry no group ids.
	GroupSize int `yaml:"-"`
	// Grouping is positional (upstream, default) or group_ids.
	Grouping string `yaml:"-"`
}

// DefaultConfig returns upstream's config/base.yaml settings: the "no
// filter" setting (top_p, value 1, include_zero) over 8 groups of 16.
func DefaultConfig() Config {
	return Config{
		Value:          1.0,
		Strategy:       StrategyTopP,
		FilterType:     TypeLargest,
		IncludeZero:    true,
		TopPProbMode:   ProbLinear,
		SelectionEps:   0.01,
		Metric:         MetricNameRewardVariance,
		EmptyStopSteps: 5,
		BucketCount:    6,
		BucketMode:     BucketQuantile,
		NumGroups:      8,
		GroupSize:      16,
		Grouping:       GroupPositional,
	}
}

// CodeDefaultConfig returns the defaults upstream's code uses when a key is
// missing from the config entirely (value 0.25, empty-stop 10); the other
// fields equal DefaultConfig.
func CodeDefaultConfig() Config {
	c := DefaultConfig()
	c.Value = 0.25
	c.EmptyStopSteps = 10
	return c
}

// NormalizeMetric resolves a metric name as upstream does (build_rollout_filter):
// lower-cased (no trimming), empty → reward_variance, reward_std → reward_variance, entropy_std →
// entropy_variance. Unknown names give an error listing the valid ones.
func NormalizeMetric(name string) (string, error) {
	m := strings.ToLower(name)
	if m == "" {
		return MetricNameRewardVariance, nil
	}
	if a, ok := metricAliases[m]; ok {
		return a, nil
	}
	if slices.Contains(validMetrics, m) {
		return m, nil
	}
	return "", fmt.Errorf("filter: Unsupported rollout filter metric: %s (valid: %s; aliases reward_std, entropy_std)",
		m, strings.Join(validMetrics, ", "))
}

func oneOf(field, got string, valid []string) error {
	for _, v := range valid {
		if got == v {
			return nil
		}
	}
	return fmt.Errorf("filter: unknown %s %q (valid: %s)", field, got, strings.Join(valid, ", "))
}

// normalized fills empty fields with upstream's dataclass defaults, so a
// Config literal that sets only some fields behaves like upstream's
// RolloutFilterConfig: strategy top_p, top_p_prob_mode linear, bucket_count
// 6, bucket_mode quantile, positional grouping. (The empty metric already
// means reward_variance.)
func (c Config) normalized() Config {
	if c.Strategy == "" {
		c.Strategy = StrategyTopP
	}
	if c.TopPProbMode == "" {
		c.TopPProbMode = ProbLinear
	}
	if c.BucketCount == 0 {
		c.BucketCount = 6
	}
	if c.BucketMode == "" {
		c.BucketMode = BucketQuantile
	}
	if c.Grouping == "" {
		c.Grouping = GroupPositional
	}
	return c
}

// checkValue is the range of rollout_filter_value: >= 0, and for min_p at
// most 1, for top_p and top_k in (0, 1] (ragen: a fraction of the groups;
// above 1 upstream silently keeps everything, see doc/divergences.md), for
// top_k_abs at least 1 (a group count).
func (c Config) checkValue() error {
	const key = KeyPrefix + "rollout_filter_value"
	v := c.Value
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return rule.Errorf(key, "%v is not finite: want >= 0", v)
	}
	want := ""
	switch {
	case v < 0:
		want = ">= 0"
	case c.Strategy == StrategyMinP && v > 1:
		want = "0 <= x <= 1"
	case (c.Strategy == StrategyTopP || c.Strategy == StrategyTopK) && (v == 0 || v > 1):
		want = "0 < x <= 1"
	case c.Strategy == StrategyTopKAbs && v < 1:
		want = ">= 1"
	}
	if want == "" {
		return nil
	}
	return rule.Errorf(key, "%v is out of range: want %s", v, want)
}

// KeyPrefix is where the filter's keys live in upstream's config tree.
const KeyPrefix = "actor_rollout_ref.rollout."

// Validate reports every problem with the configuration at once, each a
// rule.Problem naming its key (package config reports them under it).
// Empty strategy, probability mode, bucket mode and grouping, and a zero
// bucket count, stand for their defaults.
func (c Config) Validate() error {
	c = c.normalized()
	var errs []error
	add := func(p error) { errs = append(errs, p) }
	name := func(key, got string, valid []string) {
		if !slices.Contains(valid, got) {
			add(rule.Unknown(KeyPrefix+key, got, valid))
		}
	}
	add(c.checkValue())
	name("rollout_filter_strategy", c.Strategy, validStrategies)
	name("rollout_filter_type", c.FilterType, validTypes)
	name("rollout_filter_top_p_prob_mode", c.TopPProbMode, validProbModes)
	if math.IsNaN(c.SelectionEps) || math.IsInf(c.SelectionEps, 0) {
		add(rule.Errorf(KeyPrefix+"rollout_filter_selection_eps", "%v is not finite", c.SelectionEps))
	} else if c.SelectionEps < 0 {
		add(rule.Errorf(KeyPrefix+"rollout_filter_selection_eps", "%v is out of range: want >= 0", c.SelectionEps))
	}
	if _, err := NormalizeMetric(c.Metric); err != nil {
		add(rule.UnknownLike(KeyPrefix+"rollout_filter_metric", c.Metric, strings.ToLower(c.Metric), Metrics()))
	}
	add(rule.AtLeast(KeyPrefix+"rollout_filter_empty_stop_steps", c.EmptyStopSteps, 0))
	add(rule.AtLeast(KeyPrefix+"gradient_analysis_num_buckets", c.BucketCount, 1))
	name("gradient_analysis_bucket_mode", c.BucketMode, validBucketModes)
	if c.NumGroups < 1 {
		add(rule.Errorf("es_manager.train.env_groups", "must be >= 1, got %d (the filter's NumGroups)", c.NumGroups))
	}
	if c.GroupSize < 0 {
		add(fmt.Errorf("filter: group_size must be ≥ 0, got %d", c.GroupSize))
	}
	if err := oneOf("grouping", c.Grouping, validGroupings); err != nil {
		add(err)
	}
	return errors.Join(errs...)
}

// yamlConfig mirrors Config with pointers so that absent keys keep the
// receiver's current values, and adds the legacy alias.
type yamlConfig struct {
	Value          *float64 `yaml:"rollout_filter_value"`
	Ratio          *float64 `yaml:"rollout_filter_ratio"`
	Strategy       *string  `yaml:"rollout_filter_strategy"`
	FilterType     *string  `yaml:"rollout_filter_type"`
	IncludeZero    *bool    `yaml:"rollout_filter_include_zero"`
	TopPProbMode   *string  `yaml:"rollout_filter_top_p_prob_mode"`
	SelectionEps   *float64 `yaml:"rollout_filter_selection_eps"`
	Metric         *string  `yaml:"rollout_filter_metric"`
	EmptyStopSteps *int     `yaml:"rollout_filter_empty_stop_steps"`
	BucketCount    *int     `yaml:"gradient_analysis_num_buckets"`
	BucketMode     *string  `yaml:"gradient_analysis_bucket_mode"`
}

// UnmarshalYAML reads the filter keys from a mapping (typically the
// actor_rollout_ref.rollout node). Keys that are absent keep the receiver's
// values, so decode onto DefaultConfig(); other keys of the node are ignored
// (they belong to other components). rollout_filter_ratio is accepted as the
// legacy name of rollout_filter_value, which wins when both are present. A
// null rollout_filter_metric means reward_variance.
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("filter: config must be a YAML mapping, got %s at line %d", nodeKind(n), n.Line)
	}
	var y yamlConfig
	if err := n.Decode(&y); err != nil {
		return fmt.Errorf("filter: %w", err)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "rollout_filter_metric" && n.Content[i+1].Tag == "!!null" {
			s := MetricNameRewardVariance
			y.Metric = &s
		}
	}
	if y.Ratio != nil {
		c.Value = *y.Ratio
	}
	if y.Value != nil {
		c.Value = *y.Value
	}
	setS := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	setS(&c.Strategy, y.Strategy)
	setS(&c.FilterType, y.FilterType)
	setS(&c.TopPProbMode, y.TopPProbMode)
	setS(&c.Metric, y.Metric)
	setS(&c.BucketMode, y.BucketMode)
	if y.IncludeZero != nil {
		c.IncludeZero = *y.IncludeZero
	}
	if y.SelectionEps != nil {
		c.SelectionEps = *y.SelectionEps
	}
	if y.EmptyStopSteps != nil {
		c.EmptyStopSteps = *y.EmptyStopSteps
	}
	if y.BucketCount != nil {
		c.BucketCount = *y.BucketCount
	}
	return nil
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.DocumentNode:
		return "document"
	case yaml.SequenceNode:
		return "sequence"
	case yaml.MappingNode:
		return "mapping"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "unknown node"
}
