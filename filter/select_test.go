package filter

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func cfgWith(strategy string, value float64, mutate ...func(*Config)) Config {
	c := DefaultConfig()
	c.Strategy = strategy
	c.Value = value
	for _, m := range mutate {
		m(&c)
	}
	return c
}

func softmaxMode(c *Config) { c.TopPProbMode = ProbSoftmax }
func smallest(c *Config)    { c.FilterType = TypeSmallest }
func excludeZero(c *Config) { c.IncludeZero = false }
func groups(n int) func(*Config) {
	return func(c *Config) { c.NumGroups = n }
}

var nan = math.NaN()

func TestSelectTable(t *testing.T) {
	tests := []struct {
		name   string
		scores []float64
		cfg    Config
		want   []int
	}{
		// §6.6: softmax of equal scores is 1/3 each; cum = [1/3, 2/3, 1];
		// first cum ≥ 0.6 is index 1 → k = 2; ties keep index order.
		{"upstream6 softmax equal", []float64{1, 1, 1}, cfgWith(StrategyTopP, 0.6, softmaxMode), []int{0, 1}},
		// §6.7: Σ=10, threshold 0.6·10−0.01 = 5.99; cum 4 → 7 ≥ 5.99 → 2 groups.
		{"upstream7 linear", []float64{4, 3, 2, 1}, cfgWith(StrategyTopP, 0.6), []int{0, 1}},
		// §6.8: Σ=0, threshold −0.01 ≤ cum=0 at once → count 0 → [].
		{"upstream8 all zero", []float64{0, 0, 0}, cfgWith(StrategyTopP, 0.9), []int{}},
		// §6.9: value ≥ 1 returns every index in index order.
		{"upstream9a", []float64{4, 2, 0, 0}, cfgWith(StrategyTopP, 1.0), []int{0, 1, 2, 3}},
		{"upstream9b", []float64{0, 0, 0}, cfgWith(StrategyTopP, 1.0), []int{0, 1, 2}},
		{"upstream9c", []float64{1, 3, 2}, cfgWith(StrategyTopP, 1.0), []int{0, 1, 2}},
		// §6.10: zeros dropped first. [10,1]: p = [0.99988, 0.00012]; cum[0] ≥ 0.9 → k=1.
		{"upstream10a", []float64{10, 1, 0, 0}, cfgWith(StrategyTopP, 0.9, softmaxMode, excludeZero), []int{0}},
		// [4,2]: p = [0.8808, 0.1192]; cum[0] < 0.9, cum[1] = 1 → k = 2.
		{"upstream10b", []float64{4, 2, 0, 0}, cfgWith(StrategyTopP, 0.9, softmaxMode, excludeZero), []int{0, 1}},
		// [1,1,1]: as §6.6 → first two.
		{"upstream10c", []float64{1, 1, 1, 0}, cfgWith(StrategyTopP, 0.6, softmaxMode, excludeZero), []int{0, 1}},
		// §6.11: [10,1]: Σ=11, thr 9.89; cum 10 ≥ → [0].
		{"upstream11a", []float64{10, 1, 0, 0}, cfgWith(StrategyTopP, 0.9, excludeZero), []int{0}},
		// [4,2]: Σ=6, thr 5.39; cum 4 < 5.39 → 6 ≥ → [0,1].
		{"upstream11b", []float64{4, 2, 0, 0}, cfgWith(StrategyTopP, 0.9, excludeZero), []int{0, 1}},
		// [3,1,1]: Σ=5, thr 4.49; cum 3, 4, 5 → [0,1,2] (tie 1,1 by index).
		{"upstream11c", []float64{3, 1, 1, 0}, cfgWith(StrategyTopP, 0.9, excludeZero), []int{0, 1, 2}},
		// Σ=4, thr 2.79; order 2, 1.25, ...; cum 2 → 3.25 ≥ → [1,3].
		{"linear 0.7", []float64{0.5, 2, 0.25, 1.25}, cfgWith(StrategyTopP, 0.7), []int{1, 3}},
		// Σ=4, thr 2.99; cum 2 → 3 → [0,1].
		{"linear 0.75", []float64{2, 1, 1}, cfgWith(StrategyTopP, 0.75), []int{0, 1}},
		// Σ=2.75, thr 1.365; cum 2 ≥ after first → [3].
		{"linear negative", []float64{-0.5, 0.25, 1, 2}, cfgWith(StrategyTopP, 0.5), []int{3}},
		// Σ=2.5, thr 2.465; cum 3 → [0].
		{"linear 0.99", []float64{3, 0, -1, 0.5}, cfgWith(StrategyTopP, 0.99), []int{0}},
		// Σ=0.5, thr 0.44; cum 1 → [0].
		{"linear 0.9 neg tail", []float64{1, 1, -1.5}, cfgWith(StrategyTopP, 0.9), []int{0}},
		// Σ=−1.5 → thr −1.36 ≤ 0 → [] immediately.
		{"linear negative sum", []float64{-1, -0.5}, cfgWith(StrategyTopP, 0.9), []int{}},
		// With eps ≥ 0 the threshold is always reached among the positive
		// scores; a negative eps shows the walk ending at a score ≤ 0:
		// Σ=6, thr 0.9·6 + 1 = 6.4; cum 4 → 6, then score 0 ends the walk; 6 < 6.4 → [].
		{"linear stops at zero", []float64{4, 0, 2}, cfgWith(StrategyTopP, 0.9, func(c *Config) { c.SelectionEps = -1 }), []int{}},
		// smallest: ascending order starts with 0 → walk ends, cum 0 < thr → [].
		{"linear smallest zero first", []float64{0, 1, 2}, cfgWith(StrategyTopP, 0.5, smallest), []int{}},
		// smallest: Σ=6, thr 2.99; ascending 1 (idx2), 2 (idx1) → cum 3 ≥ → [2,1].
		{"linear smallest", []float64{3, 2, 1}, cfgWith(StrategyTopP, 0.5, smallest), []int{2, 1}},
		// softmax [2,0,1,0.5]: p ∝ e^2, 1, e, e^0.5 = 7.389, 1, 2.718, 1.649 (Σ 12.756)
		// → 0.579, 0.078, 0.213, 0.129; cum 0.579 ≥ 0.5 → [0].
		{"softmax 0.5", []float64{2, 0, 1, 0.5}, cfgWith(StrategyTopP, 0.5, softmaxMode), []int{0}},
		// cum 0.579, 0.792, 0.922 ≥ 0.9 → [0,2,3].
		{"softmax 0.9", []float64{2, 0, 1, 0.5}, cfgWith(StrategyTopP, 0.9, softmaxMode), []int{0, 2, 3}},
		// smallest: p ∝ e^-2, 1, e^-1, e^-0.5 → 0.064, 0.474, 0.174, 0.288;
		// order 1, 3; cum 0.474, 0.762 ≥ 0.5 → [1,3].
		{"softmax smallest", []float64{2, 0, 1, 0.5}, cfgWith(StrategyTopP, 0.5, softmaxMode, smallest), []int{1, 3}},
		// softmax never returns fewer than one group even for value 0.
		{"softmax value 0", []float64{1, 2}, cfgWith(StrategyTopP, 0, softmaxMode), []int{1}},
		// top_k 0.0 → k = max(0, 1) = 1 → the largest.
		{"top_k 0", []float64{0.5, 0.25, 0.75}, cfgWith(StrategyTopK, 0), []int{2}},
		// top_k 2.0 → k = min(6, 3) = 3 in descending order.
		{"top_k 2.0", []float64{0.5, 0.25, 0.75}, cfgWith(StrategyTopK, 2), []int{2, 0, 1}},
		// top_k_abs 2.9 → int(2.9) = 2.
		{"top_k_abs 2.9", []float64{0.5, 0.25, 0.75}, cfgWith(StrategyTopKAbs, 2.9), []int{2, 0}},
		// top_k_abs larger than the group count → all, score order.
		{"top_k_abs > G", []float64{1, 3, 2}, cfgWith(StrategyTopKAbs, 10), []int{1, 2, 0}},
		// top_k 0.5 of 4 → 2; ties by lower index.
		{"top_k ties", []float64{1, 1, 1, 1}, cfgWith(StrategyTopK, 0.5), []int{0, 1}},
		{"top_k smallest ties", []float64{2, 1, 2, 1}, cfgWith(StrategyTopK, 0.75, smallest), []int{1, 3, 0}},
		// top_k counts the configured groups, not the remaining ones:
		// int(0.5·4) = 2 even though only one non-zero group remains → min(2,1) = 1.
		{"top_k excl zero", []float64{0, 3, 0, 0}, cfgWith(StrategyTopK, 0.5, excludeZero), []int{1}},
		{"top_k negative", []float64{-3, -1, -2}, cfgWith(StrategyTopKAbs, 2), []int{1, 2}},
		// min_p largest: max 1 → keep ≥ 0.5 → [0,1,3] in index order.
		{"min_p largest", []float64{1, 0.625, 0.375, 0.5}, cfgWith(StrategyMinP, 0.5), []int{0, 1, 3}},
		// min_p smallest: min 0 → keep ≤ 1e-10 → [0,2].
		{"min_p smallest", []float64{0, 0.25, 0, 0.5}, cfgWith(StrategyMinP, 0.5, smallest), []int{0, 2}},
		// without zeros: min 0.25 → keep ≤ 0.5 → [1,3].
		{"min_p smallest excl zero", []float64{0, 0.25, 0, 0.5}, cfgWith(StrategyMinP, 0.5, smallest, excludeZero), []int{1, 3}},
		// a single group is always kept by top_k.
		{"single group", []float64{0}, cfgWith(StrategyTopK, 0.25), []int{0}},
		// NaN scores (one-member groups' std): torch ranks NaN above all numbers.
		{"top_k NaN first", []float64{nan, 1, 2}, cfgWith(StrategyTopKAbs, 2), []int{0, 2}},
		{"top_k smallest NaN first", []float64{nan, 1, 2}, cfgWith(StrategyTopKAbs, 2, smallest), []int{0, 1}},
		// Σ is NaN → threshold NaN → nothing compares ≥ → [].
		{"linear NaN", []float64{nan, 1}, cfgWith(StrategyTopP, 0.5), []int{}},
		// max is NaN → nothing passes.
		{"min_p NaN", []float64{nan, 1}, cfgWith(StrategyMinP, 0.5), []int{}},
		// NaN is dropped with the zeros.
		{"excl zero drops NaN", []float64{nan, 1, 0}, cfgWith(StrategyTopP, 1, excludeZero), []int{1}},
		{"excl zero all zero", []float64{0, 0, nan}, cfgWith(StrategyTopK, 0.5, excludeZero), []int{}},
		{"no groups", []float64{}, cfgWith(StrategyTopK, 0.5), []int{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Select(tc.scores, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Select(%v) = %v, want %v", tc.scores, got, tc.want)
			}
		})
	}
}

// verify_lower_ratio.py intent: include_zero=false, value 0.5, largest over
// stds {G0 0.71, G1 0, G2 7.07}: k = int(0.5·3) = 1 → G2.
func TestSelectVerifyLowerRatio(t *testing.T) {
	got, err := Select([]float64{0.7071, 0, 7.0711}, cfgWith(StrategyTopK, 0.5, excludeZero, groups(3)))
	if err != nil || !reflect.DeepEqual(got, []int{2}) {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestSelectErrors(t *testing.T) {
	tests := []struct {
		name   string
		scores []float64
		cfg    Config
		want   string // substring of the error; "" = no error
	}{
		{"unknown strategy", []float64{1, 2}, cfgWith("top_q", 0.5), `Unknown strategy: top_q (valid: top_p, top_k, top_k_abs, min_p)`},
		{"unknown prob mode", []float64{1, 2}, cfgWith(StrategyTopP, 0.5, func(c *Config) { c.TopPProbMode = "cubic" }), "Unknown top_p_prob_mode: cubic. Expected one of {'linear', 'softmax'}."},
		{"bad type linear", []float64{1, 2}, cfgWith(StrategyTopP, 0.5, func(c *Config) { c.FilterType = "big" }), `Invalid rollout filter type: big (valid: largest, smallest)`},
		{"bad type top_k", []float64{1, 2}, cfgWith(StrategyTopK, 0.5, func(c *Config) { c.FilterType = "big" }), `Invalid rollout filter type: big`},
		{"bad type min_p", []float64{1, 2}, cfgWith(StrategyMinP, 0.5, func(c *Config) { c.FilterType = "big" }), `Invalid rollout filter type: big`},
		{"bad type softmax", []float64{1, 2}, cfgWith(StrategyTopP, 0.5, softmaxMode, func(c *Config) { c.FilterType = "big" }), `Invalid rollout filter type: big`},
		// Upstream checks nothing on these paths: value ≥ 1 returns first,
		// and an empty candidate set returns before the strategy dispatch.
		{"bad type value>=1", []float64{1, 2}, cfgWith(StrategyTopP, 1, func(c *Config) { c.FilterType = "big" }), ""},
		{"bad strategy, none left", []float64{0, 0}, cfgWith("nope", 0.5, excludeZero), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Select(tc.scores, tc.cfg)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want containing %q", err, tc.want)
			}
		})
	}
}

// Scores are float32 like upstream's tensors: three groups of 0.1 give
// Σ = float32 0.30000001, threshold 0.7·Σ = 0.21000001; after two groups
// cum = 0.2 < threshold, so all three are needed.
func TestSelectFloat32Threshold(t *testing.T) {
	got, err := Select([]float64{0.1, 0.1, 0.1}, cfgWith(StrategyTopP, 0.7, func(c *Config) { c.SelectionEps = 0 }))
	if err != nil || !reflect.DeepEqual(got, []int{0, 1, 2}) {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestLowerBound32(t *testing.T) {
	cum := []float32{0.25, 0.5, 0.5, 1}
	for v, want := range map[float32]int{0: 0, 0.25: 0, 0.3: 1, 0.5: 1, 0.75: 3, 1: 3, 2: 4} {
		if got := lowerBound32(cum, v); got != want {
			t.Errorf("lowerBound32(%v) = %d, want %d", v, got, want)
		}
	}
}
