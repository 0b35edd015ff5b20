package filter

import (
	"encoding/binary"
	"math"
	"sort"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzConfigYAML: decoding never panics; a decoded config that validates
// can select from arbitrary scores without panicking.
func FuzzConfigYAML(f *testing.F) {
	f.Add("rollout_filter_value: 0.5\nrollout_filter_strategy: top_k\n")
	f.Add("rollout_filter_ratio: 0.25\nrollout_filter_metric: null\n")
	f.Add("rollout_filter_top_p_prob_mode: softmax\nrollout_filter_include_zero: false\n")
	f.Add("- 1\n- 2\n")
	f.Add("rollout_filter_value: .nan\n")
	f.Fuzz(func(t *testing.T, src string) {
		c := DefaultConfig()
		if err := yaml.Unmarshal([]byte(src), &c); err != nil {
			return
		}
		if c.Validate() != nil {
			return
		}
		if _, err := Select([]float64{0.5, 0, 2, math.NaN(), -1}, c); err != nil {
			t.Fatalf("valid config %+v: %v", c, err)
		}
	})
}

// FuzzNormalizeMetric: the result is always one of the valid names.
func FuzzNormalizeMetric(f *testing.F) {
	for _, s := range []string{"", "reward_std", "ENTROPY", "length ", "kl"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := NormalizeMetric(s)
		if err != nil {
			return
		}
		for _, v := range validMetrics {
			if m == v {
				return
			}
		}
		t.Fatalf("NormalizeMetric(%q) = %q", s, m)
	})
}

// FuzzSelect: for any scores and settings the result holds distinct
// in-range indices, index-ordered where upstream returns index order, and
// top_k/softmax never return an empty set when candidates exist.
func FuzzSelect(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, uint8(0), 0.5, false, false, false)
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, uint8(1), 0.9, true, true, true)
	f.Fuzz(func(t *testing.T, raw []byte, strat uint8, value float64, softmax, small, inclZero bool) {
		if math.IsNaN(value) || math.IsInf(value, 0) || value < 0 {
			return
		}
		scores := make([]float64, len(raw)/8)
		for i := range scores {
			scores[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		}
		c := DefaultConfig()
		c.Strategy = validStrategies[int(strat)%len(validStrategies)]
		c.Value = value
		c.IncludeZero = !inclZero
		if softmax {
			c.TopPProbMode = ProbSoftmax
		}
		if small {
			c.FilterType = TypeSmallest
		}
		got, err := Select(scores, c)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, g := range got {
			if g < 0 || g >= len(scores) || seen[g] {
				t.Fatalf("bad selection %v of %d", got, len(scores))
			}
			seen[g] = true
		}
		indexOrder := c.Strategy == StrategyMinP || (c.Strategy == StrategyTopP && c.Value >= 1)
		if indexOrder && !sort.IntsAreSorted(got) {
			t.Fatalf("not in index order: %v", got)
		}
		candidates := 0
		for _, s := range scores {
			if c.IncludeZero || math.Abs(float64(float32(s))) > 1e-10 {
				candidates++
			}
		}
		alwaysSome := c.Strategy == StrategyTopK || c.Strategy == StrategyTopKAbs ||
			(c.Strategy == StrategyTopP && c.TopPProbMode == ProbSoftmax)
		if alwaysSome && candidates > 0 && len(got) == 0 {
			t.Fatalf("empty selection from %d candidates", candidates)
		}
	})
}
