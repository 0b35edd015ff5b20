// Package settings holds the trainer's settings: the part of upstream's
// config tree package starpo reads (Config, with its defaults, its checks
// and the learning-rate schedule). It is pure Go, so package config checks
// a key tree with the same Validate the trainer runs; package starpo
// re-exports every name.
package settings

import (
	"errors"
	"fmt"
	"math"
	"reflect"

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
	return Config{
		ModelPath:        "Qwen/Qwen2.5-3B-Instruct",
		UpstreamFrozenLR: true,
		Seed:             SeedConfig{Train: 10000, Val: 123},
		ActorRolloutRef: ActorRolloutRefConfig{
			Actor: ActorConfig{
				PPOMiniBatchSize: 32, PPOMicroBatchSizePerGPU: 1, UseRef: true,
				EntropyCoeff: 0.001, KLLossType: "kl", ClipRatio: 0.2,
				ClipRatioLow: algo.Float(0.2), ClipRatioHigh: algo.Float(0.28), ClipRatioC: 3.0,
				LossAggMode: algo.TokenMean, FilterLossScaling: algo.FilterScalingNone,
				PPOEpochs: 1, GradClip: 1.0, PPOMaxTokenLenPerGPU: 16384,
				Optim: defaultOptim(1e-6),
			},
			Rollout: RolloutConfig{Temperature: 1, LogProbMicroBatchSizePerGPU: 1, EmptyStopSteps: 5},
		},
		Critic: CriticConfig{
			PPOMiniBatchSize: 32, PPOMicroBatchSizePerGPU: 1, ClipRangeValue: 0.5,
			PPOEpochs: 1, GradClip: 1.0, PPOMaxTokenLenPerGPU: 32768, Optim: defaultOptim(1e-5),
		},
		Algorithm: AlgorithmConfig{
			Gamma: 1, Lam: 1, HighLevelGamma: 0.95, AdvEstimator: algo.EstGAE,
			NormAdvByStdInGRPO: true, KLPenalty: "kl",
			KLCtrl: KLCtrlConfig{Type: algo.KLCtrlFixed, KLCoef: 0, TargetKL: 0.1, Horizon: 10000},
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
	a := c.Algorithm
	return algo.AdvantageConfig{Gamma: a.Gamma, Lam: a.Lam, HighLevelGamma: a.HighLevelGamma,
		BiLevelGAE: a.BiLevelGAE, NormAdvByStdInGRPO: a.NormAdvByStdInGRPO, GRPOEpsilon: 1e-6}
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

func validateOptim(name string, o OptimConfig) []error {
	var errs []error
	if !(o.LR >= 0) {
		errs = append(errs, fmt.Errorf("%s.optim.lr=%g must be >= 0", name, o.LR))
	}
	if len(o.Betas) != 2 || o.Betas[0] < 0 || o.Betas[0] >= 1 || o.Betas[1] < 0 || o.Betas[1] >= 1 {
		errs = append(errs, fmt.Errorf("%s.optim.betas=%v must be two numbers in [0, 1)", name, o.Betas))
	}
	if o.WeightDecay < 0 {
		errs = append(errs, fmt.Errorf("%s.optim.weight_decay=%g must be >= 0", name, o.WeightDecay))
	}
	if o.LRWarmupStepsRatio < 0 || o.LRWarmupStepsRatio > 1 {
		errs = append(errs, fmt.Errorf("%s.optim.lr_warmup_steps_ratio=%g must be in [0, 1]", name, o.LRWarmupStepsRatio))
	}
	switch o.WarmupStyle {
	case WarmupConstant, WarmupCosine:
	default:
		errs = append(errs, fmt.Errorf("%s.optim.warmup_style=%q is not supported (valid: constant, cosine)", name, o.WarmupStyle))
	}
	if o.MinLRRatio < 0 || o.MinLRRatio > 1 {
		errs = append(errs, fmt.Errorf("%s.optim.min_lr_ratio=%g must be in [0, 1]", name, o.MinLRRatio))
	}
	return errs
}

// Validate reports every problem with the configuration at once. It applies
// upstream's train.py assertions that concern the trainer (mini/micro batch
// sizes, filter capacity is checked by the lead's config package) and
// rejects values upstream would crash on later.
func (c Config) Validate() error {
	var errs []error
	a, cr, tr := c.ActorRolloutRef.Actor, c.Critic, c.Trainer
	ngpu := max(tr.NGPUsPerNode, 1)
	if a.PPOMiniBatchSize < 1 {
		errs = append(errs, fmt.Errorf("actor_rollout_ref.actor.ppo_mini_batch_size=%d must be >= 1", a.PPOMiniBatchSize))
	}
	if a.PPOMicroBatchSizePerGPU < 1 {
		errs = append(errs, fmt.Errorf("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=%d must be >= 1", a.PPOMicroBatchSizePerGPU))
	} else if a.PPOMiniBatchSize >= 1 {
		if p := a.PPOMicroBatchSizePerGPU * ngpu; p > a.PPOMiniBatchSize || a.PPOMiniBatchSize%p != 0 {
			errs = append(errs, fmt.Errorf("actor_rollout_ref.actor.ppo_mini_batch_size=%d must be a multiple of ppo_micro_batch_size_per_gpu·n_gpus_per_node=%d", a.PPOMiniBatchSize, p))
		}
	}
	if tr.NGPUsPerNode < 1 || tr.NNodes < 1 {
		errs = append(errs, fmt.Errorf("trainer.n_gpus_per_node=%d and trainer.nnodes=%d must be >= 1", tr.NGPUsPerNode, tr.NNodes))
	}
	if a.PPOEpochs < 1 {
		errs = append(errs, fmt.Errorf("actor_rollout_ref.actor.ppo_epochs=%d must be >= 1", a.PPOEpochs))
	}
	if !(a.GradClip > 0) {
		errs = append(errs, fmt.Errorf("actor_rollout_ref.actor.grad_clip=%g must be > 0", a.GradClip))
	}
	if a.UseDynamicBsz && a.PPOMaxTokenLenPerGPU < 1 {
		errs = append(errs, fmt.Errorf("actor_rollout_ref.actor.ppo_max_token_len_per_gpu=%d must be >= 1 with use_dynamic_bsz", a.PPOMaxTokenLenPerGPU))
	}
	errs = append(errs, c.ActorLossConfig().Validate()) // problems name their keys
	if !(c.ActorRolloutRef.Rollout.Temperature > 0) {
		errs = append(errs, fmt.Errorf("actor_rollout_ref.rollout.temperature=%g must be > 0", c.ActorRolloutRef.Rollout.Temperature))
	}
	if c.ActorRolloutRef.Rollout.LogProbMicroBatchSizePerGPU < 0 {
		errs = append(errs, fmt.Errorf("log_prob_micro_batch_size_per_gpu=%d must be >= 0", c.ActorRolloutRef.Rollout.LogProbMicroBatchSizePerGPU))
	}
	errs = append(errs, validateOptim("actor_rollout_ref.actor", a.Optim)...)
	pc := algo.DefaultPostConfig(c.Algorithm.AdvEstimator)
	pc.FilterLossScaling = a.FilterLossScaling
	errs = append(errs, pc.Validate())
	// algorithm
	if err := algo.CheckTrainerEstimator(c.Algorithm.AdvEstimator); err != nil {
		errs = append(errs, fmt.Errorf("algorithm.adv_estimator: %w", err))
	}
	errs = append(errs, c.AdvantageConfig().Validate())
	if c.Algorithm.BiLevelGAE && c.Algorithm.AdvEstimator != algo.EstGAE {
		errs = append(errs, fmt.Errorf("algorithm.bi_level_gae requires adv_estimator=gae (got %q)", c.Algorithm.AdvEstimator))
	}
	if c.Algorithm.UseKLInReward {
		errs = append(errs, c.KLControlConfig().Validate())
		if _, _, err := algo.ParseKLType(c.Algorithm.KLPenalty); err != nil {
			errs = append(errs, fmt.Errorf("algorithm.kl_penalty: %w", err))
		}
		if !a.UseRef {
			errs = append(errs, errors.New("algorithm.use_kl_in_reward needs a reference model (actor_rollout_ref.actor.use_ref=true)"))
		}
	}
	// critic
	if c.CriticEnabled() {
		if cr.PPOMiniBatchSize < 1 || cr.PPOMicroBatchSizePerGPU < 1 || cr.PPOMiniBatchSize%(cr.PPOMicroBatchSizePerGPU*ngpu) != 0 {
			errs = append(errs, fmt.Errorf("critic.ppo_mini_batch_size=%d must be a positive multiple of critic.ppo_micro_batch_size_per_gpu·n_gpus_per_node=%d", cr.PPOMiniBatchSize, cr.PPOMicroBatchSizePerGPU*ngpu))
		}
		if cr.PPOEpochs < 1 {
			errs = append(errs, fmt.Errorf("critic.ppo_epochs=%d must be >= 1", cr.PPOEpochs))
		}
		if !(cr.GradClip > 0) {
			errs = append(errs, fmt.Errorf("critic.grad_clip=%g must be > 0", cr.GradClip))
		}
		if cr.UseDynamicBsz && cr.PPOMaxTokenLenPerGPU < 1 {
			errs = append(errs, fmt.Errorf("critic.ppo_max_token_len_per_gpu=%d must be >= 1 with use_dynamic_bsz", cr.PPOMaxTokenLenPerGPU))
		}
		errs = append(errs, c.ValueLossConfig(1).Validate())
		errs = append(errs, validateOptim("critic", cr.Optim)...)
	}
	// trainer
	if tr.TotalTrainingSteps < 0 {
		errs = append(errs, fmt.Errorf("trainer.total_training_steps=%d must be >= 0", tr.TotalTrainingSteps))
	}
	if tr.ValidationSteps < 0 {
		errs = append(errs, fmt.Errorf("trainer.validation_steps=%d must be >= 0", tr.ValidationSteps))
	}
	if tr.CriticWarmup < 0 {
		errs = append(errs, fmt.Errorf("trainer.critic_warmup=%d must be >= 0", tr.CriticWarmup))
	}
	switch tr.ResumeMode {
	case ResumeAuto, ResumeDisable:
	case ResumePath:
		if tr.ResumeFromPath == "" {
			errs = append(errs, errors.New("trainer.resume_mode=resume_path needs trainer.resume_from_path"))
		}
	default:
		errs = append(errs, fmt.Errorf("trainer.resume_mode=%q is not one of auto, disable, resume_path", tr.ResumeMode))
	}
	if tr.SaveFreq > 0 && tr.DefaultLocalDir == "" {
		errs = append(errs, errors.New("trainer.default_local_dir is empty but trainer.save_freq > 0"))
	}
	for _, k := range []struct {
		name string
		v    *int
	}{{"max_actor_ckpt_to_keep", tr.MaxActorCkptToKeep}, {"max_critic_ckpt_to_keep", tr.MaxCriticCkptToKeep}} {
		if k.v != nil && *k.v < 0 {
			errs = append(errs, fmt.Errorf("trainer.%s=%d must be >= 0 (null keeps all)", k.name, *k.v))
		}
	}
	// es_manager.train's sizes and agent_proxy.* are checked by package
	// ragen, which owns them.
	errs = append(errs, c.ESManager.Train.ValidateSizes("es_manager.train"), c.AgentProxy.Validate())
	errs = append(errs, nonFinite("", reflect.ValueOf(c))...)
	if c.PeakFLOPs < 0 || math.IsNaN(c.PeakFLOPs) {
		errs = append(errs, fmt.Errorf("ragen_peak_flops=%g must be >= 0", c.PeakFLOPs))
	}
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
