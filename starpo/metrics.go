package starpo

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"ragen/env"
	"ragen/internal/pyrand"
	"ragen/ragen"
	"ragen/starpo/algo"
)

// dataMetrics adds veRL's compute_data_metrics (critic/score, rewards,
// advantages, returns, values, response_length, prompt_length).
func (t *Trainer) dataMetrics(b *rows, met map[string]float64) error {
	T := b.T()
	resp := make([]float64, b.B)
	prompt := make([]float64, b.B)
	for i := 0; i < b.B; i++ {
		a := b.attn[i*b.L : (i+1)*b.L]
		prompt[i] = float64(a[0])
		for _, v := range a[1:] {
			resp[i] += float64(v)
		}
	}
	rewards := b.rewards
	if rewards.B == 0 {
		rewards = b.scores
	}
	in := algo.DataMetricsInput{Scores: b.scores, Rewards: rewards, Advantages: b.adv, Returns: b.returns,
		Mask: b.mask, ResponseLengths: resp, MaxResponseLength: T, PromptLengths: prompt, MaxPromptLength: 1}
	if t.deps.Critic != nil {
		in.Values = b.values
	}
	if in.Advantages.B == 0 {
		in.Advantages, in.Returns = algo.NewMat(b.B, T), algo.NewMat(b.B, T)
	}
	dm, err := algo.DataMetrics(in)
	if err != nil {
		if algoSum(b.mask.Data) == 0 {
			return nil // nothing to describe over masked tokens
		}
		return fmt.Errorf("data metrics: %w", err)
	}
	for k, v := range dm {
		met[k] = v
	}
	return nil
}

// perfMetrics adds veRL's throughput and per-token timing metrics and the
// MFU of the updates (6·N FLOPs per token and parameter for a forward and
// backward pass, over ppo_epochs) when a peak FLOP/s is configured.
func (t *Trainer) perfMetrics(b *rows, tm timer, met map[string]float64) {
	total, resp := 0.0, 0.0
	for i := 0; i < b.B; i++ {
		a := b.attn[i*b.L : (i+1)*b.L]
		for j, v := range a {
			total += float64(v)
			if j > 0 {
				resp += float64(v)
			}
		}
	}
	step := tm["step"]
	ngpu := float64(max(t.cfg.Trainer.NGPUsPerNode*t.cfg.Trainer.NNodes, 1))
	met[MetricTotalTokens] = total
	met[MetricTimePerStep] = step
	if step > 0 {
		met[MetricThroughput] = total / (step * ngpu)
		met[MetricTokensPerS] = total / step
	}
	for _, name := range []string{"gen", "ref", "values", "adv", "update_critic", "update_actor"} {
		v, ok := tm[name]
		if !ok {
			continue
		}
		n := total
		if name == "gen" {
			n = resp
		}
		if n > 0 {
			met["timing_per_token_ms/"+name] = v * 1000 / n
		}
	}
	if t.cfg.PeakFLOPs > 0 {
		if s := tm["update_actor"]; s > 0 {
			flops := 6 * float64(t.actorParams) * total * float64(t.cfg.ActorRolloutRef.Actor.PPOEpochs)
			met[MetricMFUActor] = flops / (s * t.cfg.PeakFLOPs * ngpu)
		}
		if s := tm["update_critic"]; s > 0 {
			flops := 6 * float64(t.criticParams) * total * float64(t.cfg.Critic.PPOEpochs)
			met[MetricMFUCritic] = flops / (s * t.cfg.PeakFLOPs * ngpu)
		}
	}
}

// Validate runs validation_steps rollouts with the validation envs (seed.val
// every time, as upstream; new seeds with ragen_fresh_val_seeds) and returns val-env/<key> (mean over the validation steps of
// every rollout metric) and veRL's val-core/val-aux reward metrics.
func (t *Trainer) Validate(ctx context.Context) (map[string]float64, error) {
	sums := map[string]float64{}
	counts := map[string]int{}
	var rewards []float64
	for i := 0; i < t.cfg.Trainer.ValidationSteps; i++ {
		seed := t.cfg.Seed.Val
		if t.cfg.FreshValSeeds {
			seed += int64(t.st.Step*t.cfg.Trainer.ValidationSteps+i) * int64(t.cfg.ESManager.Val.EnvGroups)
		}
		b, err := t.deps.Rollout(ctx, env.ModeVal, ragen.RolloutOptions{Seed: &seed, Shard: t.dp.shard()})
		if err != nil {
			return nil, fmt.Errorf("starpo: validation rollout: %w", err)
		}
		if b == nil {
			return nil, fmt.Errorf("starpo: validation rollout returned no batch")
		}
		for k, v := range b.Metrics {
			sums[k] += v
			counts[k]++
		}
		rewards = append(rewards, validationScores(b, t.cfg.AgentProxy.TurnLevel())...)
	}
	met := make(map[string]float64, len(sums)+8)
	for k, v := range sums {
		met["val-env/"+k] = v / float64(counts[k])
	}
	for k, v := range ValidationRewardMetrics(rewards) {
		met[k] = v
	}
	return met, nil
}

// validationScores is Σ rm_scores per sample; in the turn-level modes
// upstream scores each episode once, with its first row's score, in order
// of first appearance.
func validationScores(b *ragen.Batch, turnLevel bool) []float64 {
	rowScore := func(i int) float64 {
		s := 0.0
		for _, v := range b.RMScores[i] {
			s += float64(v)
		}
		return s
	}
	var out []float64
	if turnLevel && len(b.EpisodeIDs) == len(b.RMScores) {
		seen := map[int]bool{}
		for i, e := range b.EpisodeIDs {
			if !seen[e] {
				seen[e] = true
				out = append(out, rowScore(i))
			}
		}
		return out
	}
	for i := range b.RMScores {
		out = append(out, rowScore(i))
	}
	return out
}

// ValidationRewardMetrics is veRL's process_validation_metrics for RAGEN's
// validation batch, where every sample has data source "unknown" and the
// same (empty) prompt, so the N samples form one group:
//
//	val-core/unknown/reward/mean@N
//	val-aux/unknown/reward/std@N                     (N > 1, population std)
//	val-{core,aux}/unknown/reward/{best,worst}@k/{mean,std}  k = 2, 4, 8, …, N
//
// best/worst are bootstrap estimates (1000 resamples with replacement,
// NumPy's legacy generator seeded with 42 for every k); names with k = N
// and mean or best are val-core, the others val-aux.
func ValidationRewardMetrics(rewards []float64) map[string]float64 {
	n := len(rewards)
	met := map[string]float64{}
	if n == 0 {
		return met
	}
	const pfx = "/unknown/reward/"
	sec := func(name string, k int) string {
		if k == n && (len(name) >= 4 && name[:4] == "mean" || len(name) >= 4 && name[:4] == "best") {
			return "val-core" + pfx + name
		}
		return "val-aux" + pfx + name
	}
	mean, std := meanStd(rewards)
	met[sec(fmt.Sprintf("mean@%d", n), n)] = mean
	if n > 1 {
		met[sec(fmt.Sprintf("std@%d", n), n)] = std
		var ks []int
		for k := 2; k < n; k *= 2 {
			ks = append(ks, k)
		}
		ks = append(ks, n)
		for _, k := range ks {
			bm, bs, wm, ws := bootstrapBestWorst(rewards, k, 1000, 42)
			met[sec(fmt.Sprintf("best@%d/mean", k), k)] = bm
			met[sec(fmt.Sprintf("best@%d/std", k), k)] = bs
			met[sec(fmt.Sprintf("worst@%d/mean", k), k)] = wm
			met[sec(fmt.Sprintf("worst@%d/std", k), k)] = ws
		}
	}
	return met
}

// meanStd is np.mean and np.std (population) with NumPy's pairwise
// summation, so that the bootstrap statistics round as upstream's do.
func meanStd(x []float64) (mean, std float64) {
	n := float64(len(x))
	mean = pairwiseSum(x) / n
	d := make([]float64, len(x))
	for i, v := range x {
		d[i] = (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(pairwiseSum(d) / n)
}

// pairwiseSum is NumPy's pairwise_sum for float64 (blocks of 128 summed
// with 8 accumulators, halves split at multiples of 8).
func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		s := 0.0
		for _, v := range a {
			s += v
		}
		return s
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for k := 0; k < 8; k++ {
				r[k] += a[i+k]
			}
		}
		s := (r[0] + r[1]) + (r[2] + r[3]) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			s += a[i]
		}
		return s
	}
	n2 := n / 2
	n2 -= n2 % 8
	return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
}

// bootstrapBestWorst is veRL's bootstrap_metric with reduce_fns [max, min]:
// np.random.seed(seed), then nBoot draws of np.random.choice(len, k,
// replace=True); returns (mean, std) of the maxima and of the minima.
func bootstrapBestWorst(data []float64, k, nBoot int, seed int64) (bm, bs, wm, ws float64) {
	rng, err := pyrand.NewLegacy(seed)
	if err != nil {
		return math.NaN(), math.NaN(), math.NaN(), math.NaN()
	}
	best := make([]float64, nBoot)
	worst := make([]float64, nBoot)
	for i := 0; i < nBoot; i++ {
		hi, lo := math.Inf(-1), math.Inf(1)
		for j := 0; j < k; j++ {
			v := data[rng.RandIntN(len(data))]
			hi, lo = math.Max(hi, v), math.Min(lo, v)
		}
		best[i], worst[i] = hi, lo
	}
	bm, bs = meanStd(best)
	wm, ws = meanStd(worst)
	return
}

// sortedKeys lists a metric map's keys in order (for stable logs).
func sortedKeys(m map[string]float64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return slices.Clip(ks)
}
