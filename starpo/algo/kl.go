package algo

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"ragen/config/rule"
)

// ErrUnknownKLType is returned for a KL penalty name that is not one of
// KLTypes (upstream raises NotImplementedError, e.g. for "full").
var ErrUnknownKLType = errors.New("algo: unknown KL type")

// KL metric keys.
const (
	MetricKLLoss               = "actor/kl_loss"
	MetricKLCoef               = "actor/kl_coef"
	MetricRewardKLPenalty      = "actor/reward_kl_penalty"
	MetricRewardKLPenaltyCoeff = "actor/reward_kl_penalty_coeff"
)

// KLTypes lists the accepted kl_penalty / kl_loss_type names. Each base
// name may carry a "+" suffix (straight-through: forward value of the base
// type, gradient of ½(lp−ref)²).
func KLTypes() []string {
	out := make([]string, len(klNames))
	for i, n := range klNames {
		out[i] = n.name
	}
	return out
}

// KLKind is the base kind of a KL penalty name (aliases resolved).
type KLKind string

// The KL penalty kinds.
const (
	KLDiff   KLKind = "kl"         // kl, k1: lp − ref
	KLAbs    KLKind = "abs"        // abs: |lp − ref|
	KLMSE    KLKind = "mse"        // mse, k2: ½(lp − ref)²
	KLLowVar KLKind = "low_var_kl" // low_var_kl, k3: clamp(eˣ − x − 1, ±LowVarKLClamp), x = clamp(ref − lp, ±LogRatioClamp)
)

// klNames is the one table of KL penalty names and their kinds.
var klNames = []struct {
	name string
	kind KLKind
}{{"kl", KLDiff}, {"k1", KLDiff}, {"abs", KLAbs}, {"mse", KLMSE}, {"k2", KLMSE}, {"low_var_kl", KLLowVar}, {"k3", KLLowVar}}

// LowVarKLClamp bounds the low_var_kl (k3) penalty (both paths).
const LowVarKLClamp = 10.0

// ParseKLType maps a kl_penalty / kl_loss_type name to its kind and whether
// it is "+"-suffixed (straight-through). Both loss paths and every config
// check parse names here; an unknown name's error lists the valid ones (and
// the underscore spelling of a dashed name such as low-var-kl).
func ParseKLType(name string) (kind KLKind, straightThrough bool, err error) {
	base := name
	if strings.HasSuffix(name, "+") {
		base, straightThrough = strings.TrimSuffix(name, "+"), true
	}
	for _, n := range klNames {
		if n.name == base {
			return n.kind, straightThrough, nil
		}
	}
	hint := rule.DidYouMean(base, KLTypes())
	if fixed := strings.ReplaceAll(name, "-", "_"); fixed != name {
		if _, _, err := ParseKLType(fixed); err == nil {
			hint = " (did you mean " + fixed + "?)"
		}
	}
	return "", false, fmt.Errorf("%w %q%s; valid: %s (each also with a + suffix: straight-through k2 gradient)", ErrUnknownKLType, name, hint, strings.Join(KLTypes(), ", "))
}

// klValueGrad returns the per-token penalty and its derivative w.r.t. lp.
func klValueGrad(lp, ref float64, base KLKind, straightThrough bool) (v, g float64) {
	d := lp - ref
	switch base {
	case KLDiff:
		v, g = d, 1
	case KLAbs:
		v = math.Abs(d)
		switch {
		case d > 0:
			g = 1
		case d < 0:
			g = -1
		}
	case KLMSE:
		v, g = 0.5*d*d, d
	case KLLowVar:
		x := ref - lp
		xin := x >= -LogRatioClamp && x <= LogRatioClamp
		x = math.Max(-LogRatioClamp, math.Min(LogRatioClamp, x))
		e := math.Exp(x)
		kld := e - x - 1
		kin := kld >= -LowVarKLClamp && kld <= LowVarKLClamp
		v = math.Max(-LowVarKLClamp, math.Min(LowVarKLClamp, kld))
		if xin && kin {
			g = -(e - 1)
		}
	}
	if straightThrough {
		g = d
	}
	return v, g
}

// KLPenalty is veRL's kl_penalty(logprob, ref_logprob, type) per token:
//
//	kl, k1          lp − ref                                    ∂/∂lp = 1
//	abs             |lp − ref|                                  sign(lp − ref)
//	mse, k2         ½(lp − ref)²                                lp − ref
//	low_var_kl, k3  x = clamp(ref − lp, ±20); clamp(eˣ − x − 1, ±10)
//	                                                            −(eˣ − 1), 0 where a clamp is active
//
// A "+" suffix keeps the forward value and uses the gradient of ½(lp−ref)²
// (upstream raises NotImplementedError for every "+" name at the pinned
// veRL). It returns the penalty and its gradient w.r.t. lp.
func KLPenalty(logp, refLogp Mat, klType string) (kl, grad Mat, err error) {
	base, st, err := ParseKLType(klType)
	if err != nil {
		return Mat{}, Mat{}, err
	}
	if err := sameShape([]string{"log_prob", "ref_log_prob"}, logp, refLogp); err != nil {
		return Mat{}, Mat{}, fmt.Errorf("algo: kl penalty: %w", err)
	}
	kl, grad = NewMat(logp.B, logp.T), NewMat(logp.B, logp.T)
	for k, lp := range logp.Data {
		kl.Data[k], grad.Data[k] = klValueGrad(lp, refLogp.Data[k], base, st)
	}
	return kl, grad, nil
}

// KLLoss is the actor's KL loss term (actor.use_kl_loss):
// coef·agg_loss(kl_penalty(lp, ref), m, mode). It returns the weighted term,
// its gradient w.r.t. lp, and actor/kl_loss (the unweighted aggregate) and
// actor/kl_coef.
func KLLoss(logp, refLogp, mask Mat, klType string, coef float64, mode string) (float64, Mat, map[string]float64, error) {
	if err := sameShape([]string{"log_prob", "ref_log_prob", "mask"}, logp, refLogp, mask); err != nil {
		return 0, Mat{}, nil, fmt.Errorf("algo: kl loss: %w", err)
	}
	kl, g, err := KLPenalty(logp, refLogp, klType)
	if err != nil {
		return 0, Mat{}, nil, err
	}
	agg, err := AggLoss(kl, mask, mode)
	if err != nil {
		return 0, Mat{}, nil, err
	}
	ag, err := AggLossGrad(mask, mode)
	if err != nil {
		return 0, Mat{}, nil, err
	}
	for k := range g.Data {
		g.Data[k] *= ag.Data[k] * coef
	}
	return coef * agg, g, map[string]float64{MetricKLLoss: agg, MetricKLCoef: coef}, nil
}

// KL controller types (algorithm.kl_ctrl.type).
const (
	KLCtrlFixed    = "fixed"
	KLCtrlAdaptive = "adaptive"
)

// KLControlTypes lists the valid algorithm.kl_ctrl.type names.
func KLControlTypes() []string { return []string{KLCtrlFixed, KLCtrlAdaptive} }

// KLControlConfig is algorithm.kl_ctrl.
type KLControlConfig struct {
	Type     string  // fixed (default) or adaptive
	KLCoef   float64 // initial β (0.0)
	TargetKL float64 // adaptive target (0.1)
	Horizon  float64 // adaptive horizon (10000), must be > 0
}

// DefaultKLControlConfig returns upstream's defaults.
func DefaultKLControlConfig() KLControlConfig {
	return KLControlConfig{Type: KLCtrlFixed, KLCoef: 0, TargetKL: 0.1, Horizon: 10000}
}

// KLCtrlKey is where the KL controller's keys live in upstream's config tree.
const KLCtrlKey = "algorithm.kl_ctrl."

// Validate reports every problem at once, each a rule.Problem naming its
// algorithm.kl_ctrl key: a known type, a finite β >= 0, and for the
// adaptive controller a target and horizon > 0.
func (c KLControlConfig) Validate() error {
	var errs []error
	positive := func(name string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			errs = append(errs, rule.Errorf(KLCtrlKey+name, "%v is out of range: want a finite value > 0", v))
		}
	}
	switch c.Type {
	case KLCtrlFixed:
	case KLCtrlAdaptive:
		positive("target_kl", c.TargetKL)
		positive("horizon", c.Horizon)
	default:
		errs = append(errs, rule.Unknown(KLCtrlKey+"type", c.Type, KLControlTypes()))
	}
	if !(c.KLCoef >= 0) || math.IsInf(c.KLCoef, 0) {
		errs = append(errs, rule.Errorf(KLCtrlKey+"kl_coef", "%v is out of range: want a finite value >= 0", c.KLCoef))
	}
	return errors.Join(errs...)
}

// CheckKLType returns nil when name is a KL type (ParseKLType), else
// ParseKLType's error as the problem of key.
func CheckKLType(key, name string) error {
	if _, _, err := ParseKLType(name); err != nil {
		return rule.Errorf(key, "%s", strings.TrimPrefix(err.Error(), "algo: "))
	}
	return nil
}

// KLController holds the in-reward KL coefficient β (veRL's
// FixedKLController / AdaptiveKLController).
type KLController struct {
	cfg   KLControlConfig
	Value float64 // current β
}

// NewKLController validates cfg and returns a controller with β = KLCoef.
func NewKLController(cfg KLControlConfig) (*KLController, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &KLController{cfg: cfg, Value: cfg.KLCoef}, nil
}

// Update adapts β after a batch of nSteps rows with mean KL currentKL:
// adaptive: β *= 1 + clip(kl/target − 1, −0.2, 0.2)·n/horizon; fixed: no-op.
func (c *KLController) Update(currentKL float64, nSteps int) {
	if c.cfg.Type != KLCtrlAdaptive {
		return
	}
	e := currentKL/c.cfg.TargetKL - 1
	e = math.Max(-0.2, math.Min(0.2, e))
	c.Value *= 1 + e*float64(nSteps)/c.cfg.Horizon
}

// ApplyKLPenalty is veRL's apply_kl_penalty as intended (upstream RAGEN
// crashes calling it): kld = kl_penalty(old_lp, ref, type)·m,
// rewards = scores − β·kld. current_kl = batch mean of the per-row masked
// means of kld; the controller is then updated with (current_kl, B). Metrics:
// actor/reward_kl_penalty = current_kl, actor/reward_kl_penalty_coeff = β
// before the update.
func ApplyKLPenalty(scores, oldLogp, refLogp, mask Mat, klType string, ctrl *KLController) (Mat, map[string]float64, error) {
	if ctrl == nil {
		return Mat{}, nil, errors.New("algo: apply kl penalty: nil KL controller")
	}
	if err := sameShape([]string{"token_level_scores", "old_log_probs", "ref_log_prob", "mask"}, scores, oldLogp, refLogp, mask); err != nil {
		return Mat{}, nil, fmt.Errorf("algo: apply kl penalty: %w", err)
	}
	if scores.B == 0 {
		return Mat{}, nil, errors.New("algo: apply kl penalty: empty batch")
	}
	kld, _, err := KLPenalty(oldLogp, refLogp, klType)
	if err != nil {
		return Mat{}, nil, err
	}
	for k := range kld.Data {
		kld.Data[k] *= mask.Data[k]
	}
	beta := ctrl.Value
	rewards := NewMat(scores.B, scores.T)
	for k, s := range scores.Data {
		rewards.Data[k] = s - beta*kld.Data[k]
	}
	rowKL, err := RowMaskedMeans(kld, mask)
	if err != nil {
		return Mat{}, nil, err
	}
	current := 0.0
	for _, v := range rowKL {
		current += v
	}
	current /= float64(len(rowKL))
	ctrl.Update(current, scores.B)
	return rewards, map[string]float64{MetricRewardKLPenalty: current, MetricRewardKLPenaltyCoeff: beta}, nil
}
