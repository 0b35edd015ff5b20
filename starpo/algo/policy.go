package algo

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"ragen/config/rule"
)

// Actor metric keys.
const (
	MetricPGLoss          = "actor/pg_loss"
	MetricPGClipFrac      = "actor/pg_clipfrac"
	MetricPPOKL           = "actor/ppo_kl"
	MetricPGClipFracLower = "actor/pg_clipfrac_lower"
	MetricEntropyLoss     = "actor/entropy_loss"
	MetricEntropy         = "actor/entropy"
)

// LogRatioClamp bounds lp − old before exp for stability (both paths).
const LogRatioClamp = 20.0

// PolicyLossConfig holds the PPO clip settings (actor_rollout_ref.actor.*).
type PolicyLossConfig struct {
	ClipRatio     float64  // ε: clip_ratio (0.2), used for a nil side
	ClipRatioLow  *float64 // ε_low: clip_ratio_low (0.2); nil → ClipRatio
	ClipRatioHigh *float64 // ε_high: clip_ratio_high (0.28); nil → ClipRatio
	ClipRatioC    float64  // c: dual-clip bound clip_ratio_c (3.0), must be > 1
	LossAggMode   string   // loss_agg_mode (token-mean)
}

// Float returns a pointer to v, for the optional config fields.
func Float(v float64) *float64 { return &v }

// DefaultPolicyLossConfig returns RAGEN's defaults.
func DefaultPolicyLossConfig() PolicyLossConfig {
	return PolicyLossConfig{ClipRatio: 0.2, ClipRatioLow: Float(0.2), ClipRatioHigh: Float(0.28), ClipRatioC: 3, LossAggMode: TokenMean}
}

// ClipBounds returns (ε_low, ε_high): ClipRatioLow and ClipRatioHigh, each
// ClipRatio when nil. The ratio is clipped to [1−ε_low, 1+ε_high].
func (c PolicyLossConfig) ClipBounds() (lo, hi float64) {
	lo, hi = c.ClipRatio, c.ClipRatio
	if c.ClipRatioLow != nil {
		lo = *c.ClipRatioLow
	}
	if c.ClipRatioHigh != nil {
		hi = *c.ClipRatioHigh
	}
	return lo, hi
}

// ActorKey is where the actor's keys live in upstream's config tree.
const ActorKey = "actor_rollout_ref.actor."

// nonNegative is the problem of key unless v is finite and >= 0.
func nonNegative(key string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return rule.Errorf(key, "%v is not finite", v)
	}
	if v < 0 {
		return rule.Errorf(key, "%v is out of range: want >= 0", v)
	}
	return nil
}

// Validate reports every problem at once, each a rule.Problem naming its
// actor_rollout_ref.actor key: clip ratios finite and >= 0, the dual-clip
// bound > 1, a known loss_agg_mode.
func (c PolicyLossConfig) Validate() error {
	var errs []error
	lo, hi := c.ClipBounds()
	for _, p := range []struct {
		name string
		v    float64
	}{{"clip_ratio", c.ClipRatio}, {"clip_ratio_low", lo}, {"clip_ratio_high", hi}} {
		errs = append(errs, nonNegative(ActorKey+p.name, p.v))
	}
	if !(c.ClipRatioC > 1) || math.IsInf(c.ClipRatioC, 0) {
		errs = append(errs, rule.Errorf(ActorKey+"clip_ratio_c", "%v is out of range: want a finite value > 1 (the dual-clip bound)", c.ClipRatioC))
	}
	if !slices.Contains(LossAggModes(), c.LossAggMode) {
		errs = append(errs, rule.Unknown(ActorKey+"loss_agg_mode", c.LossAggMode, LossAggModes()))
	}
	return errors.Join(errs...)
}

// tieMax returns ∂max(a,b)/∂a and ∂max(a,b)/∂b with PyTorch's convention of
// splitting the gradient evenly on ties.
func tieMax(a, b float64) (da, db float64) {
	switch {
	case a > b:
		return 1, 0
	case a < b:
		return 0, 1
	case a == b:
		return 0.5, 0.5
	}
	return 0, 0 // NaN
}

// tieMin is tieMax for minimum.
func tieMin(a, b float64) (da, db float64) {
	db, da = tieMax(a, b)
	return da, db
}

// PolicyLoss is veRL's compute_policy_loss (the one RAGEN's actor calls),
// per token:
//
//	ρ = exp(clamp(lp − old, −20, 20))
//	L1 = −A·ρ;  L2 = −A·clamp(ρ, 1−ε_low, 1+ε_high);  Lc = max(L1, L2)
//	L = min(Lc, −A·c) where A < 0 (dual clip), else Lc
//
// pg_loss = agg_loss(L, m, mode). It returns pg_loss, ∂pg_loss/∂lp per token
// (what autograd gives: clamp passes gradient on its closed interval,
// max/min split it on ties), and the metrics actor/pg_loss,
// actor/pg_clipfrac = mean_m[L2 > L1], actor/ppo_kl = mean_m[old − lp]
// (clamped), actor/pg_clipfrac_lower = mean_m[(Lc > −A·c) ∧ A < 0].
func PolicyLoss(logp, oldLogp, adv, mask Mat, cfg PolicyLossConfig) (float64, Mat, map[string]float64, error) {
	if err := cfg.Validate(); err != nil {
		return 0, Mat{}, nil, err
	}
	if err := sameShape([]string{"log_prob", "old_log_prob", "advantages", "mask"}, logp, oldLogp, adv, mask); err != nil {
		return 0, Mat{}, nil, fmt.Errorf("algo: policy loss: %w", err)
	}
	lo, hi := cfg.ClipBounds()
	lo, hi = 1-lo, 1+hi
	c := cfg.ClipRatioC
	n := len(logp.Data)
	losses := NewMat(logp.B, logp.T)
	dLdlp := NewMat(logp.B, logp.T) // ∂L_tok/∂lp before aggregation
	// Masked sums for the metrics (masked_mean = Σ where(m≠0, x·m)/(Σm+1e-8)).
	var mSum, klSum, clipSum, lowerSum float64
	for k := 0; k < n; k++ {
		a := adv.Data[k]
		x := logp.Data[k] - oldLogp.Data[k]
		xin := x >= -LogRatioClamp && x <= LogRatioClamp
		x = clamp(x, -LogRatioClamp, LogRatioClamp)
		rho := math.Exp(x)
		l1 := -a * rho
		rc := clamp(rho, lo, hi)
		rin := rho >= lo && rho <= hi
		l2 := -a * rc
		lc := fmax(l1, l2)
		d1, d2 := tieMax(l1, l2)
		// ∂Lc/∂ρ
		dLc := d1 * (-a)
		if rin {
			dLc += d2 * (-a)
		}
		mk := mask.Data[k]
		if mk != 0 {
			mSum += mk
			klSum -= x * mk
			if l2 > l1 {
				clipSum += mk
			}
		}
		l3 := -a * c
		l, dL := lc, dLc
		if a < 0 {
			l = fmin(l3, lc)
			_, dc := tieMin(l3, lc)
			dL = dc * dLc
			if lc > l3 && mk != 0 {
				lowerSum += mk
			}
		}
		losses.Data[k] = l
		if xin {
			dLdlp.Data[k] = dL * rho
		}
	}
	loss, err := AggLoss(losses, mask, cfg.LossAggMode)
	if err != nil {
		return 0, Mat{}, nil, err
	}
	ag, err := AggLossGrad(mask, cfg.LossAggMode)
	if err != nil {
		return 0, Mat{}, nil, err
	}
	for k := range dLdlp.Data {
		dLdlp.Data[k] = dLdlp.Data[k]*ag.Data[k] + 0 // + 0 turns −0 into 0
	}
	metrics := map[string]float64{
		MetricPGLoss:          loss,
		MetricPGClipFrac:      clipSum / (mSum + MaskEps),
		MetricPPOKL:           klSum / (mSum + MaskEps),
		MetricPGClipFracLower: lowerSum / (mSum + MaskEps),
	}
	return loss, dLdlp, metrics, nil
}

// EntropyLoss is agg_loss(H, m, mode) over per-token entropies; it returns
// the value, its gradient w.r.t. H, and actor/entropy_loss.
func EntropyLoss(entropy, mask Mat, mode string) (float64, Mat, map[string]float64, error) {
	v, err := AggLoss(entropy, mask, mode)
	if err != nil {
		return 0, Mat{}, nil, fmt.Errorf("algo: entropy loss: %w", err)
	}
	g, err := AggLossGrad(mask, mode)
	if err != nil {
		return 0, Mat{}, nil, err
	}
	return v, g, map[string]float64{MetricEntropyLoss: v}, nil
}

// ActorLossConfig is the full actor objective of one micro-batch.
type ActorLossConfig struct {
	Policy       PolicyLossConfig
	EntropyCoeff float64 // entropy_coeff (0.001); 0 skips the entropy term
	UseKLLoss    bool    // use_kl_loss (false)
	KLLossType   string  // kl_loss_type (kl)
	KLLossCoef   float64 // kl_loss_coef (0.0)
}

// DefaultActorLossConfig returns RAGEN's defaults.
func DefaultActorLossConfig() ActorLossConfig {
	return ActorLossConfig{Policy: DefaultPolicyLossConfig(), EntropyCoeff: 0.001, KLLossType: "kl"}
}

// Validate reports every problem at once.
func (c ActorLossConfig) Validate() error {
	errs := []error{c.Policy.Validate()}
	if math.IsNaN(c.EntropyCoeff) || math.IsInf(c.EntropyCoeff, 0) {
		errs = append(errs, rule.Errorf(ActorKey+"entropy_coeff", "%v is not finite", c.EntropyCoeff))
	}
	errs = append(errs, nonNegative(ActorKey+"kl_loss_coef", c.KLLossCoef))
	if c.UseKLLoss {
		errs = append(errs, CheckKLType(ActorKey+"kl_loss_type", c.KLLossType))
	}
	return errors.Join(errs...)
}

// ActorLossInput is one micro-batch of the actor update; every matrix is [B,T].
type ActorLossInput struct {
	LogProb    Mat // current log-probs lp (the autograd leaf)
	OldLogProb Mat // old log-probs from before the update
	Advantages Mat // A
	Mask       Mat // response_mask
	Entropy    Mat // per-token entropy H; needed when EntropyCoeff ≠ 0
	RefLogProb Mat // reference log-probs; needed when UseKLLoss
}

// ActorLossOutput is the micro-batch objective and its gradients.
type ActorLossOutput struct {
	Loss        float64 // policy_loss = pg_loss − coeff·agg(H) + kl_coef·agg(kl)
	GradLogProb Mat     // ∂Loss/∂lp
	GradEntropy Mat     // ∂Loss/∂H (zero when EntropyCoeff = 0)
}

// ActorLoss is the objective of RAGEN's dp_actor for one micro-batch:
// policy_loss = pg_loss − entropy_coeff·agg_loss(H) (when entropy_coeff ≠ 0)
// + kl_loss_coef·agg_loss(kl_penalty(lp, ref)) (when use_kl_loss). The
// caller divides by grad_accum before accumulating, as upstream does. The
// metrics are PolicyLoss's plus actor/entropy_loss (when entropy_coeff ≠ 0)
// and actor/kl_loss, actor/kl_coef (when use_kl_loss).
func ActorLoss(in ActorLossInput, cfg ActorLossConfig) (ActorLossOutput, map[string]float64, error) {
	if err := cfg.Validate(); err != nil {
		return ActorLossOutput{}, nil, err
	}
	pg, glp, metrics, err := PolicyLoss(in.LogProb, in.OldLogProb, in.Advantages, in.Mask, cfg.Policy)
	if err != nil {
		return ActorLossOutput{}, nil, err
	}
	out := ActorLossOutput{Loss: pg, GradLogProb: glp, GradEntropy: NewMat(in.LogProb.B, in.LogProb.T)}
	mode := cfg.Policy.LossAggMode
	if cfg.EntropyCoeff != 0 {
		if err := sameShape([]string{"mask", "entropy"}, in.Mask, in.Entropy); err != nil {
			return ActorLossOutput{}, nil, fmt.Errorf("algo: actor loss: entropy_coeff ≠ 0 needs per-token entropy: %w", err)
		}
		h, gh, em, err := EntropyLoss(in.Entropy, in.Mask, mode)
		if err != nil {
			return ActorLossOutput{}, nil, err
		}
		out.Loss -= cfg.EntropyCoeff * h
		for k := range gh.Data {
			out.GradEntropy.Data[k] = -cfg.EntropyCoeff * gh.Data[k]
		}
		for k, v := range em {
			metrics[k] = v
		}
	}
	if cfg.UseKLLoss {
		if err := sameShape([]string{"mask", "ref_log_prob"}, in.Mask, in.RefLogProb); err != nil {
			return ActorLossOutput{}, nil, fmt.Errorf("algo: actor loss: use_kl_loss needs reference log-probs: %w", err)
		}
		kl, gk, km, err := KLLoss(in.LogProb, in.RefLogProb, in.Mask, cfg.KLLossType, cfg.KLLossCoef, mode)
		if err != nil {
			return ActorLossOutput{}, nil, err
		}
		out.Loss += kl
		for k := range gk.Data {
			out.GradLogProb.Data[k] += gk.Data[k]
		}
		for k, v := range km {
			metrics[k] = v
		}
	}
	return out, metrics, nil
}
