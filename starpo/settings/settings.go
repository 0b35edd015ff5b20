package settings

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"

	"ragen/config/rule"
	"ragen/ragen"
	"ragen/starpo/algo"
)

// Config is the part of upstream's config tree the trainer reads. The yaml
// tags are upstream's key names (RAGEN config/base.yaml on veRL's
// ppo_trainer); the CLI composes the YAML tree and decodes it onto
// DefaultConfig(). Fields tagged with a "ragen_" key have no upstream
// counterpart.
type Config struct {
	ModelPath string `yaml:"model_path"`
	// GRPOAdvantageLengthWeight divides GRPO advantages by the relative
	// response length (grpo_advantage_length_weight).
	GRPOAdvantageLengthWeight bool `yaml:"grpo_advantage_length_weight"`

	Seed            SeedConfig            `yaml:"seed"`
	ActorRolloutRef ActorRolloutRefConfig `yaml:"actor_rollout_ref"`
	Critic          CriticConfig          `yaml:"critic"`
	Algorithm       AlgorithmConfig       `yaml:"algorithm"`
	Trainer         TrainerConfig         `yaml:"trainer"`
	// ESManager and AgentProxy are the rollout core's blocks (the trainer
	// reads es_manager.train's sizes, agent_proxy's context window and
	// batch adjust modes).
	ESManager  ragen.ESManagerConfig  `yaml:"es_manager"`
	AgentProxy ragen.AgentProxyConfig `yaml:"agent_proxy"`

	// PeakFLOPs is the accelerator's peak FLOP/s used for perf/mfu/*
	// (0 = do not log MFU). No upstream key (veRL looks the GPU up).
	PeakFLOPs float64 `yaml:"ragen_peak_flops"`
	// UpstreamFrozenLR keeps upstream RAGEN's behaviour of never advancing
	// the actor's LR scheduler (the LR stays at its step-0 value, so a
	// warm-up keeps it at 0 forever) and logging no actor/lr. Default true
	// (upstream; with the default constant schedule and no warm-up the LR
	// is the same either way). false: the scheduler advances once per actor
	// update and actor/lr is logged, as veRL's own actor worker does.
	UpstreamFrozenLR bool `yaml:"ragen_upstream_frozen_lr"`
	// GlobalTokenMean makes loss_agg_mode token-mean a token mean over the
	// whole mini-batch (each micro-batch's loss weighted by its share of
	// the mini-batch's masked tokens). Default false = upstream: every
	// micro-batch is aggregated on its own and the micro-batch losses are
	// averaged, so with ppo_micro_batch_size_per_gpu 1 token-mean behaves
	// like seq-mean-token-mean. Applies to the actor and the critic.
	GlobalTokenMean bool `yaml:"ragen_global_token_mean"`
	// FreshValSeeds (default false = upstream, overview quirk 5): every
	// validation rollout draws new seeds, seed.val + (step ·
	// validation_steps + i) · es_manager.val.env_groups, instead of
	// seed.val each time. Derived from the step, so a resumed run
	// validates on the same seeds.
	FreshValSeeds bool `yaml:"ragen_fresh_val_seeds"`
}

// SeedConfig is seed.*.
type SeedConfig struct {
	Train int64 `yaml:"train"` // base seed of the training rollouts (10000)
	Val   int64 `yaml:"val"`   // seed of every validation rollout (123)
}

// ActorRolloutRefConfig is actor_rollout_ref.*.
type ActorRolloutRefConfig struct {
	Actor   ActorConfig   `yaml:"actor"`
	Rollout RolloutConfig `yaml:"rollout"`
}

// OptimConfig is the optim.* block of the actor and the critic (veRL).
type OptimConfig struct {
	LR          float64   `yaml:"lr"`
	Betas       []float64 `yaml:"betas"` // [β1, β2]
	WeightDecay float64   `yaml:"weight_decay"`
	// LRWarmupSteps overrides the ratio when ≥ 0 (lr_warmup_steps, -1).
	LRWarmupSteps int `yaml:"lr_warmup_steps"`
	// LRWarmupStepsRatio · total_training_steps warm-up steps (0).
	LRWarmupStepsRatio float64 `yaml:"lr_warmup_steps_ratio"`
	// WarmupStyle is constant or cosine.
	WarmupStyle string  `yaml:"warmup_style"`
	MinLRRatio  float64 `yaml:"min_lr_ratio"` // cosine floor (0.0)
	NumCycles   float64 `yaml:"num_cycles"`   // cosine cycles (0.5)
}

// ActorConfig is actor_rollout_ref.actor.*.
type ActorConfig struct {
	PPOMiniBatchSize        int     `yaml:"ppo_mini_batch_size"`          // trajectories per optimizer step (32)
	PPOMicroBatchSizePerGPU int     `yaml:"ppo_micro_batch_size_per_gpu"` // rows per forward/backward (1)
	UseRef                  bool    `yaml:"use_ref"`                      // compute reference log-probs (true)
	EntropyCoeff            float64 `yaml:"entropy_coeff"`                // 0.001
	UseKLLoss               bool    `yaml:"use_kl_loss"`                  // false
	KLLossCoef              float64 `yaml:"kl_loss_coef"`                 // 0.0
	KLLossType              string  `yaml:"kl_loss_type"`                 // kl
	ClipRatio               float64 `yaml:"clip_ratio"`                   // ε (0.2)
	// ClipRatioLow/High are ε_low/ε_high (0.2/0.28); nil falls back to ClipRatio.
	ClipRatioLow      *float64 `yaml:"clip_ratio_low"`
	ClipRatioHigh     *float64 `yaml:"clip_ratio_high"`
	ClipRatioC        float64  `yaml:"clip_ratio_c"`        // dual-clip c (3.0)
	LossAggMode       string   `yaml:"loss_agg_mode"`       // token-mean
	FilterLossScaling string   `yaml:"filter_loss_scaling"` // none, linear, sqrt
	PPOEpochs         int      `yaml:"ppo_epochs"`          // 1
	Shuffle           bool     `yaml:"shuffle"`             // false
	GradClip          float64  `yaml:"grad_clip"`           // 1.0
	// UseDynamicBsz packs micro-batches by token budget
	// (PPOMaxTokenLenPerGPU) instead of by row count.
	UseDynamicBsz        bool        `yaml:"use_dynamic_bsz"`
	PPOMaxTokenLenPerGPU int         `yaml:"ppo_max_token_len_per_gpu"` // 16384
	Optim                OptimConfig `yaml:"optim"`
}

// RolloutConfig is the part of actor_rollout_ref.rollout.* the trainer reads
// (the filter keys live in filter.Config).
type RolloutConfig struct {
	Temperature float64 `yaml:"temperature"` // logits ÷ temperature for log-probs (1.0)
	// LogProbMicroBatchSizePerGPU is the row count of the no-grad log-prob
	// and value passes (log_prob_micro_batch_size_per_gpu; 0 = the actor's
	// micro batch).
	LogProbMicroBatchSizePerGPU int `yaml:"log_prob_micro_batch_size_per_gpu"`
	// EmptyStopSteps stops training after this many consecutive empty
	// filtered batches (rollout_filter_empty_stop_steps, 5; 0 disables).
	EmptyStopSteps int `yaml:"rollout_filter_empty_stop_steps"`
}

// CriticConfig is critic.*.
type CriticConfig struct {
	// Enable: nil means "on iff adv_estimator is gae" (upstream's null).
	Enable                  *bool       `yaml:"enable"`
	PPOMiniBatchSize        int         `yaml:"ppo_mini_batch_size"`
	PPOMicroBatchSizePerGPU int         `yaml:"ppo_micro_batch_size_per_gpu"`
	ClipRangeValue          float64     `yaml:"cliprange_value"` // 0.5
	LossAggMode             string      `yaml:"loss_agg_mode"`   // "" = the actor's
	PPOEpochs               int         `yaml:"ppo_epochs"`
	Shuffle                 bool        `yaml:"shuffle"`
	GradClip                float64     `yaml:"grad_clip"`
	UseDynamicBsz           bool        `yaml:"use_dynamic_bsz"`
	PPOMaxTokenLenPerGPU    int         `yaml:"ppo_max_token_len_per_gpu"` // 32768
	Optim                   OptimConfig `yaml:"optim"`
}

// KLCtrlConfig is algorithm.kl_ctrl.
type KLCtrlConfig struct {
	Type     string  `yaml:"type"`      // fixed or adaptive
	KLCoef   float64 `yaml:"kl_coef"`   // β (0.0)
	TargetKL float64 `yaml:"target_kl"` // 0.1
	Horizon  float64 `yaml:"horizon"`   // 10000
}

// AlgorithmConfig is algorithm.*.
type AlgorithmConfig struct {
	Gamma                 float64      `yaml:"gamma"`
	Lam                   float64      `yaml:"lam"`
	HighLevelGamma        float64      `yaml:"high_level_gamma"`
	AdvEstimator          string       `yaml:"adv_estimator"`
	BiLevelGAE            bool         `yaml:"bi_level_gae"`
	ZeroTaskAdvantage     bool         `yaml:"zero_task_advantage"`
	NormAdvByStdInGRPO    bool         `yaml:"norm_adv_by_std_in_grpo"`
	SoftAdvantageReweight bool         `yaml:"soft_advantage_reweight"`
	UseKLInReward         bool         `yaml:"use_kl_in_reward"`
	KLPenalty             string       `yaml:"kl_penalty"`
	KLCtrl                KLCtrlConfig `yaml:"kl_ctrl"`
}

// TrainerConfig is trainer.*.
type TrainerConfig struct {
	ProjectName         string `yaml:"project_name"`
	ExperimentName      string `yaml:"experiment_name"`
	TotalTrainingSteps  int    `yaml:"total_training_steps"`
	SaveFreq            int    `yaml:"save_freq"` // ≤ 0: never
	TestFreq            int    `yaml:"test_freq"` // ≤ 0: never
	ValidationSteps     int    `yaml:"validation_steps"`
	ValBeforeTrain      bool   `yaml:"val_before_train"`
	ValOnly             bool   `yaml:"val_only"`
	NGPUsPerNode        int    `yaml:"n_gpus_per_node"`
	NNodes              int    `yaml:"nnodes"`
	MaxActorCkptToKeep  *int   `yaml:"max_actor_ckpt_to_keep"` // nil: keep all
	MaxCriticCkptToKeep *int   `yaml:"max_critic_ckpt_to_keep"`
	BalanceBatch        bool   `yaml:"balance_batch"`
	CriticWarmup        int    `yaml:"critic_warmup"`
	// ResumeMode is auto (latest checkpoint if any), disable, or
	// resume_path (ResumeFromPath must name a global_step_N folder).
	ResumeMode      string `yaml:"resume_mode"`
	ResumeFromPath  string `yaml:"resume_from_path"`
	DefaultLocalDir string `yaml:"default_local_dir"`

	GradientAnalysisMode      bool `yaml:"gradient_analysis_mode"`
	GradientAnalysisEvery     int  `yaml:"gradient_analysis_every"`
	GradientAnalysisOnly      bool `yaml:"gradient_analysis_only"`
	ExitAfterGradientAnalysis bool `yaml:"exit_after_gradient_analysis"`
}

// Resume modes (trainer.resume_mode).
const (
	ResumeAuto    = "auto"
	ResumeDisable = "disable"
	ResumePath    = "resume_path"
)

// Warm-up styles (optim.warmup_style).
const (
	WarmupConstant = "constant"
	WarmupCosine   = "cosine"
)

func defaultOptim(lr float64) OptimConfig {
	return OptimConfig{LR: lr, Betas: []float64{0.9, 0.999}, WeightDecay: 0.01, LRWarmupSteps: -1,
		WarmupStyle: WarmupConstant, NumCycles: 0.5}
}

// DefaultConfig returns RAGEN's config/base.yaml values (veRL's defaults
// where base.yaml is silent).
func DefaultConfig() Config {
	// Two variables: the decoder writes through these pointers, so a
	// shared one would make the last of the two keys decoded set both.
	keepActor, keepCritic := 1, 1
	rollout := ragen.DefaultConfig()
	// The loss, estimator and KL controller defaults are algo's.
	act, val := algo.DefaultActorLossConfig(), algo.DefaultValueLossConfig()
	adv, kl := algo.DefaultAdvantageConfig(), algo.DefaultKLControlConfig()
	return Config{
		ModelPath:        "Qwen/Qwen2.5-3B-Instruct",
		UpstreamFrozenLR: true,
		Seed:             SeedConfig{Train: 10000, Val: 123},
		ActorRolloutRef: ActorRolloutRefConfig{
			Actor: ActorConfig{
				PPOMiniBatchSize: 32, PPOMicroBatchSizePerGPU: 1, UseRef: true,
				EntropyCoeff: act.EntropyCoeff, KLLossType: act.KLLossType, ClipRatio: act.Policy.ClipRatio,
				ClipRatioLow: act.Policy.ClipRatioLow, ClipRatioHigh: act.Policy.ClipRatioHigh, ClipRatioC: act.Policy.ClipRatioC,
				LossAggMode: act.Policy.LossAggMode, FilterLossScaling: algo.FilterScalingNone,
				PPOEpochs: 1, GradClip: 1.0, PPOMaxTokenLenPerGPU: 16384,
				Optim: defaultOptim(1e-6),
			},
			Rollout: RolloutConfig{Temperature: 1, LogProbMicroBatchSizePerGPU: 1, EmptyStopSteps: 5},
		},
		Critic: CriticConfig{
			PPOMiniBatchSize: 32, PPOMicroBatchSizePerGPU: 1, ClipRangeValue: val.ClipRangeValue,
			PPOEpochs: 1, GradClip: 1.0, PPOMaxTokenLenPerGPU: 32768, Optim: defaultOptim(1e-5),
		},
		Algorithm: AlgorithmConfig{
			Gamma: adv.Gamma, Lam: adv.Lam, HighLevelGamma: adv.HighLevelGamma, AdvEstimator: algo.EstGAE,
			NormAdvByStdInGRPO: adv.NormAdvByStdInGRPO, KLPenalty: act.KLLossType,
			KLCtrl: KLCtrlConfig{Type: kl.Type, KLCoef: kl.KLCoef, TargetKL: kl.TargetKL, Horizon: kl.Horizon},
		},
		Trainer: TrainerConfig{
			ProjectName: "ragen", ExperimentName: "test", TotalTrainingSteps: 200,
			SaveFreq: 100, TestFreq: 10, ValidationSteps: 1, ValBeforeTrain: true,
			NGPUsPerNode: 1, NNodes: 1, MaxActorCkptToKeep: &keepActor, MaxCriticCkptToKeep: &keepCritic,
			BalanceBatch: true, ResumeMode: ResumeAuto,
			DefaultLocalDir:       "checkpoints/ragen/test",
			GradientAnalysisEvery: 50,
		},
		ESManager:  rollout.ESManager,
		AgentProxy: rollout.AgentProxy,
	}
}

// CriticEnabled reports whether the run has a critic: critic.enable, or when
// it is null, adv_estimator == gae.
func (c Config) CriticEnabled() bool {
	if c.Critic.Enable != nil {
		return *c.Critic.Enable
	}
	return c.Algorithm.AdvEstimator == algo.EstGAE
}

// PolicyLossConfig maps the actor keys onto algo's policy-loss settings.
func (c Config) PolicyLossConfig() algo.PolicyLossConfig {
	a := c.ActorRolloutRef.Actor
	return algo.PolicyLossConfig{ClipRatio: a.ClipRatio, ClipRatioLow: a.ClipRatioLow,
		ClipRatioHigh: a.ClipRatioHigh, ClipRatioC: a.ClipRatioC, LossAggMode: a.LossAggMode}
}

// ActorLossConfig maps the actor keys onto algo's actor objective. The KL
// loss is off without a reference model (use_ref false), as upstream.
func (c Config) ActorLossConfig() algo.ActorLossConfig {
	a := c.ActorRolloutRef.Actor
	return algo.ActorLossConfig{Policy: c.PolicyLossConfig(), EntropyCoeff: a.EntropyCoeff,
		UseKLLoss: a.UseKLLoss && a.UseRef, KLLossType: a.KLLossType, KLLossCoef: a.KLLossCoef}
}

// ValueLossConfig maps the critic keys onto algo's value-loss settings.
func (c Config) ValueLossConfig(gradAccum int) algo.ValueLossConfig {
	mode := c.Critic.LossAggMode
	if mode == "" {
		mode = c.ActorRolloutRef.Actor.LossAggMode
	}
	return algo.ValueLossConfig{ClipRangeValue: c.Critic.ClipRangeValue, LossAggMode: mode, GradAccum: gradAccum}
}

// AdvantageConfig maps algorithm.* onto algo's estimator settings.
func (c Config) AdvantageConfig() algo.AdvantageConfig {
	a, out := c.Algorithm, algo.DefaultAdvantageConfig() // GRPO's ε is algo's
	out.Gamma, out.Lam, out.HighLevelGamma = a.Gamma, a.Lam, a.HighLevelGamma
	out.BiLevelGAE, out.NormAdvByStdInGRPO = a.BiLevelGAE, a.NormAdvByStdInGRPO
	return out
}

// BatchDivisor is the size the adjusted batch is a multiple of:
// lcm(env_groups, ppo_mini_batch_size, n_gpus_per_node).
func (c Config) BatchDivisor() int {
	return lcm(lcm(max(c.ESManager.Train.EnvGroups, 1), max(c.ActorRolloutRef.Actor.PPOMiniBatchSize, 1)),
		max(c.Trainer.NGPUsPerNode, 1))
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int) int { return a / gcd(a, b) * b }

// ResumeModes lists the trainer.resume_mode names.
func ResumeModes() []string { return []string{ResumeAuto, ResumeDisable, ResumePath} }

// WarmupStyles lists the optim.warmup_style names.
func WarmupStyles() []string { return []string{WarmupConstant, WarmupCosine} }

// CheckMiniBatch is RAGEN train.py's assertion on one role's batch sizes
// (role: actor_rollout_ref.actor or critic): mini and micro at least 1 and
// mini a multiple of micro x n_gpus_per_node; the problem names the
// nearest fitting mini batches.
func CheckMiniBatch(role string, mini, micro, nGPU int) error {
	var errs []error
	if mini < 1 {
		errs = append(errs, rule.Errorf(role+".ppo_mini_batch_size", "must be >= 1, got %d", mini))
	}
	if micro < 1 {
		errs = append(errs, rule.Errorf(role+".ppo_micro_batch_size_per_gpu", "must be >= 1, got %d", micro))
	}
	if mini >= 1 && micro >= 1 {
		if prod := micro * max(nGPU, 1); prod > mini || mini%prod != 0 {
			errs = append(errs, rule.Errorf(role+".ppo_mini_batch_size", "%d is not a multiple of ppo_micro_batch_size_per_gpu x n_gpus_per_node = %d x %d = %d; nearest fitting: %s",
				mini, micro, max(nGPU, 1), prod, rule.NearestMultiples(mini, prod)))
		}
	}
	return errors.Join(errs...)
}

// between is the problem of key unless lo <= v <= hi (loOpen: lo < v).
func between(key string, v, lo, hi float64, loOpen bool) error {
	bad := math.IsNaN(v) || v < lo || v > hi || (loOpen && v == lo)
	if !bad {
		return nil
	}
	want := fmt.Sprintf("%g <= x <= %g", lo, hi)
	switch {
	case math.IsInf(hi, 1) && loOpen:
		want = fmt.Sprintf("> %g", lo)
	case math.IsInf(hi, 1):
		want = fmt.Sprintf(">= %g", lo)
	case loOpen:
		want = fmt.Sprintf("%g < x <= %g", lo, hi)
	}
	if math.IsInf(v, 0) {
		return rule.Errorf(key, "%v is not finite: want %s", v, want)
	}
	return rule.Errorf(key, "%v is out of range: want %s", v, want)
}

// validateBetas checks Adam's betas of the optim block at key prefix k.
func validateBetas(k string, betas []float64) []error {
	var errs []error
	if len(betas) != 2 {
		errs = append(errs, rule.Errorf(k+"betas", "want two numbers [beta1, beta2], found %v", betas))
	}
	for i, b := range betas {
		if !(b >= 0 && b < 1) {
			errs = append(errs, rule.Errorf(fmt.Sprintf("%sbetas[%d]", k, i), "%v is out of range: want 0 <= beta < 1", b))
		}
	}
	return errs
}

func validateOptim(role string, o OptimConfig) []error {
	k := role + ".optim."
	inf := math.Inf(1)
	errs := []error{between(k+"lr", o.LR, 0, inf, true), between(k+"weight_decay", o.WeightDecay, 0, inf, false),
		between(k+"lr_warmup_steps_ratio", o.LRWarmupStepsRatio, 0, 1, false), between(k+"min_lr_ratio", o.MinLRRatio, 0, 1, false)}
	errs = append(errs, validateBetas(k, o.Betas)...)
	if !slices.Contains(WarmupStyles(), o.WarmupStyle) {
		errs = append(errs, rule.Unknown(k+"warmup_style", o.WarmupStyle, WarmupStyles()))
	}
	return errs
}

// Validate reports every problem with the configuration at once, each a
// rule.Problem naming its key: upstream's train.py assertions that concern
// the trainer, what veRL's workers assert, values upstream would crash on
// later, and the checks of the packages that own the loss settings (algo)
// and the rollout blocks (ragen). Package config runs it on a key tree.
func (c Config) Validate() error {
	a, cr, tr := c.ActorRolloutRef.Actor, c.Critic, c.Trainer
	inf := math.Inf(1)
	errs := []error{CheckMiniBatch("actor_rollout_ref.actor", a.PPOMiniBatchSize, a.PPOMicroBatchSizePerGPU, tr.NGPUsPerNode)}
	add := func(es ...error) { errs = append(errs, es...) }
	if tr.NGPUsPerNode < 1 {
		add(rule.Errorf("trainer.n_gpus_per_node", "must be >= 1, got %d", tr.NGPUsPerNode))
	}
	if tr.NNodes < 1 {
		add(rule.Errorf("trainer.nnodes", "must be >= 1, got %d", tr.NNodes))
	}
	role := func(key string, epochs int, gradClip float64, dyn bool, maxTokens int, o OptimConfig) {
		add(rule.AtLeast(key+".ppo_epochs", epochs, 1), between(key+".grad_clip", gradClip, 0, inf, true))
		if dyn {
			add(rule.AtLeast(key+".ppo_max_token_len_per_gpu", maxTokens, 1))
		}
		add(validateOptim(key, o)...)
	}
	role("actor_rollout_ref.actor", a.PPOEpochs, a.GradClip, a.UseDynamicBsz, a.PPOMaxTokenLenPerGPU, a.Optim)
	add(c.ActorLossConfig().Validate())
	add(between("actor_rollout_ref.rollout.temperature", c.ActorRolloutRef.Rollout.Temperature, 0, inf, true))
	// 0: the actor's micro batch (a Go caller's choice; a config spells a count).
	add(rule.AtLeast("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", c.ActorRolloutRef.Rollout.LogProbMicroBatchSizePerGPU, 0))
	pc := algo.DefaultPostConfig(c.Algorithm.AdvEstimator)
	pc.FilterLossScaling = a.FilterLossScaling
	add(pc.Validate())
	// algorithm
	add(algo.CheckTrainerEstimator(c.Algorithm.AdvEstimator), c.AdvantageConfig().Validate())
	if c.Algorithm.BiLevelGAE && c.Algorithm.AdvEstimator != algo.EstGAE {
		add(rule.Errorf("algorithm.bi_level_gae", "requires algorithm.adv_estimator=gae (found %s)", c.Algorithm.AdvEstimator))
	}
	if c.Algorithm.UseKLInReward {
		add(c.KLControlConfig().Validate(), algo.CheckKLType("algorithm.kl_penalty", c.Algorithm.KLPenalty))
		if !a.UseRef {
			add(rule.Errorf("algorithm.use_kl_in_reward", "needs a reference model (actor_rollout_ref.actor.use_ref=true)"))
		}
	}
	if !c.CriticEnabled() {
		// The tree always carries the critic's betas; they are checked
		// even without a critic.
		add(validateBetas("critic.optim.", c.Critic.Optim.Betas)...)
	} else {
		add(CheckMiniBatch("critic", cr.PPOMiniBatchSize, cr.PPOMicroBatchSizePerGPU, tr.NGPUsPerNode))
		role("critic", cr.PPOEpochs, cr.GradClip, cr.UseDynamicBsz, cr.PPOMaxTokenLenPerGPU, cr.Optim)
		add(c.ValueLossConfig(1).Validate())
	}
	// trainer
	add(rule.AtLeast("trainer.total_training_steps", tr.TotalTrainingSteps, 1),
		rule.AtLeast("trainer.validation_steps", tr.ValidationSteps, 1),
		rule.AtLeast("trainer.critic_warmup", tr.CriticWarmup, 0),
		rule.AtLeast("trainer.save_freq", tr.SaveFreq, -1),
		rule.AtLeast("trainer.test_freq", tr.TestFreq, -1))
	if !slices.Contains(ResumeModes(), tr.ResumeMode) {
		add(rule.Unknown("trainer.resume_mode", tr.ResumeMode, ResumeModes()))
	} else if tr.ResumeMode == ResumePath && tr.ResumeFromPath == "" {
		add(rule.Errorf("trainer.resume_from_path", "is empty but trainer.resume_mode=resume_path needs a global_step_N folder"))
	}
	if tr.SaveFreq > 0 && tr.DefaultLocalDir == "" {
		add(rule.Errorf("trainer.default_local_dir", "is empty but trainer.save_freq=%d > 0", tr.SaveFreq))
	}
	if tr.MaxActorCkptToKeep != nil {
		add(rule.AtLeast("trainer.max_actor_ckpt_to_keep", *tr.MaxActorCkptToKeep, 0))
	}
	if tr.MaxCriticCkptToKeep != nil {
		add(rule.AtLeast("trainer.max_critic_ckpt_to_keep", *tr.MaxCriticCkptToKeep, 0))
	}
	// es_manager.train's sizes and agent_proxy.* are package ragen's.
	add(c.ESManager.Train.ValidateSizes("es_manager.train"), c.AgentProxy.Validate())
	add(nonFinite("", reflect.ValueOf(c))...)
	add(between("ragen_peak_flops", c.PeakFLOPs, 0, inf, false))
	return errors.Join(errs...)
}

// KLControlConfig maps algorithm.kl_ctrl onto algo's KL controller settings.
func (c Config) KLControlConfig() algo.KLControlConfig {
	k := c.Algorithm.KLCtrl
	return algo.KLControlConfig{Type: k.Type, KLCoef: k.KLCoef, TargetKL: k.TargetKL, Horizon: k.Horizon}
}

// LRSchedule is veRL's learning-rate multiplier: lr(step) = base ·
// Factor(step), step counting optimizer scheduler steps from 0.
type LRSchedule struct {
	Warmup     int     // warm-up steps
	Total      int     // total training steps (cosine)
	Style      string  // constant or cosine
	MinLRRatio float64 // cosine floor
	NumCycles  float64 // cosine cycles
}

// NewLRSchedule builds the schedule of an optim block for total steps:
// warm-up = lr_warmup_steps when ≥ 0, else int(ratio·total).
func NewLRSchedule(o OptimConfig, total int) LRSchedule {
	w := o.LRWarmupSteps
	if w < 0 {
		w = int(o.LRWarmupStepsRatio * float64(total))
	}
	return LRSchedule{Warmup: w, Total: total, Style: o.WarmupStyle, MinLRRatio: o.MinLRRatio, NumCycles: o.NumCycles}
}

// Factor is the multiplier at scheduler step n (veRL's
// get_constant_schedule_with_warmup / get_cosine_schedule_with_warmup):
//
//	constant: n/max(1, W) during warm-up, then 1
//	cosine:   r + (1−r)·n/max(1, W) during warm-up, then
//	          max(r, cos(π·cycles·2·p)·(1−r)/2 + (1+r)/2), p = (n−W)/max(1, total−W)
//
// with r = min_lr_ratio.
func (l LRSchedule) Factor(n int) float64 {
	r := l.MinLRRatio
	if l.Style != WarmupCosine {
		if n < l.Warmup {
			return float64(n) / math.Max(1, float64(l.Warmup))
		}
		return 1
	}
	if n < l.Warmup {
		return r + (1-r)*float64(n)/math.Max(1, float64(l.Warmup))
	}
	p := float64(n-l.Warmup) / math.Max(1, float64(l.Total-l.Warmup))
	x := math.Cos(math.Pi * l.NumCycles * 2 * p)
	return math.Max(r, x*(1-r)*0.5+(1+r)*0.5)
}
