package starpo

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/filter"
	"ragen/starpo/algo"
	"ragen/torch"
)

// PolicyLoss is AggLoss over PolicyLossTokens, and ValueLoss ½·AggLoss over
// ValueLossTokens, in every aggregation mode.
func TestLossTokensAggregateToLoss(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 0))
	lp, old, adv := randMat(r, 3, 5, -3, 0), randMat(r, 3, 5, -3, 0), randMat(r, 3, 5, -2, 2)
	m := randMask(r, 3, 5, true)
	for _, mode := range algo.LossAggModes() {
		scoped(t, func(s *torch.Scope) {
			pc := algo.DefaultPolicyLossConfig()
			pc.LossAggMode = mode
			x, o, a, mk := tensorOf(t, s, lp, false), tensorOf(t, s, old, false), tensorOf(t, s, adv, false), tensorOf(t, s, m, false)
			want, _ := PolicyLoss(s, x, o, a, mk, pc)
			got := AggLoss(s, PolicyLossTokens(s, x, o, a, pc), mk, mode)
			vc := algo.DefaultValueLossConfig()
			vc.LossAggMode = mode
			wantV, _ := ValueLoss(s, x, o, a, mk, vc)
			gotV := s.MulS(AggLoss(s, ValueLossTokens(s, x, o, a, vc), mk, mode), 0.5)
			require.NoError(t, s.Err())
			assert.InDelta(t, s.Item(want), s.Item(got), 1e-12, mode)
			assert.InDelta(t, s.Item(wantV), s.Item(gotV), 1e-12, mode)
		})
	}
}

// TruncatedISWeights by hand: old − rollout = 0, ln 2, ln 5, ln 5 → weights
// 1, 2, min(5, 3) = 3, and 0 where the mask is 0.
func TestTruncatedISWeights(t *testing.T) {
	scoped(t, func(s *torch.Scope) {
		old := s.Own(torch.From([]float64{0, math.Log(2), math.Log(5), math.Log(5)}, 1, 4))
		roll := s.Own(torch.From([]float64{0, 0, 0, 0}, 1, 4))
		m := s.Own(torch.From([]float64{1, 1, 1, 0}, 1, 4))
		w := s.Float64s(TruncatedISWeights(s, old, roll, m, 3))
		require.NoError(t, s.Err())
		assert.InDeltaSlice(t, []float64{1, 2, 3, 0}, w, 1e-12)
		TruncatedISWeights(s, old, roll, m, 0)
		require.ErrorContains(t, s.Err(), "threshold must be > 0")
	})
}

// Unit weights leave the default objective unchanged; weights of 2 double
// the policy-gradient term (no entropy or KL term here).
func TestDefaultActorLossISWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 0))
	lp, old, adv := randMat(r, 2, 4, -3, 0), randMat(r, 2, 4, -3, 0), randMat(r, 2, 4, -2, 2)
	m := randMask(r, 2, 4, false)
	scoped(t, func(s *torch.Scope) {
		cfg := algo.DefaultActorLossConfig()
		cfg.EntropyCoeff = 0
		in := ActorLossInput{LogProbs: tensorOf(t, s, lp, false), OldLogProbs: tensorOf(t, s, old, false),
			Advantages: tensorOf(t, s, adv, false), Mask: tensorOf(t, s, m, false)}
		base, _ := DefaultActorLoss(s, in, cfg)
		in.RolloutISWeights = s.Full([]int64{2, 4}, 1, torch.Float64, torch.CPU)
		one, met := DefaultActorLoss(s, in, cfg)
		in.RolloutISWeights = s.Full([]int64{2, 4}, 2, torch.Float64, torch.CPU)
		two, _ := DefaultActorLoss(s, in, cfg)
		require.NoError(t, s.Err())
		assert.InDelta(t, s.Item(base), s.Item(one), 1e-12)
		assert.InDelta(t, 2*s.Item(base), s.Item(two), 1e-12)
		assert.Contains(t, met, MetricRolloutISMean)
	})
}

// A custom actor objective replaces the default in the trainer: it is
// called on every micro-batch, its metric reaches the logger, and a
// non-scalar result is an error that says so.
func TestTrainerCustomActorLoss(t *testing.T) {
	m := newModels(3)
	defer m.Close()
	cfg := smallConfig(t.TempDir())
	cfg.Algorithm.AdvEstimator = algo.EstGRPO
	cfg.Trainer.TotalTrainingSteps, cfg.Trainer.TestFreq, cfg.Trainer.ValBeforeTrain = 1, 0, false
	calls := 0
	custom := func(s *torch.Scope, in ActorLossInput, c algo.ActorLossConfig) (*torch.Tensor, MetricTensors) {
		calls++
		// REINFORCE: −mean(A · log π) over the response tokens.
		loss := s.Neg(MaskedMean(s, s.Mul(in.Advantages, in.LogProbs), in.Mask))
		return loss, MetricTensors{"actor/reinforce_loss": s.Detach(loss)}
	}
	log := &recLogger{}
	before := snapshot(t, m.actor.Trainable())
	tr, err := NewTrainer(cfg, Deps{Actor: m.actor, Rollout: banditProxy(t, 2, 4, 2).RolloutWith,
		Filter: filter.DefaultConfig(), Logger: log, ActorLoss: custom})
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Fit(context.Background())
	require.NoError(t, err)
	assert.Positive(t, calls)
	require.Len(t, log.metrics, 1)
	assert.Contains(t, log.metrics[0], "actor/reinforce_loss")
	assert.NotEqual(t, before, snapshot(t, m.actor.Trainable()))

	bad := func(s *torch.Scope, in ActorLossInput, c algo.ActorLossConfig) (*torch.Tensor, MetricTensors) {
		return s.Mul(in.Advantages, in.LogProbs), nil // (B,T), not a scalar
	}
	tr2, err := NewTrainer(cfg, Deps{Actor: m.actor, Rollout: banditProxy(t, 2, 4, 2).RolloutWith,
		Filter: filter.DefaultConfig(), ActorLoss: bad})
	require.NoError(t, err)
	defer tr2.Close()
	_, err = tr2.Fit(context.Background())
	require.ErrorContains(t, err, "must return a scalar")
}
