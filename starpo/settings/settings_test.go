package settings

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"ragen/starpo/algo"
)

func TestDefaultConfigMatchesBaseYAML(t *testing.T) {
	c := DefaultConfig()
	require.NoError(t, c.Validate())
	a := c.ActorRolloutRef.Actor
	assert.Equal(t, 32, a.PPOMiniBatchSize)
	assert.Equal(t, 1, a.PPOMicroBatchSizePerGPU)
	assert.Equal(t, 0.001, a.EntropyCoeff)
	assert.Equal(t, 0.2, *a.ClipRatioLow)
	assert.Equal(t, 0.28, *a.ClipRatioHigh)
	assert.Equal(t, 3.0, a.ClipRatioC)
	assert.Equal(t, "token-mean", a.LossAggMode)
	assert.Equal(t, 1e-6, a.Optim.LR)
	assert.Equal(t, []float64{0.9, 0.999}, a.Optim.Betas)
	assert.Equal(t, 1e-5, c.Critic.Optim.LR)
	assert.Equal(t, 0.5, c.Critic.ClipRangeValue)
	assert.Equal(t, "gae", c.Algorithm.AdvEstimator)
	assert.Equal(t, 200, c.Trainer.TotalTrainingSteps)
	assert.Equal(t, 100, c.Trainer.SaveFreq)
	assert.Equal(t, 10, c.Trainer.TestFreq)
	assert.Equal(t, 1, *c.Trainer.MaxActorCkptToKeep)
	assert.Equal(t, 5, c.ActorRolloutRef.Rollout.EmptyStopSteps)
	assert.True(t, c.CriticEnabled()) // null enable + gae
	c.Algorithm.AdvEstimator = algo.EstGRPO
	assert.False(t, c.CriticEnabled())
	on := true
	c.Critic.Enable = &on
	assert.True(t, c.CriticEnabled())
	// lcm(env_groups 8, mini 32, gpus 1) = 32
	assert.Equal(t, 32, DefaultConfig().BatchDivisor())
}

func TestConfigYAMLKeys(t *testing.T) {
	src := `
actor_rollout_ref:
  actor:
    ppo_mini_batch_size: 8
    clip_ratio_high: 0.3
    loss_agg_mode: seq-mean-token-mean
    optim: {lr: 2.0e-6, warmup_style: cosine, lr_warmup_steps_ratio: 0.1}
algorithm: {adv_estimator: grpo, kl_ctrl: {type: adaptive}}
trainer: {total_training_steps: 7, resume_mode: disable, max_actor_ckpt_to_keep: null}
`
	c := DefaultConfig()
	require.NoError(t, yaml.Unmarshal([]byte(src), &c))
	assert.Equal(t, 8, c.ActorRolloutRef.Actor.PPOMiniBatchSize)
	assert.Equal(t, 0.3, *c.ActorRolloutRef.Actor.ClipRatioHigh)
	assert.Equal(t, 0.2, *c.ActorRolloutRef.Actor.ClipRatioLow) // untouched
	assert.Equal(t, "cosine", c.ActorRolloutRef.Actor.Optim.WarmupStyle)
	assert.Equal(t, 0.1, c.ActorRolloutRef.Actor.Optim.LRWarmupStepsRatio)
	assert.Equal(t, "adaptive", c.Algorithm.KLCtrl.Type)
	assert.Equal(t, 10000.0, c.Algorithm.KLCtrl.Horizon)
	assert.Nil(t, c.Trainer.MaxActorCkptToKeep)
	assert.NoError(t, c.Validate())
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	cases := []struct {
		name string
		edit func(c *Config)
		want []string
	}{
		{"micro not dividing mini", func(c *Config) { c.ActorRolloutRef.Actor.PPOMicroBatchSizePerGPU = 3 },
			[]string{"actor_rollout_ref.actor.ppo_mini_batch_size: 32 is not a multiple of ppo_micro_batch_size_per_gpu x n_gpus_per_node = 3 x 1 = 3; nearest fitting: 30 or 33"}},
		{"several at once", func(c *Config) {
			c.ActorRolloutRef.Actor.LossAggMode = "token-sum"
			c.ActorRolloutRef.Actor.Optim.WarmupStyle = "linear"
			c.Trainer.ResumeMode = "latest"
			c.AgentProxy.BatchAdjustMode = "pad"
		}, []string{"token-sum", `actor_rollout_ref.actor.optim.warmup_style: unknown value "linear"; valid: constant, cosine`, `trainer.resume_mode: unknown value "latest"`, `agent_proxy.batch_adjust_mode: unknown value "pad"`}},
		{"context window mode", func(c *Config) { c.AgentProxy.ContextWindowMode = "limited" },
			[]string{`agent_proxy.context_window_mode: unknown value "limited"`}},
		{"train env groups", func(c *Config) { c.ESManager.Train.EnvGroups = 0 }, []string{"es_manager.train.env_groups: must be >= 1, got 0"}},
		{"remax refused", func(c *Config) { c.Algorithm.AdvEstimator = "remax" }, []string{"algorithm.adv_estimator: remax is not supported"}},
		{"unknown estimator", func(c *Config) { c.Algorithm.AdvEstimator = "opo" }, []string{"algorithm.adv_estimator", "opo"}},
		{"bi-level needs gae", func(c *Config) { c.Algorithm.AdvEstimator, c.Algorithm.BiLevelGAE = "grpo", true },
			[]string{"algorithm.bi_level_gae: requires algorithm.adv_estimator=gae (found grpo)"}},
		{"dual clip c", func(c *Config) { c.ActorRolloutRef.Actor.ClipRatioC = 1 }, []string{"actor_rollout_ref.actor.clip_ratio_c: 1 is out of range"}},
		{"gamma", func(c *Config) { c.Algorithm.Gamma = 1.5 }, []string{"algorithm.gamma: 1.5 is out of range: want 0 <= x <= 1"}},
		{"adaptive horizon", func(c *Config) {
			c.Algorithm.UseKLInReward, c.Algorithm.KLCtrl.Type, c.Algorithm.KLCtrl.Horizon = true, algo.KLCtrlAdaptive, 0
		},
			[]string{"algorithm.kl_ctrl.horizon: 0 is out of range"}},
		{"kl in reward without ref", func(c *Config) {
			c.Algorithm.UseKLInReward, c.ActorRolloutRef.Actor.UseRef = true, false
		}, []string{"algorithm.use_kl_in_reward: needs a reference model"}},
		{"dashed kl name", func(c *Config) { c.Algorithm.UseKLInReward, c.Algorithm.KLPenalty = true, "low-var-kl" },
			[]string{`algorithm.kl_penalty`, "low-var-kl"}},
		{"resume path", func(c *Config) { c.Trainer.ResumeMode = ResumePath }, []string{"trainer.resume_from_path: is empty but trainer.resume_mode=resume_path"}},
		{"critic batch", func(c *Config) { c.Critic.PPOMicroBatchSizePerGPU = 5 }, []string{"critic.ppo_mini_batch_size: 32 is not a multiple"}},
		{"betas", func(c *Config) { c.ActorRolloutRef.Actor.Optim.Betas = []float64{0.9} }, []string{"actor_rollout_ref.actor.optim.betas: want two numbers [beta1, beta2], found [0.9]"}},
		{"temperature", func(c *Config) { c.ActorRolloutRef.Rollout.Temperature = 0 }, []string{"actor_rollout_ref.rollout.temperature: 0 is out of range: want > 0"}},
		{"negative keep", func(c *Config) { k := -1; c.Trainer.MaxActorCkptToKeep = &k }, []string{"trainer.max_actor_ckpt_to_keep: -1 is out of range: want >= 0"}},
		{"lr", func(c *Config) { c.Critic.Optim.LR = 0 }, []string{"critic.optim.lr: 0 is out of range: want > 0"}},
		{"steps", func(c *Config) { c.Trainer.TotalTrainingSteps = 0 }, []string{"trainer.total_training_steps: 0 is out of range: want >= 1"}},
		{"gpus", func(c *Config) { c.Trainer.NNodes = 0 }, []string{"trainer.nnodes: must be >= 1, got 0"}},
		{"clip ratio", func(c *Config) { c.ActorRolloutRef.Actor.ClipRatioLow = algo.Float(-0.1) }, []string{"actor_rollout_ref.actor.clip_ratio_low: -0.1 is out of range: want >= 0"}},
		{"filter scaling", func(c *Config) { c.ActorRolloutRef.Actor.FilterLossScaling = "cube" }, []string{`actor_rollout_ref.actor.filter_loss_scaling: unknown value "cube"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			require.Error(t, err)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}

func TestLRSchedule(t *testing.T) {
	// constant, W = 4: n/4 during warm-up, then 1.
	c := LRSchedule{Warmup: 4, Total: 10, Style: WarmupConstant}
	for n, want := range map[int]float64{0: 0, 2: 0.5, 4: 1, 100: 1} {
		assert.InDelta(t, want, c.Factor(n), 1e-15, "constant %d", n)
	}
	// cosine, W = 2, total 10, r = 0.1, cycles 0.5: coef 0.45, intercept 0.55.
	// n=0: warm-up starts at r = 0.1; n=1: 0.1 + 0.9·1/2 = 0.55; n=2: p=0 → 1;
	// n=6: p=0.5 → cos(π/2)=0 → 0.55; n=10: p=1 → cos(π)=−1 → 0.1;
	// n=12: p=1.25 → cos(1.25π)·0.45+0.55 ≈ 0.232.
	k := LRSchedule{Warmup: 2, Total: 10, Style: WarmupCosine, MinLRRatio: 0.1, NumCycles: 0.5}
	for n, want := range map[int]float64{0: 0.1, 1: 0.55, 2: 1, 6: 0.55, 10: 0.1, 12: math.Cos(1.25*math.Pi)*0.45 + 0.55} {
		assert.InDelta(t, want, k.Factor(n), 1e-12, "cosine %d", n)
	}
	// warm-up steps: int(0.25·10) = 2; an explicit lr_warmup_steps wins.
	o := DefaultConfig().ActorRolloutRef.Actor.Optim
	o.LRWarmupStepsRatio = 0.25
	assert.Equal(t, 2, NewLRSchedule(o, 10).Warmup)
	o.LRWarmupSteps = 3
	assert.Equal(t, 3, NewLRSchedule(o, 10).Warmup)
	// W = 0: the step-0 factor is 1 (max(1, W) guards the division).
	assert.Equal(t, 1.0, LRSchedule{Style: WarmupConstant}.Factor(0))
	assert.False(t, math.IsNaN(LRSchedule{Style: WarmupCosine, NumCycles: 0.5}.Factor(0)))
}
