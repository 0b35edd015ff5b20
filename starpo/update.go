package starpo

import (
	"errors"
	"fmt"
	"maps"
	"math"

	"ragen/filter"
	"ragen/internal/pyrand"
	"ragen/starpo/algo"
	"ragen/torch"
)

// withScope runs f on a fresh scope and closes it, returning the first error.
func withScope(f func(s *torch.Scope) error) error {
	s := torch.NewScope()
	err := f(s)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

// rowRange returns [lo, hi).
func rowRange(lo, hi int) []int {
	idx := make([]int, hi-lo)
	for k := range idx {
		idx[k] = lo + k
	}
	return idx
}

// copyRows writes a (len(idx), T) float tensor into rows idx of dst.
func copyRows(s *torch.Scope, dst algo.Mat, idx []int, x *torch.Tensor) {
	v := s.Float64s(x)
	if s.Err() != nil {
		return
	}
	T := dst.T
	if len(v) != len(idx)*T {
		s.Errorf("starpo.copyRows", "got %d values for %d rows of %d", len(v), len(idx), T)
		return
	}
	for k, i := range idx {
		copy(dst.Data[i*T:(i+1)*T], v[k*T:(k+1)*T])
	}
}

func (t *Trainer) logProbMicro() int {
	if m := t.cfg.ActorRolloutRef.Rollout.LogProbMicroBatchSizePerGPU; m > 0 {
		return m
	}
	return t.cfg.ActorRolloutRef.Actor.PPOMicroBatchSizePerGPU
}

// noGradPass runs f over the rows of r in micro-batches without autograd.
func (t *Trainer) noGradPass(r *rows, outs []*algo.Mat, f func(s *torch.Scope, idx []int, ids, pos, attn *torch.Tensor)) error {
	micro := t.logProbMicro()
	var parts [][]int
	for lo := 0; lo < r.B; lo += micro {
		parts = append(parts, rowRange(lo, min(lo+micro, r.B)))
	}
	// data parallel: each rank runs its share of the micro-batches, then
	// the rows of outs are gathered (dist.go)
	owners := t.dp.owners(parts, r.tokens)
	for k, idx := range parts {
		if t.dp != nil && owners[k] != t.dp.g.Rank() {
			continue
		}
		if err := torch.NoGrad(func() error {
			return withScope(func(s *torch.Scope) error {
				ids, pos, attn := r.inputs(s, idx, t.dev)
				f(s, idx, ids, pos, attn)
				return s.Err()
			})
		}); err != nil {
			return err
		}
	}
	return t.dp.gatherRows(parts, owners, outs)
}

// logProbsWith fills r.oldLogp (and r.entropy) from the actor.
func (t *Trainer) logProbsWith(r *rows, withEntropy bool) error {
	T := r.T()
	r.oldLogp = algo.NewMat(r.B, T)
	if withEntropy {
		r.entropy = algo.NewMat(r.B, T)
	}
	temp := t.cfg.ActorRolloutRef.Rollout.Temperature
	outs := []*algo.Mat{&r.oldLogp}
	if withEntropy {
		outs = append(outs, &r.entropy)
	}
	err := t.noGradPass(r, outs, func(s *torch.Scope, idx []int, ids, pos, attn *torch.Tensor) {
		lp, h := t.deps.Actor.TokenLogProbs(s, ids, pos, attn, temp, withEntropy)
		copyRows(s, r.oldLogp, idx, s.Narrow(lp, 1, 1, int64(T)))
		if withEntropy {
			if h == nil {
				s.Errorf("starpo.logProbs", "the actor returned no entropy")
				return
			}
			copyRows(s, r.entropy, idx, s.Narrow(h, 1, 1, int64(T)))
		}
	})
	if err != nil {
		return fmt.Errorf("old log-probs: %w", err)
	}
	return nil
}

// logProbs computes the old log-probs with entropies and logs actor/entropy
// = agg_loss(H, m, loss_agg_mode) over the batch.
func (t *Trainer) logProbs(b *rows, met map[string]float64) error {
	if err := t.logProbsWith(b, true); err != nil {
		return err
	}
	h, err := algo.AggLoss(b.entropy, b.mask, t.cfg.ActorRolloutRef.Actor.LossAggMode)
	if err != nil {
		return err
	}
	met[algo.MetricEntropy] = h
	return nil
}

// refLogProbs fills b.refLogp and logs rollout/ref_log_prob (masked mean).
func (t *Trainer) refLogProbs(b *rows, met map[string]float64) error {
	T := b.T()
	b.refLogp = algo.NewMat(b.B, T)
	temp := t.cfg.ActorRolloutRef.Rollout.Temperature
	if err := t.noGradPass(b, []*algo.Mat{&b.refLogp}, func(s *torch.Scope, idx []int, ids, pos, attn *torch.Tensor) {
		lp, _ := t.deps.Ref.TokenLogProbs(s, ids, pos, attn, temp, false)
		copyRows(s, b.refLogp, idx, s.Narrow(lp, 1, 1, int64(T)))
	}); err != nil {
		return fmt.Errorf("reference log-probs: %w", err)
	}
	met[MetricRefLogProb] = algo.MaskedMean(b.refLogp.Data, b.mask.Data)
	return nil
}

// computeValues fills b.values = critic values · mask.
func (t *Trainer) computeValues(b *rows) error {
	T := b.T()
	b.values = algo.NewMat(b.B, T)
	if err := t.noGradPass(b, []*algo.Mat{&b.values}, func(s *torch.Scope, idx []int, ids, pos, attn *torch.Tensor) {
		v := t.deps.Critic.Values(s, ids, pos, attn)
		copyRows(s, b.values, idx, s.Narrow(v, 1, 0, int64(T)))
	}); err != nil {
		return fmt.Errorf("values: %w", err)
	}
	for k := range b.values.Data {
		b.values.Data[k] *= b.mask.Data[k]
	}
	return nil
}

// advantages computes token_level_rewards (optionally with the in-reward
// KL penalty), the estimator's advantages and returns, and the
// post-processing, in upstream's order. Without trainable tokens it only
// sets zero advantages.
func (t *Trainer) advantages(b *rows, keptRatio float64, met map[string]float64, trainable *bool) error {
	cfg := t.cfg
	T := b.T()
	rewards := b.scores
	if cfg.Algorithm.UseKLInReward {
		r, m, err := algo.ApplyKLPenalty(b.scores, b.oldLogp, b.refLogp, b.mask, cfg.Algorithm.KLPenalty, t.klCtrl)
		if err != nil {
			return fmt.Errorf("kl in reward: %w", err)
		}
		rewards = r
		maps.Copy(met, m)
		t.st.KLCoef = jsonFloat(t.klCtrl.Value)
	}
	b.rewards = rewards
	b.adv, b.returns = algo.NewMat(b.B, T), algo.NewMat(b.B, T)
	if !*trainable {
		return nil
	}
	est, err := algo.Estimator(cfg.Algorithm.AdvEstimator)
	if err != nil {
		return err
	}
	values := b.values
	if values.B == 0 {
		values = algo.NewMat(b.B, T)
	}
	out, m, err := est(algo.AdvantageInput{Rewards: rewards, Values: values, Mask: b.mask, UIDs: b.uids, EpisodeIDs: b.episodeIDs}, cfg.AdvantageConfig())
	if errors.Is(err, algo.ErrTooFewTokens) {
		// One masked token cannot be whitened: skip the update.
		*trainable = false
		return nil
	}
	if err != nil {
		return fmt.Errorf("advantages: %w", err)
	}
	maps.Copy(met, m)
	post := algo.PostConfig{Estimator: cfg.Algorithm.AdvEstimator, SoftAdvantageReweight: cfg.Algorithm.SoftAdvantageReweight,
		FilterLossScaling: cfg.ActorRolloutRef.Actor.FilterLossScaling, FilterKeptRatio: keptRatio,
		GRPOLengthWeight: cfg.GRPOAdvantageLengthWeight, ZeroTaskAdvantage: cfg.Algorithm.ZeroTaskAdvantage}
	adv, pm, err := algo.PostProcess(out.Advantages, b.mask, b.uids, out.GroupStd, post)
	if err != nil {
		return fmt.Errorf("advantage post-processing: %w", err)
	}
	maps.Copy(met, pm)
	b.adv, b.returns = adv, out.Returns
	return nil
}

// order returns the row order of one epoch: in order, or shuffled with a
// generator seeded by (seed, step, epoch) when shuffle is on.
func (t *Trainer) order(n int, shuffle bool, step, epoch int) []int {
	if !shuffle {
		return rowRange(0, n)
	}
	rng, err := pyrand.NewLegacy((t.cfg.Seed.Train*7919 + int64(step)*31 + int64(epoch)) & 0xffffffff)
	if err != nil {
		return rowRange(0, n)
	}
	return rng.Permutation(n)
}

// gradNorm is the global L2 norm of the parameters' gradients (0 without
// gradients), computed in one read.
func gradNorm(params []*torch.Tensor) (float64, error) {
	var n float64
	err := withScope(func(s *torch.Scope) error {
		var norms []*torch.Tensor
		for _, p := range params {
			g, err := p.Grad()
			if err != nil {
				return err
			}
			if g == nil {
				continue
			}
			norms = append(norms, s.Reshape(s.Cast(s.Norm(s.Own(g, nil), false), torch.Float64), 1))
		}
		if len(norms) == 0 {
			return nil
		}
		n = s.Item(s.Norm(s.Cat(norms, 0), false))
		return s.Err()
	})
	return n, err
}

// metricLists collects per-micro/mini-batch metric values; reduce averages
// them (veRL's reduce_metrics).
type metricLists map[string][]float64

// add appends one value per key; the keys upstream assigns instead of
// appending (algo.LastValueMetric: actor/kl_loss, actor/kl_coef) keep only
// the latest value.
func (l metricLists) add(m map[string]float64) {
	for k, v := range m {
		if algo.LastValueMetric(k) {
			l[k] = []float64{v}
			continue
		}
		l[k] = append(l[k], v)
	}
}

func (l metricLists) reduce(dst map[string]float64) {
	for k, vs := range l {
		s := 0.0
		for _, v := range vs {
			s += v
		}
		dst[k] = s / float64(len(vs))
	}
}

// updateLoop runs epochs × mini-batches × micro-batches with gradient
// accumulation; loss(s, idx) returns one micro-batch's loss tensor (before
// scaling) and its metrics. After each mini-batch the gradients are clipped
// to clip and, when the norm is finite, step(lr) is applied.
//
// globalTokenMean (ragen_global_token_mean with loss_agg_mode token-mean)
// weights each micro-batch's token-mean loss by its share of the
// mini-batch's masked tokens instead of 1/grad_accum, so the accumulated
// loss is the token mean over the whole mini-batch.
func (t *Trainer) updateLoop(b *rows, step int, params []*torch.Tensor, mini, micro, epochs int, shuffle, dynamic bool, budget int,
	clip float64, opt *torch.AdamW, lr float64, prefix string, globalTokenMean bool, loss func(s *torch.Scope, idx []int, nMicro int) (*torch.Tensor, MetricTensors)) (metricLists, error) {
	lists := metricLists{}
	if !dynamic {
		budget = 0
	}
	t.dp.begin()
	for epoch := 0; epoch < epochs; epoch++ {
		ord := t.order(b.B, shuffle, step, epoch)
		for lo := 0; lo < len(ord); lo += mini {
			mb := ord[lo:min(lo+mini, len(ord))]
			parts, weights, err := microBatches(mb, mini, micro, budget, b.tokens)
			if err != nil {
				return nil, err
			}
			if globalTokenMean {
				weights = tokenShareWeights(b.mask, parts, weights)
			}
			nMicro := len(parts) // the loss's divisor for logging: grad_accum by count
			if budget <= 0 {
				nMicro = gradAccum(mini, micro)
			}
			if err := torch.ZeroGrad(params); err != nil {
				return nil, err
			}
			own := t.dp.owned(parts, b.tokens)
			for k, part := range parts {
				if !own[k] {
					t.dp.skip()
					continue
				}
				if err := withScope(func(s *torch.Scope) error {
					l, mt := loss(s, part, nMicro)
					if s.Err() != nil {
						return s.Err()
					}
					if err := s.MulS(l, weights[k]).Backward(nil); err != nil {
						return err
					}
					t.dp.record(lists, mt.Read(s))
					return s.Err()
				}); err != nil {
					return nil, err
				}
			}
			var gn float64
			if t.dp != nil {
				gn, err = t.dp.step(prefix, opt, params, lr, clip) // reduce, clip, update (not when non-finite)
			} else {
				gn, err = torch.ClipGradNorm(params, clip)
			}
			if err != nil {
				return nil, err
			}
			lists[prefix+"/grad_norm"] = append(lists[prefix+"/grad_norm"], gn)
			if math.IsNaN(gn) || math.IsInf(gn, 0) {
				// veRL: "grad_norm is not finite", skip the step.
				lists[prefix+"/grad_norm_nonfinite"] = append(lists[prefix+"/grad_norm_nonfinite"], 1)
				if err := torch.ZeroGrad(params); err != nil {
					return nil, err
				}
				continue
			}
			if t.dp == nil {
				if err := opt.Step(lr); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := t.dp.gather(lists); err != nil {
		return nil, err
	}
	return lists, torch.ZeroGrad(params)
}

// tokenShareWeights returns, per micro-batch, its masked-token count over
// the mini-batch's (the fallback weights when the mini-batch has none).
func tokenShareWeights(mask algo.Mat, parts [][]int, fallback []float64) []float64 {
	n := make([]float64, len(parts))
	total := 0.0
	for k, part := range parts {
		for _, i := range part {
			n[k] += algoSum(mask.Row(i))
		}
		total += n[k]
	}
	if total == 0 {
		return fallback
	}
	for k := range n {
		n[k] /= total
	}
	return n
}

// updateCritic is veRL's critic update (starpo.md §6).
func (t *Trainer) updateCritic(b *rows, met map[string]float64) error {
	cr := t.cfg.Critic
	T := int64(b.T())
	params := t.deps.Critic.Trainable()
	lr := cr.Optim.LR * t.criticLR.Factor(t.st.CriticSchedSteps)
	lists, err := t.updateLoop(b, t.st.Step+1, params, cr.PPOMiniBatchSize, cr.PPOMicroBatchSizePerGPU, cr.PPOEpochs, cr.Shuffle,
		cr.UseDynamicBsz, cr.PPOMaxTokenLenPerGPU, cr.GradClip, t.criticOpt, lr, "critic",
		t.cfg.GlobalTokenMean && t.cfg.ValueLossConfig(1).LossAggMode == algo.TokenMean,
		func(s *torch.Scope, idx []int, nMicro int) (*torch.Tensor, MetricTensors) {
			ids, pos, attn := b.inputs(s, idx, t.dev)
			v := s.Narrow(t.deps.Critic.Values(s, ids, pos, attn), 1, 0, T)
			if s.Err() != nil {
				return nil, nil
			}
			dt := v.DType()
			l, mt := ValueLoss(s, v, matTensor(s, b.values, idx, dt, t.dev), matTensor(s, b.returns, idx, dt, t.dev),
				matTensor(s, b.mask, idx, dt, t.dev), t.cfg.ValueLossConfig(nMicro))
			if cr.UseDynamicBsz && l != nil {
				// veRL logs the loss as scaled for backward: rows/mini-batch
				// with dynamic micro-batches (1/grad_accum otherwise).
				mt[algo.MetricVFLoss] = s.MulS(s.Detach(l), float64(len(idx))/float64(cr.PPOMiniBatchSize))
			}
			return l, mt
		})
	if err != nil {
		return fmt.Errorf("critic update: %w", err)
	}
	lists.reduce(met)
	t.st.CriticSchedSteps++
	met[MetricCriticLR] = cr.Optim.LR * t.criticLR.Factor(t.st.CriticSchedSteps)
	return nil
}

// actorLossFn returns the micro-batch objective of the actor.
func (t *Trainer) actorLossFn(b *rows, acfg algo.ActorLossConfig) func(s *torch.Scope, idx []int, nMicro int) (*torch.Tensor, MetricTensors) {
	T := int64(b.T())
	temp := t.cfg.ActorRolloutRef.Rollout.Temperature
	return func(s *torch.Scope, idx []int, _ int) (*torch.Tensor, MetricTensors) {
		ids, pos, attn := b.inputs(s, idx, t.dev)
		lp, h := t.deps.Actor.TokenLogProbs(s, ids, pos, attn, temp, acfg.EntropyCoeff != 0)
		if s.Err() != nil {
			return nil, nil
		}
		lp = s.Narrow(lp, 1, 1, T)
		if h != nil {
			h = s.Narrow(h, 1, 1, T)
		}
		dt := lp.DType()
		var ref *torch.Tensor
		if acfg.UseKLLoss {
			ref = matTensor(s, b.refLogp, idx, dt, t.dev)
		}
		in := ActorLossInput{LogProbs: lp, Entropy: h, OldLogProbs: matTensor(s, b.oldLogp, idx, dt, t.dev), RefLogProbs: ref,
			Advantages: matTensor(s, b.adv, idx, dt, t.dev), Mask: matTensor(s, b.mask, idx, dt, t.dev)}
		if t.deps.ActorLoss != nil {
			loss, met := t.deps.ActorLoss(s, in, acfg)
			if s.Err() == nil && (loss == nil || loss.Dim() != 0) {
				s.Errorf("starpo.Deps.ActorLoss", "the custom actor loss must return a scalar (got shape %v)", loss.Shape())
			}
			return loss, met
		}
		return DefaultActorLoss(s, in, acfg)
	}
}

// updateActor is RAGEN dp_actor's update (starpo.md §5).
func (t *Trainer) updateActor(b *rows, met map[string]float64) error {
	a := t.cfg.ActorRolloutRef.Actor
	params := t.deps.Actor.Trainable()
	lr := a.Optim.LR * t.actorLR.Factor(t.st.ActorSchedSteps)
	lists, err := t.updateLoop(b, t.st.Step+1, params, a.PPOMiniBatchSize, a.PPOMicroBatchSizePerGPU, a.PPOEpochs, a.Shuffle,
		a.UseDynamicBsz, a.PPOMaxTokenLenPerGPU, a.GradClip, t.actorOpt, lr, "actor",
		t.cfg.GlobalTokenMean && a.LossAggMode == algo.TokenMean, t.actorLossFn(b, t.cfg.ActorLossConfig()))
	if err != nil {
		return fmt.Errorf("actor update: %w", err)
	}
	lists.reduce(met)
	if !t.cfg.UpstreamFrozenLR {
		// veRL's own worker: step the scheduler, log the LR after it.
		t.st.ActorSchedSteps++
		met[MetricActorLR] = a.Optim.LR * t.actorLR.Factor(t.st.ActorSchedSteps)
	}
	return nil
}

// gradientAnalysis measures, per reward-std bucket, the gradient norms of
// the task (policy), entropy and KL terms separately, without an optimizer
// step, and logs them under filter's grad_norm/<bucket>/... names.
func (t *Trainer) gradientAnalysis(b *rows, met map[string]float64) error {
	if b.rewardStd == nil {
		return errors.New("gradient analysis needs per-row reward_std (a reward rollout_filter_metric)")
	}
	buckets, err := filter.SplitBuckets(b.rewardStd, b.uids, t.deps.Filter)
	if err != nil {
		return fmt.Errorf("gradient analysis: %w", err)
	}
	a := t.cfg.ActorRolloutRef.Actor
	params := t.deps.Actor.Trainable()
	full := t.cfg.ActorLossConfig()
	task := full
	task.EntropyCoeff, task.UseKLLoss = 0, false
	var bgs []filter.BucketGrad
	for _, bk := range buckets {
		// Upstream trims every bucket to a multiple of n_gpus_per_node.
		n, ok := filter.DataParallelTrim(len(bk.Rows), t.cfg.Trainer.NGPUsPerNode)
		if !ok {
			continue
		}
		sub := b.selectRows(bk.Rows[:n])
		lists := metricLists{}
		// As RAGEN's dp_actor in grad_component_analysis mode: per component
		// (task = pg_loss; entropy = −coeff·agg(H); kl = coef·agg(kl)) and
		// per mini-batch, zero the gradients, backward every micro-batch
		// (÷ grad_accum), record the gradient norm (no optimizer step).
		// actor/loss/{policy,entropy,kl} are the per-micro-batch component
		// values, actor/loss/total their sum; all lists are averaged.
		lossFn := t.actorLossFn(sub, task)
		var total []float64
		for _, comp := range []string{"task", "entropy", "kl"} {
			if comp == "entropy" && full.EntropyCoeff == 0 || comp == "kl" && !full.UseKLLoss {
				continue
			}
			name := comp
			if comp == "task" {
				name = "policy"
			}
			k := 0
			for lo := 0; lo < sub.B; lo += a.PPOMiniBatchSize {
				if err := torch.ZeroGrad(params); err != nil {
					return err
				}
				mb := rowRange(lo, min(lo+a.PPOMiniBatchSize, sub.B))
				parts, weights, err := microBatches(mb, a.PPOMiniBatchSize, a.PPOMicroBatchSizePerGPU, 0, sub.tokens)
				if err != nil {
					return err
				}
				for j, part := range parts {
					if err := withScope(func(s *torch.Scope) error {
						l, _ := t.componentLoss(s, sub, part, comp, full, lossFn)
						if s.Err() != nil {
							return s.Err()
						}
						v := s.Item(l)
						lists[filter.ActorLossPrefix+name] = append(lists[filter.ActorLossPrefix+name], v)
						if k == len(total) {
							total = append(total, 0)
						}
						total[k] += v
						k++
						return s.MulS(l, weights[j]).Backward(nil)
					}); err != nil {
						return err
					}
				}
				gn, err := gradNorm(params)
				if err != nil {
					return err
				}
				lists[filter.ActorGradNormPrefix+comp] = append(lists[filter.ActorGradNormPrefix+comp], gn)
			}
		}
		lists[filter.ActorLossPrefix+"total"] = total
		if err := torch.ZeroGrad(params); err != nil {
			return err
		}
		bgs = append(bgs, filter.BucketGrad{Bucket: bk, SampleCount: n, TotalSamples: b.B,
			NumTokens: algoSum(sub.mask.Data), ActorMetrics: lists})
	}
	gm, err := filter.GradientMetrics(filter.PrefixGradNorm, bgs, true)
	if err != nil {
		return fmt.Errorf("gradient analysis: %w", err)
	}
	maps.Copy(met, gm)
	// The analysis always runs on the training batch here (no separate
	// analysis rollout), which upstream reports as:
	met[filter.MetricGAUsesTrainingBatch] = 1
	return nil
}

// componentLoss is one term of the actor objective for a micro-batch.
func (t *Trainer) componentLoss(s *torch.Scope, b *rows, idx []int, comp string, full algo.ActorLossConfig,
	task func(*torch.Scope, []int, int) (*torch.Tensor, MetricTensors)) (*torch.Tensor, MetricTensors) {
	if comp == "task" {
		return task(s, idx, 0)
	}
	T := int64(b.T())
	ids, pos, attn := b.inputs(s, idx, t.dev)
	lp, h := t.deps.Actor.TokenLogProbs(s, ids, pos, attn, t.cfg.ActorRolloutRef.Rollout.Temperature, comp == "entropy")
	if s.Err() != nil {
		return nil, nil
	}
	lp = s.Narrow(lp, 1, 1, T)
	dt := lp.DType()
	m := matTensor(s, b.mask, idx, dt, t.dev)
	mode := full.Policy.LossAggMode
	if comp == "entropy" {
		return s.MulS(AggLoss(s, s.Narrow(h, 1, 1, T), m, mode), -full.EntropyCoeff), nil
	}
	ref := matTensor(s, b.refLogp, idx, dt, t.dev)
	return s.MulS(AggLoss(s, KLPenalty(s, lp, ref, full.KLLossType), m, mode), full.KLLossCoef), nil
}
