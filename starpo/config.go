package starpo

import (
	"ragen/ragen"
	"ragen/starpo/settings"
)

// The trainer's settings live in package settings (pure Go, so that package
// config checks a key tree with the same rules the trainer runs); these
// names are its, and the es_manager and agent_proxy blocks are package
// ragen's.
type (
	// Config is the part of upstream's config tree the trainer reads.
	Config                = settings.Config
	SeedConfig            = settings.SeedConfig
	ActorRolloutRefConfig = settings.ActorRolloutRefConfig
	OptimConfig           = settings.OptimConfig
	ActorConfig           = settings.ActorConfig
	RolloutConfig         = settings.RolloutConfig
	CriticConfig          = settings.CriticConfig
	KLCtrlConfig          = settings.KLCtrlConfig
	AlgorithmConfig       = settings.AlgorithmConfig
	TrainerConfig         = settings.TrainerConfig
	LRSchedule            = settings.LRSchedule

	ESManagerConfig  = ragen.ESManagerConfig
	EnvSetConfig     = ragen.EnvSetConfig
	AgentProxyConfig = ragen.AgentProxyConfig
)

// Resume modes (trainer.resume_mode), warm-up styles (optim.warmup_style)
// and batch adjust modes (agent_proxy.batch_adjust_mode).
const (
	ResumeAuto     = settings.ResumeAuto
	ResumeDisable  = settings.ResumeDisable
	ResumePath     = settings.ResumePath
	WarmupConstant = settings.WarmupConstant
	WarmupCosine   = settings.WarmupCosine
	AdjustCopy     = ragen.AdjustCopy
	AdjustDelete   = ragen.AdjustDelete
)

// DefaultConfig returns RAGEN's config/base.yaml values (veRL's defaults
// where base.yaml is silent).
func DefaultConfig() Config { return settings.DefaultConfig() }

// NewLRSchedule builds the schedule of an optim block for total steps.
func NewLRSchedule(o OptimConfig, total int) LRSchedule { return settings.NewLRSchedule(o, total) }
