package starpo

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/internal/pyrand"
	"ragen/ragen"
	"ragen/starpo/algo"
	"ragen/torch"
)

// rowsOf builds a batch of n rows of L tokens whose ids name the row.
func rowsOf(n, L int) *rows {
	b := &ragen.Batch{}
	for i := 0; i < n; i++ {
		ids, one, m := make([]int, L), make([]int, L), make([]int, L-1)
		sc := make([]float32, L-1)
		for j := range ids {
			ids[j], one[j] = i, 1
		}
		for j := range m {
			m[j] = 1
		}
		sc[L-2] = float32(i)
		b.InputIDs, b.AttentionMask, b.PositionIDs = append(b.InputIDs, ids), append(b.AttentionMask, one), append(b.PositionIDs, one)
		b.LossMask, b.RMScores, b.GroupIDs = append(b.LossMask, m), append(b.RMScores, sc), append(b.GroupIDs, i/2)
	}
	r, err := fromBatch(b)
	if err != nil {
		panic(err)
	}
	return r
}

func rowIDs(r *rows) []int {
	var out []int
	for i := 0; i < r.B; i++ {
		out = append(out, int(r.ids[i*r.L]))
	}
	return out
}

func TestAdjustBatch(t *testing.T) {
	rng := func() *pyrand.Legacy { l, _ := pyrand.NewLegacy(7); return l }
	// copy: 6 rows, divisor 4 → 2 duplicates = np.random.permutation(6)[:2].
	want := rng().Permutation(6)[:2]
	got := rowsOf(6, 3).adjust(4, AdjustCopy, rng())
	assert.Equal(t, append([]int{0, 1, 2, 3, 4, 5}, want...), rowIDs(got))
	assert.Equal(t, []int{0, 0, 1, 1, 2, 2, want[0] / 2, want[1] / 2}, got.uids, "duplicates keep their group ids")
	// copy with more duplicates than rows: sampled with replacement (1 row → 3 copies of row 0).
	assert.Equal(t, []int{0, 0, 0, 0}, rowIDs(rowsOf(1, 3).adjust(4, AdjustCopy, rng())))
	// delete: 6 rows, divisor 4 → drop permutation(6)[:2], keep order.
	drop := rng().Permutation(6)[:2]
	var keep []int
	for i := 0; i < 6; i++ {
		if !slices.Contains(drop, i) {
			keep = append(keep, i)
		}
	}
	assert.Equal(t, keep, rowIDs(rowsOf(6, 3).adjust(4, AdjustDelete, rng())))
	// already a multiple: unchanged.
	assert.Equal(t, []int{0, 1, 2, 3}, rowIDs(rowsOf(4, 3).adjust(4, AdjustCopy, rng())))
}

func TestMicroBatches(t *testing.T) {
	parts, w, err := microBatches([]int{0, 1, 2, 3, 4, 5}, 6, 2, 0, nil)
	require.NoError(t, err)
	assert.Equal(t, [][]int{{0, 1}, {2, 3}, {4, 5}}, parts)
	assert.Equal(t, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, w)
	// A short mini-batch (4 rows of a configured 8) keeps 1/grad_accum =
	// 1/4 per micro-batch, as veRL's: its gradient is half a full one's.
	parts, w, err = microBatches([]int{0, 1, 2, 3}, 8, 2, 0, nil)
	require.NoError(t, err)
	assert.Equal(t, [][]int{{0, 1}, {2, 3}}, parts)
	assert.Equal(t, []float64{0.25, 0.25}, w)
	// Token budget 7 over lengths [5 3 3 2 1] (Σ14 → 2 parts); largest first
	// into the lighter part: 5→A, 3→B, 3→B, 2→A, 1→B → A={0,3} (7), B={1,2,4} (7);
	// weights = rows/mini = 2/5, 3/5 (2/10, 3/10 of a configured 10).
	lens := []int{5, 3, 3, 2, 1}
	parts, w, err = microBatches([]int{0, 1, 2, 3, 4}, 5, 1, 7, func(i int) int { return lens[i] })
	require.NoError(t, err)
	assert.Equal(t, [][]int{{0, 3}, {1, 2, 4}}, parts)
	assert.Equal(t, []float64{0.4, 0.6}, w)
	_, w, _ = microBatches([]int{0, 1, 2, 3, 4}, 10, 1, 7, func(i int) int { return lens[i] })
	assert.Equal(t, []float64{0.2, 0.3}, w)
	_, _, err = microBatches([]int{0}, 1, 1, 4, func(int) int { return 5 })
	assert.ErrorContains(t, err, "more than ppo_max_token_len_per_gpu=4")
}

func TestFromBatchErrors(t *testing.T) {
	b := &ragen.Batch{InputIDs: [][]int{{1, 2}}, AttentionMask: [][]int{{1, 1}}, PositionIDs: [][]int{{0, 1}},
		LossMask: [][]int{{1}}, RMScores: [][]float32{{1}}, GroupIDs: []int{0}}
	_, err := fromBatch(b)
	require.NoError(t, err)
	b.LossMask = [][]int{{1, 1}}
	_, err = fromBatch(b)
	assert.ErrorContains(t, err, "loss_mask/rm_scores lengths 2/1, want 1")
	b.GroupIDs = nil
	_, err = fromBatch(b)
	assert.ErrorContains(t, err, "0 of group_ids")
	r, err := fromBatch(&ragen.Batch{})
	require.NoError(t, err)
	assert.Equal(t, 0, r.B)
}

func TestSafetensorsRoundTrip(t *testing.T) {
	s := torch.NewScope()
	defer s.Close()
	a := s.Own(torch.From([]float32{1, -2, 3.5, 4, 5, 6}, 2, 3))
	b := s.Own(torch.From([]float64{math.Pi}, 1))
	c := s.Own(torch.From([]int64{7, 8}, 2))
	path := filepath.Join(t.TempDir(), "x.safetensors")
	require.NoError(t, WriteSafetensors(path, []NamedTensor{{"a", a}, {"b", b}, {"c", c}}))
	got, err := ReadSafetensors(path)
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, torch.Float32, got["a"].DType)
	assert.Equal(t, []int64{2, 3}, got["a"].Shape)
	back := s.Own(torch.FromBytes(got["a"].Data, got["a"].DType, got["a"].Shape...))
	assert.Equal(t, []float32{1, -2, 3.5, 4, 5, 6}, s.Float32s(back))
	assert.Equal(t, []float64{math.Pi}, s.Float64s(s.Own(torch.FromBytes(got["b"].Data, torch.Float64, 1))))
	assert.Equal(t, torch.Int64, got["c"].DType)
	// Truncated data is reported, not read past.
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, raw[:len(raw)-3], 0o644))
	_, err = ReadSafetensors(path)
	assert.ErrorContains(t, err, "do not fit")
}

func FuzzReadSafetensors(f *testing.F) {
	f.Add([]byte("\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}\x00\x00\x80?"))
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Add([]byte("\x08\x00\x00\x00\x00\x00\x00\x00{}      "))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.safetensors")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadSafetensors(path)
		if err != nil {
			return
		}
		for name, e := range got {
			n := int64(1)
			for _, d := range e.Shape {
				n *= d
			}
			if int64(len(e.Data)) != n*int64(e.DType.Size()) {
				t.Fatalf("%s: %d bytes for shape %v", name, len(e.Data), e.Shape)
			}
		}
	})
}

func TestValidationRewardMetrics(t *testing.T) {
	// rewards [1 0 0 1]: mean 0.5, population std 0.5; k = 2, 4.
	m := ValidationRewardMetrics([]float64{1, 0, 0, 1})
	assert.Equal(t, 0.5, m["val-core/unknown/reward/mean@4"])
	assert.Equal(t, 0.5, m["val-aux/unknown/reward/std@4"])
	for _, k := range []string{"val-aux/unknown/reward/best@2/mean", "val-aux/unknown/reward/worst@2/std",
		"val-core/unknown/reward/best@4/mean", "val-core/unknown/reward/best@4/std", "val-aux/unknown/reward/worst@4/mean"} {
		assert.Contains(t, m, k)
	}
	assert.Len(t, m, 2+2*4)
	// best of 4 draws ≥ best of 2 draws on average; both within [0, 1].
	assert.GreaterOrEqual(t, m["val-core/unknown/reward/best@4/mean"], m["val-aux/unknown/reward/best@2/mean"])
	assert.LessOrEqual(t, m["val-aux/unknown/reward/worst@4/mean"], m["val-aux/unknown/reward/worst@2/mean"])
	// Constant rewards: every bootstrap max/min equals the value, std 0.
	c := ValidationRewardMetrics([]float64{0.3, 0.3, 0.3})
	assert.InDelta(t, 0.3, c["val-core/unknown/reward/best@3/mean"], 1e-15)
	assert.InDelta(t, 0.0, c["val-core/unknown/reward/best@3/std"], 1e-15)
	assert.InDelta(t, 0.3, c["val-aux/unknown/reward/worst@2/mean"], 1e-15)
	// NumPy's pairwise sum: 10 ones = 10 exactly; 130 values split 64 + 66.
	assert.Equal(t, 10.0, pairwiseSum(slices.Repeat([]float64{1}, 10)))
	assert.Equal(t, 130*0.5, pairwiseSum(slices.Repeat([]float64{0.5}, 130)))
	// One sample: only mean@1.
	assert.Equal(t, map[string]float64{"val-core/unknown/reward/mean@1": 2}, ValidationRewardMetrics([]float64{2}))
	assert.Empty(t, ValidationRewardMetrics(nil))
}

func TestRewardVarianceEarlyStop(t *testing.T) {
	tr := &Trainer{st: trainState{LowVal: map[string]int{}}}
	// base = mean of the first 10 values = 1.0; then 10 values < 0.1 stop.
	for i := 0; i < 10; i++ {
		assert.False(t, tr.rewardVarianceCollapsed(1))
	}
	for i := 0; i < 9; i++ {
		assert.False(t, tr.rewardVarianceCollapsed(0.05), "value %d", i)
	}
	assert.True(t, tr.rewardVarianceCollapsed(0.05))
	// one value at 0.1·base (not below) resets the verdict for 10 values.
	assert.False(t, tr.rewardVarianceCollapsed(0.1))
}

func TestLowValidationSuccessStop(t *testing.T) {
	tr := &Trainer{st: trainState{LowVal: map[string]int{}}}
	low := map[string]float64{"val-env/Bandit/success": 0, "val-env/Bandit/non-zero/success": 0.5, "val-env/Bandit/pass@1": 0}
	for i := 0; i < 4; i++ {
		assert.False(t, tr.lowValidationSuccess(low))
	}
	assert.True(t, tr.lowValidationSuccess(low))
	assert.False(t, tr.lowValidationSuccess(map[string]float64{"val-env/Bandit/success": 0.5}))
	assert.Equal(t, 0, tr.st.LowVal["val-env/Bandit/success"])
	_ = algo.TokenMean
}

func TestGeneratorStateRoundTrip(t *testing.T) {
	g, err := torch.NewGenerator(11, torch.CPU)
	require.NoError(t, err)
	defer g.Close()
	gs := GeneratorState{G: g}
	st, err := gs.MarshalState()
	require.NoError(t, err)
	draw := func() []float64 {
		s := torch.NewScope()
		defer s.Close()
		return s.Float64s(s.Rand(g, []int64{4}, torch.Float64, torch.CPU))
	}
	first := draw()
	require.NoError(t, gs.UnmarshalState(st))
	assert.Equal(t, first, draw())
}

// Turn-level batches (several rows per episode) keep their episode ids for
// GRPO's de-duplication; full-mode batches (one row per episode) drop them,
// as upstream's batch then has none.
func TestFromBatchEpisodeIDs(t *testing.T) {
	b := &ragen.Batch{InputIDs: [][]int{{1, 2}, {1, 2}, {1, 2}}, AttentionMask: [][]int{{1, 1}, {1, 1}, {1, 1}},
		PositionIDs: [][]int{{0, 1}, {0, 1}, {0, 1}}, LossMask: [][]int{{1}, {1}, {1}}, RMScores: [][]float32{{1}, {0}, {2}},
		GroupIDs: []int{0, 0, 1}, EpisodeIDs: []int{0, 0, 1}}
	r, err := fromBatch(b)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 0, 1}, r.episodeIDs)
	b.EpisodeIDs = []int{0, 1, 2}
	r, err = fromBatch(b)
	require.NoError(t, err)
	assert.Nil(t, r.episodeIDs)
	assert.Equal(t, []float64{1, 0, 2}, r.scores.Data)
}

// In the turn-level modes upstream's batch always carries episode_ids, even
// when every episode has one row (e.g. single_turn with max_turn 1), so the
// rows the batch adjustment duplicates are counted once in GRPO.
func TestFromBatchTurnLevelKeepsUniqueEpisodeIDs(t *testing.T) {
	b := &ragen.Batch{InputIDs: [][]int{{1, 2}, {1, 2}, {1, 2}}, AttentionMask: [][]int{{1, 1}, {1, 1}, {1, 1}},
		PositionIDs: [][]int{{0, 1}, {0, 1}, {0, 1}}, LossMask: [][]int{{1}, {1}, {1}}, RMScores: [][]float32{{1}, {0}, {2}},
		GroupIDs: []int{0, 0, 0}, EpisodeIDs: []int{0, 1, 2}}
	r, err := fromBatchMode(b, true)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2}, r.episodeIDs)
	// Duplicate row 2 (as batch_adjust_mode=copy would): GRPO statistics
	// use scores {1, 0, 2} once each: μ = 1, σ = 1, so row 2 and its copy
	// get (2−1)/(1+1e-6).
	d := r.selectRows([]int{0, 1, 2, 2})
	adv, _, err := algo.GRPO(d.scores, d.mask, d.uids, d.episodeIDs, true, 1e-6)
	require.NoError(t, err)
	assert.InDelta(t, 1/(1+1e-6), adv.At(3, 0), 1e-12)
	assert.InDelta(t, 1/(1+1e-6), adv.At(2, 0), 1e-12)
	assert.InDelta(t, -1/(1+1e-6), adv.At(1, 0), 1e-12)
}

// Validation scores: one per row in full mode; one per episode (its first
// row) in the turn-level modes, as upstream's _validate groups them.
func TestValidationScoresTurnLevel(t *testing.T) {
	b := &ragen.Batch{RMScores: [][]float32{{0, 1}, {0, 1}, {0, 0.5}, {2, 0}}, EpisodeIDs: []int{3, 3, 1, 0}}
	assert.Equal(t, []float64{1, 1, 0.5, 2}, validationScores(b, false))
	assert.Equal(t, []float64{1, 0.5, 2}, validationScores(b, true))
}

// The trainer's metric lists average every key over micro-/mini-batches
// except actor/kl_loss and actor/kl_coef, which upstream assigns (last wins).
func TestMetricListsKLLossLastWins(t *testing.T) {
	l := metricLists{}
	l.add(map[string]float64{algo.MetricPGLoss: 1, algo.MetricKLLoss: 0.25, algo.MetricKLCoef: 0.1})
	l.add(map[string]float64{algo.MetricPGLoss: 3, algo.MetricKLLoss: 0.75, algo.MetricKLCoef: 0.1})
	got := map[string]float64{}
	l.reduce(got)
	assert.Equal(t, map[string]float64{algo.MetricPGLoss: 2, algo.MetricKLLoss: 0.75, algo.MetricKLCoef: 0.1}, got)
}
