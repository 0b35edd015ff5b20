package algo

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"ragen/config/rule"
)

// Filter loss scaling modes (actor.filter_loss_scaling).
const (
	FilterScalingNone   = "none"
	FilterScalingLinear = "linear"
	FilterScalingSqrt   = "sqrt"
)

// FilterScalings lists the valid filter_loss_scaling names.
func FilterScalings() []string {
	return []string{FilterScalingNone, FilterScalingLinear, FilterScalingSqrt}
}

// Metric keys written by PostProcess.
const (
	MetricSoftReweightMin  = "train/soft_reweight_min"
	MetricSoftReweightMax  = "train/soft_reweight_max"
	MetricSoftReweightMean = "train/soft_reweight_mean"
)

// softReweightEps is the ε in w = σ/(max σ + ε).
const softReweightEps = 1e-6

// lengthWeightEps is the ε in (len_i + ε)/mean_j(len_j).
const lengthWeightEps = 1e-6

// PostConfig selects the advantage post-processing steps (starpo.md §3.6).
type PostConfig struct {
	// Estimator is the adv_estimator name; the length weight applies to grpo only.
	Estimator string
	// SoftAdvantageReweight is algorithm.soft_advantage_reweight (false).
	SoftAdvantageReweight bool
	// FilterLossScaling is actor.filter_loss_scaling: none (default), linear, sqrt.
	FilterLossScaling string
	// FilterKeptRatio is kept_groups/env_groups from the rollout filter
	// (rollout/filter_kept_ratio; 1.0 when the filter logged none).
	FilterKeptRatio float64
	// GRPOLengthWeight is grpo_advantage_length_weight (false).
	GRPOLengthWeight bool
	// ZeroTaskAdvantage is algorithm.zero_task_advantage (false).
	ZeroTaskAdvantage bool
}

// DefaultPostConfig returns upstream's defaults for the given estimator.
func DefaultPostConfig(estimator string) PostConfig {
	return PostConfig{Estimator: estimator, FilterLossScaling: FilterScalingNone, FilterKeptRatio: 1}
}

// Validate reports every problem at once.
func (c PostConfig) Validate() error {
	var errs []error
	if c.FilterLossScaling != "" && !slices.Contains(FilterScalings(), c.FilterLossScaling) {
		errs = append(errs, rule.Unknown(ActorKey+"filter_loss_scaling", c.FilterLossScaling, FilterScalings()))
	}
	if math.IsNaN(c.FilterKeptRatio) || math.IsInf(c.FilterKeptRatio, 0) || c.FilterKeptRatio < 0 {
		errs = append(errs, fmt.Errorf("algo: filter kept ratio %v must be finite and ≥ 0", c.FilterKeptRatio))
	}
	return errors.Join(errs...)
}

// PostProcess applies the advantage post-processing in upstream's order and
// returns a new matrix:
//
//  1. soft advantage reweight (only when groupStd is non-nil, i.e. GRPO ran
//     with it): per uid take the group std of its first row, w = σ/(max σ +
//     1e-6), A_i *= w_uid; logs train/soft_reweight_{min,max,mean} over uids.
//  2. filter loss scaling: linear A *= kept; sqrt A *= sqrt(kept).
//  3. GRPO length weight (grpo only): A_i /= (len_i + 1e-6)/mean_j(len_j),
//     len = Σ_t m.
//  4. zero-task ablation: A = 0.
func PostProcess(adv, mask Mat, uids []int, groupStd []float64, cfg PostConfig) (Mat, map[string]float64, error) {
	if err := cfg.Validate(); err != nil {
		return Mat{}, nil, err
	}
	if err := sameShape([]string{"advantages", "mask"}, adv, mask); err != nil {
		return Mat{}, nil, fmt.Errorf("algo: post-process: %w", err)
	}
	out := adv.Clone()
	metrics := map[string]float64{}
	if cfg.SoftAdvantageReweight && groupStd != nil {
		if err := checkRowLen("UIDs", len(uids), adv.B); err != nil {
			return Mat{}, nil, fmt.Errorf("algo: soft reweight: %w", err)
		}
		if err := checkRowLen("group std", len(groupStd), adv.B); err != nil {
			return Mat{}, nil, fmt.Errorf("algo: soft reweight: %w", err)
		}
		first := map[int]float64{}
		for i, id := range uids {
			if _, ok := first[id]; !ok {
				first[id] = groupStd[i]
			}
		}
		ids := make([]int, 0, len(first))
		for id := range first {
			ids = append(ids, id)
		}
		sort.Ints(ids) // np.unique order
		maxStd := math.Inf(-1)
		for _, id := range ids {
			maxStd = math.Max(maxStd, first[id])
		}
		w := map[int]float64{}
		lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
		for _, id := range ids {
			w[id] = first[id] / (maxStd + softReweightEps)
			lo, hi, sum = math.Min(lo, w[id]), math.Max(hi, w[id]), sum+w[id]
		}
		for i, id := range uids {
			row := out.Row(i)
			for t := range row {
				row[t] *= w[id]
			}
		}
		if len(ids) > 0 {
			metrics[MetricSoftReweightMin] = lo
			metrics[MetricSoftReweightMax] = hi
			metrics[MetricSoftReweightMean] = sum / float64(len(ids))
		}
	}
	switch cfg.FilterLossScaling {
	case FilterScalingLinear:
		scale(out, cfg.FilterKeptRatio)
	case FilterScalingSqrt:
		scale(out, math.Sqrt(cfg.FilterKeptRatio))
	}
	if cfg.Estimator == EstGRPO && cfg.GRPOLengthWeight && out.B > 0 {
		lens := make([]float64, out.B)
		mean := 0.0
		for i := range lens {
			for _, v := range mask.Row(i) {
				lens[i] += v
			}
			mean += lens[i]
		}
		mean /= float64(out.B)
		for i, l := range lens {
			rel := (l + lengthWeightEps) / mean
			row := out.Row(i)
			for t := range row {
				row[t] /= rel
			}
		}
	}
	if cfg.ZeroTaskAdvantage {
		for k := range out.Data {
			out.Data[k] = 0
		}
	}
	return out, metrics, nil
}

func scale(m Mat, s float64) {
	for k := range m.Data {
		m.Data[k] *= s
	}
}
