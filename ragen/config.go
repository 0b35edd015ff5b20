package ragen

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"ragen/config/rule"

	"ragen/env"
)

// Config is the part of upstream's config tree that the rollout core reads.
// The yaml tags follow upstream RAGEN's key names (config/base.yaml); the
// CLI composes the YAML tree and maps it onto this struct.
type Config struct {
	ESManager  ESManagerConfig    `yaml:"es_manager"`
	AgentProxy AgentProxyConfig   `yaml:"agent_proxy"`
	Seed       SeedConfig         `yaml:"seed"`
	Rollout    RolloutConfig      `yaml:"rollout"` // actor_rollout_ref.rollout
	CustomEnvs map[string]EnvSpec `yaml:"custom_envs"`
	// EnableResponseMask: loss_mask = response_mask (assistant tokens only);
	// false trains every token after the system turn.
	EnableResponseMask bool `yaml:"enable_response_mask"`
	// Compat switches individual upstream bugs back on (all false = sane).
	Compat UpstreamCompat `yaml:"upstream_compat"`
	// FilterRawScores (ragen_filter_raw_scores; default false = upstream,
	// overview quirk 8): Batch.OriginalRMScores, which the rollout filter
	// ranks groups by, hold the scores before reward normalisation, so
	// variance filtering still tells groups apart after mean_std
	// normalisation. Upstream copies the normalised scores.
	FilterRawScores bool `yaml:"ragen_filter_raw_scores"`
	// PromptFromEnvConfig (ragen_prompt_from_env_config; default false =
	// upstream, overview quirk 3): a tag's system prompt lists the grid
	// vocabulary, observation format and action names of its env_config
	// (an env implementing env.PromptFacter, built once for the purpose)
	// instead of the env type's defaults.
	PromptFromEnvConfig bool `yaml:"ragen_prompt_from_env_config"`
}

// ESManagerConfig is es_manager.*.
type ESManagerConfig struct {
	FormatPenalty float64      `yaml:"format_penalty"` // added to the episode score per offending turn
	Train         EnvSetConfig `yaml:"train"`
	Val           EnvSetConfig `yaml:"val"`
	// StepTimeout bounds every env Reset/Step call (Go-only; 0 = no limit).
	// A stuck env becomes an error instead of a hang.
	StepTimeout time.Duration `yaml:"step_timeout"`
}

// UnmarshalYAML decodes es_manager.* with step_timeout read as the CLI
// reads it: a Go duration string ("90s", "5m") or a number of seconds
// (yaml.v3 alone refuses numbers for a time.Duration). A null
// step_timeout keeps the current value.
func (c *ESManagerConfig) UnmarshalYAML(n *yaml.Node) error {
	type plain ESManagerConfig // without this method
	if n.Kind != yaml.MappingNode {
		return n.Decode((*plain)(c))
	}
	rest := *n
	rest.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value != "step_timeout" {
			rest.Content = append(rest.Content, k, v)
			continue
		}
		if v.Tag == "!!null" {
			continue
		}
		var secs float64
		if v.Tag == "!!int" || v.Tag == "!!float" {
			if err := v.Decode(&secs); err != nil {
				return fmt.Errorf("ragen: es_manager.step_timeout: %w", err)
			}
			c.StepTimeout = time.Duration(secs * float64(time.Second))
			continue
		}
		d, err := time.ParseDuration(v.Value)
		if err != nil {
			return fmt.Errorf("ragen: es_manager.step_timeout: %w", err)
		}
		c.StepTimeout = d
	}
	return rest.Decode((*plain)(c))
}

// EnvSetConfig is es_manager.train / es_manager.val.
type EnvSetConfig struct {
	EnvGroups  int        `yaml:"env_groups"` // number of groups (initial states) per rollout
	GroupSize  int        `yaml:"group_size"` // N: rollouts per initial state
	EnvConfigs EnvConfigs `yaml:"env_configs"`
}

// EnvConfigs lists the tags of an env set and how many groups each gets.
type EnvConfigs struct {
	Tags    []string `yaml:"tags"`
	NGroups []int    `yaml:"n_groups"`
}

// SeedConfig is seed.*; a nil pointer means the key is absent.
type SeedConfig struct {
	Train *int64 `yaml:"train"`
	Val   *int64 `yaml:"val"`
}

// RolloutConfig is the part of actor_rollout_ref.rollout the rollout uses.
type RolloutConfig struct {
	Temperature    float64        `yaml:"temperature"`
	TopP           float64        `yaml:"top_p"`
	TopK           int            `yaml:"top_k"`
	ResponseLength int            `yaml:"response_length"` // max new tokens per turn
	MaxModelLen    int            `yaml:"max_model_len"`   // prompt budget for truncation
	ValKwargs      SamplingConfig `yaml:"val_kwargs"`
	// EnablePrefixCaching (vLLM's name; default true) lets the policy keep
	// each trajectory's KV cache between turns, so that a turn prefills
	// only what its prompt adds to the previous turn's prompt and answer,
	// and prefill a group's identical first prompts once: the rollout
	// gives every request its trajectory's GenRequest.PrefixKey. Off, every
	// prompt is prefilled in full. The tokens agree either way (up to
	// float rounding).
	EnablePrefixCaching bool `yaml:"enable_prefix_caching"`
	// AllowedTokenIDs (vLLM's SamplingParams.allowed_token_ids, which veRL
	// passes on from rollout.*; absent or null: every id) restricts the
	// tokens sampled in train and val mode.
	AllowedTokenIDs []int `yaml:"allowed_token_ids"`
}

// SamplingConfig is rollout.val_kwargs.
type SamplingConfig struct {
	DoSample    bool    `yaml:"do_sample"`
	Temperature float64 `yaml:"temperature"`
	TopP        float64 `yaml:"top_p"`
	TopK        int     `yaml:"top_k"`
}

// AgentProxyConfig is agent_proxy.*.
type AgentProxyConfig struct {
	// ContextWindowMode is full, limited_multi_turn or single_turn. In the
	// turn-level modes a batch row is one turn (TurnLevel) and the batch
	// carries episode ids.
	ContextWindowMode   string                    `yaml:"context_window_mode"`
	MaxContextWindow    int                       `yaml:"max_context_window"` // k; < 0 = unlimited, 0 = no earlier turns
	MaxTurn             int                       `yaml:"max_turn"`           // model calls per episode
	ActionSep           string                    `yaml:"action_sep"`
	MaxActionsPerTurn   int                       `yaml:"max_actions_per_turn"`
	UseTurnScores       bool                      `yaml:"use_turn_scores"`
	EnableThink         bool                      `yaml:"enable_think"`
	RewardNormalization RewardNormalizationConfig `yaml:"reward_normalization"`
	// PipelineParts > 1 splits the envs into that many parts whose turns
	// run concurrently, so envs of one part step while the model generates
	// for another (Go-only; trajectories are identical to the plain loop).
	PipelineParts int `yaml:"pipeline_parts"`
	// BatchAdjustMode is how the trainer reaches a batch size it can split
	// evenly: copy (duplicate random rows) or delete (drop rows).
	BatchAdjustMode string `yaml:"batch_adjust_mode"`
}

// TurnLevel reports whether the context window mode builds one sample per
// turn (single_turn, limited_multi_turn).
func (a AgentProxyConfig) TurnLevel() bool {
	return a.ContextWindowMode == ModeSingleTurn || a.ContextWindowMode == ModeLimitedMultiTurn
}

// RewardNormalizationConfig is agent_proxy.reward_normalization.
type RewardNormalizationConfig struct {
	Grouping string `yaml:"grouping"` // state | inductive | batch
	Method   string `yaml:"method"`   // identity | mean | mean_std | asym_clip
}

// UpstreamCompat re-enables upstream behaviours that doc/divergences/rollout.md
// lists as bugs. The zero value is the corrected behaviour.
type UpstreamCompat struct {
	// MaskAlignment: upstream's loss/response masks and reward columns, which
	// train the role header after <|im_start|> and the first token of the
	// next turn, and put rewards one column after the last generated token.
	MaskAlignment bool `yaml:"mask_alignment"`
	// Truncation: upstream's max_model_len truncation that drops
	// [user, assistant, user-with-Reward] triples (losing the next state and
	// breaking role parity).
	Truncation bool `yaml:"truncation"`
	// JSONLSuccess: upstream's JSONL export reads metrics["success"], which
	// never exists (keys are tag-prefixed), so success is always false.
	JSONLSuccess bool `yaml:"jsonl_success"`
}

// EnvSpec is one custom_envs.<Tag> entry of config/envs.yaml.
type EnvSpec struct {
	EnvType           string         `yaml:"env_type"`
	MaxActionsPerTraj int            `yaml:"max_actions_per_traj"`
	EnvInstruction    string         `yaml:"env_instruction"`
	MaxTokens         int            `yaml:"max_tokens"` // 0 = rollout.response_length
	ParallelFriendly  bool           `yaml:"parallel_friendly"`
	MaxWorkers        int            `yaml:"max_workers"`
	EnvConfig         map[string]any `yaml:"env_config"`
}

// Context window modes (agent_proxy.context_window_mode).
const (
	ModeFull             = "full"
	ModeLimitedMultiTurn = "limited_multi_turn"
	ModeSingleTurn       = "single_turn"
)

// Batch adjust modes (agent_proxy.batch_adjust_mode).
const (
	AdjustCopy   = "copy"
	AdjustDelete = "delete"
)

// ContextWindowModes lists the agent_proxy.context_window_mode names.
func ContextWindowModes() []string {
	return []string{ModeFull, ModeLimitedMultiTurn, ModeSingleTurn}
}

// BatchAdjustModes lists the agent_proxy.batch_adjust_mode names.
func BatchAdjustModes() []string { return []string{AdjustCopy, AdjustDelete} }

// RewardGroupings lists the agent_proxy.reward_normalization.grouping names.
func RewardGroupings() []string { return []string{"state", "inductive", "batch"} }

// RewardNormMethods lists the agent_proxy.reward_normalization.method names.
func RewardNormMethods() []string { return []string{"identity", "mean", "mean_std", "asym_clip"} }

func i64(v int64) *int64 { return &v }

// DefaultConfig returns upstream's base.yaml defaults. CustomEnvs is empty:
// the env table comes from config/envs.yaml.
func DefaultConfig() Config {
	return Config{
		ESManager: ESManagerConfig{
			FormatPenalty: -0.1,
			Train:         EnvSetConfig{EnvGroups: 8, GroupSize: 16, EnvConfigs: EnvConfigs{Tags: []string{"CoordSokoban"}, NGroups: []int{8}}},
			Val:           EnvSetConfig{EnvGroups: 512, GroupSize: 1, EnvConfigs: EnvConfigs{Tags: []string{"CoordSokoban"}, NGroups: []int{512}}},
			StepTimeout:   5 * time.Minute,
		},
		AgentProxy: AgentProxyConfig{
			ContextWindowMode:   ModeFull,
			MaxContextWindow:    -1,
			MaxTurn:             5,
			ActionSep:           "||",
			MaxActionsPerTurn:   2,
			EnableThink:         true,
			RewardNormalization: RewardNormalizationConfig{Grouping: "state", Method: "identity"},
			PipelineParts:       1,
			BatchAdjustMode:     AdjustCopy,
		},
		Seed: SeedConfig{Train: i64(10000), Val: i64(123)},
		Rollout: RolloutConfig{
			Temperature: 1, TopP: 1, TopK: -1, ResponseLength: 400, MaxModelLen: 3600, EnablePrefixCaching: true,
			ValKwargs: SamplingConfig{DoSample: true, Temperature: 0.5, TopP: 1, TopK: -1},
		},
		CustomEnvs:         map[string]EnvSpec{},
		EnableResponseMask: true,
	}
}

// Validate reports every problem of the config at once, each a
// rule.Problem naming its key (package config reports them under it).
func (c Config) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	tags := slices.Sorted(maps.Keys(c.CustomEnvs))
	for _, m := range []struct {
		name string
		set  EnvSetConfig
	}{{"es_manager.train", c.ESManager.Train}, {"es_manager.val", c.ESManager.Val}} {
		add(m.set.validate(m.name, tags))
	}
	// The entries the env sets use (custom_envs lists every tag upstream
	// knows; an unused one is never built).
	used := slices.Concat(c.ESManager.Train.EnvConfigs.Tags, c.ESManager.Val.EnvConfigs.Tags)
	slices.Sort(used)
	for _, t := range slices.Compact(used) {
		if spec, ok := c.CustomEnvs[t]; ok {
			add(spec.Validate(t))
		}
	}
	add(c.AgentProxy.Validate())
	add(c.Rollout.validate())
	if c.ESManager.StepTimeout < 0 {
		add(rule.Errorf("es_manager.step_timeout", "%v is out of range: want >= 0", c.ESManager.StepTimeout))
	}
	return errors.Join(errs...)
}

// validate checks the rollout's lengths and sampling settings (the
// temperature is the trainer's key too, checked by package starpo/settings).
func (r RolloutConfig) validate() error {
	const k = "actor_rollout_ref.rollout."
	var errs []error
	topP := func(key string, p float64) {
		if !(p > 0 && p <= 1) {
			errs = append(errs, rule.Errorf(key, "%v is out of range: want 0 < x <= 1", p))
		}
	}
	topP(k+"top_p", r.TopP)
	topP(k+"val_kwargs.top_p", r.ValKwargs.TopP)
	if t := r.ValKwargs.Temperature; !(t >= 0) || math.IsInf(t, 0) {
		errs = append(errs, rule.Errorf(k+"val_kwargs.temperature", "%v is out of range: want >= 0", t))
	}
	errs = append(errs, rule.AtLeast(k+"top_k", r.TopK, -1), rule.AtLeast(k+"val_kwargs.top_k", r.ValKwargs.TopK, -1),
		rule.AtLeast(k+"response_length", r.ResponseLength, 1), rule.AtLeast(k+"max_model_len", r.MaxModelLen, 1))
	for i, id := range r.AllowedTokenIDs {
		errs = append(errs, rule.AtLeast(fmt.Sprintf("%sallowed_token_ids[%d]", k, i), id, 0))
	}
	return errors.Join(errs...)
}

// validate checks one env set (at key name, e.g. es_manager.train) against
// the tags of custom_envs.
func (s EnvSetConfig) validate(name string, tags []string) error {
	errs := []error{s.ValidateSizes(name)}
	ec := s.EnvConfigs
	key := name + ".env_configs.n_groups"
	if len(ec.Tags) != len(ec.NGroups) {
		errs = append(errs, rule.Errorf(key, "has %d entries but tags has %d (%s); give one group count per tag",
			len(ec.NGroups), len(ec.Tags), list(ec.Tags)))
	} else {
		sum := 0
		for i, n := range ec.NGroups {
			if n < 0 {
				errs = append(errs, rule.Errorf(fmt.Sprintf("%s[%d]", key, i), "must be >= 0, got %d", n))
			}
			sum += n
		}
		if s.EnvGroups >= 1 && sum != s.EnvGroups {
			errs = append(errs, rule.Errorf(key, "%s sums to %d but env_groups=%d; make them agree (set env_groups=%d or change n_groups)",
				list(ec.NGroups), sum, s.EnvGroups, sum))
		}
	}
	for _, t := range ec.Tags {
		if !slices.Contains(tags, t) {
			errs = append(errs, rule.Errorf(name+".env_configs.tags", "unknown env tag %q%s (tags are the keys of custom_envs)", t, rule.DidYouMean(t, tags)))
		}
	}
	return errors.Join(errs...)
}

// list formats a list as YAML's flow style does: [a, b].
func list[T any](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Validate checks the custom_envs entry of tag; the problems name keys
// custom_envs.<tag>.*.
func (e EnvSpec) Validate(tag string) error {
	name := "custom_envs." + tag
	var errs []error
	if e.EnvType == "" {
		errs = append(errs, rule.Errorf(name+".env_type", "missing (required)"))
	}
	errs = append(errs, rule.AtLeast(name+".max_actions_per_traj", e.MaxActionsPerTraj, 1),
		rule.AtLeast(name+".max_tokens", e.MaxTokens, 0))
	return errors.Join(errs...)
}

// ValidateSizes checks the sizes of the env set at key name (e.g.
// es_manager.train): env_groups and group_size at least 1.
func (s EnvSetConfig) ValidateSizes(name string) error {
	var errs []error
	if s.EnvGroups < 1 {
		errs = append(errs, rule.Errorf(name+".env_groups", "must be >= 1, got %d", s.EnvGroups))
	}
	if s.GroupSize < 1 {
		errs = append(errs, rule.Errorf(name+".group_size", "must be >= 1, got %d", s.GroupSize))
	}
	return errors.Join(errs...)
}

// Validate reports every problem of agent_proxy.* at once, each a
// rule.Problem naming its key.
func (a AgentProxyConfig) Validate() error {
	var errs []error
	oneOf := func(key, got string, valid []string) {
		if !slices.Contains(valid, got) {
			errs = append(errs, rule.Unknown(key, got, valid))
		}
	}
	oneOf("agent_proxy.context_window_mode", a.ContextWindowMode, ContextWindowModes())
	oneOf("agent_proxy.batch_adjust_mode", a.BatchAdjustMode, BatchAdjustModes())
	errs = append(errs, rule.AtLeast("agent_proxy.max_turn", a.MaxTurn, 1),
		rule.AtLeast("agent_proxy.max_actions_per_turn", a.MaxActionsPerTurn, 1))
	if a.ActionSep == "" {
		errs = append(errs, rule.Errorf("agent_proxy.action_sep", "must not be empty"))
	}
	oneOf("agent_proxy.reward_normalization.grouping", a.RewardNormalization.Grouping, RewardGroupings())
	oneOf("agent_proxy.reward_normalization.method", a.RewardNormalization.Method, RewardNormMethods())
	errs = append(errs, rule.AtLeast("agent_proxy.pipeline_parts", a.PipelineParts, 0))
	return errors.Join(errs...)
}

// envSet returns the env-set config of a mode.
func (c Config) envSet(mode env.Mode) EnvSetConfig {
	if mode == env.ModeVal {
		return c.ESManager.Val
	}
	return c.ESManager.Train
}
