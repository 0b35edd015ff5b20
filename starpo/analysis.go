package starpo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"ragen/env"
	"ragen/filter"
	"ragen/internal/pyrand"
	"ragen/ragen"
)

// analysisSeedOffset separates the seeds of the gradient-analysis rollouts
// from the training rollouts' (seed.train + k·env_groups).
const analysisSeedOffset = 1 << 30

// analysisSource is upstream's separate gradient-analysis rollout
// (trainer.gradient_analysis_env_groups / _group_size / _log_prefilter).
type analysisSource struct {
	rollout      RolloutFunc
	groups, size int
	logPrefilter bool
}

// SetGradientAnalysisRollout makes the gradient-analysis steps
// (trainer.gradient_analysis_mode, every gradient_analysis_every steps) run
// on a rollout of their own instead of the training batch: groups × size
// envs that rollout draws in env.ModeTrain with seed seed.train + 2³⁰ +
// step. The batch goes through the training pipeline (rollout filter with
// groups × size, batch adjust, log-probs, reference, values, advantages)
// without touching the training state, and is analysed as the training
// batch would be: grad_norm/<bucket>/..., the filter's metrics renamed
// grad_analysis/..., grad_analysis/uses_training_batch = 0. With
// logPrefilter the same analysis also runs on the batch before the filter,
// under grad_norm_prefilter/<bucket>/....
func (t *Trainer) SetGradientAnalysisRollout(rollout RolloutFunc, groups, size int, logPrefilter bool) error {
	switch {
	case rollout == nil:
		return errors.New("starpo: gradient-analysis rollout is nil")
	case groups < 1 || size < 1:
		return fmt.Errorf("starpo: gradient-analysis rollout of %d groups x %d envs: want at least 1 x 1", groups, size)
	}
	t.analysis = &analysisSource{rollout: rollout, groups: groups, size: size, logPrefilter: logPrefilter}
	return nil
}

// runGradientAnalysis is the gradient-analysis stage of step: on the
// training batch b, or on a separate rollout when one is set.
func (t *Trainer) runGradientAnalysis(ctx context.Context, step int, b *rows, met map[string]float64) error {
	a := t.analysis
	if a == nil {
		return t.gradientAnalysis(b, met)
	}
	if t.dp != nil {
		return errors.New("a separate gradient-analysis rollout (trainer.gradient_analysis_env_groups/_group_size/_log_prefilter) is not supported with data parallelism yet; leave them null to analyse the training batch")
	}
	cfg := t.cfg
	seed := cfg.Seed.Train + analysisSeedOffset + int64(step)
	batch, err := a.rollout(ctx, env.ModeTrain, ragen.RolloutOptions{Seed: &seed})
	if err != nil {
		return fmt.Errorf("gradient-analysis rollout: %w", err)
	}
	if batch == nil {
		return errors.New("gradient-analysis rollout returned no batch")
	}
	r, err := fromBatchMode(batch, cfg.AgentProxy.TurnLevel())
	if err != nil {
		return err
	}
	met[filter.MetricGASourceEnvGroups] = float64(a.groups)
	met[filter.MetricGASourceGroupSize] = float64(a.size)
	met[filter.MetricGASourceBatchSize] = float64(r.B)
	met[filter.MetricGAUsesTrainingBatch] = 0

	// The filter stage reads t.deps.Filter and reports to OnFilter (the
	// training decisions): swap in the analysis batch's sizes, mute the hook.
	savedFilter, savedHook := t.deps.Filter, t.deps.OnFilter
	defer func() { t.deps.Filter, t.deps.OnFilter = savedFilter, savedHook }()
	t.deps.OnFilter = nil
	fc := savedFilter
	fc.NumGroups, fc.GroupSize = a.groups, a.size

	// prepare runs steps 6–14 of the training pipeline on x, its metrics
	// discarded, and returns the adjusted batch.
	prepare := func(x *rows, keptRatio float64) (*rows, error) {
		rng, err := pyrand.NewLegacy((cfg.Seed.Train + analysisSeedOffset + int64(step)) & 0xffffffff)
		if err != nil {
			return nil, err
		}
		y := x.adjust(cfg.BatchDivisor(), cfg.AgentProxy.BatchAdjustMode, rng)
		if y.B == 0 {
			return y, nil
		}
		scratch := map[string]float64{}
		if err := t.logProbs(y, scratch); err != nil {
			return nil, err
		}
		if t.deps.Ref != nil {
			if err := t.refLogProbs(y, scratch); err != nil {
				return nil, err
			}
		}
		if t.deps.Critic != nil {
			if err := t.computeValues(y); err != nil {
				return nil, err
			}
		}
		trainable := algoSum(y.mask.Data) > 0
		savedKL := t.st.KLCoef
		err = t.advantages(y, keptRatio, scratch, &trainable)
		t.st.KLCoef = savedKL
		return y, err
	}

	if a.logPrefilter {
		all := fc
		all.Strategy, all.Value, all.IncludeZero = "top_k_abs", float64(a.groups), true // keeps every group
		t.deps.Filter = all
		pre, _, empty, err := t.filter(ctx, r, batch, map[string]float64{})
		if err != nil {
			return fmt.Errorf("gradient analysis (pre-filter): %w", err)
		}
		met[filter.MetricGAPrefilterSourceBatchSize] = float64(r.B)
		if !empty && pre.B > 0 {
			y, err := prepare(pre, 1)
			if err != nil {
				return fmt.Errorf("gradient analysis (pre-filter): %w", err)
			}
			met[filter.MetricGAPrefilterAdjustedSize] = float64(y.B)
			if y.B > 0 {
				gm := map[string]float64{}
				if err := t.gradientAnalysis(y, gm); err != nil {
					return fmt.Errorf("gradient analysis (pre-filter): %w", err)
				}
				for k, v := range gm {
					if rest, ok := strings.CutPrefix(k, filter.PrefixGradNorm+"/"); ok {
						met[filter.PrefixGradNormPrefilter+"/"+rest] = v
					}
				}
			}
		}
	}

	t.deps.Filter = fc
	fm := map[string]float64{}
	kept, keptRatio, empty, err := t.filter(ctx, r, batch, fm)
	if err != nil {
		return fmt.Errorf("gradient analysis: %w", err)
	}
	maps.Copy(met, filter.AnalysisFilterMetrics(fm))
	if empty || kept.B == 0 {
		met[filter.MetricGAEmptyAfterFilter] = 1
		return nil
	}
	met[filter.MetricGAEmptyAfterFilter] = 0
	y, err := prepare(kept, keptRatio)
	if err != nil {
		return fmt.Errorf("gradient analysis: %w", err)
	}
	met[filter.MetricGAAdjustedBatchSize] = float64(y.B)
	if y.B == 0 {
		return nil
	}
	gm := map[string]float64{}
	if err := t.gradientAnalysis(y, gm); err != nil {
		return err
	}
	delete(gm, filter.MetricGAUsesTrainingBatch)
	maps.Copy(met, gm)
	return nil
}
