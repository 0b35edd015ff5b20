package algo

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"ragen/config/rule"
)

// Critic metric keys.
const (
	MetricVFLoss     = "critic/vf_loss"
	MetricVFClipFrac = "critic/vf_clipfrac"
	MetricVPredMean  = "critic/vpred_mean"
)

// ValueLossConfig holds the critic loss settings.
type ValueLossConfig struct {
	ClipRangeValue float64 // cliprange_value (0.5)
	LossAggMode    string  // critic.loss_agg_mode (defaults to the actor's, token-mean)
	// GradAccum is the number of micro-batches per mini-batch; the logged
	// critic/vf_loss is divided by it, as upstream logs the scaled loss.
	// Values < 1 count as 1.
	GradAccum int
}

// DefaultValueLossConfig returns upstream's defaults.
func DefaultValueLossConfig() ValueLossConfig {
	return ValueLossConfig{ClipRangeValue: 0.5, LossAggMode: TokenMean, GradAccum: 1}
}

// Validate reports every problem at once, each a rule.Problem naming its
// critic key.
func (c ValueLossConfig) Validate() error {
	var errs []error
	errs = append(errs, nonNegative("critic.cliprange_value", c.ClipRangeValue))
	if !slices.Contains(LossAggModes(), c.LossAggMode) {
		errs = append(errs, rule.Unknown("critic.loss_agg_mode", c.LossAggMode, LossAggModes()))
	}
	return errors.Join(errs...)
}

// ValueLoss is veRL's compute_value_loss, per token:
//
//	v_clip = clip_by_value(v_pred, V_old − ε_v, V_old + ε_v)   (= max(min(v, hi), lo))
//	vf_loss = ½·agg_loss(max((v_pred − R)², (v_clip − R)²), m, mode)
//
// It returns vf_loss, ∂vf_loss/∂v_pred (autograd's: min/max split the
// gradient on ties) and the metrics critic/vf_loss (÷ GradAccum),
// critic/vf_clipfrac = mean_m[(v_clip−R)² > (v_pred−R)²] and
// critic/vpred_mean = mean_m[v_pred].
func ValueLoss(vpreds, values, returns, mask Mat, cfg ValueLossConfig) (float64, Mat, map[string]float64, error) {
	if err := cfg.Validate(); err != nil {
		return 0, Mat{}, nil, err
	}
	if err := sameShape([]string{"vpreds", "values", "returns", "mask"}, vpreds, values, returns, mask); err != nil {
		return 0, Mat{}, nil, fmt.Errorf("algo: value loss: %w", err)
	}
	eps := cfg.ClipRangeValue
	losses := NewMat(vpreds.B, vpreds.T)
	grad := NewMat(vpreds.B, vpreds.T)
	clipfrac := make([]float64, len(vpreds.Data))
	for k, v := range vpreds.Data {
		lo, hi, r := values.Data[k]-eps, values.Data[k]+eps, returns.Data[k]
		a := math.Min(v, hi)
		da, _ := tieMin(v, hi)
		vc := math.Max(a, lo)
		dvc, _ := tieMax(a, lo)
		dvc *= da
		l1 := (v - r) * (v - r)
		l2 := (vc - r) * (vc - r)
		d1, d2 := tieMax(l1, l2)
		losses.Data[k] = math.Max(l1, l2)
		grad.Data[k] = d1*2*(v-r) + d2*2*(vc-r)*dvc
		if l2 > l1 {
			clipfrac[k] = 1
		}
	}
	agg, err := AggLoss(losses, mask, cfg.LossAggMode)
	if err != nil {
		return 0, Mat{}, nil, err
	}
	ag, err := AggLossGrad(mask, cfg.LossAggMode)
	if err != nil {
		return 0, Mat{}, nil, err
	}
	for k := range grad.Data {
		grad.Data[k] = grad.Data[k]*0.5*ag.Data[k] + 0 // + 0 turns −0 into 0
	}
	loss := 0.5 * agg
	accum := max(cfg.GradAccum, 1)
	metrics := map[string]float64{
		MetricVFLoss:     loss / float64(accum),
		MetricVFClipFrac: MaskedMean(clipfrac, mask.Data),
		MetricVPredMean:  MaskedMean(vpreds.Data, mask.Data),
	}
	return loss, grad, metrics, nil
}
