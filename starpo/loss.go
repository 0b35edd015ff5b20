package starpo

import (
	"fmt"
	"strings"

	"ragen/starpo/algo"
	"ragen/torch"
)

// The tensor path: the same losses as starpo/algo, on libtorch tensors of
// shape (B, T) with a 0/1 mask of the same shape and dtype. Every function
// takes the scope that owns its intermediates; errors (an unknown mode or KL
// type) are recorded on the scope, which is sticky, so callers check
// s.Err() once. Metrics come back as detached scalar tensors under
// upstream's keys; Metrics reads them all in one copy. The constants, clip
// bounds and KL type names are starpo/algo's (algo.MaskEps,
// algo.LogRatioClamp, PolicyLossConfig.ClipBounds, algo.ParseKLType): one
// spec for both paths.

// MetricTensors are scalar metric tensors keyed by upstream's metric names.
type MetricTensors map[string]*torch.Tensor

// Read copies every metric to Go in one C call (stack + copy).
func (m MetricTensors) Read(s *torch.Scope) map[string]float64 {
	out := make(map[string]float64, len(m))
	if len(m) == 0 || s.Err() != nil {
		return out
	}
	keys := make([]string, 0, len(m))
	ts := make([]*torch.Tensor, 0, len(m))
	for k, t := range m {
		keys = append(keys, k)
		ts = append(ts, s.Reshape(s.Cast(s.Detach(t), torch.Float64), 1))
	}
	vals := s.Float64s(s.Cat(ts, 0))
	if len(vals) != len(keys) {
		return out
	}
	for i, k := range keys {
		out[k] = vals[i]
	}
	return out
}

func maskedSum(s *torch.Scope, x, m *torch.Tensor) *torch.Tensor {
	zero := s.MulS(x, 0)
	return s.Sum(s.Mul(s.Where(s.NeS(m, 0), x, s.Detach(zero)), m), false)
}

// MaskedMean is veRL's masked_mean: Σ where(m≠0, x, 0)·m / (Σm + 1e-8).
func MaskedMean(s *torch.Scope, x, m *torch.Tensor) *torch.Tensor {
	return s.Div(maskedSum(s, x, m), s.AddS(s.Sum(m, false), algo.MaskEps))
}

// AggLoss is agg_loss on tensors (see algo.AggLoss for the formulas):
//
//	token-mean              Σ(x·m)/(Σm + 1e-8)          (NaN-safe masked mean)
//	seq-mean-token-sum      row mean over rows with Σm>0 of Σ_t x·m
//	seq-mean-token-mean     row mean over rows with Σm>0 of Σ_t x·m/(Σ_t m + 1e-8)
//	seq-mean-token-sum-norm Σ_all x·m / T
//
// x, m: (B, T). An unknown mode fails the scope with an error listing the
// valid modes.
func AggLoss(s *torch.Scope, x, m *torch.Tensor, mode string) *torch.Tensor {
	if s.Err() != nil {
		return nil
	}
	switch mode {
	case algo.TokenMean:
		return MaskedMean(s, x, m)
	case algo.SeqMeanTokenSumNorm:
		t := x.Size(-1)
		if t <= 0 {
			s.Errorf("starpo.AggLoss", "seq-mean-token-sum-norm needs at least one column")
			return nil
		}
		return s.DivS(s.Sum(s.Mul(x, m), false), float64(t))
	case algo.SeqMeanTokenSum, algo.SeqMeanTokenMean:
		seq := s.Sum(s.Mul(x, m), false, -1) // (B)
		n := s.Sum(m, false, -1)             // (B)
		if mode == algo.SeqMeanTokenMean {
			seq = s.Div(seq, s.AddS(n, algo.MaskEps))
		}
		w := s.Cast(s.GtS(n, 0), x.DType()) // (B) rows with tokens
		return MaskedMean(s, seq, w)
	}
	s.Fail(fmt.Errorf("starpo: %w %q (valid: %s)", algo.ErrUnknownLossAggMode, mode, strings.Join(algo.LossAggModes(), ", ")))
	return nil
}

// PolicyLoss is veRL's compute_policy_loss on tensors, per token:
//
//	ρ = exp(clamp(lp − old, −20, 20))
//	L1 = −A·ρ;  L2 = −A·clamp(ρ, 1−ε_low, 1+ε_high);  Lc = max(L1, L2)
//	L = min(Lc, −A·c) where A < 0 (dual clip), else Lc
//
// pg_loss = agg_loss(L, m, mode). logp carries the autograd graph; old, adv
// and m are constants. Metrics: actor/pg_loss, actor/pg_clipfrac,
// actor/ppo_kl, actor/pg_clipfrac_lower.
func PolicyLoss(s *torch.Scope, logp, old, adv, m *torch.Tensor, cfg algo.PolicyLossConfig) (*torch.Tensor, MetricTensors) {
	return policyLoss(s, logp, old, adv, m, nil, cfg)
}

// policyTerms are the per-token pieces of the clipped policy loss.
type policyTerms struct {
	negKL, l1, l2, lc, l3, neg, loss *torch.Tensor
}

func newPolicyTerms(s *torch.Scope, logp, old, adv *torch.Tensor, cfg algo.PolicyLossConfig) policyTerms {
	var p policyTerms
	lo, hi := cfg.ClipBounds()
	p.negKL = s.Clamp(s.Sub(logp, old), -algo.LogRatioClamp, algo.LogRatioClamp) // (B,T)
	ratio := s.Exp(p.negKL)
	negA := s.Neg(adv)
	p.l1 = s.Mul(negA, ratio)
	p.l2 = s.Mul(negA, s.Clamp(ratio, 1-lo, 1+hi))
	p.lc = s.Maximum(p.l1, p.l2)
	p.l3 = s.MulS(negA, cfg.ClipRatioC)
	lc2 := s.Minimum(p.l3, p.lc)
	p.neg = s.LtS(adv, 0)
	p.loss = s.Where(p.neg, lc2, p.lc)
	return p
}

// policyLoss is PolicyLoss with the per-token loss multiplied by isw
// (rollout importance weights) when isw is non-nil.
func policyLoss(s *torch.Scope, logp, old, adv, m, isw *torch.Tensor, cfg algo.PolicyLossConfig) (*torch.Tensor, MetricTensors) {
	if err := cfg.Validate(); err != nil {
		s.Fail(fmt.Errorf("starpo: policy loss: %w", err))
		return nil, nil
	}
	p := newPolicyTerms(s, logp, old, adv, cfg)
	loss := p.loss
	if isw != nil {
		loss = s.Mul(loss, s.Detach(isw))
	}
	pg := AggLoss(s, loss, m, cfg.LossAggMode)
	dt := logp.DType()
	met := MetricTensors{
		algo.MetricPGLoss:          s.Detach(pg),
		algo.MetricPGClipFrac:      MaskedMean(s, s.Cast(s.Gt(s.Detach(p.l2), s.Detach(p.l1)), dt), m),
		algo.MetricPPOKL:           MaskedMean(s, s.Neg(s.Detach(p.negKL)), m),
		algo.MetricPGClipFracLower: MaskedMean(s, s.Cast(s.And(s.Gt(s.Detach(p.lc), s.Detach(p.l3)), p.neg), dt), m),
	}
	if isw != nil {
		met[MetricRolloutISMean] = MaskedMean(s, s.Detach(isw), m)
	}
	return pg, met
}

// KLPenalty is veRL's kl_penalty(logprob, ref_logprob, type) per token:
// kl/k1 lp−ref; abs |lp−ref|; mse/k2 ½(lp−ref)²; low_var_kl/k3
// clamp(eˣ−x−1, ±10) with x = clamp(ref−lp, ±20). A "+" suffix is the
// straight-through variant: forward value of the base type, gradient of
// ½(lp−ref)² (see doc/divergences/starpo-algo.md).
func KLPenalty(s *torch.Scope, logp, ref *torch.Tensor, klType string) *torch.Tensor {
	if s.Err() != nil {
		return nil
	}
	kind, st, err := algo.ParseKLType(klType)
	if err != nil {
		s.Fail(fmt.Errorf("starpo: %w", err))
		return nil
	}
	d := s.Sub(logp, ref)
	var kl *torch.Tensor
	switch kind {
	case algo.KLDiff:
		kl = d
	case algo.KLAbs:
		kl = s.Abs(d)
	case algo.KLMSE:
		kl = s.MulS(s.Square(d), 0.5)
	case algo.KLLowVar:
		x := s.Clamp(s.Neg(d), -algo.LogRatioClamp, algo.LogRatioClamp)
		kl = s.Clamp(s.SubS(s.Sub(s.Exp(x), x), 1), -algo.LowVarKLClamp, algo.LowVarKLClamp)
	}
	if !st {
		return kl
	}
	k2 := s.MulS(s.Square(d), 0.5)
	return s.Add(s.Sub(k2, s.Detach(k2)), s.Detach(kl))
}

// ValueLoss is veRL's compute_value_loss on tensors, per token:
//
//	v_clip = max(min(v_pred, V_old + ε_v), V_old − ε_v)
//	vf_loss = ½·agg_loss(max((v_pred − R)², (v_clip − R)²), m, mode)
//
// vpred carries the graph. Metrics: critic/vf_loss (÷ GradAccum, as upstream
// logs it), critic/vf_clipfrac, critic/vpred_mean.
func ValueLoss(s *torch.Scope, vpred, values, returns, m *torch.Tensor, cfg algo.ValueLossConfig) (*torch.Tensor, MetricTensors) {
	if err := cfg.Validate(); err != nil {
		s.Fail(fmt.Errorf("starpo: value loss: %w", err))
		return nil, nil
	}
	l1, l2 := valueTerms(s, vpred, values, returns, cfg.ClipRangeValue)
	loss := s.MulS(AggLoss(s, s.Maximum(l1, l2), m, cfg.LossAggMode), 0.5)
	accum := max(cfg.GradAccum, 1)
	met := MetricTensors{
		algo.MetricVFLoss:     s.DivS(s.Detach(loss), float64(accum)),
		algo.MetricVFClipFrac: MaskedMean(s, s.Cast(s.Gt(s.Detach(l2), s.Detach(l1)), vpred.DType()), m),
		algo.MetricVPredMean:  MaskedMean(s, s.Detach(vpred), m),
	}
	return loss, met
}

// ActorLoss is RAGEN dp_actor's objective of one micro-batch:
// pg_loss − entropy_coeff·agg_loss(H) (when entropy_coeff ≠ 0) +
// kl_loss_coef·agg_loss(kl_penalty(lp, ref)) (when use_kl_loss). entropy
// and ref may be nil when their term is off. The caller divides by
// grad_accum before backward.
func ActorLoss(s *torch.Scope, logp, entropy, old, ref, adv, m *torch.Tensor, cfg algo.ActorLossConfig) (*torch.Tensor, MetricTensors) {
	return actorLoss(s, ActorLossInput{LogProbs: logp, Entropy: entropy, OldLogProbs: old, RefLogProbs: ref, Advantages: adv, Mask: m}, cfg)
}

func actorLoss(s *torch.Scope, in ActorLossInput, cfg algo.ActorLossConfig) (*torch.Tensor, MetricTensors) {
	if err := cfg.Validate(); err != nil {
		s.Fail(fmt.Errorf("starpo: actor loss: %w", err))
		return nil, nil
	}
	m := in.Mask
	loss, met := policyLoss(s, in.LogProbs, in.OldLogProbs, in.Advantages, m, in.RolloutISWeights, cfg.Policy)
	if s.Err() != nil {
		return nil, nil
	}
	mode := cfg.Policy.LossAggMode
	if cfg.EntropyCoeff != 0 {
		if in.Entropy == nil {
			s.Errorf("starpo.ActorLoss", "entropy_coeff=%g needs per-token entropies", cfg.EntropyCoeff)
			return nil, nil
		}
		ent := AggLoss(s, in.Entropy, m, mode)
		met[algo.MetricEntropyLoss] = s.Detach(ent)
		loss = s.Sub(loss, s.MulS(ent, cfg.EntropyCoeff))
	}
	if cfg.UseKLLoss {
		if in.RefLogProbs == nil {
			s.Errorf("starpo.ActorLoss", "use_kl_loss needs reference log-probs")
			return nil, nil
		}
		kl := AggLoss(s, KLPenalty(s, in.LogProbs, in.RefLogProbs, cfg.KLLossType), m, mode)
		met[algo.MetricKLLoss] = s.Detach(kl)
		met[algo.MetricKLCoef] = s.Full(nil, cfg.KLLossCoef, torch.Float64, torch.CPU)
		loss = s.Add(loss, s.MulS(kl, cfg.KLLossCoef))
	}
	return loss, met
}
