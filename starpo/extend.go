package starpo

import (
	"fmt"

	"ragen/starpo/algo"
	"ragen/torch"
)

// Extension points for research code: a custom actor objective plugged into
// the Trainer (Deps.ActorLoss), the per-token terms of the built-in losses,
// and veRL's truncated rollout importance weights. Custom advantage
// estimators register with algo.RegisterEstimator and are then chosen by
// name (algorithm.adv_estimator).

// MetricRolloutISMean is the masked mean of the rollout importance weights
// when the actor loss is given them.
const MetricRolloutISMean = "actor/rollout_is_mean"

// ActorLossInput are the per-token tensors of one actor micro-batch, each of
// shape (B, T) over the response positions.
type ActorLossInput struct {
	// LogProbs are log π_θ(token | prefix) under the current actor; they
	// carry the autograd graph, so the loss must be built from them.
	LogProbs *torch.Tensor
	// Entropy is the per-token entropy of π_θ (nil when entropy_coeff = 0).
	Entropy *torch.Tensor
	// OldLogProbs are the actor's log-probs before this step's update.
	OldLogProbs *torch.Tensor
	// RefLogProbs are the reference policy's log-probs (nil unless
	// use_kl_loss).
	RefLogProbs *torch.Tensor
	// Advantages are the estimator's per-token advantages.
	Advantages *torch.Tensor
	// Mask is 1 on the response tokens the loss covers, else 0.
	Mask *torch.Tensor
	// RolloutISWeights, when non-nil, multiply the per-token policy loss
	// (veRL's rollout_is_weights; see TruncatedISWeights). Constants.
	RolloutISWeights *torch.Tensor
}

// ActorLossFunc is the actor objective of one micro-batch: a scalar loss to
// minimise and its metrics under stable keys (actor/...). The trainer
// divides the loss by the gradient-accumulation count before backward.
// Failures are recorded on s.
type ActorLossFunc func(s *torch.Scope, in ActorLossInput, cfg algo.ActorLossConfig) (*torch.Tensor, MetricTensors)

// DefaultActorLoss is RAGEN's objective (ActorLoss), with the per-token
// policy loss weighted by in.RolloutISWeights when they are given.
func DefaultActorLoss(s *torch.Scope, in ActorLossInput, cfg algo.ActorLossConfig) (*torch.Tensor, MetricTensors) {
	return actorLoss(s, in, cfg)
}

// PolicyLossTokens returns veRL's per-token clipped policy loss L (B, T)
// before aggregation (see PolicyLoss for the formula); PolicyLoss is
// AggLoss(PolicyLossTokens(...), m, cfg.LossAggMode).
func PolicyLossTokens(s *torch.Scope, logp, old, adv *torch.Tensor, cfg algo.PolicyLossConfig) *torch.Tensor {
	if err := cfg.Validate(); err != nil {
		s.Fail(fmt.Errorf("starpo: policy loss: %w", err))
		return nil
	}
	return newPolicyTerms(s, logp, old, adv, cfg).loss
}

// ValueLossTokens returns the per-token clipped value loss
// max((v_pred − R)², (v_clip − R)²) (B, T) before aggregation and the ½
// factor; ValueLoss is ½·AggLoss(ValueLossTokens(...), m, mode).
func ValueLossTokens(s *torch.Scope, vpred, values, returns *torch.Tensor, cfg algo.ValueLossConfig) *torch.Tensor {
	if err := cfg.Validate(); err != nil {
		s.Fail(fmt.Errorf("starpo: value loss: %w", err))
		return nil
	}
	l1, l2 := valueTerms(s, vpred, values, returns, cfg.ClipRangeValue)
	return s.Maximum(l1, l2)
}

func valueTerms(s *torch.Scope, vpred, values, returns *torch.Tensor, eps float64) (l1, l2 *torch.Tensor) {
	vclip := s.Maximum(s.Minimum(vpred, s.AddS(values, eps)), s.SubS(values, eps))
	return s.Square(s.Sub(vpred, returns)), s.Square(s.Sub(vclip, returns))
}

// TruncatedISWeights are veRL's token-level rollout importance weights for
// rollouts sampled by an older or different policy (a pipelined rollout, an
// inference engine): w = min(exp(clamp(old − rollout, −20, 20)), threshold)
// where m ≠ 0, else 0, detached. old are the actor's log-probs before the
// update, rollout the sampler's; threshold > 0 (veRL's
// rollout_is_threshold, commonly 2).
func TruncatedISWeights(s *torch.Scope, old, rollout, m *torch.Tensor, threshold float64) *torch.Tensor {
	if s.Err() != nil {
		return nil
	}
	if !(threshold > 0) {
		s.Errorf("starpo.TruncatedISWeights", "threshold must be > 0 (got %g)", threshold)
		return nil
	}
	w := s.Clamp(s.Exp(s.Clamp(s.Sub(s.Detach(old), s.Detach(rollout)), -algo.LogRatioClamp, algo.LogRatioClamp)), 0, threshold)
	return s.Mul(w, m)
}
