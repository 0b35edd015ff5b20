package filter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// GroupScores are the ranked quantity for every metric. Two groups of two:
// lengths {2, 4} and {10, 10}: the length metric scores each group by its
// mean length, 3 and 10; rewards {0, 1} and {1, 1}: reward variance scores
// std 0.7071 and 0, reward scores the means 0.5 and 1.
func TestGroupScoresEveryMetric(t *testing.T) {
	b := Batch{Rewards: []float64{0, 1, 1, 1}, Lengths: []float64{2, 4, 10, 10}, Entropies: []float64{1, 1, 2, 4}}
	for metric, want := range map[string][]float64{
		"reward_variance": {0.70710678, 0},
		"reward":          {0.5, 1},
		"length":          {3, 10},
	} {
		cfg := DefaultConfig()
		cfg.NumGroups, cfg.GroupSize, cfg.Metric, cfg.Value = 2, 2, metric, 0.5
		cfg.Strategy = StrategyTopK
		res, err := Apply(b, cfg)
		if err != nil && err != ErrNoneKept {
			require.NoError(t, err, metric)
		}
		require.Len(t, res.GroupScores, 2, metric)
		assert.InDeltaSlice(t, want, res.GroupScores, 1e-4, metric)
	}
}
