package ragen

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	// base.yaml values (starpo.md §9).
	assert.Equal(t, -0.1, c.ESManager.FormatPenalty)
	assert.Equal(t, EnvSetConfig{EnvGroups: 8, GroupSize: 16, EnvConfigs: EnvConfigs{Tags: []string{"CoordSokoban"}, NGroups: []int{8}}}, c.ESManager.Train)
	assert.Equal(t, EnvSetConfig{EnvGroups: 512, GroupSize: 1, EnvConfigs: EnvConfigs{Tags: []string{"CoordSokoban"}, NGroups: []int{512}}}, c.ESManager.Val)
	assert.Equal(t, int64(10000), *c.Seed.Train)
	assert.Equal(t, int64(123), *c.Seed.Val)
	assert.Equal(t, AgentProxyConfig{ContextWindowMode: "full", MaxContextWindow: -1, MaxTurn: 5, ActionSep: "||", MaxActionsPerTurn: 2,
		EnableThink: true, RewardNormalization: RewardNormalizationConfig{"state", "identity"}, PipelineParts: 1, BatchAdjustMode: "copy"}, c.AgentProxy)
	assert.Equal(t, 400, c.Rollout.ResponseLength)
	assert.Equal(t, 3600, c.Rollout.MaxModelLen)
	assert.Equal(t, SamplingConfig{DoSample: true, Temperature: 0.5, TopP: 1, TopK: -1}, c.Rollout.ValKwargs)
	assert.True(t, c.EnableResponseMask)
	// The env table comes from config/envs.yaml; without it the tag is unknown.
	assert.ErrorContains(t, c.Validate(), `es_manager.train.env_configs.tags: unknown env tag "CoordSokoban" (tags are the keys of custom_envs)`)
	c.CustomEnvs["CoordSokoban"] = EnvSpec{EnvType: "sokoban", MaxActionsPerTraj: 10, MaxTokens: 120}
	assert.NoError(t, c.Validate())
}

func TestConfigYAMLKeys(t *testing.T) {
	src := `
es_manager:
  format_penalty: -0.5
  train: {env_groups: 2, group_size: 4, env_configs: {tags: [Bandit], n_groups: [2]}}
agent_proxy:
  context_window_mode: limited_multi_turn
  max_context_window: 3
  max_turn: 7
  action_sep: ";"
  max_actions_per_turn: 1
  use_turn_scores: true
  enable_think: false
  reward_normalization: {grouping: batch, method: mean_std}
seed: {train: 7}
custom_envs:
  Bandit: {env_type: bandit, max_actions_per_traj: 1, max_tokens: 50, parallel_friendly: true, max_workers: 4, env_config: {split: train}}
`
	c := DefaultConfig()
	require.NoError(t, yaml.Unmarshal([]byte(src), &c))
	assert.Equal(t, -0.5, c.ESManager.FormatPenalty)
	assert.Equal(t, 4, c.ESManager.Train.GroupSize)
	assert.Equal(t, "limited_multi_turn", c.AgentProxy.ContextWindowMode)
	assert.Equal(t, 3, c.AgentProxy.MaxContextWindow)
	assert.Equal(t, 7, c.AgentProxy.MaxTurn)
	assert.Equal(t, ";", c.AgentProxy.ActionSep)
	assert.True(t, c.AgentProxy.UseTurnScores)
	assert.False(t, c.AgentProxy.EnableThink)
	assert.Equal(t, RewardNormalizationConfig{"batch", "mean_std"}, c.AgentProxy.RewardNormalization)
	assert.Equal(t, int64(7), *c.Seed.Train)
	assert.Equal(t, EnvSpec{EnvType: "bandit", MaxActionsPerTraj: 1, MaxTokens: 50, ParallelFriendly: true, MaxWorkers: 4, EnvConfig: map[string]any{"split": "train"}}, c.CustomEnvs["Bandit"])
}

func TestConfigValidateListsEverything(t *testing.T) {
	c := DefaultConfig()
	c.CustomEnvs["CoordSokoban"] = EnvSpec{EnvType: "sokoban", MaxActionsPerTraj: 10}
	c.AgentProxy.MaxTurn = 0
	c.AgentProxy.ActionSep = ""
	c.AgentProxy.MaxActionsPerTurn = 0
	c.AgentProxy.RewardNormalization = RewardNormalizationConfig{"nope", "zscore"}
	c.Rollout.ResponseLength = 0
	c.ESManager.Val.GroupSize = 0
	err := c.Validate()
	for _, s := range []string{"agent_proxy.max_turn: 0 is out of range: want >= 1", "agent_proxy.action_sep: must not be empty",
		"agent_proxy.max_actions_per_turn: 0 is out of range", `agent_proxy.reward_normalization.grouping: unknown value "nope"`,
		`agent_proxy.reward_normalization.method: unknown value "zscore"`, "actor_rollout_ref.rollout.response_length: 0 is out of range",
		"es_manager.val.group_size: must be >= 1, got 0"} {
		assert.ErrorContains(t, err, s)
	}
}

func TestAgentProxyValidateNamesItsKeys(t *testing.T) {
	a := DefaultConfig().AgentProxy
	require.NoError(t, a.Validate())
	a.BatchAdjustMode, a.ContextWindowMode, a.RewardNormalization.Method = "pad", "limited", "zscore"
	err := a.Validate()
	require.Error(t, err)
	for _, want := range []string{`agent_proxy.batch_adjust_mode: unknown value "pad"; valid: copy, delete`,
		`agent_proxy.context_window_mode: unknown value "limited"; valid: full, limited_multi_turn, single_turn`,
		`agent_proxy.reward_normalization.method: unknown value "zscore"`} {
		assert.ErrorContains(t, err, want)
	}
	assert.True(t, AgentProxyConfig{ContextWindowMode: ModeSingleTurn}.TurnLevel())
	assert.False(t, AgentProxyConfig{ContextWindowMode: ModeFull}.TurnLevel())
}

func TestESManagerStepTimeoutYAML(t *testing.T) {
	for src, want := range map[string]time.Duration{
		"step_timeout: 90s": 90 * time.Second, "step_timeout: 300": 300 * time.Second,
		"step_timeout: 1.5": 1500 * time.Millisecond, "step_timeout: null": 5 * time.Minute,
		"format_penalty: -0.5": 5 * time.Minute,
	} {
		c := DefaultConfig().ESManager
		require.NoError(t, yaml.Unmarshal([]byte(src+"\ntrain: {env_groups: 2}"), &c), src)
		assert.Equal(t, want, c.StepTimeout, src)
		assert.Equal(t, 2, c.Train.EnvGroups, src)
		assert.Equal(t, 16, c.Train.GroupSize, src) // absent keys keep their values
	}
	c := DefaultConfig().ESManager
	assert.ErrorContains(t, yaml.Unmarshal([]byte("step_timeout: soon"), &c), "es_manager.step_timeout")
}

func TestRolloutSamplingRanges(t *testing.T) {
	c := DefaultConfig()
	c.CustomEnvs["CoordSokoban"] = EnvSpec{EnvType: "sokoban", MaxActionsPerTraj: 10}
	require.NoError(t, c.Validate())
	c.Rollout.TopP, c.Rollout.TopK = 1.5, -2
	c.Rollout.ValKwargs.Temperature, c.Rollout.ValKwargs.TopP = -1, 0
	err := c.Validate()
	for _, s := range []string{"actor_rollout_ref.rollout.top_p: 1.5 is out of range: want 0 < x <= 1",
		"actor_rollout_ref.rollout.top_k: -2 is out of range: want >= -1",
		"actor_rollout_ref.rollout.val_kwargs.temperature: -1 is out of range: want >= 0",
		"actor_rollout_ref.rollout.val_kwargs.top_p: 0 is out of range"} {
		assert.ErrorContains(t, err, s)
	}
}
